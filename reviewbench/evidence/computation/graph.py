"""The data-flow graph of canonical operations (``op_graph``) and the views of it similarity reads: the operation
stream in evaluation order (``op_stream``) and the chains of operations along the data flow (``op_paths``)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from reviewbench.evidence.computation.syntax import (Defs, callable_alias, callee, dotted, is_false, is_true, kwarg,
                                                     negative, parse_source, rope_idiom, subtracts)
from reviewbench.evidence.computation.vocabulary import API_CALLS, BINOPS, BUILTINS_NOOP, CANON, INLINE_DEPTH, SIZES


@dataclass
class Op:
    op: str
    line: int


DATA = -1  # a value that comes from the inputs (keys, queries, attention weights...), not from sizes or literals
PASS_THROUGH = frozenset({"where", "clamp", "pad"})  # masking and forcing: the data flows on unchanged


@dataclass
class Node:
    op: str
    line: int
    inputs: frozenset[int]  # ids of the nodes (or DATA) whose values this operation reads
    data: bool  # derives from the inputs (not only from sizes, literals and index ranges)


class OpGraphBuilder(ast.NodeVisitor):
    """Builds the data-flow graph of canonical operations: helpers inlined (arguments bound to parameters),
    control flow ignored (a loop body runs once; ``acc += x`` in a loop is a reduction), layout calls pass
    their input through, and arithmetic with a non-data operand (``/ sqrt(d)``, ``+ mask``, ``* lam``) is the
    data operand itself, so scaling and masking never change the graph."""

    def __init__(self, defs: Defs) -> None:
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
        alias = callable_alias(node.value)
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
            key = dotted(target)
            if key:
                self.env[key] = v
        elif isinstance(target, ast.Subscript):
            base = dotted(target.value)
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
            if node.attr in SIZES:
                self.expr(node.value)
                return frozenset()
            key = dotted(node)
            if key and key in self.env:
                return self.env[key]
            if key and key.startswith("self."):
                return frozenset()  # a hyper-parameter
            return self.expr(node.value)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BinOp):
            if rope_idiom(node):  # x * cos + rotate_half(x) * sin: x, at other positions
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
            if isinstance(node.value, ast.Attribute) and node.value.attr in SIZES:
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
                if negative(p.lower) or (isinstance(p.lower, ast.Constant) and isinstance(p.lower.value, int)
                                          and p.lower.value < 0) or (p.upper is None and subtracts(p.lower)):
                    out = self.node("tail", line, out)  # x[-w:] or x[n - w:]: the last w
                elif negative(p.upper) or (isinstance(p.upper, ast.Constant) and isinstance(p.upper.value, int)
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
        name, receiver = callee(node.func)
        if isinstance(node.func, ast.Name) and name in self.aliases:
            name = self.aliases[name]
        recv = self.expr(receiver) if receiver is not None else frozenset()
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords if k.arg}
        inputs = recv.union(*args, *kwargs.values())
        if name in SIZES:
            return frozenset()
        local = self.defs.resolve(node, self.owner)
        if local is not None and name not in API_CALLS:
            return self.run_def(local, args, kwargs)
        if name == "flatten" or name in ("reshape", "view") and 1 <= len(node.args) <= 2 and (
                negative(node.args[-1]) or isinstance(node.args[-1], ast.BinOp)
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
        if name in ("sort", "msort") and not is_true(kwarg(node, "descending")):
            return inputs  # putting kept indices back in order ranks nothing
        if op is None:
            if name in ("sort", "msort"):
                op = "rank"
            else:
                return inputs
        if op == "rank" and (is_false(kwarg(node, "largest")) or (name == "argsort"
                                                                and not is_true(kwarg(node, "descending")))):
            op = "neg rank"  # ascending order / smallest-k is the ranking of the negated score
        if op in ("const", "arange", "eye") or not self.is_data(inputs):
            return self.node(op, node.lineno, inputs) if op in ("random",) else frozenset()
        return self.node(op, node.lineno, inputs)


def entry_points(defs: Defs) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
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
    tree = parse_source(source)
    if tree is None:
        return []
    defs = Defs(tree)
    g = OpGraphBuilder(defs)
    for fn in entry_points(defs):
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
