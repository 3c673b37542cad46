import json

import pytest

from reviewbench.report import review_json_schema
from tests.conftest import ROOT, run_review


def _report(arena, sub):
    return json.loads((arena / "reviews" / sub / "review.json").read_text())


def test_review_of_the_example_writes_json_md_html(reviewed_arena):
    report = _report(reviewed_arena, "agent1-003")
    out = reviewed_arena / "reviews" / "agent1-003"
    assert report["schema"] == "reviewbench.review/3" and not report["partial"]
    assert report["submission"]["id"] == "agent1-003" and report["submission"]["family"] == "anthropic"
    assert [s["name"] for s in report["stages"]] == ["bundle", "audit", "benchmark", "evidence", "ledger", "standing",
                                                     "judges", "verdict", "points"]
    # earlier = submitted before agent1-003, across agents
    assert [e["id"] for e in report["earlier_submissions"]] == ["agent1-001", "agent2-001", "agent1-002",
                                                                 "agent2-002", "agent2-003"]
    md = (out / "review.md").read_text()
    assert md.splitlines()[0].startswith("> ") and report["headline"] in md.splitlines()[0]
    assert "not the first submission on board C (agent2-003 came first)" in md
    assert "## Board benchmark" in md and "Overall" in md
    # the console's points line: the measured Overall, the board's best before it and the gate's CI
    points = next(s for s in report["stages"] if s["name"] == "points")
    assert points["summary"].startswith("Overall ") and " vs best before " in points["summary"]
    assert "95% CI [" in points["summary"] and "over 1 item:" in points["summary"]
    html = (out / "review.html").read_text()
    assert "<h1>Review of agent1-003 (foresight_c)</h1>" in html and "<svg" in html  # the board plot, inline


def test_headline_says_plainly_which_judges_ran(reviewed_arena):
    report = _report(reviewed_arena, "agent1-003")
    assert report["headline"].startswith("Judged OFFLINE by the evidence judge")
    judges = next(s for s in report["stages"] if s["name"] == "judges")
    roles = [(o["family"], o["role"]) for o in judges["data"]["outcomes"]]
    assert roles == [("evidence", "primary")]  # the test arenas set offline_advisors = false
    assert "without advisors ([panel] offline_advisors = false)" in report["headline"]
    assert report["verdict"]["judges"] == ["evidence-measured-facts"] and report["verdict"]["status"] == "complete"


def test_review_works_from_the_arena_flag_and_from_elsewhere(reviewed_copy, tmp_path):
    r = run_review(str(reviewed_copy / "submit" / "agent2-002"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "agent2-002" in r.stdout and "review.md" in r.stdout
    r = run_review("run", str(reviewed_copy / "submit" / "agent1-001"), "--arena", str(reviewed_copy), "--json",
                   cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["submission"]["board"] == "B_online"


def test_show_and_board(reviewed_arena):
    show = run_review("show", "agent1-003", cwd=reviewed_arena)
    assert show.returncode == 0 and "foresight_c" in show.stdout
    board = json.loads(run_review("board", "--json", cwd=reviewed_arena).stdout)
    assert board["schema"] == "reviewbench.board/2"
    from tests.conftest import REVIEWED

    ids = {r["id"] for t in board["boards"] for r in t["rows"] if r["kind"] == "submission"}
    assert ids == set(REVIEWED)
    assert {a["agent"] for a in board["agents"]} == {"agent1", "agent2"}
    c = next(t for t in board["boards"] if t["board"] == "C")
    assert {r["id"] for r in c["rows"] if r["kind"] == "baseline"} >= {"baseline:h2o", "baseline:window"}
    first = next(r for r in c["rows"] if r["id"] == "agent2-003")
    assert first["overall"] is not None and first["best_before"]["id"].startswith("baseline:")
    table = run_review("board", cwd=reviewed_arena)
    assert table.returncode == 0 and "Board C" in table.stdout
    missing = run_review("show", "agent4-001", cwd=reviewed_arena)
    assert missing.returncode == 2 and "no review of agent4-001" in missing.stderr


def test_help_everywhere():
    for args in ([], ["--help"], ["run", "--help"], ["show", "--help"], ["board", "--help"], ["schema", "--help"]):
        r = run_review(*args)
        assert "Usage" in r.stdout, args


def test_committed_json_schema_is_current():
    committed = json.loads((ROOT / "reviewbench" / "schemas" / "review.schema.json").read_text())
    assert committed == json.loads(json.dumps(review_json_schema())), "run: review schema --out reviewbench/schemas/review.schema.json"


def test_bad_arena_toml_is_one_line(arena):
    (arena / "arena.toml").write_text((arena / "arena.toml").read_text() + "\n[rules]\nbogus = 1\n")
    r = run_review("submit/agent1-003", cwd=arena)
    assert r.returncode == 2 and "arena.toml" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.heavy  # three more reviews (3 min): `make test-all`; `make test` checks the five it reviews below
def test_every_example_submission_gets_evidence_a_measurement_and_judges_in_its_report(reviewed_all):
    """The eight example submissions, reviewed in submission order: evidence, the board measurement, judges and
    points in each report."""
    from tests.conftest import SUBMISSION_ORDER

    _check_reports(reviewed_all, SUBMISSION_ORDER)
    board = json.loads(run_review("board", "--json", cwd=reviewed_all).stdout)
    assert {r["id"] for t in board["boards"] for r in t["rows"] if r["kind"] == "submission"} == set(SUBMISSION_ORDER)


def test_each_reviewed_submission_gets_evidence_a_measurement_and_judges_in_its_report(reviewed_arena):
    from tests.conftest import REVIEWED

    _check_reports(reviewed_arena, REVIEWED)


def _check_reports(arena, subs):
    reviewed_arena = arena
    for sub in subs:
        report = _report(reviewed_arena, sub)
        stages = {s["name"]: s for s in report["stages"]}
        assert stages["evidence"]["status"] == "ok" and stages["judges"]["status"] == "ok", sub
        assert stages["benchmark"]["status"] == "ok", (sub, stages["benchmark"]["reason"])
        assert report["points"]["measurement"]["overall"] is not None, sub
        ev = stages["evidence"]["data"]
        assert ev["citations"] and all(c["status"] == "real" for c in ev["citations"]), sub
        assert ev["behaviour"]["matches"] and ev["code"], sub
        md = (reviewed_arena / "reviews" / sub / "review.md").read_text()
        assert "## Evidence" in md and "Nearest methods by behaviour" in md and "## Judges" in md, sub
        assert "## Board benchmark" in md, sub
