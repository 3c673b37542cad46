"""Entropy is attention against its own log, in any idiom; a log of a score alone is a monotone transform (ranking
log s keeps what ranking s keeps), not entropy: a KVzip+-style score ranked by its log read as "entropy" and hid the
rule it computes. A norm reduced over every axis (x.mean(), torch.max(x), .item()) is one number, a scale (a ridge,
a normaliser), no per-token key-norm score."""

import pytest

from reviewbench.evidence.computation import computation

HEAD = "import torch\nfrom harness import EvictionMethod, Keep, LayerView\n"


def _src(body: str) -> str:
    return HEAD + f'''class E(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        p = view.group(view.attention().mean(dim=1), "mean")
        {body}
        return Keep.from_topk(s, view.budget, view.valid)
'''


ENTROPY = ["h = -(p * torch.log(p + 1e-9)).sum(-1, keepdim=True)\n        s = p * h",
           "h = -((p + 1e-9).log() * p).sum(-1, keepdim=True)\n        s = p * h",
           "h = -torch.mul(p, p.clamp_min(1e-9).log()).sum(-1, keepdim=True)\n        s = p * h",
           "h = -torch.einsum('ht,ht->h', p, torch.log(p + 1e-9))[:, None]\n        s = p * h",
           "h = -(p[:, None, :] @ torch.log(p + 1e-9)[:, :, None])[:, 0]\n        s = p * h",
           "h = torch.special.entr(p).sum(-1, keepdim=True)\n        s = p * h",
           "h = -torch.special.xlogy(p, p).sum(-1, keepdim=True)\n        s = p * h",
           "h = torch.distributions.Categorical(probs=p).entropy()[:, None]\n        s = p * h"]
LOG_OF_A_SCORE = ["s = (p * view.values.float().norm(dim=-1)).clamp_min(1e-30).log()",
                  "s = torch.log1p(p.cumsum(-1))",
                  "s = p.log() + view.positions.float() * 1e-6"]
# a norm reduced to one number (a scale), and per-token norms beside such a scale
SCALE = ["scale = view.keys.float().norm(dim=-1).mean()\n        s = p / scale",
         "ridge = 0.1 * torch.diagonal(view.keys.float() @ view.keys.float().transpose(-1, -2), dim1=-2, dim2=-1)"
         ".mean()\n        s = p + ridge",
         "top = torch.max(view.keys.float().norm(dim=-1))\n        s = p * top",
         "s = p * view.keys.float().pow(2).sum(-1).mean().item()"]
PER_TOKEN_NORM = ["s = p - view.keys.float().norm(dim=-1) / view.keys.float().norm(dim=-1).mean()",
                  "s = -view.keys.float().norm(dim=-1).mean(0)",
                  "s = p * view.keys.float().pow(2).sum(-1)"]


@pytest.mark.parametrize("feature,present,body", [("entropy", True, b) for b in ENTROPY]
                         + [("entropy", False, b) for b in LOG_OF_A_SCORE]
                         + [("key_norm", False, b) for b in SCALE] + [("key_norm", True, b) for b in PER_TOKEN_NORM])
def test_entropy_needs_attention_against_its_log_and_a_key_norm_a_value_per_token(feature, present, body):
    assert (feature in computation(_src(body)).features) is present


@pytest.mark.parametrize("body", [
    "k = view.keys.float()\n        c = k.mean(1, keepdim=True)\n"
    "        d = (k * k).sum(-1, keepdim=True) - 2 * k @ c.transpose(-1, -2) + (c * c).sum(-1)[:, None]\n"
    "        s = p - d[..., 0]",
    "k = view.keys.float()\n        c = k[:, :8]\n"
    "        d = k.pow(2).sum(-1)[..., None] + c.pow(2).sum(-1)[:, None] - 2 * torch.einsum('htd,hcd->htc', k, c)\n"
    "        s = p - d.min(-1).values",
])
def test_a_squared_distance_written_out_is_no_key_norm(body):
    assert "key_norm" not in computation(_src(body)).features


def test_a_key_norm_score_beside_a_squared_distance_stays():
    body = ("k = view.keys.float()\n        n = k.pow(2).sum(-1)\n        c = k.mean(1, keepdim=True)\n"
            "        d = (k * k).sum(-1, keepdim=True) - 2 * k @ c.transpose(-1, -2)\n        s = p * n - d[..., 0]")
    assert "key_norm" in computation(_src(body)).features


def test_a_flattened_list_of_indices_is_no_top_k_over_heads_and_tokens_and_flattened_scores_are():
    """``x.nonzero().flatten()`` is a list of token indices: a top-k inside the spans cut from it (quotas per stratum)
    is no per-head budget; a top-k over the scores of every (head, token) pair flattened is one (Ada-KV's)."""
    strata = ("free = (p[0] < 1e9).nonzero().flatten()\n        s = torch.zeros_like(p)\n"
              "        for span in torch.tensor_split(free, 4):\n"
              "            s[0, span[p[0, span].topk(2).indices]] = 1.0")
    assert "head_budget" not in computation(_src(strata)).features
    flat = ("top = p.flatten().topk(view.budget * p.shape[0]).indices\n"
            "        s = torch.zeros_like(p).flatten().scatter(0, top, 1.0).view_as(p)")
    assert "head_budget" in computation(_src(flat)).features
