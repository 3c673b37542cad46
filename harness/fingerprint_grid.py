"""Each baseline's hyper-parameter family, as configured reference specs (torch-free: reviewbench reads it).

A spec is a reference method's name with optional class attributes, ``snapkv?query_window=64&kernel=5&pooling=avg``;
the trusted fingerprint worker instantiates the reference class and sets them (``harness.fingerprint.configured``).
The harness's own configuration comes first, then the settings the papers' configs, the official repositories'
defaults, kvpress's presses and KVCache-Factory's runner use, and a few neighbours between them: a port of public
code keeps its source's settings, which are seldom the harness's, so a candidate is compared with the whole family
and the closest member is named.
"""

from __future__ import annotations

import ast
import hashlib
from functools import lru_cache
from pathlib import Path

_SNAP = ("query_window=32&kernel=7&pooling=max",  # the paper's LongBench configs (harness default)
         "query_window=64&kernel=5&pooling=avg",  # kvpress SnapKVPress; SnapKVCluster's defaults
         "query_window=32&kernel=5&pooling=avg",  # init_snapkv's defaults
         "query_window=8&kernel=7&pooling=max",  # KVCache-Factory's LongBench runner
         "query_window=16&kernel=7&pooling=max", "query_window=64&kernel=7&pooling=max",
         "query_window=64&kernel=5&pooling=max", "query_window=32&kernel=7&pooling=avg",
         "query_window=128&kernel=7&pooling=max", "query_window=8&kernel=5&pooling=avg",
         "query_window=16&kernel=5&pooling=avg", "query_window=128&kernel=5&pooling=avg")

FAMILIES: dict[str, tuple[str, ...]] = {
    "snapkv": tuple(f"snapkv?{p}" for p in _SNAP),
    "pyramidkv": ("pyramidkv",  # official schedule, beta 20, the paper's scoring
                  "pyramidkv?query_window=64&kernel=5&pooling=avg",  # PyramidKVCluster's class defaults
                  "pyramidkv?query_window=8&kernel=7&pooling=max",  # KVCache-Factory's runner
                  "pyramidkv?query_window=64&kernel=5&pooling=avg&kvpress_schedule=true",  # kvpress PyramidKVPress
                  "pyramidkv?query_window=32&kernel=7&pooling=max&kvpress_schedule=true",
                  "pyramidkv?beta=10", "pyramidkv?beta=40",
                  "pyramidkv?query_window=64&kernel=5&pooling=avg&beta=10"),
    "adakv": ("adakv",  # official: alpha 0.2, window + floor per head, window 32 / kernel 7 / max
              "adakv?query_window=64&kernel=5&pooling=avg&floor_includes_window=true",  # kvpress AdaKVPress(SnapKV)
              "adakv?alpha=0.5",  # the official README's example
              "adakv?floor_includes_window=true", "adakv?query_window=64&kernel=5&pooling=avg",
              "adakv?alpha=0.5&query_window=64&kernel=5&pooling=avg", "adakv?query_window=8&kernel=7&pooling=max"),
    "tova": ("tova",),
    "window": ("window", "window?n_sink=0", "window?n_sink=1", "window?n_sink=8"),  # StreamingLLM's sinks
    "knorm": ("knorm",),
    "expected_attention": ("expected_attention",  # the official press's defaults
                           "expected_attention?epsilon=0.01",  # the leaderboard's epsilon
                           "expected_attention?use_covariance=false", "expected_attention?use_vnorm=false",
                           "expected_attention?n_future=128", "expected_attention?n_future=2048",
                           "expected_attention?n_sink=0"),
    "kvzip": ("kvzip", "kvzip?n_sink=0", "kvzip?n_sink=8"),
    "h2o": ("h2o",  # equal heavy and recent shares (the paper's scripts)
            "h2o?recent_share=0.25", "h2o?recent_share=0.1", "h2o?recent_share=0",
            "h2o?recent_share=0&normalise=true",  # kvpress ObservedAttentionPress
            "h2o?recent_share=0.5&normalise=true"),
    "rkv": ("rkv",  # the official code's defaults: window 8, kernel 7, lambda 0.07
            "rkv?mix_lambda=0.1",  # the README's lambda
            "rkv?query_window=32", "rkv?query_window=32&mix_lambda=0.1", "rkv?query_window=16&mix_lambda=0.1",
            "rkv?kernel=5"),
    "random": ("random", "random?seed=1"),
}

BASELINES = tuple(FAMILIES)

PRIOR_ART_DIR = Path(__file__).parent / "methods" / "priorart"


def family_of(spec: str) -> str:
    """The baseline a configured spec belongs to: its reference name."""
    return spec.partition("?")[0]


@lru_cache(maxsize=1)
def prior_art_families() -> dict[str, tuple[str, ...]]:
    """Published rules beyond the baselines (``harness/methods/priorart``), by paper: ``{"CapKV": ("pa_capkv",
    "pa_capkv?tau=2.0", ...)}``. Read from the files' syntax (each class's ``name`` and ``paper``; the module
    docstring's ``Settings:`` line, the paper's first), so reviewbench learns them without importing torch; one
    home: the method's own file."""
    out: dict[str, list[str]] = {}
    for f in sorted(PRIOR_ART_DIR.glob("*.py")):
        if f.name.startswith("_"):
            continue
        tree = ast.parse(f.read_text(encoding="utf-8"), filename=str(f))
        doc = ast.get_docstring(tree) or ""
        line = next((x for x in doc.splitlines() if x.startswith("Settings:")), "")
        settings = tuple(x.strip() for x in line.removeprefix("Settings:").split(";") if x.strip())
        found: list[tuple[str, str]] = []
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                attrs = {}
                for st in node.body:
                    if isinstance(st, ast.Assign):
                        target, value = st.targets[0], st.value
                    elif isinstance(st, ast.AnnAssign) and st.value is not None:
                        target, value = st.target, st.value
                    else:
                        continue
                    if isinstance(target, ast.Name) and target.id in ("name", "paper"):
                        attrs[target.id] = ast.literal_eval(value)
                if "name" in attrs and "paper" in attrs:
                    found.append((attrs["name"], attrs["paper"]))
        for name, paper in found:
            own = tuple(s for s in settings if family_of(s) == name) or (name,)
            out.setdefault(paper, []).extend(own)
    return {paper: tuple(specs) for paper, specs in out.items()}


def reference_families() -> dict[str, tuple[str, ...]]:
    """Every behavioural reference by label: ``baseline:<name>`` (the board baselines' families) and
    ``priorart:<paper>`` (published rules beyond them)."""
    return {**{f"baseline:{b}": FAMILIES[b] for b in BASELINES},
            **{f"priorart:{p}": specs for p, specs in prior_art_families().items()}}


def label_of(spec: str) -> str:
    """The reference label a configured spec stands for (``pa_capkv?tau=2`` -> ``priorart:CapKV``)."""
    name = family_of(spec)
    paper = next((p for p, specs in prior_art_families().items() if any(family_of(s) == name for s in specs)), None)
    return f"priorart:{paper}" if paper else f"baseline:{name}"


def all_reference_specs() -> list[str]:
    return [s for specs in reference_families().values() for s in specs]


def grid_revision() -> str:
    """The reference members as a stage-version suffix (``Stage.revision``): a published rule's members are its
    file's ``Settings:`` line, a docstring, which a stage's source version does not see. The stages that compare
    with the references (the benchmark, which records their kept sets on the scored calls, and the evidence) carry
    it, so editing a Settings line reruns them, as editing a reference's code does."""
    return "grid-" + hashlib.sha256("\n".join(all_reference_specs()).encode()).hexdigest()[:12]
