"""Mirror-head split with a residue slot (board B_offline, with the reconstruction pass).

When the model writes a context out again, two kinds of heads do the work: *mirror* heads that look at the
original copy of the token being read, and *relay* heads that look at the token right after it, the one to be
written next. Heads that do neither only need what is near them. The reconstruction pass shows directly which
heads mirror or relay, so no probe prompt is needed:

- per KV head, the mean attention (max over its query heads) that the repeat rows put on the original of the
  token they read (mirror) and on its successor (relay); a head with either at 0.15 or more is a reader;
- other heads keep the first 4 tokens, their newest tokens and one residue slot, the mean key and mean value of
  everything they drop, so the dropped mass still has somewhere to go; they take half of the even share;
- readers share the rest of the layer's budget and keep the tokens the repeat pass attends to most.

Without a reconstruction pass (other boards) every head keeps its first 4 and newest tokens.
"""

from __future__ import annotations

import torch

from harness import EvictionMethod, LayerView, Rewrite


class MirrorHeadSplit(EvictionMethod):
    name = "mirror_head_split"
    reconstruction_queries = True
    reader_level = 0.15
    sinks = 4
    chunk_rows = 192

    def _pass(self, view: LayerView) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q = view.queries
        n_rows, t = q.shape[1], view.n_tokens
        lead = n_rows - t
        g = view.model.group_size
        mirror = torch.zeros(q.shape[0], device=view.keys.device)
        relay = torch.zeros_like(mirror)
        peak = torch.zeros(q.shape[0], t, device=view.keys.device)
        n_mirror = n_relay = 0
        for s in range(0, n_rows, self.chunk_rows):
            e = min(n_rows, s + self.chunk_rows)
            a = view.attention(q[:, s:e])                          # (H_q, c, T)
            peak = torch.maximum(peak, a.amax(dim=1))
            read = torch.arange(s, e, device=a.device) - lead      # the context token each row reads
            for offset, acc in ((0, mirror), (1, relay)):
                tgt = read + offset
                ok = (read >= 0) & (tgt < t)
                if bool(ok.any()):
                    idx = tgt[ok].view(1, -1, 1).expand(a.shape[0], -1, 1)
                    acc += a[:, ok].gather(-1, idx).squeeze(-1).sum(dim=1)
                    if offset == 0:
                        n_mirror += int(ok.sum())
                    else:
                        n_relay += int(ok.sum())
        mirror = (mirror / max(1, n_mirror)).view(-1, g).amax(dim=1)
        relay = (relay / max(1, n_relay)).view(-1, g).amax(dim=1)
        return mirror, relay, view.group(peak, "max")

    def _local(self, view: LayerView, h: int, live: torch.Tensor, room: int) -> tuple[torch.Tensor, torch.Tensor,
                                                                                           torch.Tensor]:
        k, v, p = view.keys[h, live], view.values[h, live], view.positions[h, live]
        n = live.numel()
        if room >= n:
            return k, v, p
        slots = max(0, room - 1)                                    # one slot is the residue
        first = min(self.sinks, slots)
        keep = torch.zeros(n, dtype=torch.bool, device=k.device)
        keep[:first] = True
        if slots > first:
            keep[n - (slots - first):] = True
        gone = ~keep
        res_k = k[gone].float().mean(dim=0, keepdim=True).to(k.dtype)
        res_v = v[gone].float().mean(dim=0, keepdim=True).to(v.dtype)
        res_p = p[gone].max().view(1)
        kk = torch.cat([k[keep], res_k])
        vv = torch.cat([v[keep], res_v])
        pp = torch.cat([p[keep], res_p])
        order = pp.argsort()
        return kk[order], vv[order], pp[order]

    def select(self, view: LayerView) -> Rewrite:
        valid = view.valid_mask()
        h_kv = view.n_kv_heads
        lives = [torch.nonzero(valid[h]).flatten() for h in range(h_kv)]
        total = view.budget * h_kv
        if view.queries is None or view.queries.shape[1] <= view.n_tokens:
            readers = torch.zeros(h_kv, dtype=torch.bool)
            peak = None
        else:
            mirror, relay, peak = self._pass(view)
            readers = ((mirror >= self.reader_level) | (relay >= self.reader_level)).cpu()
        n_read = int(readers.sum())
        local_room = view.budget if n_read in (0, h_kv) else max(self.sinks + 2, view.budget // 2)
        keys, values, positions = [None] * h_kv, [None] * h_kv, [None] * h_kv
        used = 0
        for h in range(h_kv):
            if not readers[h]:
                keys[h], values[h], positions[h] = self._local(view, h, lives[h], min(local_room, view.budget))
                used += positions[h].numel()
        if n_read:
            each = (total - used) // n_read
            for h in torch.nonzero(readers).flatten().tolist():
                live = lives[h]
                take = min(each, live.numel())
                top = peak[h, live].topk(take).indices.sort().values
                sel = live[top]
                keys[h], values[h], positions[h] = view.keys[h, sel], view.values[h, sel], view.positions[h, sel]
        return Rewrite(tuple(keys), tuple(values), tuple(positions))
