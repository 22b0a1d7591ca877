"""Flaky store's "Reproduce this run in Python" runs as shown and reproduces the run
(convmem_dashboard.view_flaky_store.reproduce_code / messages_source). A new user found it had no
imports and never defined ``messages``. Each snippet is executed from the project root and its
load compared with the page's own run: the same messages loaded, the same calls, the same
virtual time."""

from __future__ import annotations

import os

import pytest

from convmem import PageLoadError

from convmem_dashboard import view_flaky_store as view
from convmem_dashboard.data import ROOT, SAMPLE_FILE, SAMPLE_SQLITE, get_dataset
from convmem_dashboard.view_flaky_store import FlakySettings, messages_source, reproduce_code

SAMPLE_PATHS = (SAMPLE_FILE.relative_to(ROOT).as_posix(), SAMPLE_SQLITE.relative_to(ROOT).as_posix())


def snippet_run(code: str) -> dict:
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        scope: dict = {}
        exec(compile(code, "<reproduce>", "exec"), scope)  # noqa: S102 - the page's own code
        return scope
    finally:
        os.chdir(here)


@pytest.mark.parametrize("dataset_key", ["sample", "sample-db", "synthetic-1000"])
@pytest.mark.parametrize("settings", [
    FlakySettings(),
    FlakySettings(rate=0.4, seed=3, page_size=7),
    FlakySettings(store="SQLite store (keyset cursors)", rate=0.3, page_size=4, arrivals=0),
], ids=["defaults", "offset faults", "sqlite"])
def test_the_snippet_runs_and_loads_what_the_page_loaded(dataset_key, settings):
    conv = get_dataset("sample" if dataset_key == "sample-db" else dataset_key).conversations[0]
    page = view.run(settings, conv.id, conv.messages)
    code = reproduce_code(settings, conv.id, messages_source(dataset_key, conv.id, *SAMPLE_PATHS))
    if page.failure is not None:  # a load that gives up raises the same error, as far in
        with pytest.raises(PageLoadError) as raised:
            snippet_run(code)
        assert (len(raised.value.loaded), str(raised.value.cursor)) == (page.error["loaded"], page.error["cursor"])
        return
    scope = snippet_run(code)
    assert [m.id for m in scope["messages"]] == [m.id for m in conv.messages]
    assert [m.id for m in scope["loaded"]] == list(page.loaded_ids)
    calls = scope["store"].calls
    assert [c.outcome for c in calls] == [c["outcome"] for c in page.calls]
    assert [c.at for c in calls] == pytest.approx([c["started_at"] for c in page.calls])

def test_an_upload_names_a_file_to_fill_in():
    code = messages_source("upload:0123abcd", "c-1", *SAMPLE_PATHS)
    assert 'load_conversations("your-file.jsonl")' in code and "c.id == 'c-1'" in code
