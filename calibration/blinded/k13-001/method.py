import torch
from harness.api import EvictionMethod, Keep, LayerView, rotate_half

class Method(EvictionMethod):
    """The submitted eviction method."""
    name = 'method'
    query_window = 1 << 20
    p1 = 512
    p2 = 4
    p3 = True
    p4 = True
    p5 = 0.0

    def scores(self, view: LayerView) -> torch.Tensor:
        q, qpos = (view.queries, view.query_positions)
        assert q is not None and qpos is not None
        keep_rows = qpos >= self.p2
        q, qpos = (q[:, keep_rows], qpos[keep_rows])
        pre = view.rotate(q, -qpos)
        mean = pre.mean(dim=1)
        d = pre.shape[-1]
        start = int(view.positions.max()) + 1
        p9 = _helper2(view, start, self.p1, d)
        p10 = mean @ p9.T
        keys = view.keys.float().repeat_interleave(view.model.group_size, dim=0)
        logits = torch.einsum('hd,htd->ht', p10, keys) / d ** 0.5
        if self.p3 and pre.shape[1] > 1:
            centred = pre - mean[:, None]
            cov = torch.einsum('hni,hnj->hij', centred, centred) / pre.shape[1]
            p11 = p9 @ cov @ p9.T
            logits = logits + torch.einsum('hti,hij,htj->ht', keys, p11, keys) / (2 * d)
        sink = view.positions < self.p2
        out = ~view.valid_mask() | sink
        logits = logits.masked_fill(out.repeat_interleave(view.model.group_size, dim=0), float('-inf'))
        scores = view.group(logits.softmax(dim=-1), 'mean')
        if self.p4:
            scores = (scores + self.p5) * view.values.float().norm(dim=-1)
        return scores.masked_fill(sink, float('inf'))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or not _helper1(view) or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        return Keep.from_topk(self.scores(view), view.budget, view.valid)

def _helper1(view: LayerView) -> bool:
    try:
        view.rope
    except ValueError:
        return False
    return True

def _helper2(view: LayerView, start: int, n: int, d: int) -> torch.Tensor:
    p6 = view.rope
    if p6 is None:
        return torch.eye(d, device=view.keys.device)
    cos, sin = p6.angles(torch.arange(start, start + n, device=view.keys.device))
    return _helper3(cos.mean(dim=0), sin.mean(dim=0), d)

def _helper3(cos: torch.Tensor, sin: torch.Tensor, d: int) -> torch.Tensor:
    eye = torch.eye(d, device=cos.device)
    p7 = cos.shape[0]
    p8 = eye[:, :p7] * cos + rotate_half(eye[:, :p7]) * sin
    return torch.cat([p8, eye[:, p7:]], dim=1).T
