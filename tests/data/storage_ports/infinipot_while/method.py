"""Streaming distillation: keys stream into a bounded buffer; each time it is full it is distilled, by the question's
attention plus a novelty term (how unlike the buffer's mean key a key is), back to its size."""

import torch
import torch.nn.functional as F

from harness.api import EvictionMethod, Keep, LayerView


class StreamDistil(EvictionMethod):
    name = "stream_distil"
    question_queries = True
    step = 128
    novelty = 0.2

    def select(self, view: LayerView) -> Keep:
        cap = view.budget
        n = view.n_tokens
        buf = []
        at = 0
        q = view.group(view.queries.float(), "mean")
        while at < n:
            buf = torch.cat([torch.as_tensor(buf, dtype=torch.long), torch.arange(at, min(at + self.step, n))])
            at += self.step
            if buf.numel() <= cap:
                continue
            k = view.keys[:, buf].float()
            att = torch.softmax(torch.einsum("hnd,htd->hnt", q, k), dim=-1).sum(1)
            new = 1 - F.cosine_similarity(k, k.mean(1, keepdim=True), dim=-1)
            keep = (att + self.novelty * new).sum(0).topk(cap).indices
            buf = buf[keep.sort().values]
        return Keep.same_for_all_heads(buf, view.n_kv_heads)
