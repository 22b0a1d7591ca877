"""``python -m convmem safe-limit``: the same answer as convmem.explain_safe_limit."""

from __future__ import annotations

import json

import pytest

from convmem import Message, explain_safe_limit
from convmem.cli import main

ROWS = [
    {"id": "s", "role": "system", "tokens": 50},
    {"id": "u1", "role": "user", "tokens": 10},
    {"id": "a1", "role": "assistant", "tokens": 30},
    {"id": "u2", "role": "user", "tokens": 5},
    {"id": "a2", "role": "assistant", "tokens": 20},
]


@pytest.fixture
def csv_file(tmp_path):
    path = tmp_path / "conv.csv"
    path.write_text("id,role,tokens\n" + "".join(f"{r['id']},{r['role']},{r['tokens']}\n" for r in ROWS))
    return path


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_text_and_json(capsys, csv_file):
    code, out, err = run(capsys, "safe-limit", csv_file)
    assert code == 0 and err == ""
    assert "smallest safe limit 40 tokens" in out and "add step 2 by message u1" in out
    assert out.splitlines()[0] == "conversation c1 (5 messages, 115 tokens), protect latest_user [no policy]"


def test_the_text_names_the_policies_the_answer_holds_for(capsys, csv_file):
    code, out, _ = run(capsys, "safe-limit", csv_file, "--pin-system", "--keep-tool-groups",
                       "--target-percent", "50", "--summary-budget", "20")
    assert code == 0
    assert out.splitlines()[0].endswith(
        "protect latest_user [pin_system, keep_tool_groups, target=50% of the limit, summary_budget=20]")
    code, out, _ = run(capsys, "safe-limit", csv_file, "--protect", "system", "--json")
    doc = json.loads(out)
    assert (doc["limit"], doc["step"], doc["message_id"], doc["exact"]) == (115, 4, "s", True)
    code, out, _ = run(capsys, "safe-limit", csv_file, "--pin-system", "--target-percent", "50", "--json")
    doc = json.loads(out)
    msgs = [Message(r["id"], r["role"], r["tokens"]) for r in ROWS]
    want = explain_safe_limit(msgs, pin_system=True, target=50, limit=100)
    assert (doc["limit"], doc["step"], doc["exact"]) == (want.limit, want.step, False) == (179, 2, False)


def test_errors_are_one_line(capsys, csv_file):
    code, _, err = run(capsys, "safe-limit", csv_file, "--protect", "nope")
    assert code == 1 and "protect='nope' is no message id" in err and err.count("\n") == 1
    code, _, err = run(capsys, "safe-limit", csv_file, "--target-percent", "150")
    assert code == 2 and "--target-percent must be 0..100, got 150" in err


@pytest.mark.realdata
def test_same_answer_as_the_library_on_retail(capsys, tau_retail_file):
    from convmem import load_conversations
    from convmem.tokens import make_counter

    conv = load_conversations(tau_retail_file, counter=make_counter())[3]
    want = explain_safe_limit(conv.messages, "latest_user", keep_tool_groups=True, start_on_user=True)
    code, out, _ = run(capsys, "safe-limit", tau_retail_file, "--conversation", conv.id,
                       "--keep-tool-groups", "--start-on-user", "--json")
    doc = json.loads(out)
    assert code == 0 and (doc["limit"], doc["step"], doc["message_id"]) == (want.limit, want.step, want.message_id)
    assert doc["limit"] > 0
