"""The dashboard in a real browser: `streamlit run` served headless, Debian's Chromium via Playwright.

Each test gets a fresh browser context, so a fresh Streamlit session. Screenshots of every page go
to tests/e2e/screenshots/ (git-ignored): look at them after a run.
"""

from __future__ import annotations

import csv
import io
import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from e2e_helpers import (
    CHARTS,
    assert_columns_in_view,
    assert_no_exception,
    cut_metrics,
    dataframe,
    dataset_line,
    metric_values,
    screenshot,
    text_is_cut,
    wait_for_app,
)

pytestmark = pytest.mark.e2e

#: (name, path, title shown as the page's h1, plotly charts expected at least)
PAGES = [
    ("home", "/", "convmem", 0),
    ("your_data", "/your_data", "Your data", 0),
    ("flaky_store", "/flaky_store", "Flaky store", 1),
    ("token_budget", "/token_budget", "Token budget", 2),
    ("listing_eviction", "/listing_eviction", "Listing eviction", 2),
]
NAV_LABELS = {"home": "Home", "your_data": "Your data", "flaky_store": "Flaky store", "token_budget": "Token budget",
              "listing_eviction": "Listing eviction"}

CHART_SIGNATURE_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => {
    const svg = el.querySelector('.main-svg');
    const s = (svg ? svg.innerHTML : '') + JSON.stringify(el.layout && el.layout.shapes || []);
    let h = 0;
    for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
    return h + ':' + s.length;
}).join('|')"""


def open_page(page, base: str, path: str, *, charts: int = 0) -> None:
    page.goto(base + path, wait_until="domcontentloaded")
    wait_for_app(page, charts=charts)


def query(page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def heading(page) -> str:
    return page.locator("h1").first.inner_text(timeout=10_000)


def slider(page, label: str):
    """The thumb (keyboard-focusable input) of the st.slider whose label contains ``label``."""
    box = page.locator('[data-testid="stSlider"]').filter(has_text=label)
    assert box.count() >= 1, f"no slider labelled {label!r} on {page.url}"
    return box.first.locator('[role="slider"], input[type="range"]').first


def slider_value(thumb) -> str:
    return thumb.get_attribute("aria-valuetext") or thumb.get_attribute("aria-valuenow") or thumb.input_value()


def assert_sidebar_uses_upload(page, filename: str) -> None:
    """The sidebar's "Data in use" picker (on Home: the key the sidebar names, issue 10 item 3)
    holds an upload key, its caption names the file, and the URL's ?data= keeps the key."""
    sidebar = page.locator('[data-testid="stSidebar"]')
    box = sidebar.get_by_role("combobox", name="Data in use")
    value = box.input_value() if box.count() else sidebar.locator("code").first.inner_text()
    assert query(page).get("data") == [value], f"?data= of {page.url} is not {value!r}"
    assert value.startswith("upload:"), f"sidebar data picker shows {value!r} on {page.url}"
    assert query(page).get("data") == [value], f"data key not in the URL: {page.url}"
    assert filename in sidebar.inner_text(), f"{filename} not named in the sidebar on {page.url}"


# ---------------------------------------------------------------------------------- every page


@pytest.mark.parametrize(("name", "path", "title", "charts"), PAGES, ids=[p[0] for p in PAGES])
def test_page_renders(page, streamlit_url, screenshot_dir, name, path, title, charts):
    open_page(page, streamlit_url, path, charts=charts)
    assert title in heading(page)
    if charts:
        assert page.locator(CHARTS).count() >= charts
        # every chart actually drew something (an svg with a plot area), not an empty frame
        drawn = page.locator(".js-plotly-plot .main-svg .cartesianlayer, .js-plotly-plot .main-svg .gl-container, .js-plotly-plot canvas")
        assert drawn.count() >= 1
    values = metric_values(page)
    assert values and all(values), f"metrics missing or empty on {path}: {values}"
    assert_no_exception(page)
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0, "an st.error is shown on first load"
    screenshot(page, screenshot_dir, name)
    assert not page.console_errors, f"JavaScript errors on {path}: {page.console_errors}"


# ------------------------------------------------------------------------------ sliders and URL

SLIDERS = [
    # page, path, slider label, query key, charts
    ("token_budget", "/token_budget", "Limit (tokens)", "limit", 2),
    ("listing_eviction", "/listing_eviction", "max_listings", "cap", 2),
    ("flaky_store", "/flaky_store", "Failure rate", "rate", 1),
]


@pytest.mark.parametrize(("name", "path", "label", "param", "charts"), SLIDERS, ids=[s[0] for s in SLIDERS])
def test_slider_changes_numbers_chart_and_url(page, streamlit_url, screenshot_dir, name, path, label, param, charts):
    open_page(page, streamlit_url, path, charts=charts)
    thumb = slider(page, label)
    before_value = slider_value(thumb)
    before_metrics = metric_values(page)
    before_chart = page.evaluate(CHART_SIGNATURE_JS)
    assert param not in query(page), f"{param} in the URL before any change: {page.url}"

    at_max = thumb.get_attribute("max") is not None and thumb.input_value() == thumb.get_attribute("max")
    thumb.focus()
    thumb.press("Home" if at_max else "End")  # keyboard, like a user tabbing to the thumb
    page.wait_for_url(re.compile(rf"[?&]{re.escape(param)}="), timeout=15_000)
    wait_for_app(page, charts=charts)
    # plotly redraws after the rerun's figure arrives: wait (bounded) for some chart to differ
    page.wait_for_function(f"prev => ({CHART_SIGNATURE_JS})() !== prev", arg=before_chart, timeout=10_000)

    after_value = slider_value(slider(page, label))
    assert after_value != before_value
    assert query(page)[param] == [after_value] or float(query(page)[param][0]) == float(after_value.replace(",", ""))
    after_metrics = metric_values(page)
    assert after_metrics != before_metrics, f"no metric changed after {label} {before_value} → {after_value}"
    assert_no_exception(page)
    screenshot(page, screenshot_dir, f"{name}_slider_moved")

    # The link reproduces the view: a new session opened on this URL shows the same value and numbers.
    url = page.url
    other = page.context.new_page()
    other.goto(url, wait_until="domcontentloaded")
    wait_for_app(other, charts=charts)
    assert slider_value(slider(other, label)) == after_value
    assert metric_values(other) == after_metrics
    other.close()


@pytest.mark.parametrize(
    ("path", "expect", "charts"),
    [
        ("/token_budget?limit=600", {"Limit (tokens)": "600"}, 2),
        ("/token_budget?limit=800&tmode=percent&tgt=40", {"Limit (tokens)": "800", "Target (% of limit)": "40"}, 2),
        ("/listing_eviction?cap=1", {"max_listings": "1"}, 2),
        ("/flaky_store?rate=0.75&psize=10", {"Failure rate": "0.75", "Page size": "10"}, 1),
    ],
    ids=["token_budget-limit", "token_budget-target", "listing_eviction-cap", "flaky_store-rate"],
)
def test_query_params_set_widgets(page, streamlit_url, path, expect, charts):
    open_page(page, streamlit_url, path, charts=charts)
    assert_no_exception(page)
    for label, value in expect.items():
        got = slider_value(slider(page, label))
        assert float(got.replace(",", "")) == float(value), f"{label}: URL says {value}, widget shows {got}"
    # the URL keeps the values it was opened with (nothing reset them)
    q = query(page)
    for part in urlsplit(path).query.split("&"):
        k, v = part.split("=")
        assert q.get(k) == [v], f"{k} changed in the URL: {page.url}"


# ------------------------------------------------------------------------------------- uploads

SMALL_JSONL = [
    {"id": "e2e-a", "user_id": "shopper-1", "messages": [
        {"role": "system", "content": "You are a shop assistant.", "tokens": 6},
        {"role": "user", "content": "Is listing 1234567890 in stock?", "tokens": 9},
        {"role": "assistant", "content": "Yes, 1234567890 ships tomorrow.", "tokens": 9},
    ]},
    {"id": "e2e-b", "user_id": "shopper-1", "messages": [
        {"role": "user", "content": "Compare 1234567890 with 2345678901.", "tokens": 11},
        {"role": "assistant", "content": "2345678901 is lighter.", "tokens": 7},
    ]},
]


def upload(page, path) -> None:
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(str(path))


def test_upload_valid_jsonl(page, streamlit_url, screenshot_dir, tmp_path):
    f = tmp_path / "e2e_small.jsonl"
    f.write_text("\n".join(json.dumps(c) for c in SMALL_JSONL) + "\n", encoding="utf-8")
    open_page(page, streamlit_url, "/your_data")
    upload(page, f)
    page.get_by_text("Using the uploaded file: 2 conversations").wait_for(timeout=30_000)
    wait_for_app(page)
    assert_no_exception(page)
    values = metric_values(page)
    assert "Upload: e2e_small.jsonl" in dataset_line(page)
    assert values[0:3] == ["2", "5", "1"], values  # conversations, messages, shoppers
    assert_sidebar_uses_upload(page, "e2e_small.jsonl")
    screenshot(page, screenshot_dir, "your_data_upload_ok")

    # The upload is the data of the other pages too (same session: navigate in the app).
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Listing eviction").click()
    page.wait_for_url(re.compile(r"/listing_eviction"))
    wait_for_app(page, charts=2)
    assert_no_exception(page)
    assert_sidebar_uses_upload(page, "e2e_small.jsonl")
    assert metric_values(page)[3] == "2"  # distinct ids before eviction: 1234567890, 2345678901

    # The link, sent to someone on the same server (a new session), opens the same upload.
    other = page.context.browser.new_context(viewport=page.viewport_size).new_page()
    other.goto(page.url, wait_until="domcontentloaded")
    wait_for_app(other, charts=2)
    assert_no_exception(other)
    assert_sidebar_uses_upload(other, "e2e_small.jsonl")
    assert metric_values(other) == metric_values(page)
    assert other.locator('[data-testid="stAlertContentWarning"]').count() == 0
    other.context.close()


def test_link_to_an_upload_this_server_lost_warns_and_keeps_the_other_settings(page, streamlit_url, screenshot_dir):
    """A shared link naming an upload the server no longer holds: the sample, a clear warning on
    the page, and the link's other settings where they still apply."""
    open_page(page, streamlit_url, "/token_budget?data=upload:00000000deadbeef&limit=600&pin_sys=true", charts=2)
    assert_no_exception(page)
    warning = page.locator('[data-testid="stAlertContentWarning"]')
    assert warning.count() == 1
    assert warning.first.inner_text().strip().endswith(  # after the icon's ligature name
        "This link points to an uploaded file that is not loaded here; upload it again on Your data. "
        "Showing the sample data."
    )
    sidebar = page.locator('[data-testid="stSidebar"]')
    assert sidebar.get_by_role("combobox", name="Data in use").input_value() == "sample"
    assert slider_value(slider(page, "Limit (tokens)")) == "600"
    assert query(page).get("limit") == ["600"] and query(page).get("pin_sys") == ["true"]
    screenshot(page, screenshot_dir, "link_to_lost_upload")
    # every page says so while the sample stands in
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Flaky store").click()
    page.wait_for_url(re.compile(r"/flaky_store"))
    wait_for_app(page, charts=1)
    assert "This link points to an uploaded file that is not loaded here" in (
        page.locator('[data-testid="stAlertContentWarning"]').first.inner_text()
    )


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        # line 2: an unknown role
        ("\n".join([json.dumps(SMALL_JSONL[0]),
                    json.dumps({"id": "x", "messages": [{"role": "bot", "content": "hi"}]})]),
         ["line 2", "role", "bot"]),
        # line 2: not JSON at all
        (json.dumps(SMALL_JSONL[0]) + '\n{"id": "y", "messages": [{"role": "user", \n',
         ["line 2"]),
    ],
    ids=["bad-role", "broken-json"],
)
def test_upload_with_one_bad_conversation_loads_the_rest_and_says_why(page, streamlit_url, screenshot_dir, tmp_path, content, expect, request):
    """Issue 7: a fault in one conversation skips it with line, field and value; the rest load."""
    f = tmp_path / "e2e_bad.jsonl"
    f.write_text(content, encoding="utf-8")
    open_page(page, streamlit_url, "/your_data")
    upload(page, f)
    warning = page.locator('[data-testid="stAlertContentWarning"]').filter(has_text="skipped")
    warning.first.wait_for(timeout=30_000)
    wait_for_app(page)
    assert_no_exception(page)
    assert "Loaded 1 of 2 conversations; 1 skipped." in warning.first.inner_text()
    page.get_by_text(re.compile(r"^Why 1 conversation was skipped")).first.click()
    detail = page.locator('[data-testid="stCode"]').first.inner_text()
    for word in expect:
        assert word in detail, f"{word!r} not in the reason shown: {detail!r}"
    assert "Traceback" not in page.locator('[data-testid="stMain"]').inner_text()
    screenshot(page, screenshot_dir, f"your_data_upload_skipped_{request.node.callspec.id}")


def test_upload_with_no_readable_conversation_shows_readable_error(page, streamlit_url, screenshot_dir, tmp_path):
    f = tmp_path / "e2e_bad.jsonl"
    f.write_text(json.dumps({"id": "x", "messages": [{"role": "bot", "content": "hi"}]}) + "\n",
                 encoding="utf-8")
    open_page(page, streamlit_url, "/your_data")
    before = metric_values(page)
    upload(page, f)
    error = page.locator('[data-testid="stAlertContentError"]')
    error.first.wait_for(timeout=30_000)
    wait_for_app(page)
    assert_no_exception(page)
    assert "Could not read the upload" in error.first.inner_text()
    detail = page.locator('[data-testid="stCode"]').first.inner_text()
    for word in ("e2e_bad.jsonl", "line 1", "role", "bot"):
        assert word in detail, f"{word!r} not in the error shown: {detail!r}"
    assert "Traceback" not in page.locator('[data-testid="stMain"]').inner_text()
    assert metric_values(page) == before, "a failed upload changed the data in use"
    screenshot(page, screenshot_dir, "your_data_upload_error")


# ------------------------------------------------------------------------------------ downloads


def test_token_budget_downloads(page, streamlit_url):
    open_page(page, streamlit_url, "/token_budget", charts=2)
    caption = page.get_by_text(re.compile(r"^[\d,]+ messages · [\d,]+ tokens$")).first.inner_text()
    n_messages = int(caption.split(" messages")[0].replace(",", ""))

    button = page.get_by_role("button", name="Download the table (CSV)")
    button.scroll_into_view_if_needed()
    with page.expect_download(timeout=30_000) as info:
        button.click()
    download = info.value
    assert download.suggested_filename.endswith(".csv")
    text = open(download.path(), encoding="utf-8").read()
    rows = list(csv.DictReader(io.StringIO(text)))
    header = text.splitlines()[0].split(",")
    assert {"id", "role", "tokens"} <= set(header), header
    assert len(rows) == n_messages
    assert all(r["role"] in {"system", "user", "assistant", "tool", "summary"} for r in rows)
    assert all(r["tokens"].isdigit() for r in rows)

    button = page.get_by_role("button", name="Download this context (JSON)")
    with page.expect_download(timeout=30_000) as info:
        button.click()
    ctx = json.loads(open(info.value.path(), encoding="utf-8").read())
    assert isinstance(ctx, list) and ctx
    assert {"id", "role", "tokens"} <= set(ctx[0])
    wait_for_app(page)
    assert_no_exception(page)


# ---------------------------------------------------------------------------- real retail data


def test_real_retail_upload_every_page(page, streamlit_url, screenshot_dir, tau_retail_file):
    open_page(page, streamlit_url, "/your_data")
    upload(page, tau_retail_file)
    page.get_by_text(re.compile(r"Using the uploaded file: \d+ conversations")).wait_for(timeout=90_000)
    wait_for_app(page, timeout_ms=90_000)
    assert_no_exception(page)
    values = metric_values(page)
    assert tau_retail_file.name in dataset_line(page)  # 67 characters: the line wraps (item 4)
    conversations = int(values[0].replace(",", ""))
    assert conversations > 100, values
    page.set_viewport_size({"width": 1400, "height": 900})
    assert cut_metrics(page) == []
    screenshot(page, screenshot_dir, "retail_your_data")

    for name, _path, title, charts in PAGES:
        if name == "your_data":
            continue  # the page the upload was made on
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text=NAV_LABELS[name]).click()
        page.wait_for_url(re.compile(rf"/{name}" if name != "home" else r"/(\?|$)"))
        wait_for_app(page, charts=charts, timeout_ms=90_000)
        assert title in heading(page)
        assert_sidebar_uses_upload(page, tau_retail_file.name)
        assert_no_exception(page)
        nums = metric_values(page)
        assert nums and all(nums), f"{name}: empty metric in {nums}"
        assert cut_metrics(page) == [], name  # 1,400 px wide, the real upload's names and figures
        assert sum(bool(re.search(r"\d", v)) for v in nums) >= 3, f"{name}: too few numbers in {nums}"
        assert page.locator(CHARTS).count() >= charts
        screenshot(page, screenshot_dir, f"retail_{name}")


def test_real_retail_link_opens_that_view(page, streamlit_url, tau_retail_file):
    """A link naming the built-in real dataset and a limit opens on exactly that."""
    open_page(page, streamlit_url, "/token_budget?data=retail&limit=3000", charts=2)
    assert_no_exception(page)
    assert page.locator('[data-testid="stSidebar"]').get_by_role("combobox", name="Data in use").input_value() == "retail"
    assert slider_value(slider(page, "Limit (tokens)")) == "3,000"  # thousands separators (item 4)
    assert query(page).get("data") == ["retail"] and query(page).get("limit") == ["3000"]
    values = metric_values(page)
    assert len(values) >= 6 and all(values), values


# ------------------------------------------------------- what a 1280-px-wide window shows whole


def test_flaky_store_all_calls_failing_reads_clean(page, streamlit_url, screenshot_dir):
    open_page(page, streamlit_url, "/flaky_store?rate=1.0", charts=1)
    assert_no_exception(page)
    error = page.locator('[data-testid="stAlertContentError"]').first.inner_text()
    assert "PageLoadError at cursor (first page) after 5 attempts" in error and "None" not in error
    # the call log: every column whole, the first page's cursor in words, no "None" for no backoff,
    # and no empty rows below its five calls
    log = dataframe(page, "call")
    assert log["fits"], log["heads"]
    assert "(first page)" in log["cells"] and "None" not in log["cells"]
    assert log["height"] <= 35 * 6 + 5
    errors = dataframe(page, "call #")
    assert errors["fits"] and sum(c.startswith("TransientError") for c in errors["cells"]) == 5
    faults = dataframe(page, "fault")
    assert faults["fits"] and "effect on a load" in faults["heads"]
    assert any(c.startswith("loses nothing: the call is retried") for c in faults["cells"])
    # the timeline starts a little left of 0, so the markers at 0 are whole
    x0 = page.evaluate("() => document.querySelector('.js-plotly-plot').layout.xaxis.range[0]")
    assert x0 < 0
    screenshot(page, screenshot_dir, "flaky_store_all_fail")


def test_key_table_text_is_readable(page, streamlit_url, screenshot_dir):
    """The text a reader comes for is drawn whole, without scrolling the table sideways."""
    open_page(page, streamlit_url, "/listing_eviction?only=false", charts=2)
    assert_columns_in_view(page, "#", ["#", "why", "ids before → after", "released", "shared", "fate"])  # "why" first
    why = dataframe(page, "#")
    assert any(c.startswith("did not lower the count") for c in why["cells"])
    screenshot(page, screenshot_dir, "listing_eviction_all_conversations")

    open_page(page, streamlit_url, "/token_budget?cmp=true&sweep=true", charts=2)  # both start closed
    assert_columns_in_view(page, "id", ["id", "role", "tokens", "reason", "preview"])  # drop event
    assert_columns_in_view(page, "#", ["#", "id", "role", "tokens", "preview"])  # context at a step
    assert_columns_in_view(page, "step", ["step", "id", "role", "tokens", "status", "reason", "preview"])
    assert dataframe(page, "limit (tokens)", second="compactions")["fits"]  # the sweep table
    assert dataframe(page, "limit (tokens)", second="target (tokens)")["fits"]  # the sweep's cost
    assert dataframe(page, "metric")["fits"]  # A against B
    # Compare B: the toggle's label whole, all four policies shown as chips
    label = page.get_by_text("B summaries", exact=True).first
    assert label.is_visible() and not text_is_cut(label), "the B summaries label is cut"
    box = page.locator('[data-testid="stMultiSelect"]').filter(has_text="B policies").first
    chips = box.locator("[data-tag]")
    assert chips.all_inner_texts() == ["pin_system", "pin_latest_user", "keep_tool_groups", "start_on_user"]
    right = box.bounding_box()["x"] + box.bounding_box()["width"]
    for k in range(4):
        chip = chips.nth(k).bounding_box()
        assert chip and chip["x"] + chip["width"] <= right, f"policy chip {k} cut off"
    # metric labels carry their unit and are not cut; nor are the toggles' labels
    labels = page.locator('[data-testid="stMetricLabel"]')
    assert {"Final total (tokens)", "Mean context (tokens)"} <= {t.strip() for t in labels.all_inner_texts()}
    for k in range(labels.count()):
        assert not text_is_cut(labels.nth(k)), f"metric label {labels.nth(k).inner_text()!r} is cut"
    for name in ("Pin system", "Pin latest user", "Keep tool groups", "Start on user", "Summaries"):
        assert not text_is_cut(page.get_by_text(name, exact=True).first), f"the {name!r} label is cut"


def test_token_budget_without_drop_events_says_so(page, streamlit_url, screenshot_dir):
    open_page(page, streamlit_url, "/token_budget?limit=1220", charts=2)  # the default conversation: 1,219 tokens
    assert_no_exception(page)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "Nothing was dropped at this limit" in main
    assert "riangle" not in main and "selected drop event" not in main
    placeholder = page.get_by_label("Add step (message #)").get_attribute("placeholder")
    assert placeholder.endswith("(the last add; click the total line to pick a step)"), placeholder
    screenshot(page, screenshot_dir, "token_budget_no_drops")


def test_a_dataset_switch_starts_the_limit_from_the_new_default_in_both_widgets(page, streamlit_url, tau_retail_file):
    """Token budget on the sample, then retail, then synthetic-1000 in the sidebar (session 27's
    breaker and new user): the limit slider and the exact limit input show the same value, the
    new conversation's default, and the sample's 430 never comes back from the URL below
    synthetic-1000's range (it raised StreamlitValueBelowMinError)."""
    open_page(page, streamlit_url, "/token_budget", charts=2)
    exact = page.get_by_role("spinbutton", name="Exact limit")
    assert exact.input_value() == slider_value(slider(page, "Limit (tokens)")).replace(",", "") == "430"
    sidebar = page.locator('[data-testid="stSidebar"]')
    for key in ("retail", "synthetic-1000"):
        sidebar.get_by_role("combobox", name="Data in use").click()
        page.get_by_role("option", name=key, exact=True).click()
        page.wait_for_url(re.compile(rf"data={key}"))
        wait_for_app(page, charts=2, timeout_ms=90_000)
        assert_no_exception(page)
        shown = slider_value(slider(page, "Limit (tokens)")).replace(",", "")
        assert exact.input_value() == shown, (key, exact.input_value(), shown)
        assert "limit" not in query(page), page.url  # the default: nothing to keep in the link
