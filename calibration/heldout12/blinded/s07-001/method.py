"""Digest-routed span retention (board A).

The context is cut into short spans. Each span writes itself a *digest*: the span's own tokens read the span
(a small bidirectional attention inside the span, with the span re-encoded at local offsets 0..c-1, so that a
digest does not depend on where the span sits in the document), their read-outs are averaged, and that average
is used once more as a probe over the span's keys to pull out one representative key. The closing rows of the
prompt (the question) then route: every row and query head ballots for the spans whose digest it matches best,
and each KV head keeps the spans with the most ballots. The opening span and the span being read are always
kept. Whole spans are kept, so a retrieved fact keeps its neighbours.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


def _unrotate(view: LayerView, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    try:
        return view.rotate(x, -pos)
    except ValueError:  # the layer's rotary embedding is unknown: work on the vectors as given
        return x.float()


def _local(view: LayerView, x: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
    try:
        return view.rotate(x, offsets)
    except ValueError:
        return x.float()


class DigestRouting(EvictionMethod):
    name = "digest_routing"
    query_window = 1 << 20  # every prompt row: spans write their digests with their own rows
    question_queries = True
    voters = 64  # closing rows that route

    def _span(self, budget: int) -> int:
        return int(min(32, max(4, budget // 8)))

    def _digests(self, view: LayerView, c: int) -> torch.Tensor:
        """(H_q, G, D) one representative key per span and query head, in span-local encoding."""
        g = view.model.group_size
        pos = view.positions[0]
        t = pos.numel()
        n_span = -(-t // c)
        pad = n_span * c - t
        local = (pos % c).to(pos.device)
        keys = _local(view, _unrotate(view, view.keys.float(), pos), local)  # (H_kv, T, D)
        vals = view.values.float()
        have = view.queries is not None and view.query_positions is not None
        if have:
            qp = view.query_positions
            lookup = torch.full((int(pos.max()) + 1,), -1, dtype=torch.long, device=pos.device)
            lookup[qp[qp <= pos.max()]] = torch.nonzero(qp <= pos.max()).flatten()
            rows = lookup[pos]
            have = bool((rows >= 0).all())
        if have:
            q = view.queries[:, rows].float()
            q = _local(view, _unrotate(view, q, pos), local)  # (H_q, T, D)
        else:  # no rows of its own for some span: the keys stand in for them
            q = keys.repeat_interleave(g, dim=0)
        k = keys.repeat_interleave(g, dim=0)
        v = vals.repeat_interleave(g, dim=0)
        h, _, d = k.shape
        mask = torch.ones(t, dtype=torch.bool, device=k.device)
        if pad:
            z = torch.zeros(h, pad, d, device=k.device)
            q, k, v = torch.cat([q, z], 1), torch.cat([k, z], 1), torch.cat([v, z], 1)
            mask = torch.cat([mask, torch.zeros(pad, dtype=torch.bool, device=k.device)])
        q, k, v = (x.view(h, n_span, c, d) for x in (q, k, v))
        m = mask.view(n_span, c)
        scale = view.model.scale
        logits = torch.einsum("hsid,hsjd->hsij", q, k) * scale
        logits = logits.masked_fill(~m[None, :, None, :], float("-inf"))
        readout = torch.einsum("hsij,hsjd->hsid", logits.softmax(-1).nan_to_num(0.0), v)
        w = m[None, :, :, None].float()
        summary = (readout * w).sum(2) / w.sum(2).clamp_min(1.0)  # (H_q, S, D)
        probe = torch.einsum("hsd,hsjd->hsj", summary, k) * scale
        probe = probe.masked_fill(~m[None], float("-inf")).softmax(-1).nan_to_num(0.0)
        return torch.einsum("hsj,hsjd->hsd", probe, k)

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.budget >= t or view.valid is not None or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        c = self._span(view.budget)
        digest = self._digests(view, c)  # (H_q, S, D)
        n_span = digest.shape[1]
        q = view.queries[:, -self.voters:].float()
        qp = view.query_positions[-self.voters:]
        q = _unrotate(view, q, qp)
        match = torch.einsum("hnd,hsd->hns", q, digest)  # (H_q, rows, S)
        # a row routes only to spans it could read
        start = torch.arange(n_span, device=q.device) * c
        match = match.masked_fill(start[None, None, :] > qp[None, :, None], float("-inf"))
        room = max(1, view.budget // c)
        pick = match.topk(min(room, n_span), dim=-1).indices
        ballots = torch.zeros(match.shape[0], n_span, device=q.device)
        ballots.scatter_add_(1, pick.flatten(1), torch.ones_like(pick.flatten(1), dtype=torch.float))
        ballots = view.group(ballots, "sum")  # (H_kv, S)
        tie = view.group(match.clamp_min(-1e4).mean(1), "mean")
        span_score = ballots + 1e-3 * tie.softmax(-1)
        span_score[:, 0] = float("inf")
        last = int(view.positions[0, -1]) // c
        span_score[:, last] = float("inf")
        span_of = torch.div(view.positions, c, rounding_mode="floor").clamp_max(n_span - 1)
        token = torch.gather(span_score, 1, span_of)
        token = token + 1e-6 * view.positions.float() / t  # inside a span, later tokens first
        return Keep.from_topk(token, view.budget)
