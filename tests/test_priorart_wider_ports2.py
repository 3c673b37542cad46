"""The index's second widening round (scripts/build_priorart_index.py EXTRA_PAPERS after ADORE: eviction, merging and
sparse-attention papers found through paper lists and notes of KV-cache compression). Five of them carry a rule in the
reader's operations: SpindleKV (keys folded into the best-connected key of a cosine-similarity codebook beside eviction
by window attention), InfiniPot-V (each key's similarity to the recent keys against the value norm, no attention), EMS
(accumulated and recent-query attention ranked across heads, the evicted folded into the kept), Radar (keys and query
lifted by a random feature map, segments scored by their summed features) and LOOK-M (the prompt's attention ranks
the cache, the evicted merged into the most similar kept key).

Every method under tests/data/wider_ports2/ was written for these tests as a cheating agent would write a port
(renamed, own helpers, other idioms), from the papers' key ideas; none is a held-out or calibration bundle. Each port
has a credited twin; the honest methods there use one of the rules' operations inside a rule of their own (or of the
papers they credit) and must not read as the port.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from portcases import (assert_credited_twin_clean, assert_flagged_port, assert_honest_neighbour, assert_rename_proof,
                       desc as _desc)
from renaming import renamed
from reviewbench.priorart import load_index

DATA = Path(__file__).resolve().parent / "data" / "wider_ports2"
ROOT = Path(__file__).resolve().parent.parent

NEW = ["SpindleKV", "InfiniPot-V", "EMS", "Radar", "LOOK-M", "SirLLM", "OBCache", "Lethe", "LongHeads", "MoA", "CItruS",
       "SepLLM", "MiniKV", "SentenceKV"]


def _src(case: str) -> str:
    return (DATA / case / "method.py").read_text(encoding="utf-8")


# (case, paper, an operation of its rule, the uncredited description: its own words, a contrast at most)
PORTS = [
    ("spindle", "SpindleKV", "key_clustering",
     _desc("Near-identical keys are folded into the entry that stands for most of them; attention picks the entries.",
           relation="Unlike SnapKV, similar keys are not kept twice.")),
    ("infinipotv", "InfiniPot-V", "key_similarity",
     _desc("A token whose key repeats the newest stretch's keys goes first; among the rest the longer values stay.",
           relation="No attention is computed.")),
    ("ems", "EMS", "head_budget",
     _desc("Long and short memory of attention blended; one ranking over heads; dropped tokens folded into kept ones.",
           relation="H2O keeps only the long tally.")),
    ("radar", "Radar", "random",
     _desc("Keys and the query lifted by a fixed random map; segments scored in that space, the best segments kept.")),
    ("lookm", "LOOK-M", "merge",
     _desc("The prompt's tokens say which cached tokens matter; each dropped token folded into its closest kept key.")),
]


@pytest.mark.parametrize("case,paper,op,description", PORTS, ids=[p[0] for p in PORTS])
def test_an_uncredited_port_of_a_second_round_paper_is_named_and_flagged(case, paper, op, description):
    assert_flagged_port(_src(case), paper, op, description)


@pytest.mark.parametrize("case,paper,op,description", PORTS, ids=[p[0] for p in PORTS])
def test_the_credited_twin_is_not_flagged(case, paper, op, description):
    assert_credited_twin_clean(_src(case), paper)


@pytest.mark.parametrize("case", sorted(p.name for p in DATA.iterdir() if (p / "method.py").exists()))
def test_renaming_every_identifier_changes_nothing(case):
    src = _src(case)
    assert_rename_proof(src, renamed(src))


# (case, what the description credits, the operations it must not show, the papers it must not read as)
HONEST = [
    ("honest_keydiff_value", "KeyDiff (arXiv 2504.15364): distance from the mean key; VATP (arXiv 2406.12335): the "
     "value norm as a weight.", {"key_similarity"}, ["InfiniPot-V"]),
    ("honest_random_chunks", "Random eviction (the control baseline) and ChunkKV (arXiv 2502.00299): whole chunks.",
     {"key_norm"}, ["Radar"]),
    ("honest_merge_tally", "WeightedKV (arXiv 2503.01330) and KeepKV (arXiv 2504.09936): a tally of attention and "
     "the dropped values folded into the kept ones.", {"head_budget"}, ["EMS"]),
    ("honest_similarity_merge", "KVMerger (arXiv 2407.08454): consecutive similar keys merged; SnapKV (arXiv "
     "2404.14469): window attention. R-KV (arXiv 2505.24133): key similarity.", {"key_clustering", "question_queries"},
     ["SpindleKV", "LOOK-M"]),
]


@pytest.mark.parametrize("case,builds,absent,not_papers", HONEST, ids=[h[0] for h in HONEST])
def test_an_honest_neighbour_is_not_read_as_the_port(case, builds, absent, not_papers):
    assert_honest_neighbour(_src(case), builds, absent, not_papers)


def test_the_second_round_papers_are_in_the_index_once_each_with_a_rule_or_a_reason():
    spec = importlib.util.spec_from_file_location("build_priorart_index", ROOT / "scripts" / "build_priorart_index.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    index = load_index()
    ids = [p.arxiv for p in index.papers if p.arxiv]
    extra = {row[0]: row for row in build.EXTRA_PAPERS}
    assert set(NEW) <= set(extra)
    for short in NEW:
        _s, title, _a, _y, _v, arxiv, *_ = extra[short]
        p = index.by_name(short)
        assert p.title == title and p.arxiv == arxiv and ids.count(arxiv) == 1, short
        assert (short in build.OPS) != (short in build.NO_RULE), short
    assert {s for s in NEW if s in build.OPS} == {p[1] for p in PORTS}
    assert len(index.papers) == 171
