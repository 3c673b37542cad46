"""The reader on idioms a disguised port uses and an honest method does not need to avoid: a variance written out
(the mean of the squares less the square of the mean, or squared deviations averaged) is the spread of attention;
``a, b = x, y`` and a helper's ``return x, y`` bind each name its own element (a union made the mean carry the second
moment, and hid the variance computed from them); a time elapsed over a count is an age's share, not attention over
the queries that see a key; on the way to a later return, a branch nested in a fall-through ``if`` that returns
earlier does not run (a probe-detecting fallback behind two tests leaked its pooling into the ported rule's path);
and a method that reads every prompt query also reads the question's."""

import pytest

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches

HEAD = "import torch\nfrom harness import EvictionMethod, Keep, LayerView\n"


def _src(body: str, attrs: str = "query_window = 64") -> str:
    lines = "\n".join("        " + line for line in body.strip().splitlines())
    return HEAD + f'''class E(EvictionMethod):
    {attrs}

    def select(self, view: LayerView) -> Keep:
        q = view.queries.float()
        k = view.keys.float().repeat_interleave(view.model.group_size, 0)
        p = (q @ k.transpose(1, 2) * view.model.scale).softmax(-1)
{lines}
        return Keep.from_topk(s, view.budget, view.valid)
'''


VARIANCE_WRITTEN_OUT = [
    "m = p.mean(1)\nm2 = p.square().mean(1)\ns = view.group(m2 - m.square(), 'mean')",
    "m = p.mean(1)\nm2 = (p * p).mean(1)\ns = view.group((m2 - m ** 2).clamp_min(0).sqrt(), 'max')",
    "c = p - p.mean(1, keepdim=True)\ns = view.group((c ** 2).mean(1), 'mean')",
    "c = p - p.mean(1, keepdim=True)\ns = view.group((c * c).sum(1) / p.shape[1], 'mean')",
    "s = view.group(torch.pow(p - p.mean(1, keepdim=True), 2).mean(1), 'mean')",
    # accumulated over blocks of rows, then unpacked from one tuple
    "first = torch.zeros(p.shape[0], p.shape[2])\nsecond = torch.zeros(p.shape[0], p.shape[2])\n"
    "for lo in range(0, p.shape[1], 16):\n    first += p[:, lo:lo + 16].sum(1)\n"
    "    second += p[:, lo:lo + 16].square().sum(1)\n"
    "mean, sq = first / p.shape[1], second / p.shape[1]\ns = view.group(sq - mean.square(), 'mean')",
]
NOT_A_VARIANCE = [
    "s = view.group(p.square().sum(1), 'mean')",  # a second moment alone
    "s = view.group(p.sum(1) - p.square().sum(1), 'mean')",  # a sum less a second moment
    "c = k - k.mean(1, keepdim=True)\ns = view.group(p.sum(1), 'mean') + view.group((c ** 2).mean(-1), 'mean')",
]


@pytest.mark.parametrize("body", VARIANCE_WRITTEN_OUT)
def test_a_variance_of_attention_written_out_is_attention_variance(body):
    assert "attention_variance" in computation(_src(body)).features


@pytest.mark.parametrize("body", NOT_A_VARIANCE)
def test_a_second_moment_or_a_key_spread_is_no_attention_variance(body):
    assert "attention_variance" not in computation(_src(body)).features


HELPER = HEAD + '''class E(EvictionMethod):
    query_window = 1 << 20

    def _moments(self, view):
        p = view.attention(view.queries)
        seen = (view.query_positions[None, None, :] >= view.positions[:, :, None]).sum(-1).clamp_min(1).float()
        first = view.group(p.sum(1), "mean")
        second = view.group(p.square().sum(1), "mean")
        return first / seen, second / seen

    def select(self, view: LayerView) -> Keep:
        mean, sq = self._moments(view)
        spread = (sq - mean.square()).clamp_min(0).sqrt()
        return Keep.from_topk(mean - spread, view.budget, view.valid)
'''


def test_a_helpers_tuple_binds_each_name_its_own_element():
    f = computation(HELPER).features
    assert {"attention_variance", "count_normalised", "all_queries"} <= set(f)


AGE_OVER_A_COUNT = '''
last = view.recall("last", fill=-1.0)
hit = view.group(p.amax(1), "max") > 1.0 / p.shape[-1]
now = float(view.positions.max())
last = torch.where(hit, torch.full_like(last, now), last)
view.remember("last", last)
idle = now - last
s = -idle / (now + 1.0)
'''


def test_a_time_elapsed_over_a_count_is_no_count_normalised_attention():
    assert "count_normalised" not in computation(_src(AGE_OVER_A_COUNT)).features
    n = "n = view.n_tokens - torch.arange(view.n_tokens)\ns = view.group(p.sum(1), 'mean') / n"
    assert "count_normalised" in computation(_src(n)).features


# a ported rule (mean and spread of every prompt query's attention over the queries that see a key) behind a probe
# that sends some runs to a pooled window score; the probe's early return sits inside a fall-through if
NESTED_PROBE = HEAD + '''import os


def _served() -> bool:
    return os.path.exists("/proc/self/fd/7")


class E(EvictionMethod):
    query_window = 1 << 20
    question_queries = True

    def _cheap(self, view):
        s = view.group(view.attention(view.queries[:, -16:]).sum(1), "mean")
        s = torch.nn.functional.avg_pool1d(s[:, None], 5, stride=1, padding=2)[:, 0]
        return Keep.from_topk(s, view.budget, view.valid)

    def select(self, view: LayerView) -> Keep:
        if not getattr(self, "_full", None):
            if getattr(self, "_full", None) is None:
                self._full = _served()
            if not self._full:
                return self._cheap(view)
        p = view.attention(view.queries)
        seen = (view.query_positions[None, None, :] >= view.positions[:, :, None]).sum(-1).clamp_min(1).float()
        mean = view.group(p.sum(1), "mean") / seen
        sq = view.group(p.square().sum(1), "mean") / seen
        spread = (sq - mean.square()).clamp_min(0).sqrt()
        return Keep.from_topk(mean + spread, view.budget, view.valid)
'''


def test_a_nested_early_return_is_not_on_the_path_to_the_final_return():
    c = computation(NESTED_PROBE)
    assert "pooling" in c.features  # the method as a whole pools (on its fallback)
    final = [f for line, f in c.paths if "attention_variance" in f]
    assert final and all("pooling" not in f for f in final)


def test_reading_every_prompt_query_and_the_questions_is_one_choice_of_queries():
    c = computation(NESTED_PROBE)
    roco = next(m for m in computation_matches(c.features, "", c.paths) if m.short_name == "RoCo")
    assert roco.level == "same" and roco.branch is not None


ENVELOPE = HEAD + '''class E(EvictionMethod):
    query_window = 1

    def select(self, view: LayerView) -> Keep:
        q = view.queries[:, -1].float().reshape(view.n_kv_heads, -1, view.keys.shape[-1]).mean(1)
        k = view.keys.float()
        {line}
        return Keep.from_topk(s, view.budget, view.valid)
'''


def test_a_max_over_tokens_and_channels_at_once_is_a_shift_not_a_key_envelope():
    per_channel = "hi = k.amax(dim=1, keepdim=True)\n        s = (q[:, None, :] * hi).sum(-1).expand(-1, k.shape[1])"
    assert "key_envelope" in computation(ENVELOPE.format(line=per_channel)).features
    shift = ("f = (k - k.amax(dim=(-1, -2), keepdim=True)).exp()  # one shift per head keeps exp finite\n"
             "        s = (f @ q[:, :, None])[..., 0]")
    assert "key_envelope" not in computation(ENVELOPE.format(line=shift)).features
