import json

from reviewbench.report import review_json_schema
from tests.conftest import ROOT, run_review


def test_review_of_the_example_writes_json_md_html(arena):
    r = run_review("submit/agent1-003", cwd=arena)
    assert r.returncode == 0, r.stderr
    out = arena / "reviews" / "agent1-003"
    report = json.loads((out / "review.json").read_text())
    assert report["schema"] == "reviewbench.review/1"
    assert report["submission"]["id"] == "agent1-003" and report["submission"]["family"] == "anthropic"
    assert [s["name"] for s in report["stages"]] == ["bundle", "audit", "evidence", "harness", "judges",
                                                     "verdict", "points"]
    # earlier = submitted before agent1-003, across agents
    assert [e["id"] for e in report["earlier_submissions"]] == ["agent1-001", "agent2-001", "agent1-002",
                                                                 "agent2-002", "agent2-003"]
    md = (out / "review.md").read_text()
    assert md.splitlines()[0].startswith("> ") and report["headline"] in md.splitlines()[0]
    assert "not the first submission on board C (agent2-003 came first)" in md
    html = (out / "review.html").read_text()
    assert "<h1>Review of agent1-003 (foresight_c)</h1>" in html
    assert "agent1-003" in r.stdout and "review.md" in r.stdout


def test_headline_says_plainly_which_judges_ran(arena):
    run_review("submit/agent1-003", cwd=arena)
    report = json.loads((arena / "reviews/agent1-003/review.json").read_text())
    judges = next(s for s in report["stages"] if s["name"] == "judges")
    if judges["status"] != "ok":
        assert report["headline"].startswith("No judges ran")
        assert report["verdict"]["status"] == "no_judges"


def test_review_works_from_the_arena_flag_and_from_elsewhere(arena, tmp_path):
    r = run_review(str(arena / "submit" / "agent2-002"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = run_review("run", str(arena / "submit" / "agent2-001"), "--arena", str(arena), "--json", cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["submission"]["board"] == "B_online"


def test_show_and_board(arena):
    for sub in ("agent2-003", "agent1-003"):
        assert run_review(f"submit/{sub}", cwd=arena).returncode == 0
    show = run_review("show", "agent1-003", cwd=arena)
    assert show.returncode == 0 and "foresight_c" in show.stdout
    board = json.loads(run_review("board", "--json", cwd=arena).stdout)
    assert board["schema"] == "reviewbench.board/1"
    assert {p["submission"] for p in board["submissions"]} == {"agent2-003", "agent1-003"}
    assert {a["agent"] for a in board["agents"]} == {"agent1", "agent2"}
    table = run_review("board", cwd=arena)
    assert table.returncode == 0 and "Board C" in table.stdout
    missing = run_review("show", "agent4-001", cwd=arena)
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


def test_every_example_submission_gets_evidence_and_judges_in_its_report(arena):
    """The eight example submissions, reviewed in submission order: evidence, judges and points in each report."""
    order = ["agent1-001", "agent2-001", "agent1-002", "agent2-002", "agent2-003", "agent1-003", "agent2-004",
             "agent1-004"]
    for sub in order:
        r = run_review(f"submit/{sub}", "--json", cwd=arena, timeout=600)
        assert r.returncode == 0, (sub, r.stderr)
        report = json.loads(r.stdout)
        stages = {s["name"]: s for s in report["stages"]}
        assert stages["evidence"]["status"] == "ok" and stages["judges"]["status"] == "ok", sub
        ev = stages["evidence"]["data"]
        assert ev["citations"] and all(c["status"] == "real" for c in ev["citations"]), sub
        assert ev["behaviour"]["matches"] and ev["code"], sub
        md = (arena / "reviews" / sub / "review.md").read_text()
        assert "## Evidence" in md and "Nearest methods by behaviour" in md and "## Judges" in md, sub
