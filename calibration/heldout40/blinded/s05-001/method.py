"""WindowKV (Zuo et al., 2025, arXiv 2503.17922), ported to board A as a per-layer method.

Not my method: this is a port of WindowKV's window selection. The context (everything before the observation
window) is cut into fixed windows of consecutive tokens; each window is scored by the attention the observation
queries (the last 32 prompt positions, which on board A end with the question) pay to its tokens, summed over
the window and averaged over a KV head's query heads; whole windows are kept best first, the last one cut to fit,
and the observation window itself is always kept.

Stand-ins and omissions, stated: WindowKV chooses its window handling with a task-type classifier; here the
window size is fixed (8 tokens). Its sharing of selected indices across groups of layers is left out: the
harness hands one layer at a time, so every layer selects its own windows.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class WindowKVPort(EvictionMethod):
    name = "windowkv_port"
    query_window = 32
    window = 8

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        assert view.query_positions is not None
        valid = view.valid_mask()
        attn = view.group(view.attention(reduce="sum"), "mean")      # (H_kv, T)
        observation = view.positions >= view.query_positions.min()
        out = []
        for h in range(view.n_kv_heads):
            real = valid[h]
            obs = observation[h] & real
            budget = min(view.budget, int(real.sum()))
            obs_idx = torch.nonzero(obs).flatten()
            if obs_idx.numel() >= budget:
                out.append(obs_idx[obs_idx.numel() - budget:])
                continue
            ctx_idx = torch.nonzero(real & ~obs).flatten()
            n_ctx = ctx_idx.numel()
            n_win = (n_ctx + self.window - 1) // self.window
            padded = torch.zeros(n_win * self.window, device=attn.device)
            padded[:n_ctx] = attn[h, ctx_idx]
            win_scores = padded.view(n_win, self.window).sum(dim=1)
            order = win_scores.argsort(descending=True)
            left = budget - obs_idx.numel()
            chosen = []
            for w in order.tolist():
                if left <= 0:
                    break
                members = ctx_idx[w * self.window: min(n_ctx, (w + 1) * self.window)]
                if members.numel() > left:            # the last window is cut to fit, best tokens first
                    best = attn[h, members].topk(left).indices
                    members = members[best]
                chosen.append(members)
                left -= members.numel()
            keep = torch.cat(chosen + [obs_idx]) if chosen else obs_idx
            out.append(keep.sort().values)
        return Keep(tuple(out))
