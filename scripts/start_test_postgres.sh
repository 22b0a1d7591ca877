# Start a throwaway PostgreSQL server for the tests; SOURCE this file (bash), do not run it:
#
#     source scripts/start_test_postgres.sh     # exports CONVMEM_TEST_POSTGRES_URL
#     .venv/bin/python -m pytest tests/test_sql_stores.py
#     stop_test_postgres                        # also runs at the shell's exit (trap)
#
# What it does: installs Debian's `postgresql` package with apt-get when no PostgreSQL server
# binaries are found (CI runs as root); creates a new cluster with initdb in a fresh temporary
# folder (trust authentication, user `convmem`); starts it with pg_ctl listening on 127.0.0.1 only,
# at a free port, its Unix socket inside that folder; creates the database `convmem_test`; exports
# CONVMEM_TEST_POSTGRES_URL=postgresql+psycopg://convmem@127.0.0.1:<port>/convmem_test. PostgreSQL
# refuses to run as root, so as root the server runs as the `postgres` user (made by the package;
# created here if absent) through runuser. stop_test_postgres stops the server (fast shutdown) and
# removes the folder; the EXIT trap calls it, chained after any EXIT trap already set.

_convmem_pg_bindir() {
  local dir
  if command -v pg_config >/dev/null 2>&1; then
    dir="$(pg_config --bindir 2>/dev/null || true)"
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then echo "$dir"; return 0; fi
  fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r) /usr/local/bin /usr/bin; do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && [ -x "$dir/postgres" ]; then
      echo "$dir"; return 0
    fi
  done
  return 1
}

start_test_postgres() {
  local bindir
  if ! bindir="$(_convmem_pg_bindir)"; then
    echo "start_test_postgres: no PostgreSQL server binaries; installing Debian's postgresql" >&2
    if [ "$(id -u)" -ne 0 ]; then
      echo "start_test_postgres: need root for apt-get install postgresql" >&2
      return 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    bindir="$(_convmem_pg_bindir)" || { echo "start_test_postgres: still no initdb" >&2; return 1; }
  fi

  local runas=()
  if [ "$(id -u)" -eq 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
      useradd --system --no-create-home --shell /usr/sbin/nologin postgres
    fi
    runas=(runuser -u postgres --)
  fi

  CONVMEM_PGDATA_ROOT="$(mktemp -d "${TMPDIR:-/tmp}/convmem-pg.XXXXXX")"
  export CONVMEM_PGDATA_ROOT
  local data="$CONVMEM_PGDATA_ROOT/data"
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$CONVMEM_PGDATA_ROOT"; fi
  chmod 700 "$CONVMEM_PGDATA_ROOT"

  local port
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"

  "${runas[@]}" "$bindir/initdb" -D "$data" -U convmem --auth=trust -E UTF8 --no-locale \
    >"$CONVMEM_PGDATA_ROOT/initdb.log" 2>&1 || {
    echo "start_test_postgres: initdb failed:" >&2; cat "$CONVMEM_PGDATA_ROOT/initdb.log" >&2
    return 1
  }
  # fsync off: a throwaway test cluster need not survive a power cut, and the tests run faster.
  "${runas[@]}" "$bindir/pg_ctl" -D "$data" -l "$CONVMEM_PGDATA_ROOT/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $CONVMEM_PGDATA_ROOT -c fsync=off -c max_connections=100" \
    start >/dev/null || {
    echo "start_test_postgres: the server did not start:" >&2; cat "$CONVMEM_PGDATA_ROOT/server.log" >&2
    return 1
  }
  CONVMEM_PG_CTL="$bindir/pg_ctl"
  CONVMEM_PG_RUNAS="${runas[*]}"
  export CONVMEM_PG_CTL CONVMEM_PG_RUNAS
  "${runas[@]}" "$bindir/createdb" -h 127.0.0.1 -p "$port" -U convmem convmem_test || {
    stop_test_postgres; return 1
  }
  export CONVMEM_TEST_POSTGRES_URL="postgresql+psycopg://convmem@127.0.0.1:$port/convmem_test"
  echo "start_test_postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') at $CONVMEM_TEST_POSTGRES_URL" >&2

  local previous
  previous="$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\\1/")"
  # shellcheck disable=SC2064
  trap "stop_test_postgres; ${previous:-:}" EXIT
}

stop_test_postgres() {
  if [ -n "${CONVMEM_PGDATA_ROOT:-}" ] && [ -d "$CONVMEM_PGDATA_ROOT/data" ]; then
    # shellcheck disable=SC2086
    $CONVMEM_PG_RUNAS "$CONVMEM_PG_CTL" -D "$CONVMEM_PGDATA_ROOT/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  if [ -n "${CONVMEM_PGDATA_ROOT:-}" ]; then rm -rf "$CONVMEM_PGDATA_ROOT"; fi
  unset CONVMEM_PGDATA_ROOT CONVMEM_TEST_POSTGRES_URL
}

start_test_postgres
