import torch
from harness.api import EvictionMethod, Keep, LayerView, rope_angles, rotate_half

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
        keep_rows = qpos >= self.p2
        q, qpos = (q[:, keep_rows], qpos[keep_rows])
        pre = view.rotate(q, -qpos)
        mean = pre.mean(dim=1)
        d = pre.shape[-1]
        start = int(view.positions.max()) + 1
        cos, sin = _helper1(view, start, self.p1, d)
        p6 = mean * cos + rotate_half(mean) * sin
        keys = view.keys.float().repeat_interleave(view.model.group_size, dim=0)
        logits = torch.einsum('hd,htd->ht', p6, keys) / d ** 0.5
        if self.p3 and pre.shape[1] > 1:
            centred = pre - mean[:, None]
            cov = torch.einsum('hni,hnj->hij', centred, centred) / pre.shape[1]
            p7 = _helper2(cos, sin)
            p8 = p7 @ cov @ p7.T
            logits = logits + torch.einsum('hti,hij,htj->ht', keys, p8, keys) / (2 * d)
        sink = view.positions < self.p2
        out = ~view.valid_mask() | sink
        logits = logits.masked_fill(out.repeat_interleave(view.model.group_size, dim=0), float('-inf'))
        scores = view.group(logits.softmax(dim=-1), 'mean')
        if self.p4:
            scores = (scores + self.p5) * view.values.float().norm(dim=-1)
        return scores.masked_fill(sink, float('inf'))

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.model.rope_theta is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        return Keep.from_topk(self.scores(view), view.budget, view.valid)

def _helper1(view: LayerView, start: int, n: int, d: int) -> tuple[torch.Tensor, torch.Tensor]:
    cos, sin = rope_angles(torch.arange(start, start + n), d, view.model.rope_theta)
    return (cos.mean(dim=0), sin.mean(dim=0))

def _helper2(cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    eye = torch.eye(cos.shape[0])
    return (eye * cos + rotate_half(eye) * sin).T
