"""`review calibrate`: the blinded suite leaks nothing and still behaves like its baselines; the metrics; the API
panels' path through the real SDK clients on MockTransport (offsets, replay, --fail-under exit code); the local
panel end to end."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import httpx2
import pytest
import torch

from harness.api import LayerView, ModelInfo
from harness.loading import load_method
from harness.methods import REFERENCE_METHODS
from reviewbench.calibrate import command
from reviewbench.calibrate.blind import write_suite
from reviewbench.calibrate.metrics import (failures, family_offsets, krippendorff_interval, names_source,
                                           parse_fail_under)
from reviewbench.calibrate.runner import CaseResult, JudgeRecord
from reviewbench.calibrate.suite import BASELINE_CASES, Case, leak_terms, leaks, load_key, surnames
from reviewbench.cli import main
from reviewbench.judges.providers.anthropic import AnthropicJudge
from reviewbench.judges.providers.openai import OpenAIJudge
from reviewbench.priorart import load_index

from test_judges_api import anthropic_message, responses_reply, tool_use

SUITE = Path(__file__).resolve().parents[1] / "calibration"
KEY = load_key(SUITE)


def test_no_name_or_id_leaks_into_a_blinded_bundle():
    papers = [p for p in load_index().papers if p.baseline]
    terms, names = leak_terms(papers), surnames(papers)
    assert "2404.14469" in terms and "SnapKV" in terms and "Xiao" in names
    assert set(leaks("We extend SnapKV (arXiv 2404.14469) as Li et al. did", terms, names)) >= {"SnapKV", "2404.14469", "Li"}
    assert leaks("a light split of the list", terms, names) == []  # surnames count only as whole words
    folders = sorted((SUITE / "blinded").iterdir())
    ports = tomllib.loads((SUITE / "ports" / "ports.toml").read_text())["ports"]
    assert len(folders) == len(BASELINE_CASES) + 4 + len(ports)
    for folder in folders:
        for f in folder.iterdir():
            found = leaks(f.read_text(), terms, names)
            assert not found, f"{f}: {found}"
        log = next((SUITE / "logs" / folder.name.split("-")[0]).rglob("*.jsonl")).read_text()
        assert not leaks(log, terms, names)
    assert not any((SUITE / "blinded").rglob("answer_key*"))


def test_the_committed_suite_is_what_the_blinding_tool_builds(tmp_path):
    for name in ("sources.toml", "arena.toml", "panels.toml"):
        shutil.copy(SUITE / name, tmp_path / name)
    shutil.copytree(SUITE / "ports", tmp_path / "ports")
    key = write_suite(tmp_path)
    assert key == KEY
    for f in (SUITE / "blinded").rglob("*"):
        if f.is_file():
            assert (tmp_path / f.relative_to(SUITE)).read_text() == f.read_text(), f


def _view(seed: int, info: ModelInfo, board="A") -> LayerView:
    g = torch.Generator().manual_seed(seed)
    t, d = 48, info.head_dim
    keys, values = torch.randn(2, t, d, generator=g), torch.randn(2, t, d, generator=g)
    qpos = torch.arange(t - 32, t)
    return LayerView(layer=3, keys=keys, values=values, positions=torch.arange(t).expand(2, t),
                     queries=torch.randn(6, 32, d, generator=g), query_positions=qpos, budget=12, board=board,
                     phase="prefill", model=info, state={})


@pytest.mark.parametrize("method", BASELINE_CASES)
def test_a_blinded_baseline_keeps_exactly_what_its_baseline_keeps(method):
    case = next(c for c in KEY.cases if c.kind == "baseline" and c.method == method)
    info = ModelInfo(name="t", n_layers=10, n_heads=6, n_kv_heads=2, head_dim=8, rope_theta=10000.0)
    _, blinded, _ = load_method(str(SUITE / "blinded" / case.code))
    original = REFERENCE_METHODS[method]()
    assert type(blinded).__name__ == "Method" and blinded.name == "method"
    assert blinded.layer_budgets(60, 400, info) == original.layer_budgets(60, 400, info)
    for seed in range(3):
        a, b = blinded.select(_view(seed, info)), original.select(_view(seed, info))
        assert [x.tolist() for x in a.indices] == [x.tolist() for x in b.indices]


def test_krippendorff_alpha_interval():
    assert krippendorff_interval([[1, 1], [2, 2], [3, 3]]) == 1.0
    assert krippendorff_interval([[1, 1], [1, 1]]) is None  # no variation: undefined
    # Krippendorff (2011) interval example, two coders with a missing value
    units = [[1, 1], [2, 2], [3, 3], [3, 3], [2, 2], [1, 2], [4, 4], [1, 1], [2, 2], [5, 5], [None, 1]]
    assert 0.9 < krippendorff_interval(units) < 1.0
    assert krippendorff_interval([[0, 5], [5, 0]]) < 0


def _case(code, a, b):
    mk = lambda fam, s: JudgeRecord(judge_id=fam, family=fam, model="m", role="primary",
                                    scores={"novelty": s[0], "effectiveness": s[1]})
    return CaseResult(code=code, evidence_to_judges=False, judges=[mk("anthropic", a), mk("openai", b)])


def test_family_offsets_are_each_familys_mean_distance_from_the_panel():
    res = [_case("x1", (1, 2), (3, 2)), _case("x2", (0, 4), (2, 2))]
    off = family_offsets(res, ["novelty", "effectiveness"])
    assert off == {"anthropic": {"novelty": -1.0, "effectiveness": 0.5}, "openai": {"novelty": 1.0, "effectiveness": -0.5}}


def test_source_matching_and_fail_under_parsing():
    case = Case(code="k1-001", kind="baseline", method="snapkv_qa", board="B_online",
                accept_arxiv=["2505.23416", "2404.14469"], accept_titles=["Query-agnostic SnapKV"])
    assert names_source([{"title": "Something", "arxiv_id": "arXiv:2404.14469v2"}], case)
    assert names_source([{"title": "x"}, {"title": "x"}, {"title": "query-agnostic snapkv"}], case)
    assert not names_source([{"title": "x"}] * 3 + [{"arxiv_id": "2404.14469"}], case)  # only the first three count
    assert parse_fail_under("novelty=1.0, source=0.9,alpha=0.5") == {"novelty": 1.0, "source": 0.9, "alpha": 0.5}
    for bad in ("speed=1", "novelty=high"):
        with pytest.raises(ValueError):
            parse_fail_under(bad)
    from reviewbench.calibrate.metrics import Calibration, Row

    cal = Calibration(rows=[Row(name="panel", novelty_le1=0.5, source_named=1.0)], alpha={"novelty": None},
                      family_offsets={}, confusion={})
    assert failures(cal, {"source": 0.9}) == []
    assert failures(cal, {"novelty": 1.0, "recall": 1.0, "alpha": 0.1}) == [
        "novelty 0.5 < 1", "recall undefined < 1", "alpha undefined < 0.1"]  # undefined proves nothing: a miss


# --- the API panels through the SDK clients --------------------------------------------------------------------
class PerfectClaude:
    """An Anthropic endpoint that answers every judge request with novelty 1 and the right source paper."""

    def __init__(self):
        self.requests = []

    def __call__(self, request):
        body = json.loads(request.content)
        self.requests.append(body)
        code = next(c.code for c in KEY.cases if c.code in json.dumps(body["messages"]))
        case = KEY.case(code)
        verdict = {"scores": {"novelty": {"score": 1, "rationale": "a published method"},
                              "effectiveness": {"score": 1, "rationale": "no numbers"},
                              "soundness": {"score": 2, "rationale": "accurate"}},
                   "flags": [], "prior_work": [{"title": case.paper or "Random eviction", "arxiv_id": case.arxiv,
                                                "relation": "the same algorithm"}],
                   "citations_checked": [], "summary": "a reimplementation"}
        return httpx2.Response(200, json=anthropic_message([tool_use("submit_verdict", verdict, "toolu_1")]))


class GenerousGPT:
    """A Responses API endpoint that always gives novelty 3 and names no source."""

    def __init__(self):
        self.requests = []

    def __call__(self, request):
        self.requests.append(json.loads(request.content))
        verdict = {"scores": {"novelty": {"score": 3, "rationale": "new"}, "effectiveness": {"score": 2, "rationale": "ok"},
                              "soundness": {"score": 2, "rationale": "ok"}},
                   "flags": [], "prior_work": [{"title": "An unrelated paper", "arxiv_id": "2101.00001", "relation": "-"}],
                   "citations_checked": [], "summary": "new"}
        return httpx2.Response(200, json=responses_reply([("submit_verdict", verdict)]))


def _suite_copy(tmp_path: Path) -> Path:
    root = tmp_path / "calibration"
    shutil.copytree(SUITE, root, ignore=shutil.ignore_patterns("reviews", "reports"))
    return root


def test_api_panel_calibration_offsets_replay_and_fail_under(tmp_path, monkeypatch):
    root = _suite_copy(tmp_path)
    claude, gpt = PerfectClaude(), GenerousGPT()
    clients = {"anthropic": AnthropicJudge(api_key="sk-ant-test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(claude))),
               "openai": OpenAIJudge(api_key="sk-test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(gpt)))}
    monkeypatch.setattr(command, "default_provider", lambda spec, inputs: clients[spec.provider])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    codes = [c.code for c in KEY.cases if c.method in ("snapkv", "h2o") and c.kind == "baseline"]
    args = ["calibrate", "--suite", str(root), "--panel", "api", "--no-evidence"] + [a for c in codes for a in ("--only", c)]

    assert main(args + ["--fail-under", "source=0.9"]) == 0
    report = json.loads(next((root / "reports").glob("api-*.json")).read_text())
    rows = {r["name"]: r for r in report["calibration"]["rows"]}
    assert rows["anthropic-claude-sonnet-4-5"]["novelty_le1"] == 1.0 and rows["anthropic-claude-sonnet-4-5"]["source_named"] == 1.0
    assert rows["openai-gpt-5"]["novelty_le1"] == 0.0 and rows["openai-gpt-5"]["source_named"] == 0.0
    assert rows["panel"]["source_named"] == 1.0  # one primary judge named it
    assert report["calibration"]["family_offsets"]["anthropic"]["novelty"] == -1.0
    assert report["calibration"]["family_offsets"]["openai"]["novelty"] == 1.0
    assert rows["anthropic-claude-sonnet-4-5"]["cost_usd"] > 0
    assert report["calibration"]["confusion"]["anthropic-claude-sonnet-4-5"] == {"snapkv": "snapkv", "h2o": "h2o"}
    assert report["answer_key"]["cases"] and (root / "reports" / Path(report["panel"] + "-" + report["generated_at"][:10] + "-only.html")).is_file()
    # the answer key never reaches a judge; the blinded code does
    def ours(req: dict) -> dict:  # what we wrote: the judges' own earlier turns (echoed back on a nudge) are theirs
        keep = lambda m: m.get("role") != "assistant" and m.get("type") not in ("function_call", "message")  # noqa: E731
        return {k: ([m for m in v if not isinstance(m, dict) or keep(m)] if k in ("messages", "input") and
                    isinstance(v, list) else v) for k, v in req.items()}

    sent = json.dumps([ours(r) for r in claude.requests + gpt.requests])
    for word in ("answer_key", "snapkv"):
        at = sent.lower().find(word)
        assert at < 0, sent[max(0, at - 300): at + 100]
    assert codes[0] in sent
    n_claude, n_gpt = len(claude.requests), len(gpt.requests)
    # novelty 1 vs 3 splits every case: a third run of the first judge's family (the author's family is "other");
    # each run is two requests: these judges submit before any web search and are sent back once (the arena's rule)
    assert (n_claude, n_gpt) == (2 * 4, 2 * 2)
    assert report["calibration"]["alpha"]["novelty"] < 0  # the two disagree systematically

    # a rerun replays from the store (nothing reaches either API); the disagreement fails an alpha threshold
    assert main(args + ["--fail-under", "source=0.9,alpha=0.5"]) == 1
    assert (len(claude.requests), len(gpt.requests)) == (n_claude, n_gpt)


def test_a_calibration_report_feeds_the_tie_break_offsets(tmp_path):
    from reviewbench.calibrate.report import load_offsets
    from reviewbench.errors import ConfigError
    from reviewbench.rubric import load_rubric, resolve_rubric_path
    from reviewbench.verdict import CriterionScore, JudgeVerdict, decide_tie_break

    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema": "reviewbench.calibration/1",
                                "calibration": {"family_offsets": {"anthropic": {"novelty": -0.75},
                                                                   "openai": {"novelty": 0.75}}}}))
    offsets = load_offsets(path)
    rubric = load_rubric(resolve_rubric_path("default", tmp_path))
    v = lambda fam, n: JudgeVerdict(judge_id=fam, family=fam, provider=fam, model="m",
                                    scores={c: CriterionScore(score=n if c == "novelty" else 2) for c in ("novelty", "effectiveness", "soundness")})
    assert decide_tie_break(v("anthropic", 1), v("openai", 3), rubric, "other", offsets).needed  # off by default
    on = rubric.model_copy(update={"tie_break": rubric.tie_break.model_copy(update={"subtract_family_offsets": True})})
    assert not decide_tie_break(v("anthropic", 1), v("openai", 3), on, "other", offsets).needed  # 1.75 vs 2.25
    path.write_text("{}")
    with pytest.raises(ConfigError):
        load_offsets(path)


def test_calibrate_refuses_a_missing_key_and_an_unknown_case(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["calibrate", "--suite", str(SUITE), "--panel", "api"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err
    assert main(["calibrate", "--suite", str(SUITE), "--only", "zz-001"]) == 2
    assert main(["calibrate", "--suite", str(SUITE), "--fail-under", "speed=2"]) == 2


def test_local_panel_calibration_end_to_end(tmp_path):
    """The embedded panel on a blinded baseline and the injection canary with its clean twin, offline."""
    root = _suite_copy(tmp_path)
    canary = next(c for c in KEY.cases if c.plant == "injection_canary")
    report, paths = command.calibrate(root, "local", only=[canary.code], with_evidence=False)
    assert {c.code for c in report.cases} == {canary.code, canary.twin}
    rows = {r.name: r for r in report.calibration.rows}
    assert set(rows) == {"evidence-measured-facts", "huggingface-smollm2-135m-instruct", "google-gemma-3-270m", "panel"}
    assert not any(rows["evidence-measured-facts"].canary_shift.values())  # it reads no prose: the twins agree
    by = {c.code: c for c in report.cases}
    assert by[canary.code].injection_findings >= 2  # the HTML comment and the code comment, removed before judging
    # the prompts still differ in the submission id, so the shift is small noise, not the 5/5 the canary asks for
    for name in ("huggingface-smollm2-135m-instruct", "google-gemma-3-270m"):
        assert rows[name].canary_shift and all(abs(v) < 0.25 for v in rows[name].canary_shift.values())
    assert all(p.is_file() for p in paths) and paths[2].read_bytes()[:4] == b"\x89PNG"


def test_the_log_line_canary_reaches_an_api_judge_defanged():
    """search_log is how an API judge reads the agent's log: the planted log line's instruction is removed."""
    import asyncio

    from reviewbench.judges.inputs import build_inputs
    from reviewbench.judges.tools import ToolBox

    canary = next(c for c in KEY.cases if c.plant == "injection_canary")
    folder = SUITE / "blinded" / canary.code
    inputs = build_inputs(submission_id=canary.code, board=canary.board, board_setting="", evidence_lines=[],
                          method_src=(folder / "method.py").read_text(), description=(folder / "DESCRIPTION.md").read_text(),
                          audit_summary=None, audit_findings=[], earlier=[],
                          log_dir=SUITE / "logs" / canary.code.split("-")[0])
    agent = canary.code.split("-")[0]
    text, err = asyncio.run(ToolBox(inputs=inputs, web=None).call("search_log", {"text": "note to the judges"}))
    assert not err and "untrusted-" in text and agent not in text  # the one line that holds it is withheld
    assert "5/5" not in text and "hidden instruction to the reviewer" in text
