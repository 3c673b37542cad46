"""Reference methods shipped with the harness, each a small class on the method interface."""

from harness.api import EvictionMethod
from harness.methods.adakv import AdaKV
from harness.methods.expected_attention import ExpectedAttention
from harness.methods.full import FullCache
from harness.methods.h2o import H2O
from harness.methods.knorm import KNorm
from harness.methods.kvzip import KVzip
from harness.methods.priorart import PRIOR_ART_METHODS
from harness.methods.pyramidkv import PyramidKV
from harness.methods.random_ import RandomEviction
from harness.methods.rkv import RKV
from harness.methods.snapkv import QueryAgnosticSnapKV, SnapKV
from harness.methods.streaming import StreamingLLM
from harness.methods.tova import TOVA

REFERENCE_METHODS: dict[str, type[EvictionMethod]] = {"full": FullCache, "random": RandomEviction, "window": StreamingLLM, "snapkv": SnapKV,
                     "snapkv_qa": QueryAgnosticSnapKV, "pyramidkv": PyramidKV, "adakv": AdaKV, "tova": TOVA,
                     "knorm": KNorm, "h2o": H2O, "rkv": RKV, "kvzip": KVzip,
                     "expected_attention": ExpectedAttention, **PRIOR_ART_METHODS}

__all__ = ["PRIOR_ART_METHODS", "REFERENCE_METHODS", "RKV", "TOVA", "AdaKV", "ExpectedAttention", "FullCache", "H2O", "KNorm", "KVzip", "PyramidKV",
           "QueryAgnosticSnapKV", "RandomEviction", "SnapKV", "StreamingLLM"]
