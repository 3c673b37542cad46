"""`review site`: a static, self-contained site of an arena, checked as files (links resolve, permissions, escaping,
CSP on every page) and in headless Chromium (Debian's package): the DOM after the page's own script ran (filters
by agent, board, flag and text from the URL's hash), the review pages with no script at all, and screenshots.

The site is built once per module from a small arena written directly (tests/smallarena.py), not from reviews
of the example arena, which take minutes each on 2 cores.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from reviewbench.cli import main
from tests import smallarena

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian package "
                                                             "`chromium`; `make venv` installs it)")
SCREENSHOTS = os.environ.get("REVIEWBENCH_SCREENSHOTS")  # a folder to keep the screenshots in, for people


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("site")
    arena = smallarena.build(base / "arena")
    cal = smallarena.calibration_report(base / "cal")
    out = base / "site"
    assert main(["site", "--arena", str(arena), "--out", str(out), "--calibration", str(cal)]) == 0
    return arena, out


# --- the files ------------------------------------------------------------------------------------------------
class _Doc(HTMLParser):
    """Elements with their attributes and own text, flat, in document order (enough to assert on)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[dict] = []
        self._open: list[dict] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.elements.append(el)
        if tag not in ("meta", "link", "br", "img", "input", "hr", "path", "use"):
            self._open.append(el)

    def handle_endtag(self, tag):
        while self._open:
            if self._open.pop()["tag"] == tag:
                break

    def handle_data(self, data):
        for el in self._open:
            el["text"] += data

    def all(self, tag: str, **attrs: str) -> list[dict]:
        return [e for e in self.elements if e["tag"] == tag and all(e["attrs"].get(k) == v for k, v in attrs.items())]


def _pages(out: Path) -> list[Path]:
    return sorted(out.rglob("*.html"))


def test_every_review_draft_and_report_has_its_page(built):
    arena, out = built
    for sid in ("agent1-001", "agent2-001", "agent1-002", "agent3-001"):
        assert (out / "reviews" / sid / "index.html").is_file()
        assert (out / "reviews" / sid / "review.json").read_bytes() == (arena / "reviews" / sid / "review.json").read_bytes()
        assert (out / "reviews" / sid / "review.md").is_file()
    assert (out / "reviews" / "agent2-002" / "partial" / "index.html").is_file()
    assert {p.name for p in (out / "calibration").iterdir()} == {"local-2026-12-02.html", "local-2026-12-02.json",
                                                                "local-2026-12-02.png"}
    import json

    manifest = json.loads((out / "site.json").read_text())
    assert manifest["schema"] == "reviewbench.site/1" and manifest["drafts"] == ["agent2-002"]
    assert sorted(manifest["reviews"]) == ["agent1-001", "agent1-002", "agent2-001", "agent3-001"]


def test_every_link_resolves_inside_the_site(built):
    _, out = built
    checked = 0
    for page in _pages(out):
        doc = _Doc(page.read_text(encoding="utf-8"))
        for a in doc.all("a"):
            href = a["attrs"].get("href") or ""
            parts = urlsplit(href)
            if parts.scheme in ("http", "https") or not parts.path:
                continue  # external references (arXiv) and in-page anchors (#agent=...)
            target = (page.parent / unquote(parts.path)).resolve()
            assert target.is_file(), f"{page.relative_to(out)}: broken link {href}"
            assert out.resolve() in target.parents or target == out.resolve()
            checked += 1
        for img in doc.all("img"):
            assert (page.parent / img["attrs"]["src"]).is_file()
    assert checked > 20
    # each review page links back to the index, and the index links to each review
    index = _Doc((out / "index.html").read_text())
    hrefs = {a["attrs"].get("href") for a in index.all("a")}
    assert {"reviews/agent1-001/index.html", "reviews/agent2-002/partial/index.html",
            "calibration/local-2026-12-02.html"} <= hrefs
    review = _Doc((out / "reviews" / "agent1-001" / "index.html").read_text())
    assert "../../index.html" in {a["attrs"].get("href") for a in review.all("a")}


def test_the_site_is_world_readable(built):
    _, out = built
    for p in [out, *out.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o755 if p.is_dir() else 0o644), (p, oct(mode))


def test_untrusted_text_is_escaped_and_every_page_has_a_csp(built):
    _, out = built
    for page in _pages(out):
        text = page.read_text(encoding="utf-8")
        assert "<script>alert" not in text, page
        doc = _Doc(text)
        csp = [m["attrs"]["content"] for m in doc.all("meta") if m["attrs"].get("http-equiv") ==
               "Content-Security-Policy"]
        assert len(csp) == 1 and "default-src 'none'" in csp[0], page
        scripts = doc.all("script")
        if page == out / "index.html":
            assert len(scripts) == 1
            body = text.split("<script>", 1)[1].split("</script>", 1)[0]
            digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
            assert f"'sha256-{digest}'" in csp[0] and "unsafe-inline'; img" in csp[0]  # styles only, not scripts
        else:
            assert scripts == [] and "script-src" not in csp[0], page  # default-src 'none': no script runs
    index = (out / "index.html").read_text()
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;[bold red]pwn[/] --&gt; $x^2$" in index


def test_refuses_a_folder_it_did_not_write_and_replaces_its_own(built, tmp_path, capsys):
    arena, out = built
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    assert main(["site", "--arena", str(arena), "--out", str(other)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not written by `review site`" in err
    assert (other / "notes.txt").read_text() == "keep me"
    again = tmp_path / "again"
    assert main(["site", "--arena", str(arena), "--out", str(again), "--calibration", str(tmp_path / "none")]) == 2
    assert "no such calibration report" in capsys.readouterr().err and not again.exists()
    assert main(["site", "--arena", str(arena), "--out", str(again)]) == 0
    (again / "stale.html").write_text("from an older site")
    assert main(["site", "--arena", str(arena), "--out", str(again)]) == 0
    assert not (again / "stale.html").exists() and (again / "index.html").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".again")]  # no temporary folder left behind


# --- in the browser --------------------------------------------------------------------------------------------
def _chromium(*args: str) -> subprocess.CompletedProcess:
    profile = tempfile.mkdtemp(prefix="rb-chromium-")
    try:
        return subprocess.run([CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu",
                               "--disable-background-networking", "--disable-component-update", "--disable-sync",
                               "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def _dom(url: str) -> _Doc:
    r = _chromium("--dump-dom", url)
    assert r.returncode == 0 and "<html" in r.stdout, r.stderr[-2000:]
    return _Doc(r.stdout)


def _visible_rows(doc: _Doc, kind: str) -> list[str]:
    rows = [e for e in doc.all("tr") if e["attrs"].get("data-kind") == kind]
    return [e["attrs"]["data-id"] for e in rows if "hidden" not in e["attrs"]]


@needs_chromium
def test_filters_from_the_hash_in_the_browser(built):
    _, out = built
    url = (out / "index.html").as_uri()
    doc = _dom(url)
    assert _visible_rows(doc, "review") == ["agent1-001", "agent2-001", "agent1-002", "agent3-001"]
    assert next(e for e in doc.all("output") if e["attrs"].get("id") == "f-status")["text"] == "4 of 4 reviews shown"

    doc = _dom(url + "#agent=agent1")
    assert _visible_rows(doc, "review") == ["agent1-001", "agent1-002"]
    assert _visible_rows(doc, "entry") == ["agent1-001", "agent1-002"]
    assert _visible_rows(doc, "baseline") == ["baseline:snapkv", "baseline:expected_attention",
                                              "baseline:window"]  # the bar stays in view (ranked by Overall)
    assert [e["attrs"]["data-agent-row"] for e in doc.all("tr") if "data-agent-row" in e["attrs"]
            and "hidden" not in e["attrs"]] == ["agent1"]
    assert next(e for e in doc.all("output"))["text"] == "2 of 4 reviews shown"
    assert next(e for e in doc.all("select") if e["attrs"].get("id") == "f-agent")  # (the control exists)

    doc = _dom(url + "#flag=RULE_VIOLATION")
    assert _visible_rows(doc, "review") == ["agent2-001"]
    doc = _dom(url + "#flag=clean&baselines=0")
    assert _visible_rows(doc, "review") == ["agent1-001", "agent1-002", "agent3-001"]
    assert _visible_rows(doc, "baseline") == []
    doc = _dom(url + "#q=SHARP")  # free text, any case: the short name of agent1-001
    assert _visible_rows(doc, "review") == ["agent1-001"]
    doc = _dom(url + "#board=C")
    sections = {e["attrs"]["data-board"]: "hidden" in e["attrs"] for e in doc.all("section")}
    assert sections == {"A": True, "C": False} and _visible_rows(doc, "review") == []
    doc = _dom(url + "#agent=nobody")  # not an option: ignored, everything shown
    assert len(_visible_rows(doc, "review")) == 4


@needs_chromium
def test_review_pages_render_hostile_text_as_text_and_run_no_script(built, tmp_path):
    _, out = built
    doc = _dom((out / "reviews" / "agent1-002" / "index.html").as_uri())
    assert doc.all("script") == []
    h1 = doc.all("h1")[0]["text"]
    assert smallarena.HOSTILE in h1  # the literal text, on screen
    assert doc.all("figure") and any(e["tag"] == "svg" for e in doc.elements)  # the plot with its bands
    assert any(a["attrs"].get("href") == "../../index.html" for a in doc.all("a"))
    # the CSP holds even where a template would forget to escape: an injected script does not run
    from reviewbench.site import _framed, _nav

    page = (out / "reviews" / "agent1-002" / "index.html").read_text()
    evil = tmp_path / "evil.html"
    evil.write_text(_framed(page.replace("<main class=\"page\">", "<main class=\"page\"><script>document.title="
                                         "'pwned';document.body.dataset.pwned='1'</script>", 1), _nav("", "x", "")))
    doc = _dom(evil.as_uri())
    assert doc.all("title")[0]["text"] != "pwned" and "data-pwned" not in doc.all("body")[0]["attrs"]


@needs_chromium
def test_screenshots(built, tmp_path):
    """Pages render to non-blank images (people look at these; REVIEWBENCH_SCREENSHOTS=DIR keeps them)."""
    _, out = built
    keep = Path(SCREENSHOTS) if SCREENSHOTS else tmp_path
    keep.mkdir(parents=True, exist_ok=True)
    blank = tmp_path / "blank.html"
    blank.write_text("<!doctype html><title>blank</title>")
    sizes: dict[str, int] = {}
    for name, page, size in (("index", out / "index.html", "1280,2600"),
                             ("index-80ch", out / "index.html", "640,1600"),
                             ("review", out / "reviews" / "agent1-002" / "index.html", "1280,1800"),
                             ("calibration", out / "calibration" / "local-2026-12-02.html", "1280,900"),
                             ("blank", blank, "1280,900")):
        png = keep / f"site-{name}.png"
        r = _chromium(f"--screenshot={png}", f"--window-size={size}", page.as_uri())
        assert r.returncode == 0 and png.is_file(), r.stderr[-2000:]
        data = png.read_bytes()
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and (width, height) == tuple(int(x) for x in size.split(","))
        sizes[name] = len(data)
    assert min(v for k, v in sizes.items() if k != "blank") > 2 * sizes["blank"], sizes  # none is a blank page


def test_a_damaged_review_is_listed_with_the_reason_not_linked(tmp_path, capsys):
    arena = smallarena.build(tmp_path / "arena")
    (arena / "reviews" / "agent1-001" / "review.json").write_text('{"schema": "reviewbench.review/0"}')
    assert main(["site", "--arena", str(arena), "--out", str(tmp_path / "site")]) == 0
    err = capsys.readouterr().err
    assert "agent1-001: review.json could not be shown" in err
    index = _Doc((tmp_path / "site" / "index.html").read_text())
    row = next(e for e in index.all("tr") if e["attrs"].get("data-id") == "agent1-001"
               and e["attrs"].get("data-kind") == "review")
    assert "could not be shown" in row["text"]
    assert "reviews/agent1-001/index.html" not in {a["attrs"].get("href") for a in index.all("a")}
    assert not (tmp_path / "site" / "reviews" / "agent1-001").exists()
