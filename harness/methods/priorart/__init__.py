"""Published eviction rules beyond the board baselines, as behavioural references: a submission that keeps the
tokens one of them keeps, where it is scored, computes that paper's rule whatever its code looks like.

One small class per paper (kvpress style), each with the paper's defaults as class attributes and, in its module
docstring, a ``Settings:`` line: the configurations a porter would plausibly use (first = the paper's). Each class names its paper
(``paper``: the prior-art index's short name). Found by listing this folder, so adding a file adds a reference.
They are trusted code, run in the reviewer's process (``harness.fingerprint.open_spec``); the method sandbox binds
only this file (the method host imports ``harness.methods``), so there the folder lists none and nothing of them is
shown to a submission.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

from harness.api import EvictionMethod


def _discover() -> dict[str, type[EvictionMethod]]:
    out: dict[str, type[EvictionMethod]] = {}
    for f in sorted(Path(__file__).parent.glob("*.py")):
        if f.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{f.stem}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, EvictionMethod) and cls.__module__ == module.__name__ and getattr(cls, "paper", None):
                out[cls.name] = cls
    return out


PRIOR_ART_METHODS = _discover()
