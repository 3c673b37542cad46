"""The judge providers: one module each in :mod:`reviewbench.judges.providers`, found by its file name.

A provider's name in ``arena.toml`` is its module's name, and the module defines ``PROVIDER``, a
:class:`~reviewbench.judges.base.JudgeProvider` subclass with its capabilities. Adding a provider is adding
one module. This module imports nothing from the rest of reviewbench at import time, so ``arena.toml``
validation can ask it for the known names without loading any provider or SDK.
"""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reviewbench.judges.base import Capabilities, JudgeProvider

_FOLDER = Path(__file__).with_name("providers")


@cache
def known_providers() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in _FOLDER.glob("*.py") if not p.stem.startswith("_")))


def provider_class(name: str) -> "type[JudgeProvider]":
    if name not in known_providers():
        raise KeyError(f"unknown judge provider {name!r} (known: {', '.join(known_providers())})")
    module = importlib.import_module(f"reviewbench.judges.providers.{name}")
    cls = getattr(module, "PROVIDER", None)
    from reviewbench.judges.base import JudgeProvider

    if not (isinstance(cls, type) and issubclass(cls, JudgeProvider)):
        raise TypeError(f"reviewbench/judges/providers/{name}.py defines no PROVIDER class")
    return cls


def capabilities(name: str) -> "Capabilities":
    return provider_class(name).capabilities


def key_env() -> dict[str, str]:
    """Provider name -> the environment variable its API key is read from (providers that need one)."""
    out: dict[str, str] = {}
    for name in known_providers():
        env = capabilities(name).key_env
        if env:
            out[name] = env
    return out
