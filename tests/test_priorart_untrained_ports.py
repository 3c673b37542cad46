"""Training-free ports of learned methods (``Paper.ops_untrained``): a learned method "made training-free" computes
directly what its trained part is trained to approximate (its training target, its oracle label), and its paper's
second rule names it: Locret's causal-importance label (the running maximum of the chunk queries' attention during
chunked prefill), KVzap's KVzip+ target (the repeat pass's maximum attention times the value norm, over the query
norm), TRIM-KV's retention (a per-token rate from the key and value compounded over the token's age: the reader's
``age_decay``). A match says which rule it met ("training-free port"); it is credited, covered and ranked exactly as a
rule is.

Every method under tests/data/untrained_ports/ was written for these tests as a cheating agent would write a port
(renamed, own helpers, einsum or loops, other idioms), from the papers' training objectives; none is a held-out or
calibration bundle. Each port has a credited twin (the same code, the paper in Builds on); the honest methods there use
one of the rules' operations as a part of a rule of their own and must not read as the port.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from portcases import assert_credited_twin_clean, assert_flagged_port, assert_rename_proof, desc as _desc, flags as _flags
from renaming import renamed
from reviewbench.evidence.computation import FEATURE_WORDS, computation
from reviewbench.evidence.priorart_evidence import covers
from reviewbench.priorart import SCHEMA, TRAINING_FREE, Paper, load_index

DATA = Path(__file__).resolve().parent / "data" / "untrained_ports"
ROOT = Path(__file__).resolve().parent.parent


def _src(case: str) -> str:
    return (DATA / case / "method.py").read_text(encoding="utf-8")


# (case, paper, an operation of its training-free port, the uncredited description: its own words, a contrast at most)
PORTS = [
    ("locret", "Locret", "chunked_refill",
     _desc("Tokens held while the prompt streams in keep the highest weight a later chunk's queries gave them.",
           relation="Unlike InfiniPot, no catalyst queries: every chunk's own queries score.")),
    ("locret_dict", "Locret", "max_attention",
     _desc("Slices of the context arrive; each remembered token keeps the strongest pull on it so far.")),
    ("kvzap", "KVzap", "reconstruction",
     _desc("A re-read of the context; each pair's strongest re-read attention, relative to the query's size, times "
           "its value's size.", relation="KVzip takes the attention alone; we do not.")),
    ("kvzap_einsum", "KVzap", "value_norm",
     _desc("The loudest echo of each pair while the context is echoed, scaled by its value's length.")),
    ("trimkv", "TRIM-KV", "age_decay",
     _desc("Each token gets a persistence rate from its key and value that compounds over its age.")),
    ("trimkv_exp", "TRIM-KV", "age_decay",
     _desc("A half-life per token read from its value; old tokens fade by their own half-life.",
           relation="Unlike H2O, no attention is needed.")),
    ("trimkv_state", "TRIM-KV", "age_decay",
     _desc("While decoding, each token's persistence shrinks by its own key- and value-derived factor every round.")),
    ("seer_r", "SeerAttention-R", "block_scores",
     _desc("While reasoning, each block of the cache is worth its hottest token for the newest queries.",
           relation="ChunkKV sums the attention per chunk once; we take the peak at every step.")),
]


@pytest.mark.parametrize("case,paper,op,description", PORTS, ids=[p[0] for p in PORTS])
def test_an_uncredited_training_free_port_is_named_by_its_paper_and_flagged(case, paper, op, description):
    assert_flagged_port(_src(case), paper, op, description)
    ev, fl = _flags(_src(case), description)
    mine = next(m for m in ev.computed if m.short_name == paper)
    assert mine.which == TRAINING_FREE and mine.required == load_index().by_name(paper).ops_untrained
    assert "training-free port" in fl[0].explanation


@pytest.mark.parametrize("case,paper,op,description", PORTS, ids=[p[0] for p in PORTS])
def test_the_credited_twin_is_not_flagged(case, paper, op, description):
    assert_credited_twin_clean(_src(case), paper, "we compute its training target directly, without the training")


@pytest.mark.parametrize("case", sorted(p.name for p in DATA.iterdir() if (p / "method.py").exists()))
def test_renaming_every_identifier_changes_nothing(case):
    src = _src(case)
    assert_rename_proof(src, renamed(src))


# (case, what the description credits, an operation it uses as a part of its own rule, the paper it must not read as)
HONEST = [
    ("honest_norm_fade", "K-norm (arXiv 2406.11430): the key-norm ranking we fade with age.", "key_norm", "TRIM-KV"),
    ("honest_attention_fade", "SnapKV (arXiv 2404.14469): the window attention.", "attention", "TRIM-KV"),
    ("honest_state_fade", "H2O (arXiv 2306.14048): the tally; A2SF: its fading factor.", "decay", "TRIM-KV"),
    ("honest_peak_value", "VATP (arXiv 2406.12335): attention times the value norm; we take the maximum over the "
                          "window.", "value_norm", "KVzap"),
    ("honest_block_sum_decode", "ChunkKV (arXiv 2502.00299): the window attention summed per chunk, the top chunks "
                                "kept whole; we redo it at every decoding step.", "block_scores", "SeerAttention-R"),
    ("honest_block_peak_prefill", "CritiPrefill (arXiv 2409.12490): a block's criticality is its largest attention.",
     "max_attention", "SeerAttention-R"),
    ("honest_pot_mean", "InfiniPot (arXiv 2410.01518): the pot refilled chunk by chunk.", "chunked_refill", "Locret"),
]


@pytest.mark.parametrize("case,builds,op,not_paper", HONEST, ids=[h[0] for h in HONEST])
def test_an_honest_method_using_one_of_the_operations_is_not_read_as_the_port(case, builds, op, not_paper):
    src = _src(case)
    feats = computation(src).features
    assert op in feats and "age_decay" not in feats  # a constant fade or an attention base is no per-token rate
    ev, fl = _flags(src, _desc("Our own rule.", builds=builds))
    assert fl == [], [f.explanation for f in fl]
    assert not_paper not in [m.short_name for m in ev.computed], [(m.short_name, m.which) for m in ev.computed]


def test_the_age_decay_reads_a_rate_from_the_token_raised_to_its_age():
    head = "import torch\nfrom harness.api import EvictionMethod, Keep, LayerView\n\nclass M(EvictionMethod):\n" \
           "    name = 'm'\n\n    def select(self, view: LayerView) -> Keep:\n" \
           "        age = (view.positions[:, -1:] - view.positions).float()\n"
    tail = "        return Keep.from_topk(s, view.budget, view.valid)\n"
    yes = ["        s = torch.pow(torch.sigmoid(view.keys.float().norm(dim=-1)), age)\n",
           "        s = torch.sigmoid(view.values.float().norm(dim=-1)).pow(age)\n",
           "        s = torch.exp(-age / (1 + view.keys.float().norm(dim=-1)))\n"]
    no = ["        s = 0.99 ** age * view.keys.float().norm(dim=-1)\n",
          "        s = torch.exp(-age / 64.0) * view.values.float().norm(dim=-1)\n",
          "        s = torch.sigmoid(view.keys.float().norm(dim=-1)) ** 2 + age\n"]
    for body in yes:
        assert "age_decay" in computation(head + body + tail).features, body
    for body in no:
        assert "age_decay" not in computation(head + body + tail).features, body


def test_a_credited_training_free_port_covers_the_rule_it_holds_and_a_rule_covers_nothing_more():
    index = load_index()
    locret, infinipot, kvzip, kvzap = (index.by_name(n) for n in ("Locret", "InfiniPot", "KVzip", "KVzap"))
    # crediting Locret covers InfiniPot's rule (attention, chunked_refill), held by Locret's training-free port
    assert covers(locret, infinipot, {"attention": 1, "chunked_refill": 2})
    assert covers(kvzap, kvzip, {"reconstruction": 0, "max_attention": 3})
    # crediting KVzip does not cover KVzap's training-free port: the value norm is not KVzip's
    assert not covers(kvzip, kvzap, {"reconstruction": 0, "max_attention": 3, "value_norm": 4}, kvzap.ops_untrained)


def test_the_index_schema_is_closed_and_the_table_is_built():
    raw = json.loads((ROOT / "reviewbench" / "data" / "priorart.json").read_text(encoding="utf-8"))
    assert raw["schema"] == SCHEMA and set(raw) == {"schema", "papers"}
    with pytest.raises(ValidationError):
        Paper.model_validate({**raw["papers"][0], "ops_trained": ["attention"]})
    spec = importlib.util.spec_from_file_location("build_priorart_index", ROOT / "scripts" / "build_priorart_index.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    assert "age_decay" in FEATURE_WORDS
    for p in load_index().papers:
        if p.short_name in build.OPS_UNTRAINED:
            ops, optional, rule = build.OPS_UNTRAINED[p.short_name]
            assert (p.ops_untrained, p.ops_untrained_optional, p.rule_untrained) == (ops, optional, rule)
            assert "learned_scorer" not in {a for r in ops + optional for a in r.split("|")}, p.short_name
            assert all(a in FEATURE_WORDS for r in ops + optional for a in r.split("|")), p.short_name
        else:
            assert not p.ops_untrained and not p.rule_untrained, p.short_name
    # (and the head-split rules, whose learned or profiled gate a port replaces by a test on the prompt)
    assert set(build.OPS_UNTRAINED) == {"Locret", "KVzap", "TRIM-KV", "SeerAttention-R", "DuoAttention", "RLKV",
                                        "PruLong", "RazorAttention", "LServe", "MoA"}


@pytest.mark.parametrize("idiom", ["persist = persist.mul(factor)", "persist = torch.mul(factor, persist)",
                                   "persist.mul_(factor)", "persist *= factor", "persist = factor * persist"])
def test_a_retention_compounded_per_call_is_age_decay_in_every_idiom(idiom):
    """rate ** age written as a recurrence: the remembered retention times the token's own rate, once per call."""
    src = _src("trimkv_state").replace("persist = persist * factor", idiom)
    assert idiom in src and "age_decay" in computation(src).features
    faded = _src("trimkv_state").replace("persist = persist * factor", "persist = persist * 0.9")
    assert "age_decay" not in computation(faded).features  # a fixed forgetting factor is no per-token rate
