"""Self-play round 19 (issue 23): twelve papers drawn again (seed 2026120700), ported blind to the reader by a helper
with deliberately unusual idioms (tests/selfplay_ports.py, "(round 19)" keys). Before: 1 of 12 read as its paper, 7
as another paper's rule (their flag stands), 4 not read; after: 2, 7 and 3; since: 5, 7 and 0 (the last three read
through helper objects and a per-head share: tests/test_reader_objects.py). Each change with an honest neighbour."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from tests.selfplay_ports import PORTS

HEAD = '''
import numpy as np
import torch
from harness import EvictionMethod, Keep, LayerView


class M(EvictionMethod):
    name = "m"

    def select(self, view: LayerView) -> Keep:
        out = []
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
BODY
            out.append(torch.as_tensor(s).topk(view.budget).indices)
        return Keep(tuple(out))
'''


def _f(body: str) -> set[str]:
    return set(computation(HEAD.replace("BODY", body)).features)


def test_rows_over_a_norm_bound_to_a_name_are_unit_rows() -> None:
    assert "key_norm" not in computation(PORTS["KeyDiff (round 19)"]).features
    for body in ("            m = k.numpy()\n            mag = np.sqrt(np.einsum('ij,ij->i', m, m))\n"
                 "            unit = m / np.maximum(mag, 1e-12)[:, None]\n            s = -(unit @ unit.mean(axis=0))",
                 "            mag = torch.sqrt(torch.einsum('td,td->t', k, k))\n"
                 "            unit = k / mag.clamp_min(1e-9)[:, None]\n            s = -(unit @ unit.mean(0))"):
        f = _f(body)
        assert "mean_key" in f and "key_norm" not in f, f
    # the norm also ranks: a score of its own
    scored = _f("            mag = torch.sqrt(torch.einsum('td,td->t', k, k))\n"
                "            unit = k / mag.clamp_min(1e-9)[:, None]\n            s = -(unit @ unit.mean(0)) - mag")
    assert "key_norm" in scored


def test_overlapping_strided_windows_are_pooling_and_abutting_ones_blocks() -> None:
    sliding = _f("            a = torch.softmax(view.queries[h * view.model.group_size, -8:].float() @ k.T, -1).sum(0)\n"
                 "            p = torch.nn.functional.pad(a, (3, 3), value=float('-inf'))\n"
                 "            s = p.as_strided((a.shape[0], 7), (1, 1)).amax(dim=-1)")
    assert "pooling" in sliding and "max_attention" not in sliding, sliding
    blocks = _f("            a = torch.softmax(view.queries[h * view.model.group_size, -8:].float() @ k.T, -1).sum(0)\n"
                "            n = a.shape[0] // 8 * 8\n"
                "            s = a[:n].as_strided((n // 8, 8), (8, 1)).sum(-1).repeat_interleave(8)")
    assert "pooling" not in blocks
