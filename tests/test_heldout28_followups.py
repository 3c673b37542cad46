"""After held-out set 28's key (issue 23; not held out): the reader gaps its misses showed, each general and each with
the neighbour that must not read so, every case written fresh here."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches, declared_port
from reviewbench.flags.misstated import misstated_flags

HEAD = '''
import torch
import torch.nn.functional as F
from harness import EvictionMethod, Keep, LayerView

HELPERS

class M(EvictionMethod):
    name = "m"
    query_window = 8

    def select(self, view: LayerView) -> Keep:
BODY
'''


def _src(body: str, helpers: str = "") -> str:
    return HEAD.replace("HELPERS", helpers).replace("BODY", body)


def _f(body: str, helpers: str = "") -> set[str]:
    return set(computation(_src(body, helpers)).features)


_SIGNS = '''
class Signer:
    def __init__(self, d, bits, seed):
        self.planes = torch.randn(d, bits, generator=torch.Generator().manual_seed(seed))

    def __call__(self, x):
        return torch.matmul(x.float(), self.planes).gt(0)
'''
_VOTES = ("        sq = SIGNER(view.queries[:, -1])\n        sk = SIGNER(view.keys)\n"
          "        g = view.model.group_size\n"
          "        same = (sq.reshape(view.n_kv_heads, g, 1, -1) == sk[:, None]).sum(-1).sum(1).float()\n"
          "        return Keep.from_topk(same, view.budget, view.valid)\n")


def test_a_comparison_written_as_a_call_and_an_instance_kept_on_the_module() -> None:
    made = _f(_VOTES.replace("SIGNER", "signer").replace(
        "        sq =", "        signer = getattr(self, '_s', None) or Signer(view.keys.shape[-1], 32, 7)\n        sq ="), _SIGNS)
    assert "hashing" in made, made
    kept = _src(_VOTES.replace("SIGNER", "self._s"), _SIGNS).replace(
        "    query_window = 8\n", "    query_window = 8\n\n    def setup(self, model):\n"
        "        self._s = Signer(model.head_dim, 32, 7)\n")
    assert "hashing" in computation(kept).features
    # a bar on attention written as a call is the bar written as an operator
    bar = _f("        a = view.group(view.attention().mean(1), 'mean')\n"
             "        return Keep.from_topk(a.gt(0.01).float() + a, view.budget, view.valid)\n")
    assert "attention_threshold" in bar


def test_bits_packed_along_the_channels_are_no_blocks_of_tokens() -> None:
    packed = _f("        bits = (view.keys.float() @ torch.randn(view.keys.shape[-1], 32)).gt(0).float()\n"
                "        code = bits.unflatten(-1, (-1, 8)).mul(2 ** torch.arange(8)).sum(-1)\n"
                "        return Keep.from_topk(code.sum(-1), view.budget, view.valid)\n")
    assert "block_scores" not in packed and "hashing" in packed, packed
    blocks = _f("        a = view.group(view.attention().mean(1), 'mean')\n        n = a.shape[-1] // 8 * 8\n"
                "        b = a[:, :n].unflatten(-1, (-1, 8)).amax(-1).repeat_interleave(8, dim=-1)\n"
                "        return Keep.from_topk(torch.cat([b, a[:, n:]], -1), view.budget, view.valid)\n")
    assert "block_scores" in blocks


def test_a_score_against_its_own_best_is_no_bar() -> None:
    body = ("        a = view.group(view.attention().mean(1), 'mean')\n        best = a.amax(dim=-1, keepdim=True)\n"
            "        lead = CMP\n        return Keep.from_topk(lead.float() + a, view.budget, view.valid)\n")
    assert "attention_threshold" not in _f(body.replace("CMP", "a >= best"))
    assert "attention_threshold" in _f(body.replace("CMP", "a >= 0.5 * best"))
    # each group's best, read back at its members, likewise
    groups = ("        a = view.group(view.attention().mean(1), 'mean')[0]\n        run = torch.arange(a.shape[0]) // 8\n"
              "        best = torch.full((int(run[-1]) + 1,), -1.0).scatter_reduce(0, run, a, 'amax')\n"
              "        lead = a >= best[run]\n        return Keep.from_topk(lead.float()[None].expand(view.n_kv_heads, "
              "-1), view.budget, view.valid)\n")
    assert "attention_threshold" not in _f(groups)


def test_unit_centres_scaled_back_to_a_key_length_are_no_norm_score() -> None:
    body = ("        u = F.normalize(view.keys.float(), dim=-1)\n        n = view.keys.float().norm(dim=-1)\n"
            "        q = view.queries[::view.model.group_size, -1].float()\n"
            "        rebuilt = u * n[..., None]\n        s = torch.einsum('hd,htd->ht', q, rebuilt)\n"
            "        return Keep.from_topk(s, view.budget, view.valid)\n")
    assert "key_norm" not in _f(body)
    assert "key_norm" in _f(body.replace("torch.einsum('hd,htd->ht', q, rebuilt)", "n"))


_PASS = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class M(EvictionMethod):
    name = "m"
    reconstruction_queries = True

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(view.queries, reduce="sum"), "sum")
        return Keep.from_topk(SCORE, view.budget, view.valid)
'''


def _on_pass(score: str) -> list[tuple[str, str]]:
    c = computation(_PASS.replace("SCORE", score))
    return [(m.short_name, m.level) for m in computation_matches(c.features, "", c.paths, "B_offline")]


def test_value_weighted_attention_over_the_pass_is_vatp_and_attention_alone_is_no_rule() -> None:
    assert ("VATP", "same") in _on_pass("a * view.values.float().abs().sum(-1)")
    assert not [m for m in _on_pass("a") if m[1] == "same"]


def test_a_port_s_account_by_its_headings_declares_the_port() -> None:
    text = ("# Block memory as eviction\n\n## Source\n\nWe use the block memory and its lookup of InfLLM (Xiao et al., "
            "2024, arXiv 2402.04617).\n\n## Deviations\n\n- One-shot, no recall.\n")
    port = declared_port(text)
    assert port is not None and port.short_name == "InfLLM"
    # no such heading: no account of a port; two works credited: which one it ports is not said
    assert declared_port(text.replace("## Deviations", "## Notes")) is None
    both = text.replace("(Xiao et al.", "and the window attention of SnapKV (arXiv 2404.14469) (Xiao et al.")
    assert declared_port(both) is None


_LAYERS = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class M(EvictionMethod):
    name = "m"
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        s = view.group(view.attention().mean(1), "mean")
STATE        return Keep.from_topk(s, view.budget, view.valid)
'''


def test_a_score_said_to_be_handed_from_layer_to_layer_needs_state() -> None:
    desc = ("# Depth prior\n\n## Idea\n\nSmooth scores down the stack.\n\n## Method summary\n\nEach layer's score is "
            "0.7 x its own window attention plus 0.3 x the previous layer's score for the same positions.\n\n"
            "## Limitations\n\nNone.\n")
    plain = misstated_flags(desc, _LAYERS.replace("STATE", ""))
    assert [f for f in plain if f.strength == "proof" and "cross-layer" in f.explanation]
    kept = _LAYERS.replace("STATE", "        prev = getattr(self, '_prev', None)\n"
                           "        if prev is not None and prev.shape == s.shape:\n"
                           "            s = 0.7 * s + 0.3 * prev\n        self._prev = s\n")
    assert not [f for f in misstated_flags(desc, kept) if "cross-layer" in f.explanation and f.strength == "proof"]
