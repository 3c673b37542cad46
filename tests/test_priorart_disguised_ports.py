"""Published rules added as behavioural references (MorphKV, PyramidInfer, Double Sparsity, ...): a port written from
scratch, its code nothing like the reference's (own loops, own noise, own schedule arithmetic, own names), in one of
the reference's listed settings, is named by the behaviour comparison on the bank; an honest method that merely
scores with attention and norms is named by none of them."""

from __future__ import annotations

from pathlib import Path

import pytest

NEW_PAPERS = ("MorphKV", "PyramidInfer", "ZipCache", "Double Sparsity", "InfiniGen", "MInference",
              "FastGen")

# Double Sparsity in its pa_doublesparsity?channel_share=0.25 setting: the outlier channels found with an einsum
# over the group's calibration queries, the estimate written per KV head as a dot product on gathered columns.
LABEL_CHANNELS = '''
import torch

from harness.api import EvictionMethod, Keep, LayerView


class LabelChannelProbe(EvictionMethod):
    query_window = 32

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        g = view.model.group_size
        dim = view.keys.shape[-1]
        width = max(1, round(dim / 4))
        picked = []
        for kv in range(view.n_kv_heads):
            qs = view.queries[kv * g:(kv + 1) * g].float().reshape(-1, dim)
            ks = view.keys[kv].float()
            weight = torch.einsum("id,jd->d", qs.abs(), ks.abs())
            cols = torch.argsort(weight, descending=True)[:width]
            newest = view.queries[kv * g:(kv + 1) * g, -1].float()[:, cols]
            est = newest @ ks[:, cols].T * view.model.scale
            est = est.masked_fill(view.positions[kv][None, :] > view.query_positions[-1], float("-inf"))
            picked.append(torch.softmax(est, dim=-1).sum(dim=0))
        return Keep.from_topk(torch.stack(picked), view.budget, view.valid)
'''

# MorphKV in its pa_morphkv?fusion=sum setting: the group's logits summed with einsum over a (kv, group) view,
# the older keys sliced out before the softmax, the window kept by position arithmetic.
ECHO_WINDOW = '''
import torch

from harness.api import EvictionMethod, Keep, LayerView


class EchoWindow(EvictionMethod):
    query_window = 33

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.queries is None or view.budget >= t or view.queries.shape[1] < 2:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        recent = view.queries[:, :-1].float()
        w = recent.shape[1]
        cut = t - w - 1  # the older keys: before the window and the newest token
        grouped = recent.view(view.n_kv_heads, view.model.group_size, w, -1)
        raw = torch.einsum("kgwd,ktd->kwt", grouped, view.keys[:, :cut].float()) * view.model.scale
        weight = torch.softmax(raw, dim=-1).sum(dim=1)  # (kv, cut)
        chosen = []
        for kv in range(view.n_kv_heads):
            room = max(0, view.budget - (t - cut))
            old = torch.topk(weight[kv], min(room, cut)).indices
            chosen.append(torch.cat([old, torch.arange(cut, t)])[: view.budget].sort().values)
        return Keep(tuple(chosen))
'''

# PyramidInfer in its pa_pyramidinfer?recent_ratio=0.1 setting: the cosine schedule compounded in a loop of its own,
# the recent rows weighted by an explicit ramp, every head of the layer averaged, the sinks and the recent tail first.
FUNNEL = '''
import math

import torch

from harness.api import EvictionMethod, Keep, LayerView, ModelInfo


class FunnelKeep(EvictionMethod):
    query_window = 1 << 20

    def layer_budgets(self, mean_budget, n_tokens, model: ModelInfo):
        if mean_budget >= n_tokens:
            return None
        shares, running = {}, 1.0
        for layer in range(model.n_layers):
            running = running * (0.9 + 0.05 * (1.0 + math.cos(math.pi * layer / model.n_layers)))
            shares[layer] = running
        wanted = [shares[layer] for layer in model.attention_layers]
        total = mean_budget * len(wanted)
        return [max(1, min(n_tokens, int(total * s / sum(wanted)))) for s in wanted]

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.queries is None or view.budget >= t:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        n_q = view.queries.shape[1]
        tail = min(n_q, 1 + int((int(view.query_positions[-1]) + 1) * 0.1))
        rows = []
        for head in range(view.queries.shape[0]):
            q = view.queries[head, n_q - tail:].float()
            logits = q @ view.keys[head // view.model.group_size].float().T * view.model.scale
            mask = torch.arange(t)[None, :] > view.query_positions[n_q - tail:][:, None]
            rows.append(torch.softmax(logits.masked_fill(mask, float("-inf")), dim=-1))
        ramp = torch.tensor([1.0 + 0.2 * i / max(1, tail - 1) for i in range(tail)])
        score = (torch.stack(rows) * ramp[None, :, None]).mean(dim=1).mean(dim=0)
        order = torch.arange(t, dtype=torch.float32)
        start = int(view.query_positions[n_q - tail])
        score = torch.where(order >= start, 1e9 + order, score)
        score[:4] = 2e9
        return Keep.same_for_all_heads(torch.topk(score, view.budget).indices.sort().values, view.n_kv_heads)
'''

# Honest: window attention tempered by the key's norm, a small sink and window kept. Uses attention and norms,
# computes no published rule.
TEMPERED = '''
import torch

from harness.api import EvictionMethod, Keep, LayerView


class NormTemperedWindow(EvictionMethod):
    query_window = 24

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        attn = view.group(view.attention(reduce="mean"), "max")
        score = attn * view.values.float().norm(dim=-1) / view.keys.float().norm(dim=-1).sqrt().clamp_min(1e-6)
        score = score + 0.02 * torch.nn.functional.avg_pool1d(attn[:, None, :], 9, 1, 4)[:, 0, :]
        protect = (view.positions < 2) | (view.positions >= int(view.query_positions[0]))
        return Keep.from_topk(score.masked_fill(protect, float("inf")), view.budget, view.valid)
'''

CANDIDATES = {"doublesparsity": (LABEL_CHANNELS, "priorart:Double Sparsity"), "morphkv": (ECHO_WINDOW, "priorart:MorphKV"),
              "pyramidinfer": (FUNNEL, "priorart:PyramidInfer"), "honest": (TEMPERED, None)}


def _desc() -> str:
    return ("# Retention\n\n## Idea\nKeep what the model reads.\n\n## Method summary\nA score per token.\n\n"
            "## Relation to prior work\nNone.\n\n## Evidence\nNone.\n\n## Limitations\nSome.\n\n## Builds on\nNone.\n")


@pytest.fixture(scope="module")
def matches(tmp_path_factory):
    from portcases import behaviour_against_references

    return behaviour_against_references({name: src for name, (src, _) in CANDIDATES.items()}, _desc(),
                                        tmp_path_factory.mktemp("disguised"))


def _flags(found):
    from reviewbench.flags.prior_art import prior_art_flags

    return prior_art_flags(found, [], {}, _desc(), "class M:\n    pass\n", ("class M:", 1))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["doublesparsity", "morphkv", "pyramidinfer"])
def test_a_disguised_port_of_a_new_reference_is_named_by_behaviour(matches, name):
    from reviewbench.evidence.behaviour import told_apart
    from reviewbench.flags.prior_art import DEFAULT_RULES

    found = matches[name]
    top = found[0]
    assert top.reference == CANDIDATES[name][1], found[:3]
    assert top.jaccard >= DEFAULT_RULES.behaviour_same, found[:3]
    assert told_apart(top, found, DEFAULT_RULES.behaviour_margin, DEFAULT_RULES.behaviour_identical), found[:3]
    flags = _flags(found)
    assert [f.flag for f in flags] == ["UNDISCLOSED_PRIOR_ART"]
    assert top.member.partition("?")[0] in flags[0].explanation


@pytest.mark.slow
def test_an_honest_attention_and_norm_method_is_named_by_no_new_reference(matches):
    found = matches["honest"]
    new = [m for m in found if m.reference.removeprefix("priorart:") in NEW_PAPERS]
    assert len(new) == len(NEW_PAPERS)
    assert all(m.jaccard < 0.9 for m in new), new
    assert not any(f.flag == "UNDISCLOSED_PRIOR_ART" for f in _flags(found))


def test_the_new_references_are_registered_with_their_settings():
    from harness.fingerprint_grid import prior_art_families

    families = prior_art_families()
    for paper in NEW_PAPERS:
        assert paper in families and 2 <= len(families[paper]) - 1 <= 4, (paper, families.get(paper))
    assert Path(__file__).resolve().parent.parent.joinpath("harness", "methods", "priorart", "morphkv.py").is_file()


def test_a_settings_line_is_part_of_the_comparing_stages_versions(tmp_path, monkeypatch):
    """A reference's members live in its docstring, which a stage's source version skips: the grid revision holds
    them, so editing a Settings line reruns the benchmark (which records the members' kept sets) and the evidence."""
    import shutil

    import harness.fingerprint_grid as grid
    from reviewbench.stages.benchmark import STAGE as BENCH
    from reviewbench.stages.evidence import STAGE as EVID

    assert BENCH.version.endswith("+" + grid.grid_revision()) and EVID.version.endswith("+" + grid.grid_revision())
    folder = tmp_path / "priorart"
    shutil.copytree(grid.PRIOR_ART_DIR, folder)
    monkeypatch.setattr(grid, "PRIOR_ART_DIR", folder)
    grid.prior_art_families.cache_clear()
    try:
        before = grid.grid_revision()
        f = folder / "morphkv.py"
        f.write_text(f.read_text().replace("pa_morphkv?fusion=sum;", "pa_morphkv?fusion=sum; pa_morphkv?query_window=65;"))
        grid.prior_art_families.cache_clear()
        assert "pa_morphkv?query_window=65" in grid.prior_art_families()["MorphKV"]
        assert grid.grid_revision() != before
    finally:
        grid.prior_art_families.cache_clear()
