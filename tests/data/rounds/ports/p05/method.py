"""Span ballot with stair reuse (board B_online): vote for whole spans of the context rather than single
entries, and let each pair of neighbouring layers share one vote."""

import torch

from harness import EvictionMethod, Keep, LayerView


class SpanBallot(EvictionMethod):
    name = "span_ballot"
    query_window = 32
    span = 10
    stair = 2            # layers sharing one decision

    def setup(self, model) -> None:
        self._shared: dict = {}

    def _votes(self, view: LayerView) -> torch.Tensor:
        mass = view.attention(reduce="sum")                       # (H_q, T)
        return view.group(mass, "mean")                           # (H_kv, T)

    def _decide(self, view: LayerView) -> list[torch.Tensor]:
        votes = self._votes(view)
        t = view.n_tokens
        tail = view.positions >= view.query_positions.min()       # the closing rows' own entries
        live = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            n = int(live[h].sum())
            fixed = tail[h, :n]
            body = int((~fixed).sum())
            room = max(0, min(view.budget, n) - int(fixed.sum()))
            keep = fixed.clone()
            if room > 0 and body > 0:
                n_spans = -(-body // self.span)
                v = torch.zeros(n_spans * self.span, device=votes.device)
                v[:body] = votes[h, :body]
                per_span = v.view(n_spans, self.span).sum(dim=1)
                order = torch.argsort(per_span, descending=True)
                whole = room // self.span
                for s in order[:whole].tolist():
                    keep[s * self.span: min(body, (s + 1) * self.span)] = True
                left = room - int(keep[:body].sum())
                if left > 0 and whole < n_spans:      # part of the next span, its best entries
                    s = int(order[whole])
                    lo, hi = s * self.span, min(body, (s + 1) * self.span)
                    best = torch.topk(votes[h, lo:hi], min(left, hi - lo)).indices + lo
                    keep[best] = True
            idx = keep.nonzero().flatten()
            if idx.numel() > view.budget:
                idx = idx[-view.budget:]
            out.append(idx)
        del t
        return out

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not hasattr(self, "_shared"):
            self._shared = {}
        slot = view.model.attention_layers.index(view.layer) // self.stair if view.layer in \
            view.model.attention_layers else view.layer
        sig = (slot, view.n_tokens, view.budget, view.n_kv_heads, view.valid is None)
        got = self._shared.get(sig)
        if got is None or any(int(i.max()) >= view.n_tokens for i in got if i.numel()):
            got = self._decide(view)
            self._shared = {k: v for k, v in self._shared.items() if k[0] >= slot - 1}
            self._shared[sig] = got
        return Keep(tuple(i.to(view.keys.device) for i in got))
