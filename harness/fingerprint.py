"""Behavioural fingerprint: what a method keeps on a frozen bank of real layer tensors.

The bank is captured once from the embedded model and cached in the user cache dir: keys, values and every
prompt query of six layers (3 to 28) on four dev prompts of 1K and 2K tokens — two query-aware (the question in
the prefill, board A) and two context-only (board B_offline: the queries are the context's own, plus the one-off
"repeat the context" pass that KVzip-like methods ask for). Stored in float16: about 95 MB, from about 9K tokens
of forward passes. Long contexts matter: on 512 tokens a method with a fixed 64-token window keeps mostly its
window, so unrelated window methods look alike; at 1-2K tokens and budgets up to half the context (several
hundred tokens, well above any fixed window) what a method scores is what it keeps.

Any method is run on it at several budgets and its kept index sets are returned, plus three probes, on one
early and one late layer of every prompt, that recognise methods whose choice does not depend on the layer's
content (random eviction with any RNG or seed, pure position rules): a second run of the same views (is it
deterministic?), a run on a content-permuted copy (the tokens' keys, values and queries shuffled, positions
kept: does the choice follow the content?) and a run on a copy perturbed by 1e-4 relative noise (a choice
seeded by a hash of the content changes completely, a real score barely moves).

Reference methods run in this process, each also in the configurations of its hyper-parameter family (a spec
such as ``snapkv?query_window=64&kernel=5&pooling=avg`` is the reference class with those class attributes set
on the trusted side; see ``harness.fingerprint_grid``), view by view so that the attention one view's queries
pay is computed once for every configuration and budget. Anything else runs in its own sandboxed process
(``harness.boundary``), each candidate in a process of its own, so no candidate can touch another method's kept
sets.

    python -m harness.fingerprint CONFIG.json OUT.json     # the trusted worker
"""

from __future__ import annotations

import hashlib
import inspect
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl

import torch

from harness.api import EvictionMethod, Keep, LayerView, ModelInfo, Rewrite
from harness.boundary import InProcessMethod, MethodError, MethodHandle, open_method
from harness.io import atomic_write, read_json, write_json_atomic
from harness.kv import KVRuntime
from harness.memo import MemoView
from harness.results import MethodLimits, build

BANK_VERSION = 2
PROTOCOL = 1  # how a method is run on the bank (views handed over, probes); part of every cached result's key
SCHEMA = "harness.fingerprint/2"


@dataclass(frozen=True)
class Prompt:
    task: str
    offset: int  # dev item index
    length: int  # context tokens
    board: str  # "A": question in the prefill; "B_offline": context only, reconstruction pass available


PROMPTS = (Prompt("niah_single", 0, 2048, "A"), Prompt("vt", 0, 1024, "A"),
           Prompt("fwe", 0, 2048, "B_offline"), Prompt("niah_multikey_needle", 0, 1024, "B_offline"))
LAYERS = (3, 8, 13, 18, 23, 28)
BUDGETS = (0.05, 0.15, 0.3, 0.5)  # of each view's tokens: 52 to 1044 tokens kept per head
PROBE_BUDGET = 0.15
PROBE_LAYERS = (8, 23)
PERTURBATION = 1e-4  # relative noise of the perturbation probe
PROBE_SEED = 20261203
PROBES = ("repeat", "permuted", "perturbed")


# --- configured reference methods --------------------------------------------------------------------------------
def tunables(cls: type) -> dict[str, Any]:
    """The class attributes of a reference method that a spec may set: public plain values (not ``name``)."""
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        for key, value in vars(klass).items():
            if not key.startswith("_") and key != "name" and type(value) in (bool, int, float, str):
                out[key] = value
    return out


def _convert(raw: str, like: Any, key: str) -> Any:
    if isinstance(like, bool):
        if raw.lower() not in ("true", "false", "1", "0"):
            raise ValueError(f"{key}={raw!r}: expected true or false")
        return raw.lower() in ("true", "1")
    if isinstance(like, int):
        return int(raw)
    if isinstance(like, float):
        return float(raw)
    return raw


def is_configured_reference(spec: str) -> bool:
    """A reference name with optional settings; never a path (candidates are always given as folders)."""
    from harness.methods import REFERENCE_METHODS

    return "/" not in spec and spec.partition("?")[0] in REFERENCE_METHODS


def configured(spec: str) -> EvictionMethod:
    """A reference method with the class attributes the spec sets (``name?key=value&...``) as instance attributes
    of a trusted object. Reference classes only; unknown keys and ill-typed values are errors."""
    from harness.methods import REFERENCE_METHODS

    name, _, query = spec.partition("?")
    if "/" in spec or name not in REFERENCE_METHODS:
        raise ValueError(f"{spec}: not a reference method")
    cls = REFERENCE_METHODS[name]
    allowed = tunables(cls)
    params: dict[str, Any] = {}
    for key, raw in parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)):
        if key not in allowed:
            raise ValueError(f"{spec}: {name} has no tunable {key!r} ({', '.join(sorted(allowed))})")
        params[key] = _convert(raw, allowed[key], key)
    method = cls()  # the registry holds concrete classes
    for key, value in params.items():
        setattr(method, key, value)
    return method


def reference_code_hash(spec: str) -> str:
    """What a configured reference method's behaviour depends on: the spec and the source files of its class
    hierarchy and of the interface (the view's attention and grouping helpers)."""
    import harness.api
    from harness.methods import REFERENCE_METHODS

    cls = REFERENCE_METHODS[spec.partition("?")[0]]
    h = hashlib.sha256(spec.encode())
    files = {inspect.getsourcefile(k) for k in cls.__mro__ if k.__module__.startswith("harness.")}
    for f in list(files):  # the private helpers beside a class's module (priorart/_blocks.py) are its code too
        if f:
            files |= {str(p) for p in Path(f).parent.glob("_*.py") if p.name != "__init__.py"}
    files.add(inspect.getsourcefile(harness.api))
    for f in sorted(x for x in files if x):
        h.update(Path(f).read_bytes())
    return h.hexdigest()[:24]


def spec_code_hash(spec: str) -> str:
    """The code hash a run of ``spec`` reports: a configured reference's, or the file's (``harness.loading``)."""
    from harness.loading import code_hash

    return reference_code_hash(spec) if is_configured_reference(spec) else code_hash(spec)


def open_spec(spec: str, limits: MethodLimits) -> MethodHandle:
    """A configured reference method in this process; anything else (a folder) in its own sandbox."""
    if is_configured_reference(spec):
        return InProcessMethod(configured(spec), spec, limits.call_timeout_s, reference_code_hash(spec))
    return open_method(spec, limits, isolate=True)


# --- the bank ----------------------------------------------------------------------------------------------------
def bank_dir() -> Path:
    from harness.model import cache_dir

    return cache_dir() / f"fingerprint-bank-v{BANK_VERSION}"


def build_bank(path: Path | None = None) -> Path:
    """Capture the bank (deterministic: fixed dev prompts, one forward pass each, no sampling); atomic write."""
    from harness.model import load_model
    from harness.runner import Engine, reconstruction_queries
    from harness.tasks import generate

    folder = path or bank_dir()
    target = folder / "bank.pt"
    if target.is_file():
        return target
    eng = Engine(load_model())
    views = []
    for i, p in enumerate(PROMPTS):
        item = generate(p.task, "dev", 1, eng.n_tokens, p.length, offset=p.offset)[0]
        ctx, q = eng.segments(item, item.questions[0])
        ids = ctx + q if p.board == "A" else ctx
        rt = KVRuntime(eng.info.n_layers, eng.info.group_size)
        rt.queries.prefill_positions = torch.arange(len(ids))
        eng.forward(rt, ids, 0, last_only=True)
        recon = reconstruction_queries(eng, rt, ctx, len(ids))[0] if p.board != "A" else None
        for layer in LAYERS:
            k, v, _, _ = rt.layers[layer].padded()
            rq = recon(layer) if recon is not None else None
            views.append({"prompt": i, "layer": layer, "board": p.board, "keys": k.half(), "values": v.half(),
                          "queries": rt.queries.prefill[layer].half(),
                          "question": [len(ctx), len(ids)] if p.board == "A" else None,
                          "recon": rq[0].half() if rq is not None else None,
                          "recon_start": int(rq[1][0]) if rq is not None else None})
    meta = {"version": BANK_VERSION, "model": asdict(eng.info), "prompts": [asdict(p) for p in PROMPTS],
            "views": views}
    atomic_write(target, lambda fh: torch.save(meta, fh))
    return target


@dataclass
class BankView:
    key: str  # "p0/L13"
    prompt: int
    layer: int
    board: str
    keys: torch.Tensor  # (H_kv, T, D) float32
    values: torch.Tensor
    queries: torch.Tensor  # (H_q, T, D): every prompt query
    question: tuple[int, int] | None
    recon: torch.Tensor | None  # (H_q, R, D): the reconstruction pass's queries
    recon_start: int | None
    memo: dict = field(default_factory=dict)

    @property
    def n_tokens(self) -> int:
        return int(self.keys.shape[1])

    def queries_for(self, attrs: Any) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """The queries the method asks for, as the runner hands them on this view's board."""
        t = self.n_tokens
        if self.board == "B_offline" and attrs.reconstruction_queries and self.recon is not None:
            assert self.recon_start is not None
            return self.recon, torch.arange(self.recon_start, self.recon_start + self.recon.shape[1])
        w = min(int(attrs.query_window), t)
        start = t - w
        if attrs.question_queries and self.board == "A" and self.question is not None:
            start = min(start, self.question[0])  # the question ends the prompt: one contiguous span
        if start >= t:
            return None, None
        return self.queries[:, start:], torch.arange(start, t)

    def layer_view(self, budget: int, attrs: Any, info: ModelInfo, memo: bool) -> LayerView:
        q, qpos = self.queries_for(attrs)
        args: dict[str, Any] = dict(layer=self.layer, keys=self.keys, values=self.values,
                                    positions=torch.arange(self.n_tokens).repeat(self.keys.shape[0], 1),
                                    queries=q, budget=budget, board=self.board, phase="prefill", model=info,
                                    query_positions=qpos)
        return MemoView(**args, memo=self.memo) if memo else LayerView(**args)

    def transformed(self, how: str) -> "BankView":
        """A probe's copy: ``permuted`` shuffles the tokens' keys, values and queries (one permutation, positions
        kept); ``perturbed`` multiplies every tensor by 1 + 1e-4 noise. Seeded: every method sees the same copy."""
        g = torch.Generator().manual_seed(PROBE_SEED + 1000 * self.prompt + self.layer)
        if how == "permuted":
            perm = torch.randperm(self.n_tokens, generator=g)
            return BankView(self.key, self.prompt, self.layer, self.board, self.keys[:, perm].contiguous(),
                            self.values[:, perm].contiguous(), self.queries[:, perm].contiguous(), self.question,
                            self.recon, self.recon_start)

        def noisy(x: torch.Tensor) -> torch.Tensor:
            return x * (1 + PERTURBATION * torch.randn(x.shape, generator=g))

        return BankView(self.key, self.prompt, self.layer, self.board, noisy(self.keys), noisy(self.values),
                        noisy(self.queries), self.question, None if self.recon is None else noisy(self.recon),
                        self.recon_start)


def load_bank(bank: Path) -> tuple[ModelInfo, list[BankView]]:
    data = torch.load(bank, weights_only=True)
    if data.get("version") != BANK_VERSION:
        raise ValueError(f"{bank}: bank version {data.get('version')}, expected {BANK_VERSION}")
    views = [BankView(key=f"p{v['prompt']}/L{v['layer']}", prompt=v["prompt"], layer=v["layer"], board=v["board"],
                      keys=v["keys"].float(), values=v["values"].float(), queries=v["queries"].float(),
                      question=tuple(v["question"]) if v["question"] else None,
                      recon=v["recon"].float() if v["recon"] is not None else None, recon_start=v["recon_start"])
             for v in data["views"]]
    return ModelInfo(**data["model"]), views


# --- running methods ---------------------------------------------------------------------------------------------
Kept = dict[str, list[list[int]]]  # view key -> per head, the kept token indices


class _Budgets:
    """Per-layer budgets of one method, asked once per (fraction, prompt length). Checked as the runner checks
    them, except that a schedule spending more than the total is measured as it is and noted (the benchmark
    refuses it; the fingerprint's question is only what the method keeps: KVCache-Factory's PyramidKV rounds its
    steps down and overspends by a few per cent)."""

    def __init__(self, handle: MethodHandle, info: ModelInfo) -> None:
        self.handle, self.info = handle, info
        self.cache: dict[tuple[float, int], dict[int, int]] = {}
        self.overspend = 1.0  # the largest sum / total seen

    def __call__(self, fraction: float, n_tokens: int) -> dict[int, int]:
        key = (fraction, n_tokens)
        if key not in self.cache:
            mean = max(1, int(round(fraction * n_tokens)))
            layers = self.info.attention_layers
            got = self.handle.layer_budgets(mean, n_tokens, self.info)
            if got is None:
                got = [mean] * len(layers)
            if len(got) != len(layers) or any(int(b) < 0 for b in got):
                raise MethodError(f"layer_budgets returned {len(got)} values, expected {len(layers)} non-negative")
            self.overspend = max(self.overspend, sum(int(b) for b in got) / (mean * len(layers)))
            self.cache[key] = {layer: int(b) for layer, b in zip(layers, got)}
        return self.cache[key]


def _kept(view: BankView, result: Keep | Rewrite | Any, budget: int) -> tuple[list[list[int]], float]:
    """Each head's kept token indices, after the checks the runner makes before it applies an answer (a Rewrite:
    the positions of the entries it wrote, which on the bank are token indices), and the share of the budget
    spent: over 1 is measured and noted, not refused (the official Ada-KV rounds each head's share and may keep a
    token more than the layer's budget). The cache is not touched."""
    h_kv, n = int(view.keys.shape[0]), view.n_tokens
    if isinstance(result, Keep):
        sets, total = result.indices, 0
    elif isinstance(result, Rewrite):
        if not (len(result.keys) == len(result.values) == len(result.positions)):
            raise MethodError(f"layer {view.layer}: Rewrite needs keys/values/positions for {h_kv} heads")
        sets = result.positions
    else:
        raise MethodError(f"layer {view.layer}: select returned {type(result).__name__}, expected Keep or Rewrite")
    if len(sets) != h_kv:
        raise MethodError(f"layer {view.layer}: {len(sets)} index sets for {h_kv} KV heads")
    out = []
    total = 0
    for h, idx in enumerate(sets):
        if not isinstance(idx, torch.Tensor) or idx.dim() != 1 or idx.dtype not in (torch.int64, torch.int32):
            raise MethodError(f"layer {view.layer} head {h}: indices must be a 1-D integer tensor")
        values = idx.tolist()
        if isinstance(result, Keep):
            if values and (min(values) < 0 or max(values) >= n):
                raise MethodError(f"layer {view.layer} head {h}: index out of range 0..{n - 1}")
            if len(set(values)) != len(values):
                raise MethodError(f"layer {view.layer} head {h}: repeated indices")
        total += len(values)
        out.append(sorted({i for i in values if 0 <= i < n}))
    return out, total / max(1, budget * h_kv)


def _jaccards(a: list[list[int]], b: list[list[int]]) -> list[float]:
    return [len(set(x) & set(y)) / max(1, len(set(x) | set(y))) for x, y in zip(a, b)]


@dataclass
class _Record:
    handle: MethodHandle
    budgets: _Budgets
    kept: dict[str, Kept] = field(default_factory=dict)  # budget label -> kept
    probe: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PROBES})
    probe_error: str | None = None
    overspend: float = 1.0  # the largest share of a view's budget kept

    def keep(self, view: BankView, result: Keep | Rewrite | Any, budget: int) -> list[list[int]]:
        sets, spent = _kept(view, result, budget)
        self.overspend = max(self.overspend, spent)
        return sets

    def result(self) -> dict[str, Any]:
        probes: dict[str, Any] = {p: (round(sum(v) / len(v), 4) if v else None) for p, v in self.probe.items()}
        return {"kept": self.kept, "code_hash": self.handle.code_hash,
                "probes": {**probes, "error": self.probe_error, "overspend": round(self.overspend, 4),
                           "layer_overspend": round(self.budgets.overspend, 4)}}


def _probe_copies(views: list[BankView]) -> list[tuple[BankView, dict[str, BankView]]]:
    return [(v, {"repeat": v, "permuted": v.transformed("permuted"), "perturbed": v.transformed("perturbed")})
            for v in views if v.layer in PROBE_LAYERS]


def _run_references(specs: list[str], views: list[BankView], info: ModelInfo, budgets: list[float],
                    limits: MethodLimits, errors: dict[str, str]) -> dict[str, _Record]:
    """Trusted reference configurations, view by view: each view's attention is computed once for all of them."""
    recs: dict[str, _Record] = {}
    for spec in specs:
        try:
            handle = open_spec(spec, limits)
            handle.setup(info)
            recs[spec] = _Record(handle, _Budgets(handle, info))
        except (MethodError, ValueError, TypeError) as e:
            errors[spec] = str(e)
    probe_views = {v.key: copies for v, copies in _probe_copies(views)}
    for v in views:
        for spec, rec in list(recs.items()):
            try:
                for b in budgets:
                    budget = rec.budgets(b, v.n_tokens)[v.layer]
                    rec.handle.reset()
                    lv = v.layer_view(budget, rec.handle.attrs, info, memo=True)
                    rec.kept.setdefault(f"{b:g}", {})[v.key] = rec.keep(v, rec.handle.select(lv), budget)
            except MethodError as e:
                errors[spec] = str(e)
                del recs[spec]
                continue
            if v.key not in probe_views:
                continue
            budget = rec.budgets(PROBE_BUDGET, v.n_tokens)[v.layer]
            base = rec.kept.get(f"{PROBE_BUDGET:g}", {}).get(v.key)
            for name, copy in [("base", v), *probe_views[v.key].items()]:
                if name == "base" and base is not None:
                    continue
                try:
                    rec.handle.reset()
                    got = rec.keep(copy, rec.handle.select(copy.layer_view(budget, rec.handle.attrs, info,
                                                                          memo=True)), budget)
                except MethodError as e:
                    rec.probe_error = rec.probe_error or f"{name}: {e}"
                    continue
                if name == "base":
                    base = got
                elif base is not None:
                    rec.probe[name] += _jaccards(base, got)
        v.memo.clear()
        for copies in probe_views.get(v.key, {}).values():
            copies.memo.clear()
    return recs


def _select_prompts(rec: _Record, info: ModelInfo, views: list[BankView], fraction: float) -> Kept:
    """One budget over some views, one prompt at a time: its layers in one round trip, state reset before."""
    out: Kept = {}
    by_prompt: dict[int, list[BankView]] = {}
    for v in views:
        by_prompt.setdefault(v.prompt, []).append(v)
    for group in by_prompt.values():
        per_layer = rec.budgets(fraction, group[0].n_tokens)
        rec.handle.reset()
        lviews = [v.layer_view(per_layer[v.layer], rec.handle.attrs, info, memo=False) for v in group]
        for v, lv, result in zip(group, lviews, rec.handle.call_layers("select", lviews)):
            out[v.key] = rec.keep(v, result, lv.budget)
    return out


def _run_isolated(handle: MethodHandle, views: list[BankView], info: ModelInfo, budgets: list[float]) -> _Record:
    """An untrusted method in its own sandboxed process: every budget, then the probes."""
    rec = _Record(handle, _Budgets(handle, info))
    handle.setup(info)
    for b in budgets:
        rec.kept[f"{b:g}"] = _select_prompts(rec, info, views, b)
    pairs = _probe_copies(views)
    originals = [v for v, _ in pairs]
    base = rec.kept.get(f"{PROBE_BUDGET:g}") or _select_prompts(rec, info, originals, PROBE_BUDGET)
    for name in PROBES:
        try:
            got = _select_prompts(rec, info, [copies[name] for _, copies in pairs], PROBE_BUDGET)
        except MethodError as e:  # a probe the method cannot take is said, not fatal
            rec.probe_error = rec.probe_error or f"{name}: {e}"
            continue
        for v in originals:
            rec.probe[name] += _jaccards(base[v.key], got[v.key])
    return rec


def run(methods: list[str], bank: Path, budgets: list[float] | None = None,
        limits: MethodLimits = MethodLimits()) -> dict[str, Any]:
    info, views = load_bank(bank)
    budgets = list(budgets or BUDGETS)
    errors: dict[str, str] = {}
    refs = [s for s in methods if is_configured_reference(s)]
    results = {spec: rec.result() for spec, rec in _run_references(refs, views, info, budgets, limits, errors).items()}
    for spec in methods:
        if spec in refs:
            continue
        try:
            handle = open_spec(spec, limits)  # its own sandboxed process
        except (MethodError, OSError, ValueError, TypeError) as e:
            errors[spec] = str(e)
            continue
        try:
            results[spec] = _run_isolated(handle, views, info, budgets).result()
        except MethodError as e:
            errors[spec] = str(e)
        finally:
            handle.close()
    return {"schema": SCHEMA, "bank_version": BANK_VERSION, "protocol": PROTOCOL, "budgets": budgets,
            "views": {v.key: {"n_tokens": v.n_tokens, "layer": v.layer, "prompt": v.prompt, "board": v.board}
                      for v in views},
            "kept": {s: r["kept"] for s, r in results.items()},
            "probes": {s: r["probes"] for s, r in results.items()},
            "code_hashes": {s: r["code_hash"] for s, r in results.items()}, "errors": errors}


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    cfg = read_json(args[0])
    limits = build(MethodLimits, cfg.get("limits", {}))
    write_json_atomic(args[1], run(cfg["methods"], Path(cfg["bank"]), cfg.get("budgets"), limits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
