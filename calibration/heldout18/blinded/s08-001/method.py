"""Split-ledger decoding (board C).

Two ledgers: the prompt and the reasoning. The prompt ledger is frozen at prefill and only trimmed if it alone would
overflow its share; the reasoning ledger, the tokens the model writes, is where eviction happens: a run of the newest
tokens plus the heaviest earlier reasoning tokens by accumulated attention. The heavy set is refreshed only every few
evictions, so between refreshes the kept reasoning tokens do not churn.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class SplitLedger(EvictionMethod):
    name = "split_ledger"
    query_window = 4096
    prompt_share = 0.5
    run_share = 0.25
    refresh_every = 4

    def _accumulate(self, view: LayerView) -> torch.Tensor:
        acc = view.recall("acc")
        if view.queries is not None:
            seen = view.state.get("seen", -1)
            fresh = view.query_positions > seen
            if bool(fresh.any()):
                acc = acc + view.group(view.attention(view.queries[:, fresh], reduce="sum")
                                       if not bool(fresh.all()) else view.attention(reduce="sum"), "sum")
                view.state["seen"] = int(view.query_positions.max())
        view.remember("acc", acc)
        return acc

    def select(self, view: LayerView) -> Keep:
        if view.phase == "prefill":
            view.state["prompt_end"] = int(view.positions.max())
        acc = self._accumulate(view)
        if view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        prompt_end = view.state.get("prompt_end", int(view.positions.max()) // 2)
        valid = view.valid_mask()
        calls = view.state.get("calls", 0)
        view.state["calls"] = calls + 1
        heavy_prev = view.recall("heavy", fill=0.0) > 0
        refresh = calls % self.refresh_every == 0
        out, heavy_now = [], torch.zeros_like(acc)
        for h in range(view.n_kv_heads):
            real = valid[h].nonzero().squeeze(-1)
            pos = view.positions[h, real]
            prompt = real[pos <= prompt_end]
            gen = real[pos > prompt_end]
            p_room = min(prompt.numel(), int(view.budget * self.prompt_share))
            if gen.numel() < view.budget - p_room:
                p_room = view.budget - gen.numel()
            if p_room < prompt.numel():
                prompt = prompt[acc[h, prompt].topk(p_room).indices]
            g_room = view.budget - prompt.numel()
            run_n = min(gen.numel(), max(1, int(g_room * self.run_share)))
            run = gen[gen.numel() - run_n:]
            older = gen[: gen.numel() - run_n]
            h_room = max(0, g_room - run_n)
            rank = acc[h, older] + (0.0 if refresh else heavy_prev[h, older].float() * 1e6)
            heavy = older[rank.topk(min(h_room, older.numel())).indices]
            heavy_now[h, heavy] = 1.0
            out.append(torch.cat([prompt, heavy, run]).sort().values)
        view.remember("heavy", heavy_now)
        return Keep(tuple(out))
