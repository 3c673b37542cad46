"""Bit-sketch affinity (board C, decode-time eviction).

Every key gets a 16-bit sketch: the signs of its projections on 16 fixed random directions (per layer, seeded). Each
decoded query is sketched the same way, and a token's affinity with the query is the share of matching bits. Affinity
is accumulated over the queries as the generation runs; when a layer is full, the tokens with the least accumulated
affinity go. Nothing here needs the attention matrix.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class BitSketch(EvictionMethod):
    name = "bit_sketch"
    query_window = 4096
    bits = 16
    keep_open = 4
    keep_recent = 32

    def _planes(self, view: LayerView) -> torch.Tensor:
        planes = view.state.get("planes")
        if planes is None:
            gen = torch.Generator().manual_seed(7919 * (view.layer + 1))
            planes = torch.randn(view.keys.shape[-1], self.bits, generator=gen)
            view.state["planes"] = planes
        return planes.to(view.keys.device)

    def select(self, view: LayerView) -> Keep:
        affinity = view.recall("affinity")
        planes = self._planes(view)
        if view.queries is not None:
            seen = view.state.get("seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                g = view.model.group_size
                q = view.queries[:, fresh].float()
                qpos = view.query_positions[fresh]
                key_bits = (view.keys.float() @ planes) > 0  # (H_kv, T, b)
                q_bits = (q @ planes) > 0  # (H_q, N, b)
                q_bits = q_bits.view(view.n_kv_heads, g * q.shape[1], self.bits).float()
                match = torch.einsum("hnb,htb->hnt", q_bits, key_bits.float()) + \
                    torch.einsum("hnb,htb->hnt", 1 - q_bits, 1 - key_bits.float())
                match = match / self.bits
                visible = view.positions[:, None, :] <= qpos.repeat(g)[None, :, None]
                affinity = affinity + (match * visible).sum(dim=1)
                view.state["seen"] = int(qpos.max())
        view.remember("affinity", affinity)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        newest = view.positions.masked_fill(~view.valid_mask(), -1).amax(dim=-1, keepdim=True)
        pinned = (view.positions < self.keep_open) | (view.positions > newest - self.keep_recent)
        return Keep.from_topk(affinity.masked_fill(pinned, float("inf")), view.budget, view.valid)
