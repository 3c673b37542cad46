"""Training-free chunked convolutional fusion, after LoCoCo (Cai et al., ICML 2024, arXiv 2406.05317).

LoCoCo keeps a fixed-size memory and folds every incoming chunk of the context into it with fusion weights computed
by a learned 1-D convolution (with light fine-tuning). This port keeps the chunk-by-chunk fold into a fixed-size
memory but replaces the learned convolution by a fixed smoothing kernel [1, 2, 1]/4 applied to a per-token
importance (the attention the last 32 context queries pay each token), and it folds contiguous groups only: at each
step the memory plus the incoming chunk (ordered by position) are cut into as many contiguous groups as there are
memory slots, and each group becomes one entry, the softmax(importance)-weighted mean of its keys and values,
placed at the position of its most important member. Deviations from the paper: no training, a fixed kernel,
contiguous grouping, and 4 opening tokens plus the last 32 context tokens kept exact outside the memory.
"""

import torch
import torch.nn.functional as F

from harness import EvictionMethod, Keep, LayerView, Rewrite

CHUNK = 64
SINKS = 4
RECENT = 32
KERNEL = torch.tensor([0.25, 0.5, 0.25])


def _fold(k, v, p, imp, slots):
    """Fold (n, D) entries into ``slots`` contiguous groups."""
    n = k.shape[0]
    if n <= slots:
        return k, v, p, imp
    edges = torch.linspace(0, n, slots + 1).round().long().tolist()
    nk, nv, np_, ni = [], [], [], []
    for a, b in zip(edges[:-1], edges[1:]):
        w = torch.softmax(imp[a:b], dim=0)
        nk.append((w[:, None] * k[a:b]).sum(0))
        nv.append((w[:, None] * v[a:b]).sum(0))
        np_.append(p[a + int(imp[a:b].argmax())])
        ni.append(imp[a:b].max())
    return torch.stack(nk), torch.stack(nv), torch.stack(np_), torch.stack(ni)


class ChunkedConvFusion(EvictionMethod):
    name = "chunked_conv_fusion"
    query_window = 32

    def select(self, view: LayerView):
        t, b = view.n_tokens, view.budget
        slots = b - SINKS - RECENT
        if b >= t or view.queries is None or view.valid is not None or slots < 2:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        raw = view.group(view.attention(reduce="sum"), "mean")             # (H_kv, T)
        raw = raw / raw.amax(dim=-1, keepdim=True).clamp_min(1e-9) * 8.0    # logits scale for the fusion softmax
        imp = F.conv1d(raw[:, None], KERNEL.to(raw)[None, None], padding=1)[:, 0]
        lo, hi = SINKS, t - RECENT
        ks, vs, ps = [], [], []
        for h in range(view.n_kv_heads):
            k, v, p = view.keys[h].float(), view.values[h].float(), view.positions[h]
            mk, mv = k[lo:lo], v[lo:lo]
            mp, mi = p[lo:lo], imp[h, lo:lo]
            for s in range(lo, hi, CHUNK):
                e = min(hi, s + CHUNK)
                mk, mv = torch.cat([mk, k[s:e]]), torch.cat([mv, v[s:e]])
                mp, mi = torch.cat([mp, p[s:e]]), torch.cat([mi, imp[h, s:e]])
                mk, mv, mp, mi = _fold(mk, mv, mp, mi, slots)
            pos = torch.cat([p[:lo], mp, p[hi:]])
            order = pos.argsort(stable=True)
            ks.append(torch.cat([k[:lo], mk, k[hi:]])[order].to(view.keys.dtype))
            vs.append(torch.cat([v[:lo], mv, v[hi:]])[order].to(view.values.dtype))
            ps.append(pos[order])
        return Rewrite(tuple(ks), tuple(vs), tuple(ps))
