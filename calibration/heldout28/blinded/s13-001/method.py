"""Two Ledgers: the prompt's entries and the generated entries are budgeted as two accounts that never trade.

On the first eviction of a layer the entries it holds (the prompt and the opening of the answer) are ranked once by the attention of the newest rows and
the prompt's account (a fixed share of the cap) is frozen: from then on they are never re-ranked, only trimmed
from the bottom of that first ranking if the account shrinks. The generated entries live in the other account:
half of it for the newest, the rest for the generated entries with the most attention received since they
appeared (accumulated across evictions).
"""

import torch

from harness.api import EvictionMethod, Keep, LayerView


class TwoLedgers(EvictionMethod):
    name = "two_ledgers"
    query_window = 64
    prompt_share = 0.5
    fresh_share = 0.5

    def _received(self, view: LayerView) -> torch.Tensor:
        acc = view.recall("recv")
        last = view.state.get("recv_upto", -1)
        fresh = view.query_positions > last
        if bool(fresh.any()):
            part = view.attention(view.queries[:, fresh], reduce="sum") if not bool(fresh.all()) \
                else view.attention(reduce="sum")
            acc = acc + view.group(part, "sum")
            view.state["recv_upto"] = int(view.query_positions.max())
        view.remember("recv", acc)
        return acc

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.query_positions is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        if "boundary" not in view.state:  # what the layer holds at its first eviction is the first account
            view.state["boundary"] = int(view.positions.max()) + 1
        boundary = view.state["boundary"]
        received = self._received(view)
        if "prompt_rank" not in view.state:  # ranked once, never again
            first = view.group(view.attention(view.queries[:, -8:], reduce="mean"), "mean")
            view.remember("prompt_rank", first)
        prompt_rank = view.recall("prompt_rank", fill=-1.0)
        out = []
        for h in range(view.n_kv_heads):
            real = valid[h]
            in_prompt = torch.nonzero(real & (view.positions[h] < boundary)).flatten()
            generated = torch.nonzero(real & (view.positions[h] >= boundary)).flatten()
            p_room = min(in_prompt.numel(), int(view.budget * self.prompt_share))
            g_room = min(generated.numel(), view.budget - p_room)
            p_room = min(in_prompt.numel(), view.budget - g_room)
            keep_p = in_prompt[prompt_rank[h, in_prompt].topk(p_room).indices] if p_room else in_prompt[:0]
            n_fresh = min(g_room, int(g_room * self.fresh_share))
            newest = generated[generated.numel() - n_fresh:] if n_fresh else generated[:0]
            older = generated[: generated.numel() - n_fresh]
            heavy = older[received[h, older].topk(min(older.numel(), g_room - n_fresh)).indices]
            out.append(torch.cat([keep_p, heavy, newest]).sort().values)
        return Keep(tuple(out))
