import json
import subprocess
import sys

from reviewbench.store import Store
from tests.conftest import ROOT, run_review

KILL_IN_POINTS = """
import dataclasses, os, signal, sys
import reviewbench.review as r

def die(ctx):
    os.kill(os.getpid(), signal.SIGKILL)

import reviewbench.stages as st
st.STAGES = tuple(dataclasses.replace(s, run=die) if s.name == "points" else s for s in st.STAGES)
from reviewbench.cli import main
sys.exit(main(["submit/agent1-002"]))
"""


def stages_of(arena, sub="agent1-003"):
    return {s["name"]: s for s in json.loads((arena / f"reviews/{sub}/review.json").read_text())["stages"]}


def test_killed_review_resumes_without_redoing_finished_stages(arena):
    # board A (one item here): the cheapest board to measure; the resumption is the same on every board
    import os

    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"} | {
        k: os.environ[k] for k in ("HOME", "REVIEWBENCH_CACHE", "XDG_CACHE_HOME") if k in os.environ}
    killed = subprocess.run([sys.executable, "-c", KILL_IN_POINTS], cwd=arena, capture_output=True, text=True,
                            env=env)
    assert killed.returncode == -9
    assert not (arena / "reviews" / "agent1-002").exists()  # no half-written report
    with Store(arena / "reviews" / "reviewbench.sqlite") as s:
        assert s.latest_stage("agent1-002", "bundle") is not None
        assert s.latest_stage("agent1-002", "verdict") is not None
        assert s.runs("agent1-002")[0]["status"] == "running"  # the killed run never finished
        assert s.all_points() == []

    r = run_review("submit/agent1-002", cwd=arena)
    assert r.returncode == 0, r.stderr
    st = stages_of(arena, "agent1-002")
    assert st["bundle"]["cached"] and st["benchmark"]["cached"] and st["verdict"]["cached"]
    assert st["points"]["status"] == "ok" and not st["points"]["cached"]
    with Store(arena / "reviews" / "reviewbench.sqlite") as s:
        # the next start finds the killed run's process gone and says so
        assert [run["status"] for run in s.runs("agent1-002")] == ["aborted", "complete"]
        assert [p["submission"] for p in s.all_points()] == ["agent1-002"]


def test_rerun_replays_and_rerun_flag_recomputes(reviewed_copy):
    arena = reviewed_copy
    assert run_review("submit/agent1-003", cwd=arena).returncode == 0
    assert stages_of(arena)["bundle"]["cached"]
    assert run_review("submit/agent1-003", "--rerun", "bundle", cwd=arena).returncode == 0
    again = stages_of(arena)
    assert not again["bundle"]["cached"] and again["verdict"]["cached"]  # same bundle output: verdict replays


def test_changed_bundle_reruns_its_stages(reviewed_copy):
    arena = reviewed_copy
    desc = arena / "submit/agent1-003/DESCRIPTION.md"
    desc.write_text(desc.read_text() + "\nOne more line.\n")
    assert run_review("submit/agent1-003", cwd=arena).returncode == 0
    st = stages_of(arena)
    assert not st["bundle"]["cached"] and not st["evidence"]["cached"]
    assert st["benchmark"]["cached"]  # the measurement reads method.py alone: a description edit replays it


def test_the_benchmark_is_keyed_by_method_py_not_the_description(tmp_path):
    import shutil

    from reviewbench.arena import load_arena
    from reviewbench.bundle import load_bundle
    from reviewbench.pipeline import StageContext, input_hash
    from reviewbench.rubric import RUBRICS_DIR, load_rubric
    from reviewbench.stages import STAGES
    from tests.conftest import EXAMPLE_ARENA

    arena = load_arena(EXAMPLE_ARENA)
    sub = tmp_path / "agent1-003"
    shutil.copytree(EXAMPLE_ARENA / "submit" / "agent1-003", sub)
    stages = {s.name: s for s in STAGES}

    def keys() -> dict[str, str]:
        ctx = StageContext(arena=arena, bundle=load_bundle(sub), rubric=load_rubric(RUBRICS_DIR / "default.toml"),
                           store=None, author_family="anthropic", earlier=[])  # type: ignore[arg-type]
        upstream = {"bundle": load_bundle(sub).content_hash}
        return {n: input_hash(stages[n], ctx, upstream) for n in ("bundle", "evidence", "benchmark")}

    first = keys()
    (sub / "DESCRIPTION.md").write_text((sub / "DESCRIPTION.md").read_text() + "\nA corrected sentence.\n")
    described = keys()
    assert described["benchmark"] == first["benchmark"]
    assert described["bundle"] != first["bundle"] and described["evidence"] != first["evidence"]
    (sub / "method.py").write_text((sub / "method.py").read_text() + "\n# a comment is still new code\n")
    assert keys()["benchmark"] != first["benchmark"]


def test_only_and_skip_are_partial_drafts_that_never_replace_the_complete_review(reviewed_copy):
    arena = reviewed_copy
    complete = (arena / "reviews/agent1-003/review.json").read_text()
    board_before = run_review("board", "--json", cwd=arena).stdout
    assert run_review("submit/agent1-003", "--only", "bundle", cwd=arena).returncode == 0
    draft = json.loads((arena / "reviews/agent1-003/partial/review.json").read_text())
    st = {s["name"]: s for s in draft["stages"]}
    assert draft["partial"] and draft["outcome"].startswith("PARTIAL")
    assert st["bundle"]["status"] == "ok"
    assert st["verdict"]["status"] == "not_run" and st["verdict"]["reason"] == "not selected by --only"
    assert run_review("submit/agent1-003", "--skip", "audit", cwd=arena).returncode == 0
    draft = json.loads((arena / "reviews/agent1-003/partial/review.json").read_text())
    assert {s["name"]: s for s in draft["stages"]}["audit"]["reason"] == "skipped by --skip"
    # the skipped audit would clear the agent's RULE_VIOLATION: the complete review and the board stay as they were
    assert (arena / "reviews/agent1-003/review.json").read_text() == complete
    assert run_review("board", "--json", cwd=arena).stdout == board_before
    show = run_review("show", "agent1-003", cwd=arena)
    assert "RULE_VIOLATION" in show.stdout and "partial draft" in show.stdout
    bad = run_review("submit/agent1-003", "--only", "bundel", cwd=arena)
    assert bad.returncode == 2 and "unknown stage 'bundel'" in bad.stderr
