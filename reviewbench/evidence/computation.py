"""What a piece of eviction code computes, read from its syntax tree and blind to the names it uses.

Two views, both immune to renaming (no identifier the author chose survives):

- ``op_stream``: the tensor operations in evaluation order, each mapped to a canonical class
  (``torch.matmul``, ``@``, ``einsum`` and ``bmm`` are all ``matmul``; ``sum`` and ``mean`` are ``reduce``;
  ``topk``, ``sort`` and ``argsort`` are ``rank``), with helpers defined in the same file inlined at
  their call sites, control flow dropped (a loop over heads and a batched call give the same ops) and
  layout calls (``view``, ``transpose``, ``unsqueeze``...) ignored. Code similarity fingerprints this
  stream, so outlining a helper, reordering functions or vectorising a loop leaves it unchanged.
- ``features``: what the operations act on, by data flow from the harness interface (``view.keys``,
  ``view.queries``, ``view.attention``...): "norm of the keys", "softmax of query·key", "accumulated
  across calls", "initial-token slice plus recent slice", "mean and covariance of the queries"... Each
  feature carries the words papers use for it; the prior-art query is built from them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

# Canonical operation classes. Anything not listed (layout, dtype, device, shape queries) emits nothing.
CANON: dict[str, str] = {}
for _names, _op in [
    ("matmul bmm mm einsum baddbmm tensordot inner dot outer", "matmul"),
    ("softmax log_softmax", "softmax"),
    ("sum mean nansum nanmean", "reduce"),
    ("cumsum cumprod", "cumsum"),
    ("amax amin max min maximum minimum", "extreme"),
    ("max_pool1d avg_pool1d max_pool2d avg_pool2d adaptive_max_pool1d adaptive_avg_pool1d conv1d", "pool"),
    ("topk argsort kthvalue argmax argmin", "rank"),
    ("gather index_select take_along_dim", "gather"),
    ("cat concat concatenate stack hstack vstack", "cat"),
    ("norm vector_norm linalg_norm", "norm"),
    ("normalize", "normalize"),
    ("rand randn randint randperm rand_like randn_like bernoulli multinomial", "random"),
    ("arange", "arange"),
    ("ones zeros full empty ones_like zeros_like full_like empty_like new_ones new_zeros new_full", "const"),
    ("eye", "eye"),
    ("masked_fill masked_fill_ where", "where"),
    ("triu tril", "triangle"),
    ("pad", "pad"),
    ("exp", "exp"),
    ("log log2 log1p", "log"),
    ("pow square", "pow"),
    ("scatter scatter_ scatter_add scatter_add_ index_add index_add_ bincount index_put_ index_put "
     "masked_scatter scatter_reduce", "scatter"),
    ("var std cov var_mean std_mean", "var"),
    ("fill_diagonal_ diagonal diag diag_embed", "diag"),
    ("nonzero argwhere", "nonzero"),
    ("abs", "abs"),
    ("clamp clamp_ clamp_min clamp_max clip", "clamp"),
    ("isin unique", "set"),
    ("cos sin", "trig"),
    ("logsumexp", "logsumexp"),
    ("sigmoid tanh relu gelu", "act"),
    ("all any logical_and logical_or logical_not", "logic"),
]:
    for _n in _names.split():
        CANON[_n] = _op
CANON["cosine_similarity"] = "normalize matmul"

# The harness interface's helpers, expanded to what they compute, so that calling them and writing the same
# computation out by hand give the same stream.
API_CALLS = {
    "attention": "matmul softmax",  # LayerView.attention: softmax(q k^T / sqrt d), causal (scaling is no op)
    "group": "reduce",  # LayerView.group: the GQA group reduced
    "from_topk": "rank",  # Keep.from_topk
    "rotate": "rope",  # LayerView.rotate
    "apply_rope": "rope",
    "rope_angles": "rope",
    "rotate_half": "rope",
    "repeat_kv": "",
}
BUILTINS_NOOP = frozenset({"max", "min", "sum", "abs", "int", "float", "len", "range", "round", "sorted"})
BINOPS = {ast.MatMult: "matmul", ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
          ast.FloorDiv: "div", ast.Pow: "pow", ast.Mod: "mod"}
INLINE_DEPTH = 4


@dataclass
class Op:
    op: str
    line: int


def _callee(func: ast.expr) -> tuple[str | None, ast.expr | None]:
    """(name, receiver) of a call: ``torch.topk`` -> ("topk", torch), ``x.topk`` -> ("topk", x), ``f`` -> ("f", None)."""
    if isinstance(func, ast.Attribute):
        return func.attr, func.value
    if isinstance(func, ast.Name):
        return func.id, None
    return None, None


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_false(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _negative(node: ast.expr | None) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)


class _Defs:
    """Every function and method of a module by name, with the class each belongs to."""

    def __init__(self, tree: ast.Module) -> None:
        self.by_name: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.owner: dict[int, str | None] = {}
        self.classes: set[str] = set()
        self.modules: set[str] = {"torch", "F", "nn", "math", "np"}  # names bound by imports: not data
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.modules.update((a.asname or a.name).split(".")[0] for a in node.names)

        def walk(node: ast.AST, owner: str | None) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    self.classes.add(child.name)
                    walk(child, child.name)
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.by_name.setdefault(child.name, []).append(child)
                    self.owner[id(child)] = owner
                    walk(child, owner)
                else:
                    walk(child, owner)

        walk(tree, None)

    def resolve(self, call: ast.Call, current_owner: str | None) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The local definition a call runs, if it is one: ``helper(x)``, ``self.helper(x)``, ``Cls.helper(x)``."""
        func = call.func
        if isinstance(func, ast.Name):
            name = func.id
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and (
                func.value.id in ("self", "cls", "super") or func.value.id in self.classes):
            name = func.attr
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and \
                isinstance(func.value.func, ast.Name) and func.value.func.id == "super":
            name = func.attr
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) and \
                _dotted(func.value) is not None and str(_dotted(func.value)).startswith("self.") and \
                func.attr in self.by_name:
            name = func.attr  # self.press.score(...): the wrapped scorer, when its code is in the same unit
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr in self.by_name \
                and func.value.id[:1].isupper() and func.value.id not in ("F",):
            name = func.attr  # OtherClass.helper(...): a static helper of a class this code builds on
        else:
            return None
        cands = self.by_name.get(name)
        if not cands:
            return None
        same = [d for d in cands if self.owner.get(id(d)) == current_owner]
        return (same or cands)[0]


def _subtracts(node: ast.expr | None) -> bool:
    """An index computed as ``n - w`` (the start of the last w), possibly inside ``max(0, n - w)``."""
    return node is not None and any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) for n in ast.walk(node))


def _callable_alias(node: ast.expr) -> str | None:
    """The canonical callable a name is bound to (``pool = F.max_pool1d``), if any."""
    options = [node.body, node.orelse] if isinstance(node, ast.IfExp) else [node]
    for o in options:
        name = o.attr if isinstance(o, ast.Attribute) else o.id if isinstance(o, ast.Name) else None
        if name in CANON:
            return name
    return None


def _self_attr(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _tree(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


DATA = -1  # a value that comes from the inputs (keys, queries, attention weights...), not from sizes or literals
PASS_THROUGH = frozenset({"where", "clamp", "pad"})  # masking and forcing: the data flows on unchanged


@dataclass
class Node:
    op: str
    line: int
    inputs: frozenset[int]  # ids of the nodes (or DATA) whose values this operation reads
    data: bool  # derives from the inputs (not only from sizes, literals and index ranges)


class _Graph(ast.NodeVisitor):
    """Builds the data-flow graph of canonical operations: helpers inlined (arguments bound to parameters),
    control flow ignored (a loop body runs once; ``acc += x`` in a loop is a reduction), layout calls pass
    their input through, and arithmetic with a non-data operand (``/ sqrt(d)``, ``+ mask``, ``* lam``) is the
    data operand itself, so scaling and masking never change the graph."""

    def __init__(self, defs: _Defs) -> None:
        self.defs = defs
        self.nodes: list[Node] = []
        self.env: dict[str, frozenset[int]] = {}
        self.aliases: dict[str, str] = {}
        self.loop = 0
        self.stack: list[int] = []
        self.owner: str | None = None
        self.returned: list[frozenset[int]] = []

    def is_data(self, ids: frozenset[int]) -> bool:
        return any(i == DATA or self.nodes[i].data for i in ids)

    def node(self, ops: str, line: int, inputs: frozenset[int]) -> frozenset[int]:
        cur = inputs
        for op in ops.split():
            if op in PASS_THROUGH:
                continue
            self.nodes.append(Node(op, line, cur, self.is_data(cur)))
            cur = frozenset({len(self.nodes) - 1})
        return cur

    # running code --------------------------------------------------------------------------------------
    def run_def(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, args: list[frozenset[int]] | None = None,
                kwargs: dict[str, frozenset[int]] | None = None) -> frozenset[int]:
        if id(fn) in self.stack or len(self.stack) > INLINE_DEPTH:
            return frozenset().union(*(args or []), *(kwargs or {}).values())
        saved_env = {k: v for k, v in self.env.items() if not k.startswith("self.")}
        params = [a.arg for a in fn.args.args if a.arg not in ("self", "cls")]
        for p in params:
            self.env[p] = frozenset({DATA})  # an entry point's parameters are its inputs
        for p, v in zip(params, args or []):
            self.env[p] = v
        for k, v in (kwargs or {}).items():
            self.env[k] = v
        for d, default in zip(reversed(fn.args.args), reversed(fn.args.defaults)):
            if args is not None and d.arg not in (kwargs or {}) and params.index(d.arg) >= len(args) \
                    if d.arg in params else False:
                self.env[d.arg] = self.expr(default)
        self.stack.append(id(fn))
        saved_owner, saved_ret = self.owner, self.returned
        self.owner, self.returned = self.defs.owner.get(id(fn), saved_owner), []
        for stmt in fn.body:
            self.visit(stmt)
        out = frozenset().union(*self.returned) if self.returned else frozenset()
        self.owner, self.returned = saved_owner, saved_ret
        self.stack.pop()
        self.env = {**saved_env, **{k: v for k, v in self.env.items() if k.startswith("self.")}}
        return out

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        return None

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        return None

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        return None

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            self.returned.append(self.expr(node.value))

    def visit_Expr(self, node: ast.Expr) -> None:
        if not isinstance(node.value, ast.Constant):
            self.expr(node.value)

    def visit_Assign(self, node: ast.Assign) -> None:
        alias = _callable_alias(node.value)
        if alias is not None and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.aliases[node.targets[0].id] = alias
            return
        v = self.expr(node.value)
        for t in node.targets:
            self.bind(t, v)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.bind(node.target, self.expr(node.value))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        v = self.expr(node.value)
        cur = self.expr(node.target)
        if self.loop and isinstance(node.op, ast.Add) and self.is_data(v):
            out = self.node("reduce", node.lineno, v)  # acc += x[i] in a loop: the sum over i
        else:
            out = self.binop(BINOPS.get(type(node.op), ""), cur, v, node.lineno)
        self.bind(node.target, out, augmented=True)

    def bind(self, target: ast.expr, v: frozenset[int], augmented: bool = False) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = v
        elif isinstance(target, ast.Attribute):
            key = _dotted(target)
            if key:
                self.env[key] = v
        elif isinstance(target, ast.Subscript):
            base = _dotted(target.value)
            if base:
                old = self.env.get(base, frozenset())
                self.env[base] = (old | v) if not augmented else v  # x[i] = y: x now also carries y
        elif isinstance(target, (ast.Tuple, ast.List)):
            for e in target.elts:
                self.bind(e, v)

    def visit_For(self, node: ast.For) -> None:
        self.bind(node.target, self.expr(node.iter))
        self.loop += 1
        for s in node.body + node.orelse:
            self.visit(s)
        self.loop -= 1

    visit_AsyncFor = visit_For  # type: ignore[assignment]

    def visit_While(self, node: ast.While) -> None:
        self.expr(node.test)
        self.loop += 1
        for s in node.body + node.orelse:
            self.visit(s)
        self.loop -= 1

    def visit_If(self, node: ast.If) -> None:
        self.expr(node.test)
        for s in node.body + node.orelse:
            self.visit(s)

    def generic_visit(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child)
            else:
                self.visit(child)

    # values --------------------------------------------------------------------------------------------
    def binop(self, op: str, left: frozenset[int], right: frozenset[int], line: int) -> frozenset[int]:
        ld, rd = self.is_data(left), self.is_data(right)
        if op in ("add", "sub", "mul", "div", "pow", "mod") and not (ld and rd):
            return left if ld else right if rd else left | right  # scaling, a mask, an offset: no new op
        if op == "div" and left and all(i != DATA and self.nodes[i].op == "reduce" for i in left):
            return left  # a sum divided by a count is the mean: one reduction either way
        return self.node(op, line, left | right) if op else left | right

    def expr(self, node: ast.expr | None) -> frozenset[int]:
        if node is None:
            return frozenset()
        if isinstance(node, ast.Constant):
            return frozenset()
        if isinstance(node, ast.Name):
            return self.env.get(node.id, frozenset({DATA}) if node.id not in self.defs.modules else frozenset())
        if isinstance(node, ast.Attribute):
            if node.attr in _SIZES:
                self.expr(node.value)
                return frozenset()
            key = _dotted(node)
            if key and key in self.env:
                return self.env[key]
            if key and key.startswith("self."):
                return frozenset()  # a hyper-parameter
            return self.expr(node.value)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BinOp):
            if _rope_idiom(node):  # x * cos + rotate_half(x) * sin: x, at other positions
                return self.expr(node.left.left) if isinstance(node.left, ast.BinOp) else self.expr(node.left)
            if isinstance(node.op, (ast.FloorDiv, ast.Mod)):
                v = self.expr(node.left)
                self.expr(node.right)
                # idx // n, idx % n: a flat index split into (row, column), as a top-k over flattened heads does
                return self.node("unflatten", node.lineno, v) if self.is_data(v) else v
            return self.binop(BINOPS.get(type(node.op), ""), self.expr(node.left), self.expr(node.right),
                              node.lineno)
        if isinstance(node, ast.UnaryOp):
            v = self.expr(node.operand)
            return self.node("neg", node.lineno, v) if isinstance(node.op, ast.USub) and self.is_data(v) else v
        if isinstance(node, ast.Compare):
            vals = [self.expr(node.left), *(self.expr(c) for c in node.comparators)]
            if any(isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops):
                return frozenset()
            allv = frozenset().union(*vals)
            return self.node("cmp", node.lineno, allv) if sum(self.is_data(v) for v in vals) >= 1 else allv
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Attribute) and node.value.attr in _SIZES:
                return frozenset()
            v = self.expr(node.value)
            return self.subscript(node.slice, v, node.lineno)
        if isinstance(node, ast.IfExp):
            self.expr(node.test)
            return self.expr(node.body) | self.expr(node.orelse)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            for g in node.generators:
                self.bind(g.target, self.expr(g.iter))
            self.loop += 1
            v = self.expr(node.elt)
            self.loop -= 1
            return v
        if isinstance(node, ast.Lambda):
            return frozenset()
        out: frozenset[int] = frozenset()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                out |= self.expr(child)
        return out

    def subscript(self, sl: ast.expr, v: frozenset[int], line: int) -> frozenset[int]:
        parts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        out = v
        for p in parts:
            if isinstance(p, ast.Slice):
                for bound in (p.lower, p.upper):
                    if bound is not None:
                        self.expr(bound)
                if _negative(p.lower) or (isinstance(p.lower, ast.Constant) and isinstance(p.lower.value, int)
                                          and p.lower.value < 0) or (p.upper is None and _subtracts(p.lower)):
                    out = self.node("tail", line, out)  # x[-w:] or x[n - w:]: the last w
                elif _negative(p.upper) or (isinstance(p.upper, ast.Constant) and isinstance(p.upper.value, int)
                                            and p.upper.value < 0):
                    out = self.node("drop_tail", line, out)  # x[:-w]: all but the last w
                elif p.lower is None and p.upper is not None:
                    out = self.node("head", line, out)  # x[:n]: the first n
            elif isinstance(p, ast.UnaryOp) and isinstance(p.op, ast.USub) and isinstance(p.operand, ast.Constant) \
                    and p.operand.value == 1:
                out = self.node("last", line, out)  # x[-1]: the last one
            elif not isinstance(p, (ast.Constant, ast.Name)):
                idx = self.expr(p)
                if self.is_data(idx):
                    out = out | idx  # indexing by selected indices: a gather
        return out

    def call(self, node: ast.Call) -> frozenset[int]:
        name, receiver = _callee(node.func)
        if isinstance(node.func, ast.Name) and name in self.aliases:
            name = self.aliases[name]
        recv = self.expr(receiver) if receiver is not None else frozenset()
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords if k.arg}
        inputs = recv.union(*args, *kwargs.values())
        if name in _SIZES:
            return frozenset()
        local = self.defs.resolve(node, self.owner)
        if local is not None and name not in API_CALLS:
            return self.run_def(local, args, kwargs)
        if name == "flatten" or name in ("reshape", "view") and 1 <= len(node.args) <= 2 and (
                _negative(node.args[-1]) or isinstance(node.args[-1], ast.BinOp)
                and isinstance(node.args[-1].op, ast.Mult)):
            return self.node("flatten", node.lineno, inputs) if self.is_data(inputs) else inputs
        if name in API_CALLS:
            if name == "attention" and not node.args:
                inputs = inputs | frozenset({DATA})
            return self.node(API_CALLS[name], node.lineno, inputs) if API_CALLS[name] else inputs
        if isinstance(node.func, ast.Name) and name in BUILTINS_NOOP and name not in ("max", "min", "sum", "abs"):
            return inputs
        if isinstance(node.func, ast.Name) and name in ("max", "min", "sum", "abs", "int", "float", "round"):
            return frozenset()  # Python arithmetic on sizes
        op = CANON.get(name or "")
        if op in PASS_THROUGH:  # masked_fill(mask, v), where(c, x, y), pad(x, p, value=v): x flows on
            if name == "where" and len(args) == 3:
                return args[1] | args[2]
            return recv if recv else args[0] if args else frozenset()
        if name in ("sort", "msort") and not _is_true(_kw(node, "descending")):
            return inputs  # putting kept indices back in order ranks nothing
        if op is None:
            if name in ("sort", "msort"):
                op = "rank"
            else:
                return inputs
        if op == "rank" and (_is_false(_kw(node, "largest")) or (name == "argsort"
                                                                and not _is_true(_kw(node, "descending")))):
            op = "neg rank"  # ascending order / smallest-k is the ranking of the negated score
        if op in ("const", "arange", "eye") or not self.is_data(inputs):
            return self.node(op, node.lineno, inputs) if op in ("random",) else frozenset()
        return self.node(op, node.lineno, inputs)


def _flattens(call: ast.Call) -> bool:
    """``x.flatten()``, ``x.reshape(-1)``, ``x.view(b, -1)``, ``x.reshape(b, h * n)``: heads and tokens in one axis."""
    name = _callee(call.func)[0]
    if name == "flatten":
        return True
    return name in ("reshape", "view") and 1 <= len(call.args) <= 2 and (
        _negative(call.args[-1]) or isinstance(call.args[-1], ast.BinOp) and isinstance(call.args[-1].op, ast.Mult))


def _rope_idiom(node: ast.BinOp) -> bool:
    """``x * cos + rotate_half(x) * sin`` (in either order): RoPE applied by hand."""
    if not isinstance(node.op, ast.Add):
        return False
    sides = [node.left, node.right]
    return all(isinstance(x, ast.BinOp) and isinstance(x.op, ast.Mult) for x in sides) and any(
        isinstance(c, ast.Call) and _callee(c.func)[0] == "rotate_half" for x in sides for c in ast.walk(x))


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _entry_points(defs: _Defs) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Functions no other local function calls, in source order."""
    called: set[int] = set()
    for fns in defs.by_name.values():
        for fn in fns:
            for node in ast.walk(fn):
                if isinstance(node, ast.Call):
                    target = defs.resolve(node, defs.owner.get(id(fn)))
                    if target is not None and target is not fn:
                        called.add(id(target))
    return sorted((fn for fns in defs.by_name.values() for fn in fns if id(fn) not in called), key=lambda f: f.lineno)


def op_graph(source: str) -> list[Node]:
    """The data-flow graph of the canonical operations of every entry point, helpers inlined."""
    tree = _tree(source)
    if tree is None:
        return []
    defs = _Defs(tree)
    g = _Graph(defs)
    for fn in _entry_points(defs):
        g.run_def(fn)
    return g.nodes


def op_stream(source: str) -> list[Op]:
    """The graph's operations in the order the code runs them."""
    return [Op(n.op, n.line) for n in op_graph(source)]


def op_paths(nodes: list[Node], length: int = 3) -> list[tuple[tuple[str, ...], set[int]]]:
    """Every chain of ``length`` operations along the data flow (each feeding the next) whose values derive
    from the inputs, with the lines they stand on; shorter chains too when a graph has no longer one."""
    out: list[tuple[tuple[str, ...], set[int]]] = []

    def walk(i: int, chain: list[int]) -> None:
        chain = [i, *chain]
        if len(chain) == length:
            out.append((tuple(nodes[j].op for j in chain), {nodes[j].line for j in chain}))
            return
        preds = [p for p in nodes[i].inputs if p != DATA and nodes[p].data]
        for p in preds:
            walk(p, chain)
        if not preds and len(chain) >= 2 and length > 2:
            out.append((tuple(nodes[j].op for j in chain), {nodes[j].line for j in chain}))

    for i, n in enumerate(nodes):
        if n.data:
            walk(i, [])
    return out


# --- features: what the operations act on -----------------------------------------------------------------

FEATURE_WORDS = {
    "attention": "attention scores softmax query key",
    "last_query": "last query attention current token newest query",
    "window_queries": "observation window last queries recent queries attention",
    "all_queries": "attention received from all queries",
    "question_queries": "question queries prompt-guided attention",
    "window_kept": "observation window kept recent window",
    "pooling": "pooled attention pooling kernel smoothing clustering",
    "head_average": "head-averaged attention all heads layer-wise one token set per layer",
    "max_attention": "maximum attention max over queries",
    "accumulate": "cumulative accumulated attention heavy hitters running sum",
    "decay": "forgetting factor exponential decay moving average",
    "key_norm": "key norm l2 norm low norm keys attention-free",
    "value_norm": "value norm value vectors",
    "key_similarity": "key cosine similarity redundancy redundancy-aware duplicate tokens",
    "mean_key": "cosine to mean key key diversity anchor",
    "query_statistics": "query mean covariance gaussian statistics future queries distribution",
    "future_rope": "future positions averaged rope rotation expected attention",
    "exp_logit": "expected attention exponential logit",
    "sinks": "attention sinks initial tokens start tokens sink",
    "recent": "recent tokens sliding window recent window",
    "layer_budget": "layer budget allocation per-layer schedule",
    "pyramid": "pyramid linear decrease with depth layer index budget",
    "head_budget": "head-wise budget adaptive allocation flattened top-k across heads",
    "random": "random eviction random scores uniform",
    "reconstruction": "context reconstruction repeat context query-agnostic",
    "decode": "decode-time eviction generation reasoning traces",
    "merge": "token merging merge evicted tokens",
    "entropy": "attention entropy",
    "uniform_positions": "position-based no scoring",
    "attention_threshold": "attention threshold count of tokens below threshold recovery ratio",
    "attention_variance": "attention variance temporal shift dispersion",
    "learned_weights": "learned weights trained scorer gate offline profiling head importance",
}

GENERIC = frozenset({"attention", "window_queries", "all_queries", "window_kept", "pooling", "recent", "decode",
                     "uniform_positions", "question_queries"})

_API_SOURCES = {"keys": "K", "values": "V", "queries": "Q", "positions": "P", "query_positions": "P",
                "layer": "L", "budget": "B", "state": "S", "valid": "P", "valid_mask": "P"}
_SIZES = frozenset({"shape", "dtype", "device", "ndim", "size", "numel", "dim", "len", "n_tokens", "n_kv_heads",
                    "group_size", "head_dim", "n_heads", "n_layers", "budget", "layer", "finfo", "iinfo"})


class _Flow(ast.NodeVisitor):
    """Tags every local name with the interface data it was computed from (K keys, V values, Q queries,
    A attention, P positions, L layer index, S remembered state) and records features as it goes."""

    def __init__(self, defs: _Defs) -> None:
        self.defs = defs
        self.tags: dict[str, set[str]] = {}
        self.found: dict[str, int] = {}
        self.stack: list[int] = []
        self.owner: str | None = None
        self.loop = 0
        self.current: str = ""
        self.aliases: dict[str, str] = {}
        self.normalising = 0

    def add(self, key: str, line: int) -> None:
        self.found.setdefault(key, line)

    def run_def(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if id(fn) in self.stack or len(self.stack) > INLINE_DEPTH:
            return
        self.stack.append(id(fn))
        saved, saved_cur = self.owner, self.current
        self.owner, self.current = self.defs.owner.get(id(fn), saved), fn.name
        for stmt in fn.body:
            self.visit(stmt)
        self.owner, self.current = saved, saved_cur
        self.stack.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        return None

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        return None

    # tags of an expression ------------------------------------------------------------------------
    def tag(self, node: ast.expr | None) -> set[str]:
        if node is None:
            return set()
        if isinstance(node, ast.Name):
            return set(self.tags.get(node.id, set()))
        if isinstance(node, ast.Attribute):
            if node.attr in _SIZES:
                self.tag(node.value)
                return set()
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return set(self.tags.get(f"self.{node.attr}", set()))
            base = self.tag(node.value)
            if node.attr in _API_SOURCES and not base - {"VIEW"} and ("VIEW" in base or isinstance(node.value, ast.Name)):
                return {_API_SOURCES[node.attr]}
            return base - {"VIEW"}
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):
            t = self.tag(node.value)
            self._slice_features(node, t)
            self.tag(node.slice)
            return t
        if isinstance(node, ast.BinOp):
            lt = self.tag(node.left)
            divisor_norm = isinstance(node.op, ast.Div) and any(
                isinstance(c, ast.Call) and CANON.get(_callee(c.func)[0] or "") == "norm" for c in ast.walk(node.right))
            self.normalising += divisor_norm  # x / x.norm(): a unit vector, not a norm score
            rt = self.tag(node.right)
            self.normalising -= divisor_norm
            if divisor_norm:
                return lt | {"N"}
            if isinstance(node.op, ast.MatMult):
                self._matmul(lt, rt, node.lineno)
            if isinstance(node.op, ast.Mult) and "S" in (lt | rt) and (
                    isinstance(node.left, ast.Constant) or isinstance(node.right, ast.Constant)):
                self.add("decay", node.lineno)
            if isinstance(node.op, (ast.Mult, ast.Sub, ast.Add)) and "L" in (lt | rt) and self.current == "layer_budgets":
                self.add("pyramid", node.lineno)
            return lt | rt
        if isinstance(node, ast.UnaryOp):
            return self.tag(node.operand)
        if isinstance(node, ast.Compare):
            t = self.tag(node.left)
            for c in node.comparators:
                t |= self.tag(c)
            if "P" in t and not any(isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops) and any(
                    isinstance(c, ast.Constant) and isinstance(c.value, int) or _self_attr(c)
                    for c in [node.left, *node.comparators]):
                self.add("sinks", node.lineno)  # positions < 4: the first tokens
            if "A" in t and "P" not in t and not any(isinstance(o, (ast.Is, ast.IsNot, ast.In, ast.NotIn))
                                                     for o in node.ops):
                self.add("attention_threshold", node.lineno)  # attention against a threshold (counted, kept)
            return t
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            out: set[str] = set()
            for e in node.elts:
                out |= self.tag(e)
            return out
        if isinstance(node, ast.IfExp):
            self.tag(node.test)
            return self.tag(node.body) | self.tag(node.orelse)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            for g in node.generators:
                it = self.tag(g.iter)
                self._bind(g.target, it)
            self.loop += 1
            t = self.tag(node.elt)
            self.loop -= 1
            return t
        if isinstance(node, ast.Starred):
            return self.tag(node.value)
        out = set()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                out |= self.tag(child)
        return out

    def _slice_features(self, node: ast.Subscript, t: set[str]) -> None:
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for p in parts:
            if isinstance(p, ast.Slice):
                if "Q" in t and (_negative(p.lower) or isinstance(p.lower, ast.Constant) and
                                 isinstance(p.lower.value, int) and p.lower.value < 0):
                    if isinstance(p.lower, ast.UnaryOp) and isinstance(p.lower.operand, ast.Constant) and \
                            p.lower.operand.value == 1:
                        self.add("last_query", node.lineno)
                    else:
                        self.add("window_queries", node.lineno)
                lower = self.tag(p.lower) if isinstance(p.lower, ast.Name) else set()
                if (p.lower is None or "Z" in lower) and p.upper is not None and not _negative(p.upper) and \
                        t & {"K", "V", "P", "I"} and "R" not in t:  # the first n of a ranking is a top-n
                    self.add("sinks", node.lineno)
                if "D" in lower and t & {"K", "V", "P", "I"}:
                    self.add("recent", node.lineno)
                if (_negative(p.lower) or p.upper is None and _subtracts(p.lower)) and t & {"K", "V", "P", "I"}:
                    self.add("recent", node.lineno)
            elif isinstance(p, ast.UnaryOp) and isinstance(p.op, ast.USub) and isinstance(p.operand, ast.Constant) \
                    and p.operand.value == 1 and t & {"Q", "A"}:
                self.add("last_query", node.lineno)

    def _stored_range(self, target: ast.Subscript) -> None:
        """``s[:, :n] = inf`` forces the first n in (sinks); ``s[:, n - w:] = inf`` the last w (a recent window)."""
        parts = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        for p in parts:
            if isinstance(p, ast.Slice):
                if p.lower is None and p.upper is not None and not _negative(p.upper):
                    self.add("sinks", target.lineno)
                elif _negative(p.lower) or _subtracts(p.lower):
                    self.add("recent", target.lineno)
                elif (_self_attr(p.lower) or isinstance(p.lower, ast.Constant)) and isinstance(p.upper, ast.BinOp) \
                        and isinstance(p.upper.op, ast.Add):
                    # s[:, c : c + m] = 0: the first c survive, the m after them go, the rest (the newest) stay
                    self.add("sinks", target.lineno)
                    self.add("recent", target.lineno)

    def _matmul(self, lt: set[str], rt: set[str], line: int) -> None:
        both = lt | rt
        if "Q" in lt and "K" in rt or "K" in lt and "Q" in rt:
            self.add("attention", line)
        elif "K" in lt and "K" in rt and "Q" not in both:
            if "KM" in both:
                self.add("mean_key", line)  # keys against the mean key (KeyDiff)
            elif "N" in both:
                self.add("key_similarity", line)  # unit keys against unit keys: cosine similarity
        elif "Q" in lt and "Q" in rt and "K" not in both:
            self.add("query_statistics", line)

    def call(self, node: ast.Call) -> set[str]:
        name, receiver = _callee(node.func)
        rt = self.tag(receiver) if receiver is not None else set()
        arg_tags = [self.tag(a) for a in node.args]
        kw_tags = {k.arg: self.tag(k.value) for k in node.keywords}
        all_args: set[str] = set().union(*arg_tags, *kw_tags.values()) if (arg_tags or kw_tags) else set()
        line = node.lineno
        if name in _SIZES:
            return set()
        if name in self.aliases:
            name = self.aliases[name]
        local = self.defs.resolve(node, self.owner)
        if local is not None and name not in API_CALLS and name not in ("remember", "recall"):
            params = [a.arg for a in local.args.args if a.arg not in ("self", "cls")]
            for p, t, a in zip(params, arg_tags, node.args):
                # a helper called with 0 or with `n - w` slices the first / the last tokens inside
                self.tags[p] = t | ({"Z"} if isinstance(a, ast.Constant) and a.value == 0 else set()) | (
                    {"D"} if _subtracts(a) else set())
            for k, t in kw_tags.items():
                if k:
                    self.tags[k] = t
            self.tags.pop("__return__", None)
            self.run_def(local)
            return self.tags.pop("__return__", set()) | all_args
        if name == "attention" and (rt == {"VIEW"} or receiver is not None):
            self.add("attention", line)
            return {"A"} | (all_args - {"Q"})
        if name in ("remember", "recall"):
            self.add("accumulate", line)
            return {"S", "A"} if name == "recall" else set()
        if name == "group":
            return all_args | rt
        if name == "same_for_all_heads":
            self.add("head_average", line)
            return all_args
        if name in ("rotate", "apply_rope", "rope_angles"):
            if any(isinstance(a, ast.BinOp) or isinstance(a, ast.Call) and _callee(a.func)[0] == "arange"
                   for a in node.args[1:]) and "P" not in (arg_tags[1] if len(arg_tags) > 1 else set()):
                self.add("future_rope", line)
            if name == "rope_angles" and node.args and isinstance(node.args[0], ast.Call) and \
                    _callee(node.args[0].func)[0] == "arange":
                self.add("future_rope", line)
            return all_args | rt
        op = CANON.get(name or "", "")
        t = rt | all_args
        if op == "norm":
            if self.normalising:
                return t | {"N"}
            if "K" in t and "V" not in t and "Q" not in t and "A" not in t:
                self.add("key_norm", line)
            elif "V" in t and "K" not in t:
                self.add("value_norm", line)
            return t | {"N"} if "K" in t else t
        if op == "normalize":
            return t | {"N"}
        if name == "cosine_similarity":
            if "K" in t and "Q" not in t:
                self.add("mean_key" if "KM" in t else "key_similarity", line)
            return t
        if op == "matmul":
            if len(arg_tags) >= 2:
                if name == "einsum" and len(arg_tags) >= 3:
                    operands = arg_tags[1:]
                    if sum("K" in o for o in operands) >= 2 and not any("Q" in o for o in operands) and \
                            not any("S" in o for o in operands):
                        if any("KM" in o for o in operands):
                            self.add("mean_key", line)
                        elif any("N" in o for o in operands):
                            self.add("key_similarity", line)
                    elif any("Q" in o for o in operands) and any("K" in o for o in operands):
                        self.add("attention", line)
                    elif sum("Q" in o for o in operands) >= 2:
                        self.add("query_statistics", line)
                else:
                    self._matmul(arg_tags[-2], arg_tags[-1], line)
            elif receiver is not None and arg_tags:
                self._matmul(rt, arg_tags[0], line)
            return t
        if op == "softmax":
            return t | ({"A"} if t & {"Q", "K"} else set())
        if op == "pool":
            self.add("pooling", line)
            return t
        if op in ("var",) and "Q" in t and "A" not in t:
            self.add("query_statistics", line)
        if op in ("var",) and "A" in t:
            self.add("attention_variance", line)
        if op == "reduce":
            dim = _kw(node, "dim") or (node.args[1] if len(node.args) > 1 and receiver is None else
                                       node.args[0] if node.args and receiver is not None else None)
            if "A" in t and isinstance(dim, ast.Constant) and dim.value == 0:
                self.add("head_average", line)
            if "Q" in t and "A" not in t and "K" not in t:
                return t | {"M"}
            if "K" in t and "A" not in t and "Q" not in t:
                return t | {"KM"}
        if op == "extreme" and "A" in t and (node.args or node.keywords):
            self.add("max_attention", line)
        if op == "random":
            self.add("random", line)
        if op == "exp" and "Q" in t and "K" in t:
            self.add("exp_logit", line)
        if op == "log" and "A" in t:
            self.add("entropy", line)
        if op == "cumsum" and "A" in t:
            self.add("accumulate", line)
        if op == "arange":
            if len(node.args) >= 2 and _subtracts(node.args[0]):
                self.add("recent", line)
            return t | {"I"}
        if op == "nonzero":
            return t | {"I"}
        if op == "rank":
            t = t | {"R"}
        if op in ("rank", "gather", "cat", "where", "const", "scatter"):
            if op == "rank" and any(_flattens(c) for a in [receiver, *node.args] if a is not None
                                    for c in ast.walk(a) if isinstance(c, ast.Call)):
                self.add("head_budget", line)  # one top-k over every (head, token) pair of the layer
            if op == "scatter" and name in ("bincount", "scatter_add", "scatter_add_"):
                self.add("head_budget", line)
            return t
        if name in ("flatten",) and "A" in t | {"A"} and receiver is not None:
            return t | {"F"}
        return t

    # statements -----------------------------------------------------------------------------------
    def _bind(self, target: ast.expr, t: set[str]) -> None:
        if isinstance(target, ast.Name):
            self.tags[target.id] = set(t)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            key = f"self.{target.attr}"
            if self.current not in ("__init__", "setup") and key in self.tags and "A" in t | self.tags[key]:
                self.add("accumulate", target.lineno)
            self.tags[key] = set(t) | ({"S"} if self.current not in ("__init__", "setup") else set())
        elif isinstance(target, (ast.Tuple, ast.List)):
            for e in target.elts:
                self._bind(e, t)
        elif isinstance(target, ast.Subscript):
            base = self.tag(target.value)
            self._stored_range(target)
            if isinstance(target.value, ast.Attribute) and isinstance(target.value.value, ast.Name) and \
                    target.value.attr == "state":
                self.add("accumulate", target.lineno)
            if isinstance(target.value, ast.Name):
                self.tags[target.value.id] = base | t

    def visit_Assign(self, node: ast.Assign) -> None:
        alias = _callable_alias(node.value)
        if alias is not None and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.aliases[node.targets[0].id] = alias
            return
        t = self.tag(node.value)
        if isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Add):
            for tgt in node.targets:
                if isinstance(tgt, ast.Name) and "S" in self.tags.get(tgt.id, set()) | t and "A" in t:
                    self.add("accumulate", node.lineno)
        for tgt in node.targets:
            self._bind(tgt, t)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, self.tag(node.value))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        t = self.tag(node.value)
        prior = self.tag(node.target)
        if isinstance(node.op, ast.Add) and "A" in t and ("S" in prior or isinstance(node.target, ast.Attribute)):
            self.add("accumulate", node.lineno)
        if isinstance(node.op, ast.Mult) and "S" in prior:
            self.add("decay", node.lineno)
        self._bind(node.target, prior | t)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            t = self.tag(node.value)
            self.tags["__return__"] = self.tags.get("__return__", set()) | t
            if isinstance(node.value, ast.Call) and _callee(node.value.func)[0] == "Rewrite":
                self.add("merge", node.lineno)

    def visit_For(self, node: ast.For) -> None:
        self._bind(node.target, self.tag(node.iter))
        self.loop += 1
        for s in node.body + node.orelse:
            self.visit(s)
        self.loop -= 1

    def visit_Expr(self, node: ast.Expr) -> None:
        if not isinstance(node.value, ast.Constant):
            self.tag(node.value)

    def generic_visit(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.tag(child)
            else:
                self.visit(child)


def _class_attrs(tree: ast.Module) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    out.setdefault(stmt.targets[0].id, stmt.value)
                elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                    out.setdefault(stmt.target.id, stmt.value)
    return out


def _const_int(node: ast.expr | None) -> int | None:
    try:
        v = ast.literal_eval(node) if node is not None else None
    except (ValueError, SyntaxError, TypeError):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.LShift):
            left, right = _const_int(node.left), _const_int(node.right)
            return left << right if left is not None and right is not None else None
        return None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


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
    tree = _tree(source)
    if tree is None:
        return Computation()
    defs = _Defs(tree)
    flow = _Flow(defs)
    flow.tags = {"view": {"VIEW"}}
    attrs = _class_attrs(tree)
    qw = _const_int(attrs.get("query_window"))
    found = flow.found
    if qw is not None and qw > 0:
        if qw == 1:
            found.setdefault("last_query", 0)
        elif qw >= 1 << 14:
            found.setdefault("all_queries", 0)
        else:
            found.setdefault("window_queries", 0)
    if _is_true(attrs.get("question_queries")):
        found.setdefault("question_queries", 0)
    if _is_true(attrs.get("reconstruction_queries")):
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
                _pyramid(fn, found)
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


LEARNED_CALLS = frozenset({"Linear", "Parameter", "Conv1d", "load", "load_state_dict", "from_pretrained", "load_file",
                           "Embedding", "MLP"})


def _learned_table(tree: ast.Module, defs: _Defs) -> int | None:
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
            name, _ = _callee(node.func)
            if name in LEARNED_CALLS and name not in defs.by_name:
                return node.lineno
    return None


def called_names(source: str) -> set[str]:
    """The names of every function or method the code calls that it does not define itself (``torch.log``,
    ``x.var``, ``kmeans``...): what a loose reading of its operations sees, blind to the author's own names."""
    tree = _tree(source)
    if tree is None:
        return set()
    defs = _Defs(tree)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name, _ = _callee(node.func)
            if name and name not in defs.by_name and name not in defs.classes:
                out.add(name)
    return out


def _pyramid(fn: ast.FunctionDef | ast.AsyncFunctionDef, found: dict[str, int]) -> None:
    """A per-layer schedule that moves linearly with the layer index (an arithmetic progression)."""
    layer_vars: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.comprehension)):
            it = node.iter
            if isinstance(it, ast.Call) and _callee(it.func)[0] == "range" and isinstance(node.target, ast.Name):
                layer_vars.add(node.target.id)
    for node in ast.walk(fn):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Sub)):
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            if names & layer_vars:
                found.setdefault("pyramid", node.lineno)
                return
        if isinstance(node, ast.Call) and _callee(node.func)[0] in ("linspace", "arange") and len(node.args) >= 2:
            found.setdefault("pyramid", node.lineno)
            return
