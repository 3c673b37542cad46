"""Evidence that generalises beyond the project's own files: public reference fingerprints, similarity robust to
a cheater's restructurings, prior art from what the code computes, credit as attribution, citation metadata."""

from __future__ import annotations

import ast
import asyncio
import json
import math
import tomllib
from datetime import date
from pathlib import Path

import pytest

from reviewbench.evidence.citations import check_citations
from reviewbench.evidence.computation import computation, op_graph, op_paths
from reviewbench.evidence.priorart_evidence import credit, credit_for, prior_art
from reviewbench.evidence.similarity import (PUBLIC_DATA, baseline_sources, canary, compare, fingerprint,
                                             op_fingerprint, public_data, public_references)
from reviewbench.flags.prior_art import prior_art_flags
from reviewbench.priorart import load_index, tokens
from renaming import renamed

ROOT = Path(__file__).parent.parent
PORTS = Path(__file__).parent.parent / "calibration" / "ports"
PORT_LIST = tomllib.loads((PORTS / "ports.toml").read_text())["ports"]
TODAY = date(2026, 12, 2)


# --- the shipped public fingerprints --------------------------------------------------------------------------

def test_public_fingerprints_carry_provenance_and_licences_and_no_code():
    data = public_data()
    repos = {r["repo"]: r for r in data.repositories}
    assert {"NVIDIA/kvpress", "FasterDecoding/SnapKV", "Zefan-Cai/KVCache-Factory", "FFY0/AdaKV",
            "schwartz-lab-NLP/TOVA", "mit-han-lab/streaming-llm", "FMInference/H2O", "snu-mllab/KVzip",
            "Zefan-Cai/R-KV"} == set(repos)
    for r in repos.values():
        assert len(r["commit"]) == 40 and r["licence"] in ("Apache-2.0", "MIT") and r["licence_stated_in"]
    implemented = set()
    for u in data.units:
        assert u.source is not None and u.source.commit == repos[u.source.repo]["commit"]
        assert u.label.startswith("public:") and u.label.endswith("@" + u.source.commit[:7])
        assert u.source.url == f"https://github.com/{u.source.repo}/blob/{u.source.commit}/{u.source.path}"
        assert u.tokens and u.implements
        implemented.add(u.implements)
    assert implemented == {"snapkv", "pyramidkv", "adakv", "tova", "window", "knorm", "expected_attention", "kvzip",
                           "h2o", "rkv", "random"}
    # only hashes and numbers: no string in the file is longer than a label, a URL or the note
    raw = json.loads((ROOT / "reviewbench" / PUBLIC_DATA).read_text())

    def strings(x):
        if isinstance(x, dict):
            for k, v in x.items():
                yield k
                yield from strings(v)
        elif isinstance(x, list):
            for v in x:
                yield from strings(v)
        elif isinstance(x, str):
            yield x

    assert not [s for s in strings(raw) if ("def " in s or "torch." in s or "\n" in s)]


def test_the_shipped_fingerprints_match_the_current_normaliser():
    assert public_data().canary == canary()
    assert public_references()  # raises when the normaliser changed since the build


def test_the_readme_lists_every_public_repository_with_its_licence():
    readme = (ROOT / "README.md").read_text()
    for r in public_data().repositories:
        assert r["repo"] in readme and r["commit"][:7] in readme


# --- similarity on disguised public ports ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def all_refs():
    return public_references() | baseline_sources()


@pytest.mark.parametrize("port", PORT_LIST, ids=[p["file"] for p in PORT_LIST])
def test_a_disguised_public_port_is_nearest_to_its_baseline(port, all_refs):
    ms = compare((PORTS / port["file"]).read_text(), all_refs, top=len(all_refs))
    assert ms[0].implements == port["baseline"], [(m.reference, m.score) for m in ms[:3]]
    true = next(m for m in ms if m.reference.split("@")[0] == "public:" + port["source"])
    other = next(m for m in ms if m.implements != port["baseline"])
    assert true.score >= other.score or port["baseline"] == "snapkv"  # SnapKV's code lives inside PyramidKV's
    assert true.source is not None and true.source.licence and true.reference_spans


def test_a_public_match_names_its_source_in_the_flag_unless_credited():
    src = (PORTS / "tova_kvpress.py").read_text()
    code = compare(src, public_references())
    assert code[0].reference.startswith("public:kvpress/tova_press.py") and code[0].score >= 0.6
    undisclosed = ("# Newest look\n\n## Idea\nThe newest query knows.\n\n## Relation to prior work\nUnlike TOVA "
                   "(Oren et al., 2024), we use the newest query.\n\n## Builds on\nNothing beyond the harness.\n")
    flags = prior_art_flags([], code, {}, undisclosed, src, ("class NewestLook", 9))
    # copied code alone proves MISSING_ATTRIBUTION; without a behavioural match it only indicates UNDISCLOSED_PRIOR_ART
    assert [(f.flag, f.strength) for f in flags] == [("MISSING_ATTRIBUTION", "proof"),
                                                     ("UNDISCLOSED_PRIOR_ART", "indication")]
    assert "NVIDIA/kvpress" in flags[0].explanation and "Apache-2.0" in flags[0].explanation
    assert "contrast" in flags[0].explanation
    credited = undisclosed.replace("Nothing beyond the harness.", "TOVA (Oren et al., 2024, arXiv 2401.06104).")
    assert prior_art_flags([], code, {}, credited, src, ("class NewestLook", 9)) == []


def _reordered(src: str) -> str:
    """Module-level definitions and class methods in reverse order."""
    tree = ast.parse(src)
    tree.body = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))] + \
        [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))][::-1]
    for n in tree.body:
        if isinstance(n, ast.ClassDef):
            n.body = n.body[::-1]
    return ast.unparse(tree)


@pytest.mark.parametrize("port", PORT_LIST, ids=[p["file"] for p in PORT_LIST])
def test_renaming_and_reordering_leave_what_the_code_computes_unchanged(port):
    src = (PORTS / port["file"]).read_text()
    ops = set(op_fingerprint(src).hashes)
    assert set(op_fingerprint(renamed(src)).hashes) == ops
    assert set(op_fingerprint(_reordered(src)).hashes) == ops
    assert set(computation(renamed(_reordered(src))).features) == set(computation(src).features)
    tok = set(fingerprint(src).hashes)
    assert len(set(fingerprint(renamed(src)).hashes) & tok) >= 0.9 * len(tok)


INLINED = '''
import torch
import torch.nn.functional as F
from harness.api import EvictionMethod, Keep, LayerView

class M(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.attention()
        s = view.group(a.sum(dim=1), "mean")
        s = F.max_pool1d(s[:, None], 7, stride=1, padding=3)[:, 0]
        return Keep.from_topk(s, view.budget, view.valid)
'''
OUTLINED = '''
import torch
import torch.nn.functional as F
from harness.api import EvictionMethod, Keep, LayerView

def smooth(x, k):
    return F.max_pool1d(x[:, None], k, stride=1, padding=k // 2)[:, 0]

class M(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(self.score(view), view.budget, view.valid)

    def score(self, view):
        probs = view.attention()
        return smooth(self.collapse(view, probs), 7)

    def collapse(self, view, probs):
        return view.group(probs.sum(dim=1), "mean")
'''
LOOPED = '''
import torch
import torch.nn.functional as F
from harness.api import EvictionMethod, Keep, LayerView

class M(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        a = view.attention()
        s = torch.zeros(a.shape[0], a.shape[2])
        for i in range(a.shape[1]):
            s += a[:, i, :]
        s = view.group(s, "mean")
        s = F.max_pool1d(s[:, None], 7, stride=1, padding=3)[:, 0]
        return Keep.from_topk(s, view.budget, view.valid)
'''


def test_inlining_outlining_and_loops_give_the_same_operation_chains():
    base = set(op_fingerprint(INLINED).hashes)
    assert base and set(op_fingerprint(OUTLINED).hashes) == base
    assert set(op_fingerprint(LOOPED).hashes) == base


def test_scaling_masks_and_rope_do_not_change_the_chains():
    plain = "def f(q, k):\n    return torch.softmax(q @ k.T, dim=-1).sum(0).topk(4)\n"
    noisy = ("def f(q, k, cos, sin):\n    q = q * cos + rotate_half(q) * sin\n    n = k.shape[0]\n"
             "    a = torch.matmul(q, k.transpose(0, 1)) / math.sqrt(q.shape[-1])\n"
             "    a = a + torch.triu(torch.full((n, n), float('-inf')), diagonal=1)\n"
             "    return torch.nn.functional.softmax(a, dim=-1).mean(0).topk(4)\n")
    chains = {p for p, _ in op_paths(op_graph(plain))}
    assert chains == {p for p, _ in op_paths(op_graph(noisy))} == {("matmul", "softmax"), ("matmul", "softmax", "reduce"),
                                                                   ("softmax", "reduce", "rank")}


def test_code_every_attention_method_shares_weighs_little():
    """Only the shared attention chain: no reference outranks the others by much."""
    src = ("from harness.api import EvictionMethod, Keep, LayerView\n\nclass M(EvictionMethod):\n"
           "    query_window = 8\n\n    def select(self, view: LayerView) -> Keep:\n"
           "        return Keep.from_topk(view.group(view.attention().mean(dim=1)), view.budget, view.valid)\n")
    ms = compare(src, public_references() | baseline_sources())
    assert ms[0].score < 0.6


# --- prior art from what the code computes --------------------------------------------------------------------

def _accept(baseline: str) -> set[str]:
    papers = load_index().baselines()
    return {"SnapKV", "Query-agnostic SnapKV", "KVzip"} if baseline == "snapkv_qa" else {papers[baseline].short_name}


def _code_top3(src: str) -> list[str]:
    return [h.short_name for h in prior_art(src, "", "", "").hits if h.via in ("computation", "code")][:3]


@pytest.mark.parametrize("label", sorted(baseline_sources()))
def test_the_right_paper_is_in_the_top3_for_every_baseline_from_code_alone(label):
    src = baseline_sources()[label]
    assert _accept(label.split(":", 1)[1]) & set(_code_top3(src))


def test_the_right_paper_is_in_the_top3_for_blinded_baselines_and_disguised_ports():
    key = tomllib.loads((ROOT / "calibration" / "answer_key.toml").read_text())
    cases = [(c["method"], (ROOT / "calibration" / "blinded" / c["code"] / "method.py").read_text())
             for c in key["cases"] if c["kind"] == "baseline"]
    cases += [(p["baseline"], (PORTS / p["file"]).read_text()) for p in PORT_LIST]
    misses = [(b, _code_top3(src)) for b, src in cases if not _accept(b) & set(_code_top3(src))]
    assert not misses and len(cases) == 12 + len(PORT_LIST)


def test_renaming_does_not_change_the_prior_art_query():
    for p in PORT_LIST:
        src = (PORTS / p["file"]).read_text()
        assert prior_art(renamed(src), "", "", "").query == prior_art(src, "", "", "").query


def test_the_summary_is_searched_apart_and_comes_after_the_code():
    src = (PORTS / "h2o_official.py").read_text()
    ev = prior_art(src, "We keep tokens by a Gaussian model of future queries.", "", "")
    order = {"computation": 0, "code": 1, "summary": 2}
    vias = [order[h.via] for h in ev.hits]
    assert ev.hits[0].short_name == "H2O" and vias == sorted(vias)  # its computed rule, then code, then summary
    assert "accumulate" in ev.features and "Gaussian" not in ev.query


def test_bm25s_ranks_like_the_textbook_formula():
    index = load_index()
    query = "cumulative attention heavy hitters recent window"
    docs = [tokens(p.text()) for p in index.papers]
    avg = sum(map(len, docs)) / len(docs)
    q = [t for t in tokens(query)]

    def textbook(d: list[str]) -> float:
        s = 0.0
        for t in q:
            f, df = d.count(t), sum(t in x for x in docs)
            if f:
                idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                s += idf * f * 2.5 / (f + 1.5 * (0.25 + 0.75 * len(d) / avg))
        return s

    expected = sorted(((textbook(d), p.short_name) for d, p in zip(docs, index.papers) if textbook(d) > 0),
                      key=lambda x: -x[0])
    got = index.bm25(query)
    assert [h.paper.short_name for h in got[:10]] == [n for _, n in expected[:10]]
    assert all(abs(h.score * 2.5 - s) < 1e-2 * max(1.0, s) for h, (s, _) in zip(got, expected))  # Lucene drops k1+1


# --- credit is attribution ------------------------------------------------------------------------------------

def _desc(builds: str = "Nothing beyond the harness.", relation: str = "Our own idea.", summary: str = "A rule.") -> str:
    return (f"# M\n\n## Idea\nAn idea.\n\n## Method summary\n{summary}\n\n## Relation to prior work\n{relation}\n\n"
            f"## Evidence\nNone.\n\n## Limitations\nSome.\n\n## Builds on\n{builds}\n")


def _paper(baseline: str):
    return load_index().baselines()[baseline]


def test_a_contrast_is_not_credit():
    c = credit(_desc(relation="Unlike TOVA (Oren et al., 2024, arXiv 2401.06104), we score by the newest query."),
               _paper("tova"))
    assert not c.credited and "contrast" in c.reason and "Unlike TOVA" in (c.quote or "")
    for rel in ("Our method outperforms SnapKV by three points.", "Rather than H2O's running sums we keep none.",
                "In contrast to StreamingLLM, no sinks are kept.", "It does not build on Ada-KV."):
        for b in ("snapkv", "h2o", "window", "adakv"):
            assert not credit(_desc(relation=rel), _paper(b)).credited, (rel, b)


def test_a_common_phrase_that_contains_a_method_name_is_not_credit():
    d = _desc(summary="Tokens with high expected attention from future queries are kept; ties are random.")
    assert not credit(d, _paper("expected_attention")).credited
    assert not credit(d, _paper("random")).credited
    assert credit(_desc(builds="Expected Attention (Devoto et al., 2025): the Gaussian model."),
                  _paper("expected_attention")).credited


def test_a_common_surname_alone_is_not_credit():
    assert not credit(_desc(relation="We build on heavy-hitter work (Zhang et al., 2023)."), _paper("h2o")).credited
    assert not credit(_desc(builds="Zhang et al."), _paper("h2o")).credited
    # a rare surname with the right year names one paper of the index
    assert credit(_desc(relation="Our rule is the one of Oren et al. (2024), unchanged."), _paper("tova")).credited


def test_attribution_in_builds_on_or_a_sentence_stating_use_is_credit():
    assert credit(_desc(builds="SnapKV (window attention scoring)."), _paper("snapkv")).credited
    assert credit(_desc(builds="- AdaKV-style head budgets"), _paper("adakv")).credited
    assert credit(_desc(relation="Scoring by window attention is SnapKV (Li et al., 2024, arXiv 2404.14469)."),
                  _paper("snapkv")).credited
    assert credit(_desc(relation="The allocation follows PyramidKV."), _paper("pyramidkv")).credited
    # named in the related work without stating use: not an attribution
    assert not credit(_desc(relation="Related methods include TOVA and R-KV."), _paper("tova")).credited


def test_credit_for_a_public_reference_goes_through_the_baseline_it_implements():
    d = _desc(builds="KVzip (Kim et al., 2025, arXiv 2505.23416).")
    assert credit_for("baseline:kvzip", d).credited
    assert credit_for("baseline:snapkv_qa", _desc(builds="SnapKV without the question.")).credited
    assert credit_for("submission:agent2-003", _desc(builds="kvprior (agent2-003)."), ["agent2-003", "kvprior"]).credited


# --- citations: wrong metadata against a paper the index has --------------------------------------------------

def _check(text: str) -> dict:
    return {c.citation.key: c for c in asyncio.run(check_citations(text, None, TODAY))}


def test_an_author_year_citation_with_a_wrong_year_is_wrong_metadata():
    got = _check("H2O (Zhang et al., 2021) keeps heavy hitters. Oren et al. (2022) keep the last query's picks.")
    assert got["Zhang 2021"].status == "wrong_metadata" and "cited as 2021, published 2023" in got["Zhang 2021"].detail
    assert got["Oren 2022"].status == "wrong_metadata" and "Multi-State" in got["Oren 2022"].detail


def test_an_author_year_citation_with_a_wrong_author_is_wrong_metadata():
    got = _check("SnapKV (Wang et al., 2024) scores by window attention.")
    assert got["Wang 2024"].status == "wrong_metadata" and "first author Yuhong Li" in got["Wang 2024"].detail


def test_author_year_that_cannot_be_pinned_down_stays_unreachable_and_venue_years_are_real():
    got = _check("As Zhang et al. (2019) showed. StreamingLLM (Xiao et al., 2024) keeps sinks.")
    assert got["Zhang 2019"].status == "unreachable"  # a common surname, and no paper named beside it
    assert got["Xiao 2024"].status == "real"  # the ICLR 2024 year of a 2023 preprint
