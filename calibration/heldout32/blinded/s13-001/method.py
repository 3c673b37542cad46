"""A port of FastGen (Ge et al., 2023, "Model Tells You What to Discard", arXiv 2310.01801) to board C's hard cap.

FastGen profiles every attention head once at prefill and gives it the cheapest structural policy that still
recovers most of its attention (special tokens, punctuation, a local window, frequent tokens, or the full cache),
then applies that policy during generation. Ported: the first time a layer is asked (its first cap), each KV head
is profiled on the queries the harness hands over; three policies of the same size are tried in order of cost:
`local` (4 sinks + the newest tokens), `mixed` (sinks, newest half, heaviest half) and `frequent` (sinks + the
heaviest tokens by accumulated attention); the first that recovers at least 95 % of the best one's attention mass
is fixed for that head for the rest of the generation. Deviations: the special-token and punctuation policies are
left out (the method sees no token ids), the full-cache policy cannot exist under a hard cap, and the profile runs
at the first cap instead of at prefill, because that is when the harness first asks.
"""

import torch

from harness import EvictionMethod, Keep, LayerView

POLICIES = ("local", "mixed", "frequent")


class FastGenPort(EvictionMethod):
    name = "fastgen_port"
    query_window = 64
    sinks = 4
    recover = 0.95

    def _attention(self, view: LayerView) -> torch.Tensor:
        acc = view.recall("mass")
        if view.queries is not None:
            fresh = view.query_positions > view.state.get("upto", -1)
            if bool(fresh.any()):
                att = view.attention(view.queries[:, fresh]) if not bool(fresh.all()) else view.attention()
                acc = acc + view.group(att.sum(1), "sum")
                view.state["upto"] = int(view.query_positions.max())
        view.remember("mass", acc)
        return acc

    def _policy_scores(self, kind: str, mass: torch.Tensor, n: int, b: int) -> torch.Tensor:
        pos = torch.arange(n, dtype=torch.float32, device=mass.device)
        recency = pos / max(1, n)
        s = torch.zeros(n, device=mass.device)
        if kind == "local":
            s = recency
        elif kind == "frequent":
            s = mass[:n].clone()
        else:
            half = max(0, (b - self.sinks) // 2)
            s = mass[:n] / mass[:n].max().clamp_min(1e-9)
            s[max(0, n - half):] = 2.0 + recency[max(0, n - half):]
        s[: min(self.sinks, n)] = float("inf")
        return s

    def select(self, view: LayerView) -> Keep:
        mass = self._attention(view)
        counts = view.valid_mask().sum(1)
        plan = view.state.get("plan")
        if plan is None:
            plan = []
            for h in range(view.n_kv_heads):
                n = int(counts[h])
                b = min(view.budget, n)
                got = []
                for kind in POLICIES:
                    keep = self._policy_scores(kind, mass[h], n, b).topk(b).indices
                    got.append(float(mass[h, keep].sum()))
                best = max(got) if got else 0.0
                plan.append(next(p for p, r in zip(POLICIES, got) if r >= self.recover * best))
            view.state["plan"] = plan
        scores = torch.full(view.keys.shape[:2], float("-inf"), device=view.keys.device)
        for h in range(view.n_kv_heads):
            n = int(counts[h])
            scores[h, :n] = self._policy_scores(plan[h], mass[h], n, min(view.budget, n))
        return Keep.from_topk(scores, view.budget, view.valid)
