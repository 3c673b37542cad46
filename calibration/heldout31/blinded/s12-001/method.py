"""Two Rooms: what the prompt left and what the reasoning writes live in separate rooms.

The first time a layer reaches its cap, everything it holds is the prompt's room; Two Rooms furnishes it once, with
at most half of the budget, by the attention the newest rows pay those tokens (summed, group mean), and never
re-opens it. All later tokens live in the writing room, which gets the rest of the budget: half of it a sliding
window of the newest tokens, the other half the writing tokens with the most attention accumulated over every row
since they arrived.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class TwoRooms(EvictionMethod):
    name = "two_rooms"
    query_window = 64

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        valid = view.valid_mask()
        pos = view.positions
        heavy = view.recall("heavy")
        fresh_attn = None
        if view.queries is not None:
            fresh = view.query_positions > view.state.get("seen", -1)
            if bool(fresh.any()):
                fresh_attn = view.group(view.attention(view.queries[:, fresh], reduce="sum"), "mean")
                heavy = heavy + fresh_attn
                view.state["seen"] = int(view.query_positions.max())
        view.remember("heavy", heavy)
        if "wall" not in view.state:
            view.state["wall"] = int(pos.max())           # the prompt's room: all that is here at the first cap
            view.state["prompt_share"] = view.budget // 2
            view.state["furnish"] = True
        wall = view.state["wall"]
        prompt_room = (pos <= wall) & valid
        out = []
        for h in range(view.n_kv_heads):
            idx = valid[h].nonzero().squeeze(1)
            p_idx = idx[prompt_room[h, idx]]
            w_idx = idx[~prompt_room[h, idx]]
            if view.state["furnish"]:
                share = min(view.state["prompt_share"], p_idx.numel())
                p_keep = p_idx[heavy[h, p_idx].topk(share).indices] if share > 0 else p_idx[:0]
            else:
                p_keep = p_idx                              # furnished once, never re-opened
            room = view.budget - p_keep.numel()
            if w_idx.numel() > room:
                slide = room // 2
                newest = w_idx[w_idx.numel() - slide:] if slide > 0 else w_idx[:0]
                older = w_idx[: w_idx.numel() - slide]
                w_keep = torch.cat([older[heavy[h, older].topk(room - slide).indices], newest])
            else:
                w_keep = w_idx
            out.append(torch.cat([p_keep, w_keep]).sort().values)
        view.state["furnish"] = False
        return Keep(tuple(out))
