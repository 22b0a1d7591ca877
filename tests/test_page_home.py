"""AppTest for Home and Your data: the data in use, uploads (on Your data) in every format, malformed files, the size cap,
URL state and user text kept out of Markdown.

Expected counts are written by hand from the files built here (or computed with
convmem.load_conversations for the bundled sample), never read back from the dashboard's helpers.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from convmem import load_conversations
from apptest_support import dashboard_app, dataset_named, metrics, ok, to_your_data
from convmem_dashboard.data import md_escape, missing_dataset_note

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "shoppers.jsonl"
PAGES = ("app_pages/flaky_store.py", "app_pages/token_budget.py", "app_pages/listing_eviction.py")
ERROR_HEAD = "Could not read the upload; nothing was loaded. What is wrong and where:"
NASTY = "<script>alert(1)</script>**bold**"


# ------------------------------------------------------------------------------------- helpers


def open_home(query: dict | None = None) -> AppTest:
    at = dashboard_app()
    if query:
        at.query_params.update(query)
    return ok(at.run())


def data_in_use(at: AppTest) -> str:
    """The dataset key in use: the sidebar picker's value, or on Home (no picker) the key its
    sidebar names."""
    if boxes := [b for b in at.sidebar.selectbox if b.key == "data"]:
        return boxes[0].value
    named = [m.value for m in at.sidebar.markdown if m.value.startswith("**Data in use:** `")]
    assert len(named) == 1, [m.value for m in at.sidebar.markdown]
    return named[0].split("`")[1]


def upload(at: AppTest, name: str, data: bytes, mime: str = "application/json") -> AppTest:
    """``at`` after an upload on Your data (switched there first from Home)."""
    to_your_data(at).get("file_uploader")[0].set_value((name, data, mime))
    return ok(at.run())


def shown_error(at: AppTest) -> str:
    """The upload error: a fixed st.error line, then the parser's message verbatim in st.code."""
    assert [e.value for e in at.error] == [ERROR_HEAD]
    assert len(at.code) == 1, [c.value for c in at.code]
    return at.code[0].value


def markdown_texts(at: AppTest) -> list[str]:
    """Every text Streamlit renders as Markdown: markdown, captions, headings, alerts, metrics."""
    texts: list[str] = []
    for kind in ("markdown", "caption", "title", "header", "subheader", "error", "warning", "info", "success"):
        texts.extend(str(el.value) for el in getattr(at, kind))
    for m in at.metric:
        texts.extend([m.label, m.value])
    return texts


def jsonl(*records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def csv_bytes(rows: list[list]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()


def tool_call(call_id: str, name: str, args: dict) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


# ------------------------------------------------------------------------- the files uploaded

OPENAI_JSON = json.dumps(
    [
        {"role": "system", "content": "You are a retail agent."},
        {"role": "user", "content": "Is item 1234567890 in stock?"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call("call_1", "get_item", {"item_id": "1234567890"})]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"available": true}'},
        {"role": "assistant", "content": "Yes, it is in stock."},
    ]
).encode()

OPENAI_JSONL = jsonl(
    {
        "id": "conv-a",
        "user_id": "mei_kim_1",
        "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"}],
    },
    {
        "id": "conv-b",
        "user_id": "omar_ali_2",
        "messages": [
            {"role": "user", "content": "Where is order #W1?"},
            {"role": "assistant", "content": None, "tool_calls": [tool_call("c9", "get_order", {"order_id": "#W1"})]},
            {"role": "tool", "tool_call_id": "c9", "content": "shipped"},
            {"role": "assistant", "content": "It has shipped."},
        ],
    },
)


def _tau_row(task_id: int, user_id: str) -> dict:
    return {
        "task_id": task_id,
        "trial": 0,
        "reward": 1.0,
        "info": {"task": {"user_id": user_id, "instruction": "exchange a lamp"}},
        "traj": [
            {"role": "system", "content": "# Retail agent policy"},
            {"role": "user", "content": "I want to exchange item 1111111111."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [tool_call(f"t{task_id}", "get_item_details", {"item_id": "1111111111"})],
            },
            {"role": "tool", "tool_call_id": f"t{task_id}", "content": '{"price": 10}'},
        ],
    }


TAU_BENCH = json.dumps([_tau_row(0, "yusuf_rossi_1"), _tau_row(1, "yusuf_rossi_1"), _tau_row(2, "mia_garcia_2")]).encode()

ANTHROPIC_JSON = json.dumps(
    {
        "system": "You are a retail agent.",
        "messages": [
            {"role": "user", "content": "Track my order #W7, please."},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_order", "input": {"order_id": "#W7"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "delivered"},
                    {"type": "text", "text": "Thanks, and a return?"},
                ],
            },
            {"role": "assistant", "content": "It was delivered; I can start a return."},
        ],
    }
).encode()

CSV_FILE = csv_bytes(
    [
        ["id", "role", "tokens", "content"],
        ["m1", "system", 120, "You are a retail agent."],
        ["m2", "user", 14, "Is 2222222222 in stock?"],
        ["m3", "assistant", 9, "Yes."],
        ["m4", "user", 3, "Thanks"],
    ]
)

# name, bytes, mime, conversations, messages, shoppers
FORMATS = {
    # 5 messages, no user id
    "openai-json": ("chat.json", OPENAI_JSON, "application/json", 1, 5, 0),
    # 2 + 4 messages, two shoppers
    "openai-jsonl": ("chats.jsonl", OPENAI_JSONL, "application/jsonl", 2, 6, 2),
    # 3 rows of 4 messages, two distinct info.task.user_id
    "tau-bench": ("run.json", TAU_BENCH, "application/json", 3, 12, 2),
    # system + user + assistant + tool (the tool_result block) + user (its text block) + assistant
    "anthropic": ("messages.json", ANTHROPIC_JSON, "application/json", 1, 6, 0),
    "csv": ("chat.csv", CSV_FILE, "text/csv", 1, 4, 0),
}


# ------------------------------------------------------------------------------------- tests


def test_home_shows_the_sample_dataset():
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} not generated yet (scripts/make_sample_data.py)")
    convs = load_conversations(SAMPLE)
    at = open_home()
    assert data_in_use(at) == "sample"
    shown = metrics(at)
    assert shown["Conversations"] == f"{len(convs):,}"
    assert shown["Messages"] == f"{sum(len(c.messages) for c in convs):,}"
    assert shown["Shoppers"] == f"{len({c.user_id for c in convs if c.user_id}):,}"
    assert len(convs) > 1 and shown["Shoppers"] != "0"
    assert not at.error and not at.code
    links = {p.proto.page for p in at.get("page_link")}
    assert {Path(p).stem for p in links} >= {Path(p).stem for p in PAGES}


def test_home_draws_no_widget_and_names_the_conversation_in_use():
    """Home is a fresh server's first view: text, page links and metrics only (its widgets moved to
    Your data, docs/decisions.md "Home draws no widget below its links"); the shared selection is
    named in a line of text with a link to the page that changes it."""
    at = open_home()
    main = at.main
    for kind in ("selectbox", "text_input", "button", "file_uploader", "dataframe", "number_input",
                 "slider", "checkbox", "toggle", "radio", "multiselect", "text_area"):
        assert len(main.get(kind)) == 0, kind
    # nor in its sidebar: the data in use is named, the picker is on every other page (item 3)
    assert len(at.sidebar.selectbox) == 0
    assert data_in_use(at) == "sample"
    assert "Pick another dataset on Your data" in at.sidebar.caption[0].value
    conv = at.query_params["conv"]
    lines = [m.value for m in at.markdown if m.value.startswith("Conversation in use: ")]
    assert len(lines) == 1 and lines[0].endswith(f"conversation {md_escape(conv)}"), (lines, conv)
    links = [p.proto.page for p in at.get("page_link")]
    assert links[-1] == "your_data", links


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_upload_each_format_switches_the_data_and_every_page_runs(fmt):
    name, data, mime, n_convs, n_messages, n_shoppers = FORMATS[fmt]
    at = upload(open_home(), name, data, mime)
    assert not at.error and not at.code
    key = data_in_use(at)
    assert key.startswith("upload:")
    assert key in at.selectbox(key="data").options
    shown = metrics(at)
    assert dataset_named(at) == f"Upload: {name}".replace(".", "\\.")  # the name, Markdown-escaped
    assert (shown["Conversations"], shown["Messages"], shown["Shoppers"]) == (
        f"{n_convs:,}",
        f"{n_messages:,}",
        f"{n_shoppers:,}",
    )
    plural = "" if n_convs == 1 else "s"
    assert [s.value for s in at.success] == [f"Using the uploaded file: {n_convs} conversation{plural}."]
    for page in PAGES:
        at.switch_page(page)
        ok(at.run())
        assert data_in_use(at) == key, page
    # back home, the upload is still the data in use
    at.switch_page("app_pages/home.py")
    ok(at.run())
    assert data_in_use(at) == key
    assert metrics(at)["Messages"] == f"{n_messages:,}"


def test_a_new_upload_replaces_the_previous_one_and_the_picker_can_leave_it():
    at = upload(open_home(), "chat.json", OPENAI_JSON)
    first = data_in_use(at)
    at = upload(at, "chat.csv", CSV_FILE, "text/csv")
    second = data_in_use(at)
    assert second != first and second.startswith("upload:")
    assert first not in at.selectbox(key="data").options  # one upload per session
    at.selectbox(key="data").set_value("synthetic-1000")
    ok(at.run())
    assert metrics(at)["Messages"] == "1,000"


# name, bytes, what the message must start with (source, line, field) and contain
MALFORMED = {
    "invalid-json": (
        "broken.json",
        b'[{"role": "user", "content": "hi"},\n {"role": "assistant" "content": "x"}]',
        "broken.json, line 2: ",
        "invalid JSON at line 2 column 23: Expecting ',' delimiter",
    ),
    "unknown-role": (
        "role.json",
        b'[{"role": "user", "content": "hi"}, {"role": "bot", "content": "beep"}]',
        "role.json, line 2, field 'role': ",
        "unknown role 'bot'",
    ),
    "orphan-tool-result": (
        "orphan.json",
        json.dumps(
            [
                {"role": "user", "content": "hi"},
                {"role": "tool", "tool_call_id": "call_404", "content": "{}"},
            ]
        ).encode(),
        "orphan.json, line 2, field 'tool_call_id': ",
        "call_404",
    ),
    "csv-bad-tokens": (
        "tokens.csv",
        b"id,role,tokens,content\nm1,user,12,hi\nm2,assistant,twelve,hello\n",
        "tokens.csv, line 3, field 'tokens': ",
        "tokens must be a non-negative integer at most MAX_TOKENS = 2**53 - 1 = 9,007,199,254,740,991, got 'twelve'",
    ),
    "empty": ("empty.json", b"", "empty.json: ", "empty file"),
    "binary": ("blob.json", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\x00", "blob.json: ", "not UTF-8 text"),
}


MIXED_JSONL = jsonl(
    {"id": "a", "messages": [{"role": "user", "content": "one"}]},
    {"id": "b", "messages": [{"role": "user", "content": "two"}]},
    {"id": "c", "messages": [{"role": "user", "content": "three"}, {"role": "robot", "content": "x"}]},
    {"id": "d", "messages": [{"role": "user", "content": "four"}]},
)


def test_an_upload_with_one_bad_conversation_loads_the_rest_and_says_why():
    at = upload(open_home(), "mixed.jsonl", MIXED_JSONL, "application/jsonl")
    assert not at.error
    assert data_in_use(at).startswith("upload:")
    assert [s.value for s in at.success] == ["Using the uploaded file: 3 conversations."]
    assert [w.value for w in at.warning] == ["Loaded 3 of 4 conversations; 1 skipped."]
    (exp,) = at.expander
    assert exp.label == "Why 1 conversation was skipped"
    assert at.code[-1].value == (
        "conversation 'c', line 3, field 'messages[1].role': unknown role 'robot' (expected one "
        "of system, developer, user, assistant, tool, function)")


WRAPPED = json.dumps({"answer_generation": {"train_messages": [
    [{"role": "user", "content": "first try"}],
    [{"role": "system", "content": "You are AutoGPT."}, {"role": "user", "content": "go"},
     {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}},
     {"role": "function", "name": "f", "content": "done"}],
]}}).encode()


def test_a_wrapped_log_loads_with_a_messages_path():
    at = upload(open_home(), "wrapped.json", WRAPPED)
    message = shown_error(at)
    assert "unknown format" in message and "answer_generation.train_messages[-1]" in message
    at.text_input(key="messages_path").set_value("answer_generation.train_messages[-1]").run()
    assert not at.error
    assert data_in_use(at).startswith("upload:")
    assert [s.value for s in at.success] == ["Using the uploaded file: 1 conversation."]
    at.text_input(key="messages_path").set_value("answer_generation.train_messages[").run()
    assert "not a JMESPath expression" in shown_error(at)


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_upload_shows_a_readable_error_and_keeps_the_data(case):
    name, data, where, reason = MALFORMED[case]
    at = to_your_data(open_home({"data": "synthetic-1000"}))
    before = metrics(at)
    at = upload(at, name, data, "text/csv" if name.endswith(".csv") else "application/json")
    message = shown_error(at)
    assert message.startswith(where), message
    assert reason in message, message
    assert "Traceback" not in message
    assert data_in_use(at) == "synthetic-1000"
    assert metrics(at) == before
    assert not at.success
    still = [c.value for c in at.caption if c.value.startswith("The pages still use ")]
    assert still == [f"The pages still use {dataset_named(at)}; upload another file, or pick a dataset in the sidebar."]
    # the error stays put across an unrelated rerun and the other pages still run
    ok(at.run())
    assert shown_error(at) == message
    at.switch_page("app_pages/token_budget.py")
    ok(at.run())
    assert data_in_use(at) == "synthetic-1000"


def test_malformed_upload_after_a_good_one_keeps_the_good_one():
    at = upload(open_home(), "chats.jsonl", OPENAI_JSONL, "application/jsonl")
    key = data_in_use(at)
    at = upload(at, "role.json", MALFORMED["unknown-role"][1])
    assert shown_error(at).startswith("role.json, line 2, field 'role': ")
    assert data_in_use(at) == key
    assert any(c.value.startswith("The pages still use Upload: chats") for c in at.caption), [c.value for c in at.caption]
    assert (metrics(at)["Conversations"], metrics(at)["Messages"]) == ("2", "6")
    # a good file clears the error
    at = upload(at, "chat.csv", CSV_FILE, "text/csv")
    assert not at.error and not at.code
    assert metrics(at)["Messages"] == "4"


def test_upload_over_the_size_cap(monkeypatch):
    # app_pages/home.py reads MAX_UPLOAD_BYTES from convmem_dashboard.data when it runs: patch it first.
    cap = len(CSV_FILE)
    monkeypatch.setattr("convmem_dashboard.data.MAX_UPLOAD_BYTES", cap)
    at = open_home({"data": "synthetic-1000"})
    big = OPENAI_JSONL
    assert len(big) > cap
    message = shown_error(upload(at, "big.jsonl", big, "application/jsonl"))
    assert message == f"big.jsonl: the file has {len(big):,} bytes, over the {cap:,}-byte cap."
    assert data_in_use(at) == "synthetic-1000"
    assert metrics(at)["Messages"] == "1,000"
    # a file of exactly the cap is taken
    at = upload(at, "chat.csv", CSV_FILE, "text/csv")
    assert not at.error, [c.value for c in at.code]
    assert data_in_use(at).startswith("upload:")
    assert metrics(at)["Messages"] == "4"


@pytest.mark.parametrize(
    ("data", "conversations", "messages"),
    [("synthetic-1000", "1", "1,000"), ("synthetic-10000", "1", "10,000")],
)
def test_url_state_picks_the_dataset(data, conversations, messages):
    at = open_home({"data": data})
    assert data_in_use(at) == data
    shown = metrics(at)
    assert (shown["Conversations"], shown["Messages"]) == (conversations, messages)
    assert dataset_named(at) == f"Synthetic, {int(data.split('-')[1]):,} messages"


GONE = (
    "This link points to an uploaded file that is not loaded here; upload it again on Your data. "
    "Showing the sample data."
)


def test_bad_url_dataset_falls_back_to_the_sample():
    at = open_home({"data": "upload:0000000000000000"})  # an upload this server never held
    assert data_in_use(at) == "sample"
    at = open_home({"data": "synthetic-7"})
    assert data_in_use(at) == "sample"
    # not an upload (nothing to re-upload): a plain bad value, named as such (README: a value a
    # widget cannot take is dropped from the link with a warning; break24)
    assert [w.value for w in at.warning] == [missing_dataset_note("synthetic-7", ["sample"])]
    assert "upload" not in at.warning[0].value


@pytest.mark.parametrize("page", PAGES)
def test_a_link_to_an_upload_this_server_lost_warns_and_keeps_the_other_settings(page):
    at = dashboard_app()
    at.switch_page(page)
    query = {"data": "upload:00000000deadbeef"}
    query.update(
        {
            "app_pages/flaky_store.py": {"rate": "0.75", "psize": "10"},
            "app_pages/token_budget.py": {"limit": "600", "pin_sys": "true"},
            "app_pages/listing_eviction.py": {"only": "false"},
        }[page]
    )
    at.query_params.update(query)
    ok(at.run())
    assert data_in_use(at) == "sample"
    assert [w.value for w in at.warning][:1] == [GONE]
    # the settings that still apply to the sample are kept
    if page == "app_pages/flaky_store.py":
        assert (at.slider(key="rate").value, at.slider(key="psize").value) == (0.75, 10)
    elif page == "app_pages/token_budget.py":
        assert (at.slider(key="limit").value, at.toggle(key="pin_sys").value) == (600, True)
    else:
        assert at.checkbox(key="only").value is False
    ok(at.run())  # the warning stays while the sample stands in for the upload
    assert [w.value for w in at.warning][:1] == [GONE]
    at.switch_page("app_pages/home.py")
    ok(at.run())
    assert [w.value for w in at.warning] == [GONE]
    # picking a dataset (or uploading the file again) ends it; Home's sidebar has no picker
    to_your_data(at)
    at.selectbox(key="data").set_value("synthetic-1000")
    ok(at.run())
    assert not at.warning
    at.selectbox(key="data").set_value("sample")
    ok(at.run())
    assert not at.warning


def test_a_link_to_an_upload_this_server_still_holds_opens_it_in_a_new_session():
    first = upload(open_home(), "chats.jsonl", OPENAI_JSONL, "application/jsonl")
    key = data_in_use(first)
    other = open_home({"data": key})  # the shared link, in another session of the same server
    assert data_in_use(other) == key and not other.warning
    assert dataset_named(other) == r"Upload: chats\.jsonl"
    assert metrics(other)["Messages"] == "6"
    # re-uploading the file after the warning makes the link's data the data in use
    gone = open_home({"data": "upload:00000000deadbeef"})
    assert [w.value for w in gone.warning] == [GONE]
    again = upload(gone, "chats.jsonl", OPENAI_JSONL, "application/jsonl")
    assert data_in_use(again) == key and not again.warning


def test_user_text_in_an_error_is_shown_verbatim_in_code():
    name = f"{NASTY}.json"
    data = json.dumps([{"role": "user", "content": "hi"}, {"role": NASTY, "content": "x"}]).encode()
    at = upload(open_home(), name, data)
    message = shown_error(at)
    assert message.startswith(f"{name}, line 2, field 'role': unknown role ")
    assert "<script>alert(1)</script>" in message and "**bold**" in message
    for text in markdown_texts(at):
        assert "<script>" not in text and "**bold**" not in text, text


def test_user_text_of_a_good_upload_never_reaches_markdown():
    # the file name, the conversation id, the shopper and the content all carry Markdown/HTML
    name = f"{NASTY}.jsonl"
    data = jsonl(
        {
            "id": NASTY,
            "user_id": NASTY,
            "messages": [
                {"role": "user", "content": f"{NASTY} about 1234567890"},
                {"role": "assistant", "content": f"{NASTY} 1234567890 again"},
            ],
        }
    )
    at = upload(open_home(), name, data, "application/jsonl")
    assert data_in_use(at).startswith("upload:")
    assert dataset_named(at) == r"Upload: \<script\>alert\(1\)\<\/script\>\*\*bold\*\*\.jsonl"
    for page in (None, *PAGES):
        if page:
            at.switch_page(page)
            ok(at.run())
        for text in markdown_texts(at):
            assert "<script>" not in text and "**bold**" not in text, (page, text)
