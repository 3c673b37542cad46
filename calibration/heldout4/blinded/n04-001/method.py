import torch

from harness import EvictionMethod, Keep, LayerView


def principal_axes(x: torch.Tensor, r: int) -> torch.Tensor:
    """(H, T, D) -> (H, D, r): the leading eigenvectors of each head's key covariance."""
    centred = x - x.mean(dim=1, keepdim=True)
    cov = torch.einsum("htd,hte->hde", centred, centred) / max(1, x.shape[1] - 1)
    evals, evecs = torch.linalg.eigh(cov)                       # ascending
    return evecs[..., -r:].flip(-1)


class Method(EvictionMethod):
    """Subspace-denoised attention: score keys in the few directions the keys actually use."""

    name = "subspace_denoise"
    query_window = 16
    keep_frac = 0.25

    def select(self, view: LayerView) -> Keep:
        t = view.n_tokens
        if view.queries is None or view.budget >= t:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        keys = view.keys.float()
        hk, _, d = keys.shape
        r = max(2, int(d * self.keep_frac))
        basis = principal_axes(keys, r)                              # (H_kv, D, r)
        g = view.model.group_size
        q = view.queries.float().reshape(hk, g, -1, d)               # (H_kv, g, W, D)
        q_low = torch.einsum("hgwd,hdr->hgwr", q, basis)
        k_low = torch.einsum("htd,hdr->htr", keys, basis)
        logits = torch.einsum("hgwr,htr->hgwt", q_low, k_low) * view.model.scale
        qpos = view.query_positions.to(keys.device)
        future = view.positions[:, None, None, :] > qpos[None, None, :, None]
        if view.valid is not None:
            future = future | ~view.valid[:, None, None, :]
        logits = logits.masked_fill(future, float("-inf"))
        probs = torch.softmax(logits, dim=-1).nan_to_num(0.0)
        score = probs.sum(dim=2).mean(dim=1)                          # over the window, then the group
        score = score.masked_fill(view.positions >= qpos.min(), float("inf"))
        return Keep.from_topk(score, view.budget, view.valid)
