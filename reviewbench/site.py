"""``review site --out DIR``: one static, self-contained site of an arena, like ``inspect view`` but files only.

``index.html`` holds the leaderboard per board (the measured Overall, its components, the best before each
submission, points, flags), a plot per board of Overall per budget with 95 % bootstrap bands, the per-agent
totals, every complete review, the partial drafts and the judge calibration reports, with filters by agent,
board, flag and free text whose state lives in the URL's hash (so a filtered view can be linked). Each review is
re-rendered from its review.json into ``reviews/<id>/index.html`` with a link back and its plot against the
board's baselines with their bands; review.json and review.md sit beside it. Calibration reports are copied.

Nothing is fetched from the network: styles, the script and the plots (SVG) are inline. Every page carries a
Content-Security-Policy: the index runs only its own script (pinned by hash), review and calibration pages run
none, so text from submissions, logs or judges can never execute, even where a template forgot to escape it.
The site is written to a temporary folder and renamed into place; folders are 0755 and files 0644.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from markupsafe import Markup, escape

from reviewbench import __version__
from reviewbench.arena import Arena
from reviewbench.errors import UserError
from reviewbench.leaderboard import Leaderboard

SITE_SCHEMA: Final = "reviewbench.site/1"
CSP_PAGE: Final = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data: file:; base-uri 'none'; "
                   "form-action 'none'")  # review and calibration pages: no script at all

NAV_CSS: Final = """
 nav.site { background: #1d2b44; color: #fff; padding: .55rem 1rem; display: flex; gap: 1.2rem; flex-wrap: wrap;
            align-items: baseline; font: .95rem/1.45 system-ui, sans-serif; }
 nav.site a { color: #fff; text-decoration: none; } nav.site a:hover { text-decoration: underline; }
 nav.site .here { color: #c9d6ef; } nav.site strong { margin-right: .6rem; }
"""
CSS: Final = NAV_CSS + """
 body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
 main { max-width: 80rem; margin: 0 auto; padding: 0 1rem 2rem; }
 h1 { margin: 1.2rem 0 .3rem; } h2 { margin-top: 2rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
 .lede, .setting { color: #444; } .note { color: #8a6d00; font-size: .9rem; }
 table { border-collapse: collapse; margin: .5rem 0 1rem; background: #fff; }
 th, td { border: 1px solid #d0d0d6; padding: .3rem .55rem; text-align: left; vertical-align: top; }
 th { background: #eef0f5; position: sticky; top: 0; } td.num, th.num { text-align: right; }
 td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
 tr.baseline td { color: #555; background: #f7f7f9; } tr.flagged td { background: #fff3f3; }
 .flag { color: #b00020; font-weight: 600; } .short { color: #666; font-size: .85rem; overflow-wrap: anywhere; }
 td.outcome { font-size: .85rem; max-width: 32rem; overflow-wrap: anywhere; }
 .filters { position: sticky; top: 0; z-index: 2; display: flex; gap: 1rem; flex-wrap: wrap; align-items: center;
            background: #fff; border: 1px solid #d0d0d6; border-radius: 6px; padding: .5rem .8rem; margin: 1rem 0; }
 .filters label { font-size: .9rem; } #f-status { margin-left: auto; color: #555; font-size: .9rem; }
 .scroll { overflow-x: auto; } figure.plot { margin: .5rem 0 1.5rem; } figure.plot svg { max-width: 100%; height: auto; }
 figcaption { color: #555; font-size: .85rem; } .badge { background: #8a6d00; color: #fff; border-radius: 3px;
 padding: 0 .3rem; font-size: .75rem; } a.agent { color: inherit; } code { background: #eef0f5; padding: 0 .2rem; }
 footer { color: #777; font-size: .8rem; text-align: center; padding: 1rem; }
"""


@dataclass
class ReviewLink:
    """A review as the site lists it."""

    id: str
    agent: str
    board: str | None
    short_name: str | None
    submitted_at: datetime | None
    generated_at: datetime
    outcome: str
    flags: list[str]
    scores: dict[str, float | None]
    points: float | None
    overall: float | None
    href: str | None
    search: str
    note: str = ""


@dataclass
class CalibrationLink:
    name: str
    href: str
    panel: str
    generated_at: str
    origin: str
    novelty: float | None
    source: float | None
    recall: float | None
    alpha: float | None
    cases: int


@dataclass
class SiteResult:
    out: Path
    pages: list[str] = field(default_factory=list)
    reviews: int = 0
    drafts: int = 0
    calibration: int = 0
    notes: list[str] = field(default_factory=list)


def _env() -> Any:
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(loader=PackageLoader("reviewbench", "templates"), undefined=StrictUndefined,
                      autoescape=select_autoescape(enabled_extensions=("html", "html.j2"), default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["f4"] = lambda v: "–" if v is None else f"{v:.4f}"
    env.filters["f3"] = lambda v: "–" if v is None else f"{v:.3f}"
    env.filters["g"] = lambda v: "" if v is None else f"{v:g}"
    env.filters["pct"] = lambda v: "—" if v is None else f"{100 * v:.0f} %"
    env.filters["budget"] = lambda b, kind: f"{b:g} tokens/layer" if kind == "tokens" else f"{100 * b:g} %"
    return env


def _script() -> str:
    from importlib.resources import files

    return files("reviewbench").joinpath("templates", "site_filter.js").read_text(encoding="utf-8")


def _csp_with_script(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return CSP_PAGE.replace("default-src 'none';", f"default-src 'none'; script-src 'sha256-{digest}';")


def _search_text(*parts: object) -> str:
    return " ".join(str(p) for p in parts if p not in (None, "")).lower()


def _nav(root: str, arena: str, here: str, extra: tuple[tuple[str, str], ...] = ()) -> Markup:
    """The bar on top of every page; ``root`` is the relative way back to index.html."""
    links = (("Leaderboard", f"{root}index.html#boards"), ("Agents", f"{root}index.html#agents"),
             ("Reviews", f"{root}index.html#reviews"), ("Calibration", f"{root}index.html#calibration"), *extra)
    items = "".join(f'<a href="{escape(href)}"{" class=here" if name == here else ""}>{escape(name)}</a>'
                    for name, href in links)
    return Markup(f'<nav class="site"><strong><a href="{escape(root)}index.html">{escape(arena)}</a></strong>'
                  f"{items}</nav>")


_HEAD = re.compile(r"<head[^>]*>", re.IGNORECASE)
_HEAD_END = re.compile(r"</head>", re.IGNORECASE)
_BODY = re.compile(r"<body[^>]*>", re.IGNORECASE)
_BODY_END = re.compile(r"</body>", re.IGNORECASE)


def _framed(html: str, nav: Markup, csp: str = CSP_PAGE) -> str:
    """A page rendered elsewhere (review.html, a calibration report) with the site's CSP first in its head, the
    nav bar's style last (so that it wins), the nav bar on top of its body and the page in a centred column."""
    head, head_end, body, body_end = (rx.search(html) for rx in (_HEAD, _HEAD_END, _BODY, _BODY_END))
    if head is None or head_end is None or body is None or body_end is None:
        raise ValueError("not an HTML page with <head> and <body>")
    meta = f'\n<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">\n' \
           '<meta name="referrer" content="no-referrer">'
    style = f"<style>{NAV_CSS} body {{ max-width: none; margin: 0; padding: 0; }}\n main.page {{ max-width: 60rem; " \
            "margin: 1.5rem auto; padding: 0 1rem; }</style>\n"
    return (html[:head.end()] + meta + html[head.end():head_end.start()] + style + html[head_end.start():body.end()]
            + "\n" + str(nav) + '\n<main class="page">' + html[body.end():body_end.start()] + "</main>\n"
            + html[body_end.start():])


def _write(path: Path, text: str | bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


# --- plots --------------------------------------------------------------------------------------------------
def board_series(arena: Arena, lb: Leaderboard, records: list[Any]) -> dict[str, dict[str, Any]]:
    """Board -> entry id -> its Overall per budget with bootstrap bands, for every entry the leaderboard shows."""
    from harness.results import harness_version
    from reviewbench.bars import free_generation, load_bars, stale_reason
    from reviewbench.stages.benchmark import BenchmarkData
    from reviewbench.plots import budget_series

    out: dict[str, dict[str, Any]] = {}
    for t in lb.boards:
        board = arena.config.board(t.board)
        if board is None:
            continue
        shown = {r.id for r in t.rows}
        series: dict[str, Any] = {}
        budgets = list(board.budgets)
        bars = load_bars(arena, board) if any(i.startswith("baseline:") for i in shown) else None
        if bars is not None and stale_reason(bars, board, bars.split_hash, harness_version(board.harness_board)) is None:
            free = free_generation(bars.full, bars.harness_board)
            for name, rows in sorted(bars.baselines.items()):
                if f"baseline:{name}" in shown:
                    series[f"baseline:{name}"] = budget_series(name, "baseline", name, rows, bars.full,
                                                               board.overall_weights, bars.model.param_bytes,
                                                               budgets, free)
        for rec in records:
            if rec.board != t.board or not rec.benchmark or rec.submission_id not in shown:
                continue
            data = BenchmarkData.model_validate_json(rec.benchmark)
            series[rec.submission_id] = budget_series(rec.submission_id, "submission", data.method, data.rows,
                                                      data.full, board.overall_weights, data.model.param_bytes,
                                                      budgets, free_generation(data.full, data.harness_board))
        out[t.board] = series
    return out


# --- the site -----------------------------------------------------------------------------------------------
def _calibration_reports(arena: Arena, extra: list[Path]) -> list[tuple[Path, str]]:
    """(report JSON, where it came from): the one arena.toml names, then --calibration paths (a report or a
    folder of them), else the calibration suite's reports."""
    found: list[tuple[Path, str]] = []
    named = arena.config.panel.calibration
    if named:
        p = (arena.root / named).resolve()
        if not p.is_file():
            raise UserError(arena.root / "arena.toml", f"[panel] calibration: no such report {named}")
        found.append((p, "named in arena.toml"))
    sources = extra
    if not extra:
        from reviewbench.calibrate.command import default_suite

        suite = default_suite() / "reports"
        sources = [suite] if suite.is_dir() else []
    for src in sources:
        if src.is_dir():
            found += [(p.resolve(), f"from {src}") for p in sorted(src.glob("*.json"))]
        elif src.is_file():
            found.append((src.resolve(), f"from {src}"))
        else:
            raise UserError(src, "no such calibration report or folder")
    unique: dict[Path, str] = {}
    for p, o in found:
        unique.setdefault(p, o)
    return list(unique.items())


def _calibration_summary(data: dict[str, Any]) -> dict[str, Any]:
    cal = data.get("calibration") or {}
    panel: dict[str, Any] = next((r for r in cal.get("rows", []) if r.get("name") == "panel"), {})
    alphas = list((cal.get("alpha") or {}).values())
    return {"panel": str(data.get("panel", "?")), "generated_at": str(data.get("generated_at", ""))[:16].replace("T", " "),
            "novelty": panel.get("novelty_le1"), "source": panel.get("source_named"),
            "recall": panel.get("flag_recall"),
            "alpha": None if not alphas or any(a is None for a in alphas) else min(alphas),
            "cases": len(data.get("cases", []))}


def _prepare_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise UserError(out, "exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / "site.json").is_file():
        raise UserError(out, "exists, is not empty and was not written by `review site`: choose a new or empty folder")
    if not out.parent.is_dir():
        raise UserError(out.parent, "no such folder")


def _publish(tmp: Path, out: Path) -> None:
    """World-readable, then renamed into place (the old site, if any, is removed after the rename)."""
    for d, dirs, files in os.walk(tmp):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(Path(d) / f, 0o644)
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        os.replace(out, old)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def build_site(arena: Arena, out: Path, calibration: list[Path] | None = None) -> SiteResult:
    """Write the site of ``arena`` into ``out`` (see the module docstring); calibration: reports or folders."""
    from jinja2 import TemplateError

    from reviewbench.leaderboard import build_leaderboard
    from reviewbench.plots import bands_svg, review_plot_svg
    from reviewbench.report import load_report, render_html
    from reviewbench.store import Store

    if not arena.store_path.exists():
        raise UserError(arena.store_path, "no reviews yet in this arena")
    _prepare_out(out)
    cal_reports = _calibration_reports(arena, calibration or [])
    with Store(arena.store_path) as store:
        lb = build_leaderboard(arena, store)
        records = store.complete_reviews()
    series = board_series(arena, lb, records)
    kinds = {t.board: t.budget_kind for t in lb.boards}
    now = datetime.now(timezone.utc).replace(microsecond=0)
    name = lb.arena
    result = SiteResult(out=out)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        # every complete review, re-rendered with the site's nav and its plot with the board's bands
        reviews: list[ReviewLink] = []
        criteria: list[str] = []
        for rec in sorted(records, key=lambda r: (r.submitted_at is None, r.submitted_at or now, r.submission_id)):
            src = arena.reviews_dir / rec.submission_id
            link = ReviewLink(id=rec.submission_id, agent=rec.agent, board=rec.board, short_name=None,
                              submitted_at=rec.submitted_at, generated_at=now, outcome=rec.outcome, flags=rec.flags,
                              scores=rec.scores, points=None, overall=None, href=None, search="")
            criteria += [c for c in rec.scores if c not in criteria]
            try:
                report = load_report(src / "review.json")
                p = report.points
                mine = series.get(rec.board or "", {})
                others = [s for k, s in mine.items() if k != rec.submission_id and p and k in p.compared]
                page = render_html(report, review_plot_svg(report, others))
            except (OSError, ValueError, TemplateError) as e:  # an older or damaged review: listed, not linked
                link.note = f"review.json could not be shown: {' '.join(str(e).split())[:160]}"
                result.notes.append(f"{rec.submission_id}: {link.note}")
            else:
                link.short_name, link.generated_at = report.submission.short_name, report.generated_at
                link.points = p.total if p else None
                link.overall = p.measurement.overall if p and p.measurement else None
                nav = _nav("../../", name, "Reviews", (("review.json", "review.json"), ("review.md", "review.md")))
                result.pages.append(_write(tmp / "reviews" / rec.submission_id / "index.html", _framed(page, nav)))
                for f in ("review.json", "review.md"):
                    if (src / f).is_file():
                        shutil.copyfile(src / f, tmp / "reviews" / rec.submission_id / f)
                link.href = f"reviews/{rec.submission_id}/index.html"
            link.search = _search_text(link.id, link.agent, link.board, link.short_name, link.outcome, *link.flags)
            reviews.append(link)
        # partial drafts: shown, marked, never on a board
        drafts: list[ReviewLink] = []
        for path in sorted(arena.reviews_dir.glob("*/partial/review.json")):
            try:
                d = load_report(path)
                draft_page = render_html(d, review_plot_svg(d))
            except (OSError, ValueError, TemplateError) as e:
                result.notes.append(f"{path}: could not be shown: {' '.join(str(e).split())[:160]}")
                continue
            sid = d.submission.id
            v = d.verdict
            flags: list[str] = [str(f.flag) for f in v.standing_flags] if v else []
            nav = _nav("../../../", name, "Reviews", (("review.json (partial draft, not counted)", "review.json"),))
            result.pages.append(_write(tmp / "reviews" / sid / "partial" / "index.html", _framed(draft_page, nav)))
            shutil.copyfile(path, tmp / "reviews" / sid / "partial" / "review.json")
            drafts.append(ReviewLink(id=sid, agent=d.submission.agent, board=d.submission.board,
                                     short_name=d.submission.short_name, submitted_at=d.submission.submitted_at,
                                     generated_at=d.generated_at, outcome=d.outcome, flags=flags,
                                     scores=dict(v.scores) if v else {}, points=None, overall=None,
                                     href=f"reviews/{sid}/partial/index.html",
                                     search=_search_text(sid, d.submission.agent, d.submission.board,
                                                         d.submission.short_name, d.outcome, "draft partial")))
        # calibration reports: copied, framed, summarised
        cal_links: list[CalibrationLink] = []
        for report_json, origin in cal_reports:
            html_src = report_json.with_suffix(".html")
            stem, n = report_json.stem, 1
            while (tmp / "calibration" / f"{stem}.json").exists():  # two folders, one report name
                n += 1
                stem = f"{report_json.stem}-{n}"
            try:
                data = json.loads(report_json.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise UserError(report_json, f"not a calibration report: {e}") from None
            if not isinstance(data, dict) or data.get("schema") != "reviewbench.calibration/1":
                result.notes.append(f"{report_json}: not a reviewbench.calibration/1 report, left out")
                continue
            dest = tmp / "calibration"
            dest.mkdir(exist_ok=True)
            shutil.copyfile(report_json, dest / f"{stem}.json")
            href = f"calibration/{stem}.json"
            if html_src.is_file():
                page = _framed(html_src.read_text(encoding="utf-8"), _nav("../", name, "Calibration"))
                result.pages.append(_write(dest / f"{stem}.html", page))
                href = f"calibration/{stem}.html"
                png = report_json.with_suffix(".png")  # the page shows it by this name
                if png.is_file():
                    shutil.copyfile(png, dest / png.name)
            cal_links.append(CalibrationLink(name=stem, href=href, origin=origin, **_calibration_summary(data)))
        # the index
        links = {r.id: r.href for r in reviews if r.href}
        short = {r.id: r.short_name for r in reviews}
        search = {r.id: r.search for r in reviews}
        for t in lb.boards:
            for row in t.rows:
                search.setdefault(row.id, _search_text(row.id, row.agent, t.board, *row.flags))
        flagged = {r.id for r in reviews if r.flags}
        plots = {t.board: bands_svg(f"Board {t.board}: Overall per budget on the hidden test split", kinds[t.board],
                                    [replace(s, label=f"{s.label} (flagged)") if k in flagged else s
                                     for k, s in series.get(t.board, {}).items()], size=(8.0, 4.2))
                 for t in lb.boards}
        per_agent: dict[str, int] = {}
        for r in reviews:
            per_agent[r.agent] = per_agent.get(r.agent, 0) + 1
        script = _script()
        env = _env()
        index = env.get_template("site_index.html.j2").render(
            lb=lb, reviews=reviews, drafts=drafts, calibration=cal_links, links=links, short=short, search=search,
            plots=plots, per_agent=per_agent, criteria=criteria,
            agents=sorted({a.agent for a in lb.agents} | {r.agent for r in reviews}),
            boards=[t.board for t in lb.boards], flags=sorted({f for r in reviews for f in r.flags}),
            script=script, csp=_csp_with_script(script), css=CSS, nav=_nav("", name, "Leaderboard"), arena=name,
            generated_at=now.strftime("%Y-%m-%d %H:%M UTC"), version=__version__)
        result.pages.insert(0, _write(tmp / "index.html", index))
        result.reviews, result.drafts, result.calibration = len(reviews), len(drafts), len(cal_links)
        manifest = {"schema": SITE_SCHEMA, "arena": name, "generated_at": now.isoformat(),
                    "reviewbench": __version__, "reviews": [r.id for r in reviews],
                    "drafts": [d.id for d in drafts], "calibration": [c.name for c in cal_links],
                    "pages": [str(Path(p).relative_to(tmp)) for p in result.pages], "notes": result.notes}
        _write(tmp / "site.json", json.dumps(manifest, indent=1) + "\n")
        result.pages = [str(out / Path(p).relative_to(tmp)) for p in result.pages]
        _publish(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result
