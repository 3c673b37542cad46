"""Split-ledger eviction for long generations (board C)."""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class SplitLedger(EvictionMethod):
    name = "split_ledger"
    query_window = 64
    prompt_share = 0.5
    recent_share = 0.5

    # ---- prompt side: one-shot pooled window attention when the prompt alone overflows the cap
    def _prompt_pass(self, view: LayerView) -> Keep:
        view.state["prompt_end"] = int(view.positions.max()) + 1
        if view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = view.group(view.attention(reduce="sum"), "mean")
        s = F.max_pool1d(s[:, None], 7, stride=1, padding=3)[:, 0]
        s = s.masked_fill(view.positions >= int(view.query_positions.min()), float("inf"))
        keep = Keep.from_topk(s, view.budget, view.valid)
        return keep

    def select(self, view: LayerView) -> Keep:
        if view.phase == "prefill":
            return self._prompt_pass(view)
        return self.on_decode(view)

    # ---- generation side
    def on_decode(self, view: LayerView) -> Keep:
        valid = view.valid_mask()
        if "prompt_end" not in view.state:
            pos_v = view.positions[valid]
            view.state["prompt_end"] = int((int(pos_v.min()) + int(pos_v.max())) // 2) + 1
        split = view.state["prompt_end"]
        heavy = view.recall("ledger")
        if view.queries is not None:
            seen = view.state.get("ledger_seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                heavy = heavy + view.group(view.attention(view.queries[:, fresh], reduce="sum"), "sum") \
                    if not bool(fresh.all()) else heavy + view.group(view.attention(reduce="sum"), "sum")
                view.state["ledger_seen"] = int(view.query_positions.max())
        view.remember("ledger", heavy)
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().flatten()
            n = idx.numel()
            if view.budget >= n:
                out.append(idx)
                continue
            pos = view.positions[h, idx]
            old = idx[pos < split]
            new = idx[pos >= split]
            p_room = min(old.numel(), int(view.budget * self.prompt_share))
            d_room = view.budget - p_room
            if new.numel() <= d_room:                       # generation still fits: the prompt gets the rest
                p_room = view.budget - new.numel()
                d_room = new.numel()
            # prompt ledger: frozen ranking, oldest evicted last by its accumulated score
            keep_old = old[torch.argsort(heavy[h, old], descending=True)[:p_room]] if p_room > 0 else old[:0]
            # generation ledger: a recent slide plus heavy hitters among the older generated tokens
            r = min(new.numel(), int(d_room * self.recent_share))
            tail = new[new.numel() - r:] if r > 0 else new[:0]
            body = new[: new.numel() - r]
            hh = body[torch.argsort(heavy[h, body], descending=True)[: d_room - r]] if d_room - r > 0 else body[:0]
            out.append(torch.cat([keep_old, hh, tail]).sort().values)
        return Keep(tuple(out))
