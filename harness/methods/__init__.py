"""Reference methods shipped with the harness, each a small class on the method interface."""

from harness.methods.full import FullCache
from harness.methods.random_ import RandomEviction
from harness.methods.snapkv import SnapKV
from harness.methods.streaming import StreamingLLM

REFERENCE_METHODS = {"full": FullCache, "random": RandomEviction, "window": StreamingLLM, "snapkv": SnapKV}

__all__ = ["REFERENCE_METHODS", "FullCache", "RandomEviction", "SnapKV", "StreamingLLM"]
