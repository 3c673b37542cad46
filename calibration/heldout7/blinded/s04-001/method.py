"""Vote-based trace retention (board C): while the model reasons, every recent query nominates the cached tokens
it would actually read; tokens are kept by how many nominations they collect, next to a fixed frame of the first
tokens and the newest ones."""

import torch

from harness import EvictionMethod, Keep, LayerView, ModelInfo


class NominationRetention(EvictionMethod):
    name = "nomination_retention"
    query_window = 32
    frame_head = 4           # first tokens of the sequence, always kept
    frame_tail = 32          # newest tokens, always kept
    nominees = 12            # tokens each (query, query head) nominates, at least
    nominee_share = 0.125    # ... or this share of the budget, whichever is larger

    def setup(self, model: ModelInfo) -> None:
        self._first = model.attention_layers[0] if model.attention_layers else 0
        self._prev = None

    # -- bookkeeping -------------------------------------------------------------------------------------------
    def _streaming(self, view: LayerView) -> bool:
        first = getattr(self, "_first", 0)
        prev = getattr(self, "_prev", None)
        in_order = view.layer == first or (prev is not None and view.layer == prev + 1)
        self._prev = view.layer
        return view.board == "C" and in_order

    def _frame(self, view: LayerView) -> torch.Tensor:
        valid = view.valid_mask()
        frame = torch.zeros_like(valid)
        counts = valid.sum(dim=1)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            frame[h, : min(self.frame_head, n)] = True
            frame[h, max(0, n - self.frame_tail): n] = True
        return frame & valid

    # -- scoring -----------------------------------------------------------------------------------------------
    def _nominations(self, view: LayerView) -> torch.Tensor:
        g = view.model.group_size
        h_kv, t, d = view.keys.shape
        rows = view.queries.float().reshape(h_kv, -1, d)                      # (H_kv, g*N, D)
        logits = torch.einsum("hnd,htd->hnt", rows, view.keys.float()) * view.model.scale
        qpos = view.query_positions.repeat(g)
        hidden = (view.positions[:, None, :] > qpos[None, :, None]) | ~view.valid_mask()[:, None, :]
        logits = logits.masked_fill(hidden, float("-inf"))
        k = min(t, max(self.nominees, int(self.nominee_share * view.budget)))
        top = logits.topk(k, dim=-1)
        hit = torch.isfinite(top.values).float()
        votes = torch.zeros(h_kv, t, device=logits.device).scatter_add_(1, top.indices.reshape(h_kv, -1),
                                                                           hit.reshape(h_kv, -1))
        mass = logits.softmax(dim=-1).nan_to_num(0.0).sum(dim=1)              # tie-break only
        return votes + 1e-3 * mass

    def _cold(self, view: LayerView) -> torch.Tensor:
        span = view.positions.float()
        rel = span / span.max().clamp_min(1.0)
        return view.values.float().norm(dim=-1) * (1.0 + rel)

    def select(self, view: LayerView) -> Keep:
        streaming = self._streaming(view)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if view.queries is None or view.query_positions is None or not streaming:
            score = self._cold(view)
        else:
            score = self._nominations(view)
        score = score.masked_fill(self._frame(view), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
