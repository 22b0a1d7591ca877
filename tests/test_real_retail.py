"""The real tau-bench retail run (../shared/real_data): counts measured once and asserted exactly.

Skipped with a reason when ../shared/real_data is absent (a user's clone has no shared/).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter

import pytest

from convmem import group_by_user, load_conversations, make_listing_extractor, parse_conversations
from convmem.tokens import ApproxCounter, make_counter

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def raw_rows(tau_retail_file):
    return json.loads(tau_retail_file.read_text())


@pytest.fixture(scope="module")
def catalog(tau_retail_file):
    products = json.loads((tau_retail_file.parents[1] / "db" / "products.json").read_text())
    item_ids = {item_id for p in products.values() for item_id in p["variants"]}
    return set(products), item_ids


@pytest.fixture(scope="module")
def cl100k():
    # content-only mode: the real_data README's definition (the encoding ships with convmem)
    counter = make_counter(per_message_overhead=0)
    assert counter.name == "cl100k_base" and counter.exact
    return counter


@pytest.fixture(scope="module")
def convs(tau_retail_file, cl100k):
    return load_conversations(tau_retail_file, counter=cl100k)


def test_shape_matches_the_readme(convs):
    assert len(convs) == 115
    assert sum(len(c.messages) for c in convs) == 3804
    assert Counter(m.role for c in convs for m in c.messages) == {
        "assistant": 1787, "user": 970, "tool": 932, "system": 115}
    assert {c.source_format for c in convs} == {"tau-bench"}
    assert convs[0].id == "task0-trial0" and convs[-1].id == "task114-trial0"
    assert all(c.messages[0].role == "system" for c in convs)


def test_shoppers_and_their_conversations(convs):
    groups = group_by_user(convs)
    assert len(groups) == 53 and None not in groups
    sizes = Counter(len(v) for v in groups.values())
    assert sizes == {1: 23, 2: 12, 3: 9, 4: 4, 5: 5}  # 1-5 conversations each
    assert [c.id for c in groups["yusuf_rossi_9620"]] == [f"task{i}-trial0" for i in range(5)]


def test_every_tool_result_answers_a_preceding_call(convs, raw_rows):
    n_results = 0
    for c in convs:
        called: set[str] = set()
        for m in c.messages:
            if m.role == "tool":
                assert m.tool_call_id in called, (c.id, m.id)
                n_results += 1
            called.update(m.tool_call_ids)
    assert n_results == 932
    assert sum(len(c.tool_calls) for c in convs) == 932  # every call is answered, once
    assert max(len(m.tool_call_ids) for c in convs for m in c.messages) == 1  # no parallel calls
    # the links are the file's own ids, independently read from the raw JSON
    raw_links = [m["tool_call_id"] for r in raw_rows for m in r["traj"] if m["role"] == "tool"]
    assert raw_links == [m.tool_call_id for c in convs for m in c.messages if m.role == "tool"]


def test_default_extractor_finds_item_ids_and_product_ids(convs, catalog):
    product_ids, item_ids = catalog
    assert (len(product_ids), len(item_ids)) == (50, 591)
    found = {x for c in convs for x in c.listing_ids}
    # A strict 10-digit match also catches product ids (10 digits too): all 50 are mentioned.
    assert found <= item_ids | product_ids
    assert found & product_ids == product_ids
    assert len(found & item_ids) == 519
    assert sum(len(c.listing_ids) for c in convs) == 8182
    distinct = [len(c.distinct_listing_ids) for c in convs]
    assert (statistics.median(distinct), max(distinct), min(distinct)) == (23, 73, 0)


def test_item_id_extractor_matches_the_readme_counts(tau_retail_file, catalog, cl100k):
    """README: "A strict 10-digit match, checked against products.json, finds exactly them.
    Per conversation: median 16 distinct item ids, max 63." """
    _, item_ids = catalog
    convs = load_conversations(
        tau_retail_file, counter=cl100k, listing_extractor=make_listing_extractor(item_ids)
    )
    assert all(len(x) == 10 and x.isdigit() and x in item_ids
               for c in convs for x in c.listing_ids)
    distinct = [len(c.distinct_listing_ids) for c in convs]
    assert statistics.median(distinct) == 16
    assert max(distinct) == 63
    assert len({x for c in convs for x in c.listing_ids}) == 519
    assert sum(len(c.listing_ids) for c in convs) == 6339


def test_cl100k_token_counts(convs, raw_rows, cl100k):
    assert sum(c.total_tokens for c in convs) == 612_374
    assert all(c.total_tokens > 0 for c in convs)
    assert min(c.total_tokens for c in convs) == 1911
    assert max(c.total_tokens for c in convs) == 10_034
    zero = [(c.id, m.id) for c in convs for m in c.messages if m.tokens == 0]
    assert zero == [("task62-trial0", "task62-trial0:29"), ("task72-trial0", "task72-trial0:19")]
    assert all(m.content == "" for c in convs for m in c.messages if m.tokens == 0)
    # independent recount straight from the raw JSON with tiktoken
    enc = cl100k.encoding
    expected = []
    for r in raw_rows:
        for m in r["traj"]:
            n = len(enc.encode_ordinary(m["content"] or ""))
            for tc in m.get("tool_calls") or []:
                n += len(enc.encode_ordinary(tc["function"]["name"]))
                n += len(enc.encode_ordinary(tc["function"]["arguments"]))
            expected.append(n)
    assert [m.tokens for c in convs for m in c.messages] == expected


def test_approximation_error_on_real_data(tau_retail_file, convs):
    approx = load_conversations(tau_retail_file, counter=ApproxCounter())
    total = sum(c.total_tokens for c in approx)
    assert total == 606_695  # vs 612,374 exact: -0.93 %
    assert abs(total - 612_374) / 612_374 < 0.01
    per_conv = [abs(a.total_tokens - e.total_tokens) / e.total_tokens
                for a, e in zip(approx, convs)]
    assert statistics.median(per_conv) < 0.01
    assert max(per_conv) < 0.035
    per_msg = sorted(abs(a.tokens - e.tokens) / e.tokens
                     for ca, ce in zip(approx, convs)
                     for a, e in zip(ca.messages, ce.messages) if e.tokens)
    assert round(statistics.median(per_msg), 3) == 0.020
    assert round(per_msg[int(0.9 * len(per_msg))], 3) == 0.065


def test_upload_bytes_equal_path_load(tau_retail_file, convs, cl100k):
    uploaded = parse_conversations(tau_retail_file.read_bytes(), counter=cl100k,
                                   source_name="run.json")
    assert uploaded == convs
    assert uploaded[0].source == "run.json"
