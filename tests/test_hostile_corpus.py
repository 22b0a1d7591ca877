"""Issue 9: the hostile-input corpus (tests/hostile_corpus, manifest expected.json) through the
importer and through the Your data page under AppTest, opening every page after each accepted file.

An entry marked ``pending`` expects better than today's importer does (e.g. a UTF-16 file should
say UTF-16, not "not UTF-8 at byte 0"): it runs as xfail(strict=True), so once the importer
rewrite meets it the test fails and the mark must be removed from the manifest.
Big files (huge lines, many lines) are generated here, not committed. There is no CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apptest_support import PAGES, dashboard_app, metrics, ok, to_your_data, upload_error, upload_file
from convmem import FormatError, parse_conversations

CORPUS = Path(__file__).resolve().parent / "hostile_corpus"
MANIFEST = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
FILES: dict[str, dict] = MANIFEST["files"]
MIB = 1024 * 1024


def generated(name: str) -> bytes:
    """The big files of MANIFEST["generated"], built the same way every run."""
    if name == "huge_line.jsonl":
        content = ("0123456789 abcdefghij " * (8 * MIB // 22 + 1))[: 8 * MIB]
        msgs = [{"role": "user", "content": content, "tokens": 2_000_000}, {"role": "assistant", "content": "ok", "tokens": 1}]
        return (json.dumps({"id": "huge", "messages": msgs}) + "\n").encode()
    if name == "many_lines.jsonl":
        return "".join(
            json.dumps({"id": f"c{k}", "messages": [{"role": "user", "content": f"m{k}", "tokens": 1}]}) + "\n"
            for k in range(20_000)
        ).encode()
    if name == "huge_csv_cell.csv":
        return b"id,role,tokens,content\nm1,user,5,\"" + b"=x," * (8 * MIB // 3) + b'"\n'
    raise KeyError(name)


def content(name: str) -> bytes:
    return generated(name) if name in MANIFEST["generated"] else (CORPUS / name).read_bytes()


def marks(expect: dict) -> list:
    if expect.get("pending"):
        return [pytest.mark.xfail(strict=True, reason=f"pending: {expect['pending']}")]
    return []


def cases(home: bool) -> list:
    out = []
    for name, expect in [*FILES.items(), *MANIFEST["generated"].items()]:
        if home and "home" in expect:
            expect = expect["home"]
        out.append(pytest.param(name, expect, id=name, marks=marks(expect)))
    return out


def test_manifest_covers_every_corpus_file_and_the_corpus_is_big_enough():
    on_disk = {p.name for p in CORPUS.iterdir() if p.name not in ("expected.json", "make_corpus.py", "__pycache__")}
    assert on_disk == set(FILES)
    assert len(FILES) >= 40
    kinds = {e["expect"] for e in FILES.values()}
    assert kinds == {"accepted", "error"}
    for name, expect in [*FILES.items(), *MANIFEST["generated"].items()]:
        assert (expect["expect"] == "accepted") == ("conversations" in expect), name


# ------------------------------------------------------------------------------------ importer


@pytest.mark.parametrize(("name", "expect"), cases(home=False))
def test_importer(name, expect):
    data = content(name)
    if expect["expect"] == "accepted":
        conversations = parse_conversations(data, source_name=name)
        assert len(conversations) == expect["conversations"]
        assert sum(len(c.messages) for c in conversations) == expect["messages"]
    else:
        with pytest.raises(FormatError) as info:
            parse_conversations(data, source_name=name)
        message = str(info.value)
        assert message.startswith(name), message  # names the file
        assert len(message) < 600, message  # readable: never the whole input
        for part in expect["error"]:
            assert part.lower() in message.lower(), (part, message)


# ----------------------------------------------------------------------------------- Your data page


@pytest.mark.parametrize(("name", "expect"), cases(home=True))
def test_home_page_and_every_page_after(name, expect):
    at = to_your_data(ok(dashboard_app().run()))
    before = metrics(at)
    at = upload_file(at, name, content(name), "text/csv" if name.endswith(".csv") else "application/json")
    error = upload_error(at)
    if expect["expect"] == "error":
        assert error is not None, f"{name} was accepted"
        for part in expect["error"]:
            assert part.lower() in error.lower(), (part, error)
        assert metrics(at) == before  # nothing was loaded
        return
    assert error is None, error
    shown = metrics(at)
    assert shown["Conversations"] == f"{expect['conversations']:,}"
    assert shown["Messages"] == f"{expect['messages']:,}"
    for page in PAGES[1:]:
        at.switch_page(page)
        ok(at.run())
        captions = [str(c.value) for c in at.sidebar.caption]
        assert any(c.startswith("Upload: ") for c in captions), (page, captions)  # the upload is in use
