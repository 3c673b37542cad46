import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Density-corrected evidence: attention a token receives, divided by how many queries could give it."""

    name = "density_corrected"
    query_window = 256

    def select(self, view: LayerView) -> Keep:
        q = view.queries.float()
        k = view.keys.float()
        g = view.model.group_size
        kk = k.repeat_interleave(g, dim=0)
        logits = torch.einsum("hnd,htd->hnt", q, kk) * view.model.scale
        kpos = view.positions[0].to(q.device)
        qpos = view.query_positions.to(q.device)
        mask = kpos[None, :] > qpos[:, None]
        logits = logits.masked_fill(mask[None], float("-inf"))
        mass = torch.softmax(logits, dim=-1).sum(dim=1)           # (Hq, T)
        idx = torch.searchsorted(qpos.sort().values, kpos)        # queries strictly before each key
        counts = (qpos.numel() - idx).clamp(min=1).float()
        score = view.group(mass / counts[None, :], "mean")
        return Keep.from_topk(score, view.budget, view.valid)
