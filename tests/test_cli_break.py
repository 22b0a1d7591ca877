"""The command line under hostile input (session 24 breaker): output paths that are not regular
files, output permissions, hostile ``--messages-path`` and ``--listing-pattern`` values. Each
failed before its fix (an internal error, exit 4; or a FIFO replaced by a regular file)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from convmem import load_conversations, make_listing_extractor
from convmem.cli import EXIT_INPUT, EXIT_OK, EXIT_USAGE, main

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"
#: Seconds the FIFO reader waits for the writer before the test calls it lost.
READER_GUARD_S = 60


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_convert_writes_into_a_fifo_and_leaves_it_a_fifo(tmp_path, capsys):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(
        target=lambda: received.append(fifo.read_bytes()), daemon=True
    )
    reader.start()
    code, out, err = run(capsys, "convert", SAMPLE, "--to", "openai-chat", "-o", fifo)
    if code != EXIT_OK:  # unblock the reader before failing
        with open(fifo, "wb"):
            pass
    reader.join(READER_GUARD_S)
    assert code == EXIT_OK, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced by a regular file"
    assert not reader.is_alive() and len(received) == 1
    written = tmp_path / "written.jsonl"
    written.write_bytes(received[0])
    assert [c.id for c in load_conversations(written).conversations] == [
        c.id for c in load_conversations(SAMPLE).conversations
    ]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_convert_through_a_symlink_replaces_its_target_and_keeps_the_link(tmp_path, capsys):
    target = tmp_path / "real.jsonl"
    target.write_text("old")
    target.chmod(0o640)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    code, _, err = run(capsys, "convert", SAMPLE, "--to", "openai-chat", "-o", link)
    assert code == EXIT_OK, err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith('{"id":') and stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_new_output_file_gets_the_umask_mode_not_0600(tmp_path, capsys):
    out = tmp_path / "new.jsonl"
    old = os.umask(0o022)
    try:
        code, _, err = run(capsys, "convert", SAMPLE, "--to", "openai-chat", "-o", out)
    finally:
        os.umask(old)
    assert code == EXIT_OK, err
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


@pytest.mark.parametrize(
    "expression,message",
    [
        ("[", "--messages-path '[': Invalid jmespath expression: Incomplete expression"),
        ("[" * 3000, ": nested too deeply to parse"),
    ],
)
def test_a_messages_path_that_does_not_parse_is_a_usage_error(capsys, expression, message):
    code, _, err = run(capsys, "inspect", SAMPLE, "--messages-path", expression)
    assert code == EXIT_USAGE
    assert message in one_error_line(err)


def test_a_messages_path_that_fails_while_searching_names_the_expression(capsys):
    code, _, err = run(capsys, "inspect", SAMPLE, "--messages-path", "foo(messages)")
    assert code == EXIT_INPUT
    assert one_error_line(err) == (
        "python -m convmem inspect: error: format error: shoppers.jsonl, line 1, field "
        "'foo(messages)': messages_path 'foo(messages)' failed: Unknown function: foo()\n"
    )


def test_the_library_skips_a_record_a_messages_path_cannot_search(tmp_path):
    data = tmp_path / "two.jsonl"
    data.write_text(
        '{"id": "a", "m": [{"role": "user", "content": "hi"}]}\n'
        '{"id": "b", "m": 7}\n'
    )
    result = load_conversations(data, messages_path="sort_by(m, &content)")
    assert [len(c.messages) for c in result.conversations] == [1]
    assert len(result.skipped) == 1
    skipped = result.skipped[0]
    assert (skipped.line, skipped.field) == (2, "sort_by(m, &content)")
    assert skipped.reason.startswith(
        "messages_path 'sort_by(m, &content)' failed: In function sort_by()"
    )
    with pytest.raises(ValueError, match="is nested too deeply to parse"):
        load_conversations(data, messages_path="[" * 3000)


def test_a_listing_pattern_with_two_groups_is_a_usage_error(capsys):
    code, _, err = run(capsys, "evict", SAMPLE, "--max-listings", 3,
                       "--listing-pattern", r"(\d)(\d)")
    assert code == EXIT_USAGE
    assert "has 2 capturing groups" in one_error_line(err)
    with pytest.raises(ValueError, match=r"pattern '\(a\)\(b\)\(c\)' has 3 capturing groups"):
        make_listing_extractor(pattern="(a)(b)(c)")


def test_a_listing_pattern_never_yields_an_empty_id():
    assert make_listing_extractor(pattern=r"\d*")("a 12 b 345") == ["12", "345"]
    assert make_listing_extractor(pattern=r"item-(\d*)")("item- item-42") == ["42"]
    assert make_listing_extractor(["42"], pattern=r"item-(\d*)")("item- item-42 item-7") == ["42"]


def test_simulate_refuses_a_synthetic_conversation_over_its_cap(capsys):
    from convmem.cli import SIMULATE_MAX_MESSAGES

    code, out, err = run(capsys, "simulate", "--messages", 100_000_000)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_error_line(err) == (
        "python -m convmem simulate: error: --messages 100,000,000: at most "
        f"{SIMULATE_MAX_MESSAGES:,} (the synthetic conversation is built in memory) "
        "(see 'python -m convmem simulate --help')\n"
    )
    assert run(capsys, "simulate", "--messages", 3)[0] == EXIT_OK


def test_file_dash_reads_a_pipe_on_standard_input():
    import json
    import subprocess
    import sys

    chat = '[{"role": "user", "content": "swap 1234567890"}]'
    done = subprocess.run(
        [sys.executable, "-m", "convmem", "inspect", "-", "--json"], input=chat, cwd=ROOT,
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == EXIT_OK, done.stderr
    doc = json.loads(done.stdout)
    assert (doc["file"], doc["messages"], doc["distinct_listings"]) == ("-", 1, 1)


def test_output_dash_is_standard_output(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "convert", SAMPLE, "--to", "openai-chat", "-o", "-")
    assert code == EXIT_OK, err
    assert out == run(capsys, "convert", SAMPLE, "--to", "openai-chat")[1]
    assert out.startswith('{"id":') and not (tmp_path / "-").exists()
