"""Signpost Bits: decode-time eviction by bit agreement between keys and the newest queries.

Each cached key and each of the newest queries gets a short binary signature (the signs of its projections on a
set of signposts); a key that disagrees with the newest queries on many bits is unlikely to be attended soon and
is evicted first. No attention is computed: only signs and bit counts.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SignpostBits(EvictionMethod):
    name = "signpost_bits"
    query_window = 8       # the newest queries vote
    n_bits = 16
    protect_newest = 4

    def setup(self, model) -> None:
        self._posts: dict[int, torch.Tensor] = {}
        self._head_dim = model.head_dim

    def _signposts(self, layer: int, dim: int, device) -> torch.Tensor:
        posts = getattr(self, "_posts", {}).get(layer)
        if posts is None:
            gen = torch.Generator().manual_seed(7919 * (layer + 1))
            posts = torch.randn(dim, self.n_bits, generator=gen)
            if not hasattr(self, "_posts"):
                self._posts = {}
            self._posts[layer] = posts
        return posts.to(device)

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        posts = self._signposts(view.layer, view.keys.shape[-1], view.keys.device)
        key_bits = view.keys.float() @ posts > 0                                 # (H_kv, T, B)
        q = view.queries.float().reshape(view.n_kv_heads, -1, view.keys.shape[-1])  # (H_kv, g*N, D)
        query_bits = (q @ posts > 0).float()                                     # (H_kv, g*N, B)
        # disagreements, averaged over the voting queries: a Hamming distance per (head, token)
        agree = torch.einsum("hnb,htb->ht", query_bits, key_bits.float()) \
            + torch.einsum("hnb,htb->ht", 1 - query_bits, 1 - key_bits.float())
        distance = self.n_bits - agree / query_bits.shape[1]
        scores = -distance
        valid = view.valid_mask()
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, max(0, n - self.protect_newest): n] = float("inf")
        return Keep.from_topk(scores, view.budget, view.valid)
