"""Provider-true counts on the real tau-bench retail run (../shared/real_data; skipped without it).

Figures measured once with the shipped encodings and frozen; each is also recomputed here from the
raw JSON with tiktoken's own encode, so a change of rule shows up as a difference.
"""

from __future__ import annotations

import json
import statistics

import pytest

from convmem.tokens import ApproxCounter, count_prompt, make_counter

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def rows(tau_retail_file):
    return json.loads(tau_retail_file.read_text())


def cookbook_with_tools(traj, enc) -> int:
    """The cookbook's rule written out (3 per message, every str value but ids, +1 per name, +3
    per request) plus convmem's tool-call rule (name + arguments + 3 per call)."""
    n = 3
    for m in traj:
        n += 3 + len(enc.encode(m["role"])) + len(enc.encode(m["content"] or ""))
        if m.get("name"):
            n += len(enc.encode(m["name"])) + 1
        for tc in m.get("tool_calls") or []:
            n += len(enc.encode(tc["function"]["name"]))
            n += len(enc.encode(tc["function"]["arguments"])) + 3
    return n


@pytest.mark.parametrize(("model", "total"), [("gpt-4", 635_048), ("gpt-4o", 631_693)])
def test_prompt_totals(rows, model, total):
    counter = make_counter(model)
    per_conv = [count_prompt(r["traj"], counter=counter) for r in rows]
    assert sum(per_conv) == total
    assert per_conv == [cookbook_with_tools(r["traj"], counter.encoding) for r in rows]
    # the message contract: sum(count_message) + reply_priming is the prompt count
    for r, expected in zip(rows[:10], per_conv):
        msgs = r["traj"]
        assert sum(counter.count_message(m["role"], m["content"], m.get("tool_calls") or (),
                                         name=m.get("name")) for m in msgs
                   ) + counter.reply_priming == expected


def test_content_only_totals_per_encoding(rows):
    texts = [t for r in rows for m in r["traj"]
             for t in [m["content"] or ""] + [x for tc in m.get("tool_calls") or []
                                               for x in (tc["function"]["name"],
                                                         tc["function"]["arguments"])]]
    cl = make_counter("gpt-4", per_message_overhead=0)
    o2 = make_counter("gpt-4o", per_message_overhead=0)
    assert sum(map(cl.count_text, texts)) == 612_374  # the README's definition, cl100k_base
    assert sum(map(o2.count_text, texts)) == 609_002
    approx = sum(map(ApproxCounter().count_text, texts))
    assert approx == 606_695  # -0.93 % vs cl100k_base, -0.38 % vs o200k_base
    assert round((approx - 612_374) / 612_374 * 100, 2) == -0.93
    assert round((approx - 609_002) / 609_002 * 100, 2) == -0.38


def test_cutting_every_retail_text_at_every_safe_point_changes_no_count(rows):
    """Chunked counting is exact on real data: 0 differences over all 321,701 safe points."""
    from convmem.tokens import _SAFE_CUT

    texts = [t for r in rows for m in r["traj"]
             for t in [m["content"] or ""] + [x for tc in m.get("tool_calls") or []
                                               for x in (tc["function"]["name"],
                                                         tc["function"]["arguments"])]]
    n_cuts = 0
    for model in ("gpt-4", "gpt-4o"):
        enc = make_counter(model).encoding
        differ = 0
        for t in texts:
            cuts = [0] + [m.start() for m in _SAFE_CUT.finditer(t)] + [len(t)]
            n_cuts += len(cuts) - 2
            whole = len(enc.encode_ordinary(t))
            differ += sum(len(enc.encode_ordinary(t[a:b])) for a, b in zip(cuts, cuts[1:])) != whole
        assert differ == 0
    assert n_cuts == 2 * 321_701


def test_approximate_chat_counts_per_conversation(rows):
    exact = make_counter("gpt-4")
    approx = make_counter("gpt-4", approximate=True)
    errors = [abs(count_prompt(r["traj"], counter=approx) - count_prompt(r["traj"], counter=exact))
              / count_prompt(r["traj"], counter=exact) for r in rows]
    assert statistics.median(errors) < 0.01 and max(errors) < 0.035
