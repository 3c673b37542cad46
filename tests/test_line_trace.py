"""The lines of method.py that ran on a sandboxed method's calls: what the code evidence reads as scored.

A branch the method takes only where it thinks it is not scored (here: a probe of the process's environment)
never shows in the record of the sandboxed calls; a method that stops the trace has its record dropped."""

import textwrap

import pytest
import torch

from harness.api import LayerView, ModelInfo
from harness.boundary import SandboxedMethod
from harness.results import MethodLimits
from harness.sandbox import sandbox_kind

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sandbox_kind() != "bubblewrap", reason="bubblewrap not installed (make installs it)")]

INFO = ModelInfo(name="t", n_layers=2, n_heads=2, n_kv_heads=2, head_dim=8)
LIMITS = MethodLimits(call_timeout_s=120, start_timeout_s=120)

METHOD = textwrap.dedent("""\
    import os
    import torch
    from harness import EvictionMethod, Keep


    def _unused(x):
        return x.flip(-1)


    class Probe(EvictionMethod):
        def setup(self, model):
            self.home = os.path.isdir("/proc/self")          # line 12: not mounted in the method sandbox

        def select(self, view):
            if self.home:
                score = view.keys.norm(dim=-1)               # line 16: never on the sandboxed calls
            else:
                score = view.values.norm(dim=-1)             # line 18
            k = min(view.budget, score.shape[-1])
            return Keep(tuple(score[h].topk(k).indices for h in range(score.shape[0])))
""")


def _view(layer: int) -> LayerView:
    return LayerView(layer=layer, keys=torch.randn(2, 16, 8), values=torch.randn(2, 16, 8),
                     positions=torch.arange(16).repeat(2, 1), queries=None, budget=4, board="B_online",
                     phase="prefill", model=INFO)


def _run(tmp_path, source: str) -> list[int] | None:
    d = tmp_path / "m"
    d.mkdir()
    (d / "method.py").write_text(source)
    m = SandboxedMethod(str(d), LIMITS)
    try:
        m.setup(INFO)
        m.call_layers("select", [_view(0), _view(1)])
        return m.executed_lines()
    finally:
        m.close()


def test_the_record_holds_the_branch_that_ran_and_not_the_other(tmp_path):
    lines = _run(tmp_path, METHOD)
    assert lines is not None
    assert {12, 15, 18, 19, 20} <= set(lines)
    assert 16 not in lines and 8 not in lines  # the branch not taken, the helper never called


def test_a_method_that_stops_the_trace_has_no_record(tmp_path):
    src = METHOD.replace("self.home = ", "__import__('sys').settrace(None); self.home = ")
    assert _run(tmp_path, src) is None


def test_a_trusted_reference_is_not_traced():
    m = SandboxedMethod("h2o", LIMITS)
    try:
        m.setup(INFO)
        assert m.executed_lines() is None
    finally:
        m.close()
