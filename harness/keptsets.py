"""What a method keeps where it is scored: the kept sets of the board benchmark's own calls.

The behaviour bank (``harness.fingerprint``) is a fixed set of dev prompts a method could learn to recognise
(its layer pattern, its lengths, its budgets) and treat differently. So the benchmark run records, for a few of
the hidden test split's items, what the method kept at each budget, attention layer and KV head after the
prefill compression — the very calls that are scored — and the baselines' kept sets on the same calls.

Why the comparison is exact: on boards A and B the method compresses once, after the prefill, and every layer's
view is a copy of the full cache (eviction happens after the prefill, so no layer sees another's eviction). The
baselines run on the same full-cache tensors (each on its own copy, with the queries it asks for), so a kept
set differs only by what the methods choose. Board C evicts during decoding, where each method's cache, and with
it every later view, is its own: its calls are not recorded (the bank is its only behavioural source).

The items, and six of the attention layers, are chosen by a hash of the split's content, so a method cannot
tell a recorded call from another (it answers every layer of an item in the same calls); every recorded call is
also scored. Each layer's view on these calls is the full cache, so the baselines run on the chosen layers
alone. The references' side (every member of every baseline family and every published rule beyond them,
``harness.fingerprint_grid``; called "baselines" in the files) is computed once per (split, model, board, harness, baseline code) and stored
beside the full-cache reference; a member whose layer schedule the benchmark refuses (it overspends) is left out
and said. Sets are stored bit-packed per (item, budget, layer): one bit per prompt token and head.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "harness.kept/1"


def chosen_items(item_ids: list[str], data_id: str | None, k: int) -> set[str]:
    """The ``k`` items whose hash with the split's content is smallest: fixed for a split, unknowable to a method."""
    ranked = sorted(item_ids, key=lambda i: hashlib.sha256(f"{data_id}|{i}".encode()).hexdigest())
    return set(ranked[:k])


def kept_masks(rt: Any, layers: list[int], n: int) -> dict[int, np.ndarray]:
    """Per attention layer, (heads, n) booleans: which prompt positions each head still holds after compression
    (a Keep's indices are positions on a full-cache copy; a Rewrite's entries are taken at their positions)."""
    out = {}
    for layer in layers:
        _, _, pos, valid = rt.layers[layer].padded()
        pos = pos.cpu()
        m = np.zeros((pos.shape[0], n), dtype=bool)
        for h in range(pos.shape[0]):
            p = pos[h] if valid is None else pos[h][valid[h].cpu()]
            p = p[(p >= 0) & (p < n)].numpy()
            m[h, p] = True
        out[layer] = m
    return out


@dataclass
class KeptSets:
    """One method's recorded sets: (item, budget label, layer) -> (heads, n) booleans, and each item's length."""

    name: str
    code_hash: str
    budgets: list[float]
    lengths: dict[str, int] = field(default_factory=dict)
    masks: dict[tuple[str, str, int], np.ndarray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def add(self, item: str, budget: float, masks: dict[int, np.ndarray], n: int) -> None:
        self.lengths[item] = n
        for layer, m in masks.items():
            self.masks[(item, f"{budget:g}", layer)] = m

    def save(self, path: Path) -> None:
        items = sorted(self.lengths)
        arrays: dict[str, np.ndarray] = {}
        for (item, b, layer), m in self.masks.items():
            arrays[f"{items.index(item)}/{b}/{layer}"] = np.packbits(m, axis=1)
        meta = {"format": FORMAT, "name": self.name, "code_hash": self.code_hash, "budgets": self.budgets,
                "items": items, "lengths": [self.lengths[i] for i in items], **self.meta}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.partial.npz")
        np.savez_compressed(tmp, __meta__=np.array(json.dumps(meta)), **arrays)
        os.replace(tmp, path)


def load_kept(path: Path) -> KeptSets:
    """A recorded file (any member of a baselines file is another ``KeptSets`` under its spec: ``load_baselines``)."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["__meta__"]))
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path}: not a {FORMAT} file")
        items, lengths = meta["items"], meta["lengths"]
        out = KeptSets(meta["name"], meta["code_hash"], [float(b) for b in meta["budgets"]],
                       dict(zip(items, lengths)), meta=meta)
        for key in z.files:
            if key == "__meta__":
                continue
            i, b, layer = key.split("/")
            n = lengths[int(i)]
            out.masks[(items[int(i)], b, int(layer))] = np.unpackbits(z[key], axis=1, count=n).astype(bool)
    return out


def load_baselines(path: Path) -> dict[str, KeptSets]:
    """The baselines file: every member's sets (keys prefixed by the member's index in ``meta['specs']``)."""
    whole = load_kept(path)
    specs: list[str] = whole.meta["specs"]
    out = {s: KeptSets(s, whole.meta["code_hashes"][s], whole.budgets, dict(whole.lengths)) for s in specs}
    for (item, b, layer), m in whole.masks.items():
        idx, _, rest = item.partition("|")
        out[specs[int(idx)]].masks[(rest, b, layer)] = m
    for s in specs:
        out[s].lengths = {i.partition("|")[2]: n for i, n in whole.lengths.items() if i.partition("|")[0] ==
                          str(specs.index(s))}
    return out


class KeptRecorder:
    """Records the benchmark's prefill compressions on the chosen items (harness side, trusted)."""

    def __init__(self, folder: Path, key: dict[str, Any], budgets: list[float], limits: Any, info: Any,
                 layers: int = 6) -> None:
        from harness.fingerprint import open_spec, spec_code_hash
        from harness.fingerprint_grid import all_reference_specs
        from harness.runner import MethodRun

        self.folder, self.budgets, self.info = folder, budgets, info
        # a sample of the scored layers, fixed per split: the method answers every layer in the same calls, so it
        # cannot tell which are recorded; the baselines run on these alone (each layer's view is independent)
        attn = list(info.attention_layers)
        self.layers = sorted(sorted(attn, key=lambda i: hashlib.sha256(f"{key.get('data')}|layer{i}".encode())
                                    .hexdigest())[:max(1, layers)])
        self.specs = all_reference_specs()
        self.key = {**key, "budgets": budgets, "specs": self.specs, "layers": self.layers,
                    "code_hashes": {s: spec_code_hash(s) for s in self.specs}}
        self.methods: dict[str, KeptSets] = {}
        self.errors: dict[str, str] = {}
        self.baselines: KeptSets | None = None
        self.refs: list[Any] = []
        digest = hashlib.sha256(json.dumps(self.key, sort_keys=True).encode()).hexdigest()[:16]
        self.baselines_path = folder / f"baselines-{digest}.npz"
        stored = read_meta(self.baselines_path)
        if stored is None or stored.get("key") != self.key:
            self.baselines = KeptSets("baselines", "", budgets, meta={"key": self.key, "specs": self.specs,
                                                                      "code_hashes": self.key["code_hashes"]})
            for spec in self.specs:
                handle = open_spec(spec, limits)
                handle.setup(info)
                self.refs.append(MethodRun(name=spec, method=handle))

    def method(self, item: str, name: str, code_hash: str, budget: float, rt: Any, n: int) -> None:
        sets = self.methods.setdefault(code_hash, KeptSets(name, code_hash, self.budgets, meta={
            "key": self.key, "baselines": self.baselines_path.name}))
        sets.add(item, budget, kept_masks(rt, self.layers, n), n)

    def baseline_calls(self, eng: Any, item: str, rt0: Any, n: int, q_span: Any, board: str, ctx: list[int]) -> None:
        """Every baseline member at every budget on a copy of this item's full cache (compression only)."""
        from harness.boundary import MethodError
        from harness.runner import _queries_for, layer_budget, reconstruction_queries

        if self.baselines is None:
            return
        recon = None
        # every member sees this item's full cache on the same layers: the attention of the same queries is computed
        # once for all of them and every budget (harness.memo); the reconstruction pass's queries have their own memo
        memo: dict = {}
        recon_memo: dict = {}
        for idx, run in enumerate(self.refs):
            if run.name in self.errors:
                continue
            for b in self.budgets:
                try:
                    per_layer = eng.layer_budgets(run, layer_budget("fraction", b, n), n)
                    rt_c = rt0.copy()
                    run.method.reset()
                    queries = _queries_for(rt0, run, n, q_span, board)
                    shared = memo
                    if board == "B_offline" and run.method.attrs.reconstruction_queries:
                        recon = recon or reconstruction_queries(eng, rt0, ctx, n)[0]
                        queries, shared = recon, recon_memo
                    eng.compress(rt_c, run, per_layer, board, "prefill", queries, self.layers, memo=shared)
                except MethodError as e:  # e.g. a schedule that overspends: the benchmark refuses it
                    self.errors[run.name] = str(e)
                    break
                self.baselines.add(f"{idx}|{item}", b, kept_masks(rt_c, self.layers, n), n)

    def save(self) -> dict[str, str]:
        """Writes each method's file (named by its code hash: two methods of one name stay apart) and, when
        computed, the baselines'; returns code hash -> path."""
        out = {}
        for code_hash, sets in self.methods.items():
            path = self.folder / f"{code_hash}.npz"
            sets.meta["baseline_errors"] = self.errors
            sets.save(path)
            out[code_hash] = str(path)
        if self.baselines is not None and self.baselines.masks:
            self.baselines.meta["errors"] = self.errors
            self.baselines.save(self.baselines_path)
        return out

    @property
    def extra_runs(self) -> list[Any]:
        """The baselines to be run: their query windows count in what the prefill records."""
        return self.refs if self.baselines is not None else []


def read_meta(path: Path) -> dict[str, Any] | None:
    """A recorded file's metadata (its key, its baselines file), or None when absent or unreadable."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            return dict(json.loads(str(z["__meta__"])))
    except (OSError, ValueError, KeyError):
        return None
