"""Everyday frictions a new user hit (issue 27), each pinned: the board ranked with a rank column and a narrow
layout that keeps points and flags on screen, number columns typed as numbers in every export, the option a
mistake names, Ctrl-C saying how to resume, `review calibrate --only` never replacing a fuller report, short
judge names, `review init`. Fast: the small arena's store is built directly (no review run)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from reviewbench.cli import main
from tests import smallarena


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    return smallarena.build(tmp_path_factory.mktemp("frictions") / "arena")


@pytest.fixture(scope="module")
def board(small):
    """The small arena's leaderboard, with board A's entries also on board C (C has none of its own)."""
    from reviewbench.leaderboard import build_leaderboard
    from reviewbench.review import open_arena
    from reviewbench.store import Store

    a = open_arena(None, small)
    with Store(a.store_path) as store:
        lb = build_leaderboard(a, store)
    rows = next(t for t in lb.boards if t.board == "A").rows
    return lb.model_copy(update={"boards": [t if t.board == "A" else t.model_copy(update={"rows": rows})
                                            for t in lb.boards]})


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


# --- review board -----------------------------------------------------------------------------------------------
def test_board_rows_are_ranked_by_overall(board):
    for t in board.boards:
        measured = [r for r in t.rows if r.overall is not None]
        if not measured:
            continue
        assert [r.overall for r in measured] == sorted((r.overall for r in measured), reverse=True)
        assert [r.rank for r in measured][:1] == [1]
        assert all(a.rank <= b.rank for a, b in zip(measured, measured[1:]))  # type: ignore[operator]
        assert all(r.rank is None for r in t.rows if r.overall is None)


def _printed(lb, width: int) -> str:
    from reviewbench.boardview import print_board

    buf = io.StringIO()
    print_board(lb, Console(file=buf, width=width, no_color=True, highlight=False))
    return buf.getvalue()


@pytest.mark.parametrize("width", [80, 160])
def test_board_at_80_columns_keeps_rank_points_and_flags_in_the_main_table(board, width):
    text = _printed(board, width)
    assert max(len(line) for line in text.splitlines()) <= width
    main_a = text.split("Board A (")[1].split("board best")[0]
    header = next(line for line in main_a.splitlines() if line.startswith("#"))
    cols = header.split()
    assert cols[:5] == ["#", "entry", "Overall", "points", "flags"], header
    assert "RULE_VIOLATION" in main_a  # the flagged entry's flag, whole, in the ranked table itself
    row = next(line for line in main_a.splitlines() if "agent2-001" in line)
    assert re.search(r"\b0\b", row)  # its points, on its own line


def test_board_c_shows_its_length_term(board):
    c = next(t for t in board.boards if t.board == "C")
    assert c.weights.get("length"), "board C (decode) weighs the generated length"
    assert re.search(r"(?m)^#\s+entry\s+agent\s+accuracy\s+memory\s+speed\s+overhead\s+length", _printed(board, 80))
    wide = _printed(board, 160).split("Board C (")[1]
    assert re.search(r"\bovh\s+len\b", wide)
    a = _printed(board, 160).split("Board A (")[1].split("Board C (")[0]
    assert " len" not in a  # a board without a length term has no such column


def _headers(html: str, board: str) -> list[str]:
    section = html.split(f'data-board="{board}"')[1]
    table = section.split('class="entries"')[1].split("</tr>")[0]
    return [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th[^>]*>.*?</th>", table)]


def test_board_html_puts_points_and_flags_where_800_px_shows_them(board, small, tmp_path):
    from reviewbench.boardview import board_html
    from reviewbench.review import open_arena
    from reviewbench.site import build_site

    build_site(open_arena(None, small), tmp_path / "site", None)
    site = (tmp_path / "site" / "index.html").read_text()
    for html, boards in ((board_html(board), ("A", "C")), (site, ("A",))):  # the site's C has no entry: no table
        for b in boards:
            heads = _headers(html, b)
            assert heads[:5] == ["#", "entry", "Overall", "points", "flags"], heads
            assert ("length" in heads) == (b == "C")
        assert "overflow-x: auto" in html or "overflow-x:auto" in html  # the rest scrolls, the first columns stay


# --- exports ----------------------------------------------------------------------------------------------------
def test_number_columns_are_numbers_even_on_a_board_of_baselines_only(board, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from reviewbench.boardview import NUMBER_COLUMNS, board_export

    only_baselines = board.model_copy(update={"boards": [t.model_copy(update={
        "rows": [r for r in t.rows if r.kind == "baseline"]}) for t in board.boards]})
    for lb in (board, only_baselines):
        out = tmp_path / "b.parquet"
        board_export(lb, "parquet", out)
        frame = pd.read_parquet(out)
        for c in NUMBER_COLUMNS:
            assert str(frame[c].dtype) == "float64", (c, frame[c].dtype)
        assert str(frame["rank"].dtype) == "Int64"


def test_reviews_df_points_are_numbers(small):
    pytest.importorskip("pandas")
    from reviewbench.api import reviews_df

    frame = reviews_df(small, partial=True)
    for c in ("points", "judge_points", "benchmark_points", "penalty", "overall"):
        assert str(frame[c].dtype) == "float64", (c, frame[c].dtype)


def test_parquet_without_out_names_out_not_html(small, capsys):
    rc, _, err = _cli(capsys, "board", "--arena", str(small), "--format", "parquet")
    assert rc == 2 and "--out" in err and "--html" not in err, err


# --- the board standing, once per review ------------------------------------------------------------------------
def test_the_board_standing_is_computed_once_per_review(small, monkeypatch):
    """The standing stage computes the board as it stood before the submission: one look at the store, one
    measurement of each earlier entry and of the submission. The judges (their benchmark lines and the evidence
    judge's board facts) and the points read it from the context and measure nothing again."""
    import reviewbench.stages.standing as standing_mod
    from reviewbench.bundle import load_bundle
    from reviewbench.pipeline import EarlierSubmission, StageContext, run_stages
    from reviewbench.report import load_report
    from reviewbench.review import arena_rubric, open_arena
    from reviewbench.stages.benchmark import BENCHMARK
    from reviewbench.stages.judges import benchmark_lines, board_fact
    from reviewbench.stages.points import points_stage
    from reviewbench.stages.standing import STANDING
    from reviewbench.stages.verdict import VERDICT
    from reviewbench.store import Store
    from tests.conftest import EXAMPLE_ARENA

    arena = open_arena(None, small)
    report = load_report(arena.reviews_dir / "agent1-002" / "review.json")
    bundle = load_bundle(EXAMPLE_ARENA / "submit" / "agent1-002").model_copy(update={"board": "A"})
    earlier = [EarlierSubmission(id=e, agent=e.split("-")[0], board="A", submitted_at=None, short_name=None, path="")
               for e in ("agent1-001", "agent2-001")]
    calls: list[str] = []
    prior, measure = standing_mod.prior_board, standing_mod.measure_benchmark
    monkeypatch.setattr(standing_mod, "prior_board", lambda *a, **k: calls.append("prior") or prior(*a, **k))
    monkeypatch.setattr(standing_mod, "measure_benchmark",
                        lambda *a, **k: calls.append("measure") or measure(*a, **k))
    with Store(arena.store_path) as store:
        ctx = StageContext(arena=arena, bundle=bundle, rubric=arena_rubric(arena), store=store,
                           author_family="anthropic", earlier=earlier)
        ctx.reports["benchmark"] = report.stage("benchmark")  # type: ignore[assignment]
        ctx.reports["verdict"] = report.stage("benchmark").model_copy(  # type: ignore[union-attr]
            update={"name": "verdict", "data": report.verdict})
        (ran,) = run_stages([standing_mod.STAGE], ctx)
        assert ran.status == "ok" and not ran.cached, ran.reason  # it reads the store: never replayed
        bench, standing = ctx.get(BENCHMARK), ctx.get(STANDING)
        assert bench is not None and standing is not None and ctx.get(VERDICT) is not None
        assert calls == ["prior", "measure", "measure", "measure"]  # two earlier entries and the submission
        benchmark_lines(ctx, bench, standing)
        fact, _ = board_fact(ctx, bench, standing)
        points = points_stage(ctx)
    assert calls == ["prior", "measure", "measure", "measure"]  # read from the context: nothing measured again
    assert standing.best is not None and standing.best.id == "agent1-001"  # agent2-001 scored higher but is flagged
    assert fact is not None and fact.best_id == "agent1-001" and fact.overall_gain is not None
    assert standing.gate is not None and fact.overall_gain.lower == round(standing.gate.lower, 6)
    assert points.data is not None and points.data.best_before == standing.best
    assert points.data.gate is not None and points.data.gate.lower == standing.gate.lower


# --- Ctrl-C -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [["run", "submit/agent1-002"], ["submit/agent1-002", "--skip", "judges"],
                                  ["arena", "run"], ["calibrate", "--only", "k01-001"]])
def test_ctrl_c_says_how_to_resume_in_one_line_and_exits_130(args, monkeypatch, capsys):
    import reviewbench.arena_run as arena_run
    import reviewbench.calibrate.command as command
    import reviewbench.review as review

    def interrupt(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.chdir(Path(__file__).resolve().parent.parent / "examples" / "arena")
    for mod, name in ((review, "review"), (arena_run, "plan"), (command, "calibrate")):
        monkeypatch.setattr(mod, name, interrupt)
    rc, _, err = _cli(capsys, *args)
    assert rc == 130
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "resume with `review " + " ".join(args) + "`" in lines[0], err


def test_ctrl_c_in_a_command_that_stores_nothing_is_just_interrupted(small, monkeypatch, capsys):
    import reviewbench.leaderboard as leaderboard

    monkeypatch.setattr(leaderboard, "build_leaderboard", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    rc, _, err = _cli(capsys, "board", "--arena", str(small))
    assert rc == 130 and err.strip() == "interrupted"


# --- review calibrate --only --------------------------------------------------------------------------------------
def test_calibrate_only_writes_a_new_report_and_never_replaces_a_fuller_one(tmp_path):
    import shutil

    from reviewbench.calibrate.report import CalibrationReport, write

    full_json = Path(__file__).resolve().parent.parent / "calibration" / "reports" / "local-2026-12-03.json"
    full = CalibrationReport.model_validate_json(full_json.read_text())
    assert len(full.cases) > 2
    reports = tmp_path / "reports"
    reports.mkdir()
    shutil.copyfile(full_json, reports / full_json.name)
    before = (reports / full_json.name).read_bytes()
    one = full.model_copy(update={"only": [full.cases[0].code], "cases": full.cases[:1]})
    paths = write(one, reports)
    assert paths[0].name == "local-2026-12-03-only.json"
    assert (reports / full_json.name).read_bytes() == before  # the committed full report is untouched
    two = full.model_copy(update={"only": [c.code for c in full.cases[:2]], "cases": full.cases[:2]})
    assert write(two, reports)[0].name == "local-2026-12-03-only.json"  # more cases: replaces the smaller draft
    assert write(one, reports)[0].name == "local-2026-12-03-only-2.json"  # fewer: never replaces it
    # a full run whose name holds a fuller report (the suite shrank) takes the next free name too
    assert write(full.model_copy(update={"cases": full.cases[:3]}), reports)[0].name == "local-2026-12-03-2.json"
    assert (reports / full_json.name).read_bytes() == before


# --- judge names --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model,name", [
    ("Qwen/Qwen3-8B", "qwen-Qwen3-8B"),
    ("/models/gguf/llama-3.1-8b-q4.gguf", "qwen-llama-3.1-8b-q4"),
    ("hf.co/bartowski/Qwen2.5-7B-Instruct-GGUF:Q4_K_M", "qwen-Qwen2.5-7B-Instruct-GGUF:Q4_K_M"),
    ("qwen2.5:7b", "qwen-qwen2.5:7b"),
    ("claude-sonnet-4-5", "qwen-claude-sonnet-4-5"),
])
def test_judge_names_are_short(model, name):
    from reviewbench.arena import JudgeSpec
    from reviewbench.judges.panel import judge_name

    assert judge_name(JudgeSpec(family="qwen", provider="openai_compatible", model=model)) == name


# --- --no-evidence ------------------------------------------------------------------------------------------------
def test_without_evidence_the_evidence_judge_never_defaults_novelty_high(rubric):
    """`review calibrate --no-evidence` skips the evidence stage; the counted evidence judge scored a blinded
    SnapKV copy novelty 3 because no match read as "distinct from every reference measured"."""
    from reviewbench.evidence.gather import gather_facts
    from reviewbench.evidence.judge import judge

    facts = gather_facts(evidence=None, ledger=None, sections_missing=[], description="We keep the top tokens.",
                         earlier_names={}, board=None, board_reason="not measured")
    verdict = judge(facts, rubric)
    assert verdict.scores["novelty"].score == 0
    assert verdict.scores["novelty"].rationale.startswith("not scored")


# --- a live line while a judge is thinking --------------------------------------------------------------------------
def test_a_slow_judge_server_shows_a_ticking_waiting_line(rubric, monkeypatch):
    """A real (slow) OpenAI-compatible server on loopback: while its reply is outstanding the review says which
    judge it waits for and for how long, again and again, not nothing for 17 minutes."""
    import asyncio
    import json
    import sys
    import time

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import reviewbench.judges.loop as loop
    from reviewbench.arena import JudgeSpec
    from reviewbench.judges.inputs import build_inputs
    from reviewbench.judges.panel import PanelRunner, ResolvedPanel, default_provider
    from test_judges_api import chat_completion, verdict_input
    from test_judges_isolation import serve

    body = json.dumps(chat_completion([("submit_verdict", verdict_input())])).encode()

    def slow():
        time.sleep(0.5)
        return 200, "application/json", body

    monkeypatch.setattr(loop, "WAIT_TICK_S", 0.1)
    server = serve(slow)
    lines: list[str] = []
    try:
        spec = JudgeSpec(family="qwen", provider="openai_compatible", model="Qwen/Qwen3-0.6B", web_search=False,
                         timeout=20, base_url=f"http://127.0.0.1:{server.server_port}/v1")
        inputs = build_inputs(submission_id="x-001", board=None, board_setting="", method_src="x = 1\n",
                              description="# T\n", audit_summary=None, audit_findings=[], evidence_lines=[],
                              earlier=[], log_dir=None, classify=False)
        runner = PanelRunner(inputs=inputs, rubric=rubric, author_family="anthropic", store=None,
                             make_provider=default_provider, make_web=lambda: None, progress=lines.append)
        result = asyncio.run(runner.run(ResolvedPanel(judges=[spec], local=False, note="slow")))
    finally:
        server.shutdown()
    assert result.outcomes[0].verdict is not None
    waiting = [x for x in lines if x.startswith("waiting for judge qwen-Qwen3-0.6B (")]
    assert len(waiting) >= 3, lines  # it ticks while the reply is outstanding
    assert waiting[0].endswith("(0 s)") and all(x.endswith(" s)") for x in waiting)


# --- review init ----------------------------------------------------------------------------------------------------
def test_review_init_writes_a_skeleton_that_passes_the_bundle_stage(tmp_path, capsys):
    import shutil

    from reviewbench.bundle import load_bundle
    from reviewbench.pipeline import StageContext
    from reviewbench.review import arena_rubric, open_arena
    from reviewbench.stages.bundle import bundle_stage
    from reviewbench.store import Store
    from tests.conftest import EXAMPLE_ARENA

    root = tmp_path / "arena"
    shutil.copytree(EXAMPLE_ARENA, root, ignore=shutil.ignore_patterns("reviews", "benchmark", "data", "logs"))
    before = sorted(p.name for p in (root / "submit").iterdir())
    rc, out, err = _cli(capsys, "init", "agent1", "--arena", str(root), "--board", "A")
    assert rc == 0, err
    new = sorted(set(p.name for p in (root / "submit").iterdir()) - set(before))
    assert new == ["agent1-005"], new  # one past the agent's highest number; nothing else touched
    assert "agent1-005" in out
    arena = open_arena(None, root)
    bundle = load_bundle(root / "submit" / "agent1-005", arena.config.bundle)
    with Store(tmp_path / "s.sqlite") as store:
        out_stage = bundle_stage(StageContext(arena=arena, bundle=bundle, rubric=arena_rubric(arena), store=store,
                                              author_family="anthropic", earlier=[]))
    data = out_stage.data
    assert data is not None and data.method_class is not None and data.board == "A" and data.board_known
    assert data.sections_missing == [] and data.claims == []
    assert not [f for f in out_stage.findings if f.severity in ("error", "warning")], out_stage.findings
    assert "2309.17453" in bundle.description.text  # an unchanged skeleton credits the rule it starts from
    # a second init takes the next number; an undeclared agent or board is one line, nothing written
    assert _cli(capsys, "init", "agent1", "--arena", str(root))[0] == 0
    assert (root / "submit" / "agent1-006").is_dir()
    for args in (["init", "nobody", "--arena", str(root)], ["init", "agent1", "--arena", str(root), "--board", "Q"]):
        rc, _, err = _cli(capsys, *args)
        assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in (root / "submit").iterdir()) == sorted([*before, "agent1-005", "agent1-006"])


# --- adding a stage is one module and one line -------------------------------------------------------------------
TOY_MODULE = '''
"""A toy stage: counts the bundle's files."""
from pydantic import BaseModel, ConfigDict

from reviewbench.pipeline import Stage, StageKey, StageOutput
from reviewbench.stages.bundle import BUNDLE


class ToyData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    files: int


TOY = StageKey("toy", ToyData)


def run(ctx):
    bundle = ctx.get(BUNDLE)
    return StageOutput(status="ok", summary=f"{len(bundle.files)} files", data=ToyData(files=len(bundle.files)))


STAGE = Stage(TOY, "Toy count", (BUNDLE,), run)
'''

TOY_DRIVER = '''
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import reviewbench.stages as stages
import toy_stage
assert "reviewbench.report" not in sys.modules
stages.STAGES = (*stages.STAGES, toy_stage.STAGE)  # the one line (in reviewbench/stages/__init__.py: its entry)

from reviewbench.arena import load_arena
from reviewbench.cli import _stage_set
from reviewbench.pipeline import run_stages
from reviewbench.report import ReviewReport, build_report, review_json_schema
from reviewbench.review import arena_rubric, open_review
from reviewbench.store import Store

schema = json.dumps(review_json_schema())
assert "ToyStageReport" in schema and "ToyData" in schema, "the schema describes the new stage"
assert _stage_set("toy,bundle") == {"toy", "bundle"}  # --only/--skip/--rerun know it
arena = load_arena(Path(sys.argv[2]))
with Store(Path(sys.argv[1]) / "store.sqlite") as store:
    ctx = open_review(arena, arena.submit_dir / "agent1-002", store=store, history=False)
    reports = run_stages(stages.STAGES, ctx, only={"bundle", "toy"})
    report = build_report(arena, ctx.bundle, "anthropic", arena_rubric(arena), 1, reports, [], True)
again = ReviewReport.model_validate_json(report.to_json())
toy = again.stage("toy")
assert toy is not None and toy.status == "ok" and toy.data.files == len(ctx.bundle.files) and toy.title == "Toy count"
print("ok", toy.summary)
'''


def test_a_toy_stage_is_one_module_and_one_line(tmp_path):
    import subprocess
    import sys

    from reviewbench.stagelist import STAGE_NAMES, stage_names
    from tests.conftest import EXAMPLE_ARENA, ROOT

    assert stage_names() == STAGE_NAMES  # the import-free list names the built-in stages, in order
    (tmp_path / "toy_stage.py").write_text(TOY_MODULE)
    (tmp_path / "driver.py").write_text(TOY_DRIVER)
    r = subprocess.run([sys.executable, str(tmp_path / "driver.py"), str(tmp_path), str(EXAMPLE_ARENA)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.startswith("ok "), r.stderr[-3000:]


def test_a_review_json_of_schema_2_is_read_with_its_harness_stage_as_the_ledger(small, tmp_path):
    """The "harness" stage is named "ledger" since reviewbench.review/3: older review.json files still load."""
    import json

    from reviewbench.report import REVIEW_SCHEMA, load_report
    from reviewbench.stages.ledger import LedgerData

    doc = json.loads((small / "reviews" / "agent1-002" / "review.json").read_text())
    doc["schema"] = "reviewbench.review/2"
    doc["stages"].append({"name": "harness", "title": "Harness verification", "status": "ok", "reason": "",
                          "summary": "no numeric claims", "findings": [], "cached": False, "seconds": 0.0,
                          "input_hash": "", "data": {"ledger": [], "digest": [], "candidate_flags": []}})
    old = tmp_path / "review.json"
    old.write_text(json.dumps(doc))
    report = load_report(old)
    ledger = report.stage("ledger")
    assert report.schema_ == REVIEW_SCHEMA == "reviewbench.review/3" and report.stage("harness") is None
    assert ledger is not None and isinstance(ledger.data, LedgerData)


def test_the_python_api_reviews_and_refuses_bad_input_with_one_line(tmp_path):
    from reviewbench import api
    from reviewbench.errors import UserError
    from tests.conftest import EXAMPLE_ARENA

    with pytest.raises(UserError) as e:
        api.review(str(EXAMPLE_ARENA / "submit" / "nobody-001"))
    assert "no such" in e.value.one_line() and "\n" not in e.value.one_line()
    with pytest.raises(UserError) as e:
        api.review(EXAMPLE_ARENA / "submit" / "agent1-002", only={"nonsense"})
    assert "unknown stage 'nonsense'" in e.value.one_line()


# --- the executor travels on the review's context -------------------------------------------------------------------
def test_open_review_carries_the_executor_and_sets_nothing_process_wide(tmp_path):
    import reviewbench.executor as ex_mod
    from harness.sandbox import SandboxError
    from reviewbench.pipeline import _report
    from reviewbench.review import open_arena, open_review
    from reviewbench.stages import STAGES
    from reviewbench.stages.benchmark import benchmark_stage
    from reviewbench.stages.bundle import bundle_stage
    from reviewbench.store import Store
    from tests.conftest import EXAMPLE_ARENA

    class Refusing(ex_mod.Executor):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[object] = []

        def _run(self, cfg, wall_s, progress, label):
            self.seen.append(cfg)
            raise SandboxError("refused by the test executor")

    before = ex_mod.current()
    mine = Refusing()
    arena = open_arena(None, EXAMPLE_ARENA)
    with Store(tmp_path / "s.sqlite") as store:
        ctx = open_review(arena, EXAMPLE_ARENA / "submit" / "agent1-002", mine, store=store)
        assert ctx.harness() is mine and ex_mod.current() is before  # nothing process-wide was set
        assert [e.id for e in ctx.earlier] and ctx.author_family == "anthropic"
        bundle = next(s for s in STAGES if s.name == "bundle")
        ctx.reports["bundle"] = _report(bundle, bundle_stage(ctx))
        out = benchmark_stage(ctx)
    if out.status == "not_run":
        pytest.skip(out.reason)  # no sandbox here: the benchmark does not start
    assert out.status == "failed" and "refused by the test executor" in out.reason and len(mine.seen) == 1
