"""Plain pytest for the pure parts of issue 10 items 2, 5 and 8: the shared selection's rules
(convmem_dashboard.choices), the listing definitions, and the Home / Listing eviction view models.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from convmem import Conversation, Message, ToolCall, evict_conversations, group_by_user, load_conversations
from convmem_dashboard.choices import (
    clean_text,
    conversation_label,
    default_conversation_id,
    most_tokens_id,
    resolve_selection,
    shopper_label,
)
from convmem_dashboard.listing_definitions import (
    DEFINITIONS,
    Catalog,
    extractor,
    id_kinds,
    listings_of,
    load_catalog,
)
from convmem_dashboard.questions import QUESTIONS
from convmem_dashboard.tables_eviction import DROPPED_ORDER, default_shopper, evict, shopper_view
from convmem_dashboard.url_params import LISTING_DEFINITIONS, PARAMS, sanitize
from convmem_dashboard.view_home import PAGE_LINKS, conversation_caption, conversation_metrics, dataset_metrics, roles_table
from convmem_dashboard.view_listing_eviction import (
    cap_bounds,
    definitions_offered,
    eviction_metrics,
    newest_alone,
    no_cut_notice,
    resolve_cap,
    what_counts,
)

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"
RETAIL_DB = ROOT.parent / "shared/real_data/tau-bench/retail/db/products.json"


def conv(cid: str, user: str | None, tokens: list[int], first_user: str = "hello", ids=()) -> Conversation:
    msgs = [Message(f"{cid}:{i}", "user" if i == 0 else "assistant", t,
                    content=first_user if i == 0 else "ok") for i, t in enumerate(tokens)]
    return Conversation(cid, user, tuple(msgs), tuple(ids))


# ------------------------------------------------------------------------------- selection rules


def test_default_is_the_longest_conversation_of_the_default_shopper():
    convs = [
        conv("a1", "ann", [50], ids=["1"]), conv("b1", "bob", [900]),  # bob: one conversation
        conv("a2", "ann", [70], ids=["1"]), conv("a3", "ann", [70], ids=["2"]),
    ]
    assert default_shopper(group_by_user(convs)) == "ann"
    assert default_conversation_id(convs) == "a2"  # most tokens among ann's; first of equals
    assert default_conversation_id([]) is None
    assert default_conversation_id([conv("x", None, [1])]) == "x"


def test_default_on_the_sample_is_a_conversation_of_the_listing_page_default_shopper():
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} not generated")
    convs = load_conversations(SAMPLE)
    chosen = default_conversation_id(convs)
    shopper = default_shopper(group_by_user(convs))
    own = [c for c in convs if c.user_id == shopper]
    assert chosen in {c.id for c in own}
    # brute force: no conversation of that shopper has more tokens
    assert max(c.total_tokens for c in own) == next(c for c in own if c.id == chosen).total_tokens


def test_label_shows_shopper_title_counts_and_id_with_control_characters_removed():
    c = conv("t-1", "sofia", [1200, 3], first_user="Hi!\n\u202eevil\x00 **bold** " + "x" * 200)
    label = conversation_label(c)
    assert label.startswith("sofia · “Hi! evil **bold** ")
    assert label.endswith(" · 2 messages · 1,203 tokens · t-1")
    assert "\n" not in label and "\u202e" not in label and "\x00" not in label
    title = label.split("“")[1].split("”")[0]
    assert len(title) == 48 and title.endswith("…")
    assert conversation_label(Conversation("z", None, ())) == "(no shopper id) · (no user message) · 0 messages · 0 tokens · z"
    # user turns with no text (tool-only or empty content) are not "no user message"
    silent = Conversation("h8", "ann", (Message("u0", "user", 1, content=""), Message("a0", "assistant", 2)))
    assert conversation_label(silent) == "ann · (no user text) · 2 messages · 3 tokens · h8"
    assert shopper_label("ann", [c, c]) == "ann · 2 conversations · 4 messages · 2,406 tokens"


@given(st.text(max_size=400), st.integers(min_value=2, max_value=80))
def test_clean_text_is_one_short_line(text, limit):
    out = clean_text(text, limit)
    assert len(out) <= limit
    assert not any(ch in out for ch in "\n\r\t\x00\u2028\u2029\u202e\u200b")
    assert out == out.strip()


@given(
    st.lists(st.sampled_from("abcd"), unique=True, max_size=4),
    *(st.sampled_from([None, "a", "b", "c", "d", "z"]) for _ in range(4)),
)
def test_resolve_selection_against_its_rule(options, url, seen, session, default):
    got = resolve_selection(options, url=url, url_seen=seen, session=session, default=default)
    # brute force of the rule written in the docstring
    for candidate, usable in ((url, url != seen), (session, True), (default, True)):
        if usable and candidate in options:
            assert got == candidate
            return
    assert got == (options[0] if options else None)


def test_most_tokens_id():
    assert most_tokens_id([conv("a", "u", [1]), conv("b", "u", [3]), conv("c", "u", [3])]) == "b"
    assert most_tokens_id([]) is None


# ------------------------------------------------------------------------------ listing definitions


def test_url_table_offers_the_definitions():
    assert LISTING_DEFINITIONS == DEFINITIONS
    assert sanitize({"listing": ["keys"]})[0] == {"listing": ["keys"]}
    assert sanitize({"listing": ["everything"]})[0] == {}
    assert PARAMS["listing"].options == DEFINITIONS


def test_definitions_on_text_and_call_arguments():
    text = ('{"product_id": "6992792935", "item_id": "4202497723"} and see 1111111111; '
            "{'item_ids': ['2222222222', '3333333333'], 'order_id': '#W1'}")
    assert extractor("digits")(text) == ["6992792935", "4202497723", "1111111111", "2222222222", "3333333333"]
    assert extractor("keys")(text) == ["4202497723", "2222222222", "3333333333"]
    cat = Catalog(frozenset({"4202497723", "1111111111"}), frozenset({"6992792935"}))
    assert extractor("catalog", cat)(text) == ["4202497723", "1111111111"]
    with pytest.raises(ValueError, match="catalog"):
        extractor("catalog")
    with pytest.raises(ValueError, match="'nope'"):
        extractor("nope")
    # listings_of walks content then the message's tool-call arguments, like the loader
    m = Message("m", "assistant", 1, content="item 1111111111", tool_call_ids=("c1",))
    c = Conversation("c", "u", (m,), (), (ToolCall("c1", "f", '{"new_item_ids": ["4202497723"]}', "m"),))
    assert listings_of([c], extractor("keys")) == [("4202497723",)]
    assert listings_of([c], extractor("catalog", cat)) == [("1111111111", "4202497723")]
    assert id_kinds(["4202497723", "6992792935", "5", "5"], cat).__repr__() == "IdKinds(items=1, products=1, other=1)"


def test_load_catalog_refuses_other_shapes(tmp_path):
    good = tmp_path / "p.json"
    good.write_text(json.dumps({"9": {"variants": {"1": {}, "2": {}}}}))
    assert load_catalog(good) == Catalog(frozenset({"1", "2"}), frozenset({"9"}))
    bad = tmp_path / "b.json"
    bad.write_text("[1, 2]")
    assert load_catalog(bad) is None
    assert load_catalog(tmp_path / "missing.json") is None


@pytest.mark.realdata
def test_retail_catalogue_splits_the_default_count(tau_retail_file):
    """The issue's figure, checked by brute force: under every 10-digit id, retail conversations
    count product ids too; the catalogue definition keeps exactly the item ids."""
    cat = load_catalog(RETAIL_DB)
    assert cat is not None and len(cat.items) == 591 and len(cat.products) == 50
    convs = load_conversations(tau_retail_file)
    products_counted = 0
    for c in convs:
        digits = set(listings_of([c], extractor("digits"))[0])
        items = set(listings_of([c], extractor("catalog", cat))[0])
        assert items == digits & cat.items
        products_counted += len(digits & cat.products)
        keys = set(listings_of([c], extractor("keys"))[0])
        assert keys <= digits
    assert products_counted > 0


# ------------------------------------------------------------------------- listing eviction view


def sview(*listings):
    return shopper_view([Conversation(f"c{i}", "u", (), tuple(ids)) for i, ids in enumerate(listings)])


def test_no_cut_notice_exactly_when_everything_is_dropped():
    view = sview(["1", "2"], ["3", "4", "5"])
    assert cap_bounds(view) == (0, 5) and newest_alone(view) == 3
    for cap in range(0, 7):
        ev = evict(view, cap)
        all_dropped = ev.k == view.n
        assert (no_cut_notice(view, cap) is not None) == all_dropped, cap
    assert "newest conversation alone mentions 3 distinct ids" in no_cut_notice(view, 2)
    assert cap_bounds(sview([], [])) == (0, 1)


def test_cap_bounds_fit_each_shopper_of_the_sample():
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} not generated")
    for user, convs in group_by_user(load_conversations(SAMPLE)).items():
        view = shopper_view(convs)
        lo, hi = cap_bounds(view)
        assert (lo, hi) == (0, max(len({x for c in convs for x in c.listing_ids}), 1)), user
        assert lo <= view.default_cap <= hi
        assert evict_conversations(view.listings, hi) == list(dict.fromkeys(
            x for ids in view.listings for x in ids)) or view.max_cap == 0


def test_resolve_cap_rules():
    view = sview(["1", "2"], ["3"])
    kw = dict(view=view)
    assert resolve_cap(url="3", url_seen=None, session=None, same_scope=False, **kw) == 3
    assert resolve_cap(url="3", url_seen="3", session=2, same_scope=True, **kw) == 2
    assert resolve_cap(url="-1", url_seen=None, session=None, same_scope=False, **kw) == view.default_cap
    assert resolve_cap(url="2.5", url_seen=None, session=None, same_scope=False, **kw) == view.default_cap
    assert resolve_cap(url=None, url_seen=None, session=9, same_scope=True, **kw) == view.default_cap
    assert resolve_cap(url=None, url_seen=None, session=True, same_scope=True, **kw) == view.default_cap
    assert resolve_cap(url=None, url_seen=None, session=1, same_scope=False, **kw) == view.default_cap


def test_metrics_use_thousands_separators_and_why_columns_lead():
    view = sview(*[[str(1_000_000_000 + i)] for i in range(1500)])
    ev = evict(view, 1000)
    assert [m.value for m in eviction_metrics(view, ev)] == ["1,000 / 1,500", "500", "1,000", "1,500"]
    assert DROPPED_ORDER[:5] == ("#", "why", "count before -> after", "released", "shared with newer")
    assert definitions_offered(True) == DEFINITIONS and "catalog" not in definitions_offered(False)


def test_what_counts_names_product_ids():
    cat = Catalog(frozenset({"1"}), frozenset({"2"}))
    assert what_counts("digits", ("1", "2", "2"), None) is None
    text = what_counts("digits", ("1", "2", "2"), cat)
    assert "2 distinct ids counted, of which 1 catalogue item id, 1 product id" in text
    assert 'Pick "catalog"' in text
    assert 'Pick "catalog"' not in what_counts("catalog", ("1",), cat)


# ---------------------------------------------------------------------------------------- home


def test_home_view_model():
    c = Conversation("c", "a*b", (Message("s", "system", 4), Message("u", "user", 6, content="x"),
                                  Message("t", "user", 1)), ("1234567890",))
    shown = {m.label: m.value for m in conversation_metrics(c)}
    assert conversation_caption(c) == r"Shopper **a\*b** · conversation c"
    # a coding agent's session has no shopper: named by its id, not as "Shopper (no shopper id)"
    assert conversation_caption(Conversation("S-1", None, ())) == r"Conversation **S\-1** (no shopper id)"
    assert shown == {"Messages in it": "3", "Tokens in it": "11",
                     "Tool calls": "0", "Listing ids": "1"}
    assert roles_table(c) == [{"role": "system", "messages": 1, "tokens": 4},
                              {"role": "user", "messages": 2, "tokens": 7}]
    big = [Conversation(f"c{i}", f"u{i % 3}", (Message("m", "user", 1000),)) for i in range(1200)]
    assert [m.value for m in dataset_metrics(big)] == ["1,200", "1,200", "3", "1,200,000"]
    assert [link.question for link in PAGE_LINKS] == [QUESTIONS[k] for k in ("flaky_store", "token_budget", "listing_eviction", "agent_session")]
    assert all(Path(ROOT / link.path).is_file() for link in PAGE_LINKS)
    # each question is one sentence
    for q in QUESTIONS.values():
        assert q.count("?") == 1 and q.endswith("?")
    assert list(itertools.islice(QUESTIONS, 1)) == ["home"]


@given(st.lists(st.tuples(st.sampled_from(["system", "user", "assistant", "tool"]),
                          st.sampled_from([0, 1, 7, 10**6, 2**53 - 1])), max_size=40))
def test_roles_table_counts_and_sums_each_role_exactly(rows):
    """Against a plain loop: first-appearance order, exact sums."""
    from convmem import Message

    c = Conversation("c", None, tuple(Message(f"m{i}", role, tokens) for i, (role, tokens) in enumerate(rows)))
    expected: dict[str, list[int]] = {}
    for role, tokens in rows:
        expected.setdefault(role, [0, 0])
        expected[role][0] += 1
        expected[role][1] += tokens
    assert roles_table(c) == [{"role": r, "messages": n, "tokens": t} for r, (n, t) in expected.items()]


def test_roles_table_sums_past_int64_exactly():
    from convmem import Message

    big = 2**53 - 1
    c = Conversation("c", None, tuple(Message(f"m{i}", "user" if i % 2 else "tool", big) for i in range(2100)))
    assert c.total_tokens >= 2**63  # the Python-int path
    assert roles_table(c) == [{"role": "tool", "messages": 1050, "tokens": 1050 * big},
                              {"role": "user", "messages": 1050, "tokens": 1050 * big}]
