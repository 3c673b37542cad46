"""The embedded KV-cache eviction harness. Importable on its own; never imports reviewbench.

The public names load lazily so that ``harness.contract`` (torch-free) can be read without importing torch.
"""

from typing import Any

__all__ = ["EvictionMethod", "Keep", "LayerView", "ModelInfo", "Rewrite"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from harness import api

        return getattr(api, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
