import torch

from harness import EvictionMethod, Keep, LayerView


class Method(EvictionMethod):
    """Depth-smoothed window attention: a layer's window-attention distribution is blended with a running profile
    carried down from the layers below (by token position), so one noisy layer cannot drop a token the stack
    agrees on."""

    name = "depth_smooth"
    query_window = 32
    carry = 0.5          # weight of the profile from the layers below
    decay = 0.6          # how much of the running profile survives each layer

    def setup(self, model) -> None:
        self._first = model.attention_layers[0] if model.attention_layers else 0
        self._profile = None

    def select(self, view: LayerView) -> Keep:
        t, b = view.n_tokens, view.budget
        if view.queries is None or b >= t or view.valid is not None:
            return Keep.from_topk(view.positions.float(), b, view.valid)
        a = view.attention(reduce="sum")                               # (H_q, T)
        own = view.group(a, "mean")
        own = own / own.sum(dim=-1, keepdim=True).clamp_min(1e-9)     # per-head distribution
        pos = view.positions[0]
        prof = getattr(self, "_profile", None)
        if view.layer == getattr(self, "_first", 0) or prof is None or prof[0].shape != pos.shape \
                or not bool((prof[0] == pos).all()):
            below = torch.zeros_like(own[0])
        else:
            below = prof[1].to(own.device)
        s = own + self.carry * below[None, :]
        layer_mean = own.mean(dim=0)
        self._profile = (pos.clone(), self.decay * below + (1.0 - self.decay) * layer_mean)
        s = s.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
        return Keep.from_topk(s, b, view.valid)
