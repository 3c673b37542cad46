"""The features of a method (``computation``) and the names it calls (``called_names``)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from reviewbench.evidence.computation.flow import FeatureTagger
from reviewbench.evidence.computation.syntax import (Defs, callee, class_attrs, const_int, dead_statements,
                                                     fitted_literal, is_true, parse_source, self_attr,
                                                     self_attr_reads)
from reviewbench.evidence.computation.vocabulary import FEATURE_WORDS, GENERIC, LEARNED_CALLS


@dataclass
class Computation:
    """The features a method's code shows, each with the line where it first shows."""

    features: dict[str, int] = field(default_factory=dict)

    def words(self) -> str:
        """The query: each feature's words, the distinctive ones twice (what few methods compute decides)."""
        out = []
        for k in sorted(self.features):
            if k in FEATURE_WORDS:
                out.extend([FEATURE_WORDS[k]] * (1 if k in GENERIC else 2))
        return " ".join(out)


def computation(source: str) -> Computation:
    """Features of an ``EvictionMethod`` module, from its interface use and data flow (names play no part)."""
    tree = parse_source(source)
    if tree is None:
        return Computation()
    defs = Defs(tree)
    flow = FeatureTagger(defs, self_attr_reads(tree))
    flow.tags = {"view": {"VIEW"}, **_fitted_names(tree)}
    attrs = class_attrs(tree)
    qw = const_int(attrs.get("query_window"))
    found = flow.found
    if qw is not None and qw > 0:
        if qw == 1:
            found.setdefault("last_query", 0)
        elif qw >= 1 << 14:
            found.setdefault("all_queries", 0)
        else:
            found.setdefault("window_queries", 0)
    if is_true(attrs.get("question_queries")):
        found.setdefault("question_queries", 0)
    if is_true(attrs.get("reconstruction_queries")):
        found.setdefault("reconstruction", 0)
    # every interface hook is an entry point; each starts with `view` as the layer view
    for hook in ("setup", "layer_budgets", "select", "on_decode"):
        for fn in defs.by_name.get(hook, []):
            if hook == "layer_budgets":
                found.setdefault("layer_budget", fn.lineno)
                params = [a.arg for a in fn.args.args if a.arg != "self"]
                flow.tags.update({p: set() for p in params})
            if hook == "on_decode":
                found.setdefault("decode", fn.lineno)
            for a in fn.args.args:
                if a.arg != "self" and hook in ("select", "on_decode"):
                    flow.tags[a.arg] = {"VIEW"}
            flow.run_def(fn)
            if hook == "layer_budgets":
                _pyramid(fn, found, defs)
    if flow.layer_test and flow.kept_rank and _reads_kept(defs, flow.kept_rank):
        found.setdefault("layer_reuse", 0)
    if "all_queries" in found and "attention" in found and "query_statistics" not in found:
        found.setdefault("accumulate", found["all_queries"])  # attention received from every query, summed
    if "window_queries" in found and ("recent" in found or "sinks" in found) and "attention" in found:
        found.setdefault("window_kept", found["window_queries"])
    line = _learned_table(tree, defs)
    if line is not None:
        found.setdefault("learned_weights", line)
    if "M" in set().union(*flow.tags.values()) and "query_statistics" not in found:
        for name, t in flow.tags.items():
            if "M" in t and "Q" in t:
                found.setdefault("query_statistics", 0)
                break
    return Computation(features=dict(found))


def _reads_kept(defs: Defs, kept: set[str]) -> bool:
    """A selection hook returns a ranking kept on the module (``return Keep(self.sel)``, or a name bound from it):
    with a test on the layer index, one layer's selection serves others."""
    for hook in ("select", "on_decode"):
        for fn in defs.by_name.get(hook, []):
            aliases: set[str] = set()
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign) and any(
                        isinstance(n, ast.Attribute) and self_attr(n) and n.attr in kept for n in ast.walk(node.value)):
                    aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            for node in ast.walk(fn):
                if isinstance(node, ast.Return) and node.value is not None and any(
                        isinstance(n, ast.Attribute) and self_attr(n) and n.attr in kept or
                        isinstance(n, ast.Name) and n.id in aliases for n in ast.walk(node.value)):
                    return True
    return False


def _fitted_names(tree: ast.Module) -> dict[str, set[str]]:
    """Names bound to fitted numbers before any hook runs (tagged W): module and class constants holding a literal
    table of them, and ``self`` attributes set anywhere to one, to a trainable layer or to loaded weights."""
    def fitted(value: ast.expr) -> bool:
        return any(fitted_literal(n) or isinstance(n, ast.Call) and callee(n.func)[0] in LEARNED_CALLS
                   for n in ast.walk(value) if isinstance(n, ast.expr))

    out: dict[str, set[str]] = {}
    top = list(tree.body) + [s for c in tree.body if isinstance(c, ast.ClassDef) for s in c.body]
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None or not fitted(node.value):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for tgt in targets:
            if isinstance(tgt, ast.Name) and node in top:
                out[tgt.id] = {"W"}
                out[f"self.{tgt.id}"] = {"W"}
            elif isinstance(tgt, ast.Attribute) and isinstance(tgt.value, ast.Name) and tgt.value.id == "self":
                out[f"self.{tgt.attr}"] = {"W"}
    return out


def _learned_table(tree: ast.Module, defs: Defs) -> int | None:
    """Where the code carries fitted numbers: a literal table of at least four non-integer values (per-head
    importances, gate or scorer weights), or a trainable layer / loaded weights. Plain constants are not it."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)):
            vals = [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, float)]
            nested = [e for e in node.elts if isinstance(e, (ast.List, ast.Tuple))]
            if len(vals) >= 4 or (len(nested) >= 2 and all(
                    sum(isinstance(x, ast.Constant) and isinstance(x.value, float) for x in n.elts) >= 2
                    for n in nested)):
                return node.lineno
        if isinstance(node, ast.Call):
            name, _ = callee(node.func)
            if name in LEARNED_CALLS and name not in defs.by_name:
                return node.lineno
    return None


def called_names(source: str) -> set[str]:
    """The names of every function or method the code calls that it does not define itself (``torch.log``,
    ``x.var``, ``kmeans``...): what a loose reading of its operations sees, blind to the author's own names."""
    tree = parse_source(source)
    if tree is None:
        return set()
    defs = Defs(tree)
    reads = self_attr_reads(tree)
    thrown: set[int] = set()  # calls computed and thrown away
    if reads is not None:  # None: attributes reached by name, nothing can be called thrown away
        for fn in (f for fns in defs.by_name.values() for f in fns):
            dead = dead_statements(fn, reads)
            thrown |= {id(c) for stmt in ast.walk(fn) if id(stmt) in dead for c in ast.walk(stmt)}
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and id(node) not in thrown:
            name, _ = callee(node.func)
            if name and name not in defs.by_name and name not in defs.classes:
                out.add(name)
    return out


def _pyramid(fn: ast.FunctionDef | ast.AsyncFunctionDef, found: dict[str, int], defs: Defs | None = None,
             layer_vars: set[str] | None = None, depth: int = 0) -> None:
    """A per-layer schedule that moves linearly with the layer index (an arithmetic progression), also when the
    layer index is handed to a helper of the module that does the arithmetic."""
    layer_vars = set(layer_vars or ())
    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.comprehension)):
            it = node.iter
            if isinstance(it, ast.Call) and callee(it.func)[0] == "range" and isinstance(node.target, ast.Name):
                layer_vars.add(node.target.id)
    for node in ast.walk(fn):
        if defs is not None and depth < 3 and isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            for helper in defs.by_name.get(node.func.id, []):
                params = [a.arg for a in helper.args.args if a.arg not in ("self", "cls")]
                passed = {params[i] for i, a in enumerate(node.args[:len(params)])
                          if isinstance(a, ast.Name) and a.id in layer_vars}
                if passed:
                    _pyramid(helper, found, defs, passed, depth + 1)
                    if "pyramid" in found:
                        return
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Sub)):
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            if names & layer_vars:
                found.setdefault("pyramid", node.lineno)
                return
        if isinstance(node, ast.Call) and callee(node.func)[0] in ("linspace", "arange") and len(node.args) >= 2:
            found.setdefault("pyramid", node.lineno)
            return
