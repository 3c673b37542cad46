"""A small arena with a store of complete reviews, built directly (no review run): what the site, export and CLI
convention tests read. Reviews of the example arena take minutes each on 2 cores; these take milliseconds.

Two boards (A in fractions, C in tokens per layer), two baselines on A with bars on the same split, four
complete reviews (one flagged, one whose short name and outcome carry hostile markup), one partial draft and
one review on no board of the arena. The per-item numbers are deterministic.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from harness.results import HARNESS_VERSION, ModelFacts, Row
from reviewbench.arena import load_arena
from reviewbench.bars import BarsFile, baseline_measurements
from reviewbench.overall import BoardStanding
from reviewbench.pipeline import EarlierSubmission
from reviewbench.report import REPORT_TYPES, ReviewReport, SubmissionInfo, write_report
from reviewbench.stages.benchmark import BenchmarkData
from reviewbench.stages.points import PointsData
from reviewbench.stages.standing import measure_benchmark
from reviewbench.stages.verdict import VerdictData
from reviewbench.store import ReviewRecord, Store
from reviewbench.verdict import FlagClaim, TieBreakDecision

HOSTILE = "<script>alert('x')</script>[bold red]pwn[/] --> $x^2$"
SPLIT = "split-hash-a"
MODEL = ModelFacts(name="tiny", n_layers=2, n_heads=2, n_kv_heads=1, head_dim=8, param_bytes=4000)
ITEMS = [f"i{k}" for k in range(8)]
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=timezone.utc)

ARENA_TOML = """
[arena]
name = "small-arena"

[[boards]]
name = "A"
setting = "query-aware prefill"
budget_kind = "fraction"
budgets = [0.1, 0.25, 0.5]
bars = "baselines/A.json"
items = 8

[[boards]]
name = "C"
setting = "decode-time eviction"
budget_kind = "tokens"
budgets = [128, 256]
phase = "decode"
items = 4

[[agents]]
id = "agent1"
family = "anthropic"

[[agents]]
id = "agent2"
family = "openai"

[[agents]]
id = "agent3"
family = "openai"
"""


def _rows(method: str, quality: dict[float, float], budgets: list[float]) -> list[Row]:
    """Item k scores 1 when k/len < quality at that budget (so the accuracy per budget is the quality)."""
    out = []
    for k, item in enumerate(ITEMS):
        for b in budgets:
            full = method == "full"
            hit = full or k / len(ITEMS) < quality[b]
            out.append(Row(item=item, task="niah_single", question=0, method=method, budget=1.0 if full else b,
                           score=1.0 if hit else 0.0, top1=1.0 if hit else 0.5,
                           kv_bytes_peak=1000 if full else int(1000 * b),
                           kv_bytes_decode_mean=1000.0 if full else 1000.0 * b, model_cpu_s=1.0,
                           compress_cpu_s=0.0 if full else 0.05, generated_tokens=8))
            if full:
                break
    return out


def _full() -> list[Row]:
    return _rows("full", {}, [1.0])


BUDGETS = [0.1, 0.25, 0.5]
BASELINES = {"expected_attention": {0.1: 0.125, 0.25: 0.25, 0.5: 0.375}, "snapkv": {0.1: 0.25, 0.25: 0.5, 0.5: 0.75},
             "window": {0.1: 0.0, 0.25: 0.25, 0.5: 0.5}}
SUBMISSIONS = [
    # id, short name, quality per budget (None: no benchmark), flags, judge scores, points
    ("agent1-001", "sharp_snap", {0.1: 0.5, 0.25: 0.75, 0.5: 0.875}, [], (2, 3, 2), 22.5),
    ("agent2-001", "peeker", {0.1: 0.625, 0.25: 0.875, 0.5: 1.0}, ["RULE_VIOLATION"], (3, 4, 2), 0.0),
    ("agent1-002", HOSTILE, {0.1: 0.375, 0.25: 0.625, 0.5: 0.75}, [], (1, 2, 2), 12.0),
    ("agent3-001", "nowhere", None, [], (1, 1, 1), 3.0),
]


def build(root: Path) -> Path:
    """Write the arena under ``root`` and return it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "arena.toml").write_text(ARENA_TOML, encoding="utf-8")
    (root / "baselines").mkdir(exist_ok=True)
    bars = BarsFile(board="A", harness_board="A", split_hash=SPLIT, harness_version=HARNESS_VERSION, model=MODEL,
                    budgets=BUDGETS, baselines={n: _rows(n, q, BUDGETS) for n, q in BASELINES.items()},
                    full=_full(), source="tests/smallarena.py", created_at=T0)
    (root / "baselines" / "A.json").write_text(bars.model_dump_json(by_alias=True), encoding="utf-8")
    for sub in ("submit", "logs"):
        (root / sub).mkdir(exist_ok=True)
    arena = load_arena(root)
    board = arena.config.board("A")
    assert board is not None
    earlier: list[EarlierSubmission] = []
    standings = [BoardStanding(id=f"baseline:{n}", kind="baseline", overall=m.overall, n_items=m.n_items)
                 for n, m in baseline_measurements(bars, board).items()]
    with Store(arena.store_path) as store:
        for n, (sid, short, quality, flags, scores, total) in enumerate(SUBMISSIONS):
            agent = sid.split("-")[0]
            when = T0 + timedelta(hours=n + 1)
            on_board = quality is not None
            bench = BenchmarkData(board="A", harness_board="A", method=f"/arena/submit/{sid}", split_hash=SPLIT,
                                  harness_version=HARNESS_VERSION, model=MODEL,
                                  rows=_rows(f"/arena/submit/{sid}", quality, BUDGETS), full=_full(),
                                  reference="reused", sandbox="bubblewrap", seconds=1.0) if quality else None
            m = measure_benchmark(bench, board) if bench else None
            best_before = max(standings, key=lambda b: b.overall) if standings and m else None
            crit = dict(zip(("novelty", "effectiveness", "soundness"), (float(s) for s in scores)))
            standing = [FlagClaim(flag=f, quote="cat /arena/data/test/A/items.jsonl", location="logs/x.jsonl:3",
                                  raised_by="audit") for f in flags]
            verdict = VerdictData(status="complete", scores=dict(crit), judge_points=sum(scores) * 3.0,
                                  standing_flags=standing, dropped_flags=[], tie_break=TieBreakDecision(needed=False),
                                  n_judges=2, judges=["anthropic-x", "openai-y"], bundle_errors=[])
            points = PointsData(submission=sid, agent=agent, board="A" if on_board else "Z", rule_set="seed",
                                judge_points=sum(scores) * 3.0, benchmark_points=10.0 if total > 20 else 0.0,
                                first_on_board_points=0.0, flagged=bool(flags), penalty=20.0 if flags else 0.0,
                                total=total, measurement=m, best_before=best_before,
                                compared={f"baseline:{k}": {f"{b.budget:g}": b.overall for b in bm.per_budget}
                                          for k, bm in baseline_measurements(bars, board).items()} if m else {})
            outcome = (f"Overall {m.overall:.4f} on board A · " if m else "") + \
                ("FLAGGED " + ", ".join(flags) if flags else "verdict ok: no flags") + \
                (f" · {HOSTILE}" if short == HOSTILE else "")
            stages = [REPORT_TYPES["benchmark"](name="benchmark", title="Board benchmark", status="ok", data=bench,
                                           summary="measured")] if bench else []
            report = ReviewReport(generated_at=when, run_id=n + 1, arena="small-arena", rubric="default/1",
                                  headline="Judged by a test fixture (no judge ran).", outcome=outcome,
                                  submission=SubmissionInfo(id=sid, agent=agent, family="anthropic", board=points.board,
                                                            short_name=short, submitted_at=when, content_hash="0" * 64,
                                                            path=str(root / "submit" / sid)),
                                  verdict=verdict, points=points, stages=stages, earlier_submissions=list(earlier))
            write_report(report, arena.reviews_dir)
            store.put_complete(ReviewRecord(submission_id=sid, agent=agent, board=points.board, submitted_at=when,
                                            run_id=n + 1, flagged=bool(flags), flags=flags, scores=dict(crit),
                                            outcome=outcome, benchmark=bench.model_dump_json() if bench else None,
                                            points=points.model_dump_json()))
            if m is not None and not flags:
                standings.append(BoardStanding(id=sid, kind="submission", overall=m.overall, n_items=m.n_items))
            earlier.append(EarlierSubmission(id=sid, agent=agent, board=points.board, submitted_at=when,
                                             short_name=short, path=str(root / "submit" / sid)))
        # a partial draft of agent2-002: shown as a draft, never on a board
        draft = ReviewReport(generated_at=T0 + timedelta(hours=9), run_id=9, arena="small-arena", rubric="default/1",
                             partial=True, headline="No judges ran (not selected).",
                             outcome="PARTIAL review (--only/--skip): a draft, not counted · no verdict",
                             submission=SubmissionInfo(id="agent2-002", agent="agent2", family="openai", board="A",
                                                       short_name="draft_idea", submitted_at=T0 + timedelta(hours=9),
                                                       content_hash="1" * 64, path=str(root / "submit/agent2-002")),
                             verdict=None, points=None, stages=[], earlier_submissions=[])
        write_report(draft, arena.reviews_dir)
    return root


def calibration_report(folder: Path) -> Path:
    """A minimal calibration report JSON + HTML + PNG, as `review calibrate` writes them."""
    folder.mkdir(parents=True, exist_ok=True)
    data = {"schema": "reviewbench.calibration/1", "panel": "local", "generated_at": "2026-12-02T10:00:00Z",
            "calibration": {"rows": [{"name": "panel", "novelty_le1": 0.5, "source_named": 0.75, "flag_recall": 1.0,
                                      "n_baselines": 4, "false_flags": 0}],
                            "alpha": {"novelty": -0.2, "effectiveness": None}, "family_offsets": {}, "confusion": {}},
            "cases": [{"code": "k01-001", "judges": [
                {"judge_id": "huggingface-smollm2", "family": "huggingface", "model": "smollm2", "role": "primary",
                 "scores": {"novelty": 2.0, "effectiveness": 1.0}, "flags": [], "error": None,
                 "prior_work": [{"title": HOSTILE, "arxiv_id": "2404.14469"}], "input_tokens": 10,
                 "cost_usd": 0.0, "seconds": 1.5}]}]}
    (folder / "local-2026-12-02.json").write_text(json.dumps(data), encoding="utf-8")
    (folder / "local-2026-12-02.html").write_text(
        "<!doctype html><html><head><title>Calibration</title></head><body><h1>Calibration of the local panel</h1>"
        "<img src=\"local-2026-12-02.png\" alt=\"chart\"></body></html>", encoding="utf-8")
    (folder / "local-2026-12-02.png").write_bytes(_png())
    return folder / "local-2026-12-02.json"


def _png() -> bytes:
    """A valid 1x1 white PNG (the chart a calibration page links to)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\xff\xff")) + chunk(b"IEND", b""))
