"""Mechanical disguises a porter applies without changing what a method computes, for the reader's invariance
matrix (tests/test_reader_disguise_invariance.py): every locally bound name made opaque, tensor methods written as
torch functions and back, ``@`` as ``torch.matmul`` and back, every softmax spelled ``torch.nn.functional.softmax``,
dimensions passed by keyword, the last two axes swapped with ``.mT``; then ``a += b`` spelt out, ``masked_fill`` as
``torch.where``, ``amax`` as ``max(...).values``, a mean as a sum over the size, ``F.`` spelt out, torch's functions
imported by name, and nested calls computed into temporaries on the line before; then comparisons mirrored,
``unsqueeze`` as ``[:, None]``, ``size(d)`` as ``shape[d]``, ``clamp_min`` as ``clamp(min=)``, the softmax written
out, and each assigned call moved into a module-level helper of its own; then pairs of consecutive assignments
moved into a helper that returns both; then ``topk`` as a descending ``argsort``, ``topk`` of the negated score,
dimensions passed positionally, and a method called on a call's result computed into a temporary first.
Each returns source text; none needs the code to run."""

from __future__ import annotations

import ast
from collections.abc import Callable

from tests.renaming import renamed

# tensor methods that torch also offers as functions taking the tensor first, with the same other arguments
FUNCTIONS = frozenset({
    "sum", "mean", "amax", "amin", "softmax", "log_softmax", "topk", "argsort", "sort", "cumsum", "exp", "log", "sqrt",
    "abs", "norm", "square", "pow", "clamp", "clamp_min", "matmul", "transpose", "reshape", "flatten", "gather",
    "masked_fill", "var", "std", "argmax", "argmin", "unsqueeze", "squeeze", "repeat_interleave", "nan_to_num", "max",
    "min", "maximum", "minimum", "log1p", "sigmoid", "logsumexp", "median", "quantile", "diagonal", "roll", "flip",
    "cummax", "mul", "div", "add", "sub", "scatter_add", "index_select", "take_along_dim", "rsqrt", "count_nonzero",
    "nonzero", "prod", "cumprod", "sign", "tril", "triu", "outer", "dot", "mm", "bmm", "kthvalue"})
_NOT_TENSORS = frozenset({"torch", "F", "nn", "math", "np", "numpy", "os", "sys", "view", "self", "random",
                          "functools", "itertools", "collections", "Keep", "LayerView", "Rewrite", "EvictionMethod",
                          "harness", "super", "str", "int", "float", "list", "dict", "tuple", "set"})


class _ToFunctions(ast.NodeTransformer):
    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        if not (isinstance(f, ast.Attribute) and f.attr in FUNCTIONS):
            return n
        v = f.value
        if isinstance(v, ast.Name) and v.id in _NOT_TENSORS or isinstance(v, ast.Attribute) and isinstance(
                v.value, ast.Name) and v.value.id in ("torch", "F", "nn"):
            return n
        args = list(n.args)
        if f.attr == "reshape" and len(args) > 1:  # x.reshape(a, b): torch.reshape(x, (a, b))
            args = [ast.Tuple(elts=args, ctx=ast.Load())]
        return ast.Call(func=ast.Attribute(value=ast.Name("torch", ast.Load()), attr=f.attr, ctx=ast.Load()),
                        args=[v, *args], keywords=n.keywords)


class _ToMethods(ast.NodeTransformer):
    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "torch" and \
                f.attr in FUNCTIONS - {"maximum", "minimum"} and n.args:
            return ast.Call(func=ast.Attribute(value=n.args[0], attr=f.attr, ctx=ast.Load()), args=n.args[1:],
                            keywords=n.keywords)
        return n


class _MatmulAsCall(ast.NodeTransformer):
    def visit_BinOp(self, n: ast.BinOp) -> ast.expr:
        self.generic_visit(n)
        if isinstance(n.op, ast.MatMult):
            return ast.Call(func=ast.Attribute(value=ast.Name("torch", ast.Load()), attr="matmul", ctx=ast.Load()),
                            args=[n.left, n.right], keywords=[])
        return n


class _CallAsMatmul(ast.NodeTransformer):
    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        if not (isinstance(f, ast.Attribute) and f.attr in ("matmul", "bmm")):
            return n
        module = isinstance(f.value, ast.Name) and f.value.id == "torch"
        if module and len(n.args) == 2:
            return ast.BinOp(left=n.args[0], op=ast.MatMult(), right=n.args[1])
        if not module and len(n.args) == 1:
            return ast.BinOp(left=f.value, op=ast.MatMult(), right=n.args[0])
        return n


class _FunctionalSoftmax(ast.NodeTransformer):
    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        if not (isinstance(f, ast.Attribute) and f.attr == "softmax"):
            return n
        module = isinstance(f.value, ast.Name) and f.value.id in ("torch", "F") or ast.unparse(f.value) in (
            "torch.nn.functional", "nn.functional")
        if module and not n.args:
            return n
        x, rest = (n.args[0], n.args[1:]) if module else (f.value, n.args)
        keywords = ([ast.keyword(arg="dim", value=rest[0])] if rest else []) + list(n.keywords)
        return ast.Call(func=ast.parse("torch.nn.functional.softmax").body[0].value,  # type: ignore[attr-defined]
                        args=[x], keywords=keywords)


# where a tensor method takes its dimension positionally (after the tensor itself)
_DIM_AT = {"sum": 0, "mean": 0, "amax": 0, "amin": 0, "softmax": 0, "log_softmax": 0, "cumsum": 0, "argsort": 0,
           "argmax": 0, "argmin": 0, "var": 0, "std": 0, "logsumexp": 0, "unsqueeze": 0, "squeeze": 0, "nansum": 0,
           "prod": 0}


class _DimKeyword(ast.NodeTransformer):
    """``x.sum(1)`` as ``x.sum(dim=1)``."""

    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr in _DIM_AT and not (
                isinstance(f.value, ast.Name) and f.value.id in _NOT_TENSORS):
            i = _DIM_AT[f.attr]
            if len(n.args) > i and not any(k.arg == "dim" for k in n.keywords) and \
                    not isinstance(n.args[i], ast.Starred):
                n.keywords = [ast.keyword(arg="dim", value=n.args[i]), *n.keywords]
                n.args = n.args[:i] + n.args[i + 1:]
        return n


class _LastTwoTransposed(ast.NodeTransformer):
    """``x.transpose(-1, -2)`` (either order) as ``x.mT``."""

    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr == "transpose" and len(n.args) == 2 and not n.keywords:
            axes = {-a.operand.value if isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub) and isinstance(
                a.operand, ast.Constant) else None for a in n.args}
            if axes == {-1, -2}:
                return ast.Attribute(value=f.value, attr="mT", ctx=ast.Load())
        return n


class _AugExpanded(ast.NodeTransformer):
    """``a += b`` as ``a = a + b`` (a name or the module's attribute; a subscript's target is read twice as well)."""

    def visit_AugAssign(self, n: ast.AugAssign) -> ast.stmt:
        self.generic_visit(n)
        if not isinstance(n.target, (ast.Name, ast.Attribute, ast.Subscript)):
            return n
        load = ast.parse(ast.unparse(n.target), mode="eval").body
        return ast.copy_location(ast.Assign(targets=[n.target], value=ast.BinOp(left=load, op=n.op, right=n.value)), n)


class _MaskedFillAsWhere(ast.NodeTransformer):
    """``x.masked_fill(m, v)`` as ``torch.where(m, v, x)``."""

    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr == "masked_fill" and len(n.args) == 2 and not n.keywords and \
                not (isinstance(f.value, ast.Name) and f.value.id in _NOT_TENSORS):
            return ast.Call(func=ast.Attribute(value=ast.Name("torch", ast.Load()), attr="where", ctx=ast.Load()),
                            args=[n.args[0], n.args[1], f.value], keywords=[])
        return n


class _AmaxAsMaxValues(ast.NodeTransformer):
    """``x.amax(d)`` as ``x.max(d).values`` (one dimension, no keepdim... or with it: ``max`` takes it too)."""

    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr in ("amax", "amin") and len(n.args) + len(
                [k for k in n.keywords if k.arg == "dim"]) == 1 and not (
                isinstance(f.value, ast.Name) and f.value.id in _NOT_TENSORS) and \
                not any(isinstance(a, (ast.Tuple, ast.List)) for a in [*n.args, *[k.value for k in n.keywords]]):
            call = ast.Call(func=ast.Attribute(value=f.value, attr=f.attr[1:], ctx=ast.Load()), args=n.args,
                            keywords=n.keywords)
            return ast.Attribute(value=call, attr="values", ctx=ast.Load())
        return n


class _Temporaries(ast.NodeTransformer):
    """A call nested in another call's arguments computed on the line before into a temporary
    (``f(g(x))`` as ``_t0 = g(x)`` then ``f(_t0)``), in plain assignments, expressions and returns, never inside a
    condition, a short-circuit, a comprehension or a lambda (where the order or the count of evaluations would
    change)."""

    def __init__(self) -> None:
        self.n = 0

    # where the order or the count of evaluations would change if a call were lifted out
    _KEEP = (ast.BoolOp, ast.IfExp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
             ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)
    prefix = "_t"

    def _hoist(self, st: ast.stmt) -> list[ast.stmt]:
        value = getattr(st, "value", None)
        if not isinstance(value, ast.expr) or any(isinstance(x, self._KEEP) for x in ast.walk(value)):
            return [st]
        out: list[ast.stmt] = []
        outer = self

        def temporary(e: ast.expr) -> ast.Name:  # e computed the line before into a new name
            name = f"{outer.prefix}{outer.n}"
            outer.n += 1
            out.append(ast.copy_location(ast.Assign(targets=[ast.Name(name, ast.Store())], value=e), st))
            return ast.Name(name, ast.Load())

        class Lift(ast.NodeTransformer):
            def visit_Call(self, c: ast.Call) -> ast.expr:
                self.generic_visit(c)
                outer._lift(c, temporary)
                return c

        st.value = Lift().visit(value)  # type: ignore[attr-defined]
        return [*out, st]

    def _lift(self, c: ast.Call, temporary: Callable[[ast.expr], ast.Name]) -> None:
        c.args = [temporary(a) if isinstance(a, ast.Call) else a for a in c.args]

    def _block(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for st in body:
            self.visit(st)
            out.extend(self._hoist(st) if isinstance(st, (ast.Assign, ast.Expr, ast.Return)) else [st])
        return out

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for attr in ("body", "orelse", "finalbody"):
            block = getattr(node, attr, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, attr, self._block(block))
        for h in getattr(node, "handlers", []) or []:
            h.body = self._block(h.body)
        return node


class _MeanAsSumOverSize(ast.NodeTransformer):
    """``x.mean(d)`` as ``x.sum(d) / x.shape[d]`` (one constant dimension, no keepdim)."""

    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        dims = n.args + [k.value for k in n.keywords if k.arg == "dim"]
        if isinstance(f, ast.Attribute) and f.attr == "mean" and len(dims) == 1 and len(n.args) + len(n.keywords) == 1 \
                and isinstance(dims[0], (ast.Constant, ast.UnaryOp)) and not (
                isinstance(f.value, ast.Name) and f.value.id in _NOT_TENSORS):
            total = ast.Call(func=ast.Attribute(value=f.value, attr="sum", ctx=ast.Load()), args=n.args,
                             keywords=n.keywords)
            size = ast.Subscript(value=ast.Attribute(value=f.value, attr="shape", ctx=ast.Load()), slice=dims[0],
                                 ctx=ast.Load())
            return ast.BinOp(left=total, op=ast.Div(), right=size)
        return n


class _FunctionalSpelledOut(ast.NodeTransformer):
    """``F.max_pool1d(...)`` (``import torch.nn.functional as F``) as ``torch.nn.functional.max_pool1d(...)``."""

    def visit_Attribute(self, n: ast.Attribute) -> ast.expr:
        self.generic_visit(n)
        if isinstance(n.value, ast.Name) and n.value.id == "F":
            return ast.Attribute(value=ast.parse("torch.nn.functional", mode="eval").body, attr=n.attr, ctx=n.ctx)
        return n


class _TorchNamesImported(ast.NodeTransformer):
    """``torch.topk(x, k)`` as ``topk(x, k)`` with ``from torch import topk`` (functions of ``FUNCTIONS``)."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def visit_Module(self, n: ast.Module) -> ast.Module:
        self.generic_visit(n)
        if self.used:
            at = next((i for i, st in enumerate(n.body) if not (isinstance(st, ast.Expr) and isinstance(
                st.value, ast.Constant)) and not isinstance(st, ast.ImportFrom) or isinstance(
                st, ast.ImportFrom) and st.module != "__future__"), 0)
            n.body.insert(at, ast.ImportFrom(module="torch", names=[ast.alias(name=x) for x in sorted(self.used)],
                                             level=0))
        return n

    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "torch" and \
                f.attr in FUNCTIONS:
            self.used.add(f.attr)
            n.func = ast.Name(f.attr, ast.Load())
        return n


class _ComparisonsMirrored(ast.NodeTransformer):
    """``a < b`` as ``b > a`` (one comparison of two operands)."""

    MIRROR = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE, ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}

    def visit_Compare(self, n: ast.Compare) -> ast.expr:
        self.generic_visit(n)
        if len(n.ops) == 1 and type(n.ops[0]) in self.MIRROR:
            return ast.Compare(left=n.comparators[0], ops=[self.MIRROR[type(n.ops[0])]()], comparators=[n.left])
        return n


class _UnsqueezeAsNone(ast.NodeTransformer):
    """``x.unsqueeze(0)`` / ``x.unsqueeze(1)`` / ``x.unsqueeze(-1)`` as ``x[None]`` / ``x[:, None]`` / ``x[..., None]``."""

    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr == "unsqueeze" and len(n.args) == 1 and not n.keywords and not (
                isinstance(f.value, ast.Name) and f.value.id in _NOT_TENSORS):
            d = n.args[0]
            v = d.value if isinstance(d, ast.Constant) else -d.operand.value if isinstance(  # type: ignore[operator]
                d, ast.UnaryOp) and isinstance(d.op, ast.USub) and isinstance(d.operand, ast.Constant) else None
            none = ast.Constant(value=None)
            index: ast.expr | None = {0: none, 1: ast.Tuple(elts=[ast.Slice(), none], ctx=ast.Load()),
                                      2: ast.Tuple(elts=[ast.Slice(), ast.Slice(), none], ctx=ast.Load()),
                                      -1: ast.Tuple(elts=[ast.Constant(value=...), none], ctx=ast.Load())}.get(
                v) if isinstance(v, int) else None
            if index is not None:
                return ast.Subscript(value=f.value, slice=index, ctx=ast.Load())
        return n


class _SizeAsShape(ast.NodeTransformer):
    """``x.size(d)`` as ``x.shape[d]`` and ``x.size()`` as ``x.shape``."""

    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr == "size" and len(n.args) <= 1 and not n.keywords and not (
                isinstance(f.value, ast.Name) and f.value.id in _NOT_TENSORS):
            shape = ast.Attribute(value=f.value, attr="shape", ctx=ast.Load())
            return ast.Subscript(value=shape, slice=n.args[0], ctx=ast.Load()) if n.args else shape
        return n


class _ClampMinAsClamp(ast.NodeTransformer):
    """``x.clamp_min(v)`` as ``x.clamp(min=v)`` (and ``clamp_max``)."""

    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr in ("clamp_min", "clamp_max") and len(n.args) == 1 and \
                not n.keywords and not (isinstance(f.value, ast.Name) and f.value.id in _NOT_TENSORS):
            return ast.Call(func=ast.Attribute(value=f.value, attr="clamp", ctx=ast.Load()), args=[],
                            keywords=[ast.keyword(arg=f.attr[-3:], value=n.args[0])])
        return n


class _SoftmaxWrittenOut(ast.NodeTransformer):
    """``x.softmax(d)`` / ``torch.softmax(x, d)`` as ``torch.exp(x - x.amax(d, keepdim=True))`` over its sum along
    ``d`` (the numerically safe softmax by hand; ``x`` re-evaluated, so only where ``x`` is a name)."""

    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        if not (isinstance(f, ast.Attribute) and f.attr == "softmax"):
            return n
        module = isinstance(f.value, ast.Name) and f.value.id in ("torch", "F")
        args = n.args[1:] if module else n.args
        x = n.args[0] if module and n.args else f.value
        dims = args + [k.value for k in n.keywords if k.arg == "dim"]
        if len(dims) != 1 or len(args) + len(n.keywords) != 1 or not isinstance(x, ast.Name):
            return n
        d = dims[0]
        keep = [ast.keyword(arg="keepdim", value=ast.Constant(value=True))]
        shifted = ast.BinOp(left=x, op=ast.Sub(), right=ast.Call(
            func=ast.Attribute(value=x, attr="amax", ctx=ast.Load()), args=[d], keywords=keep))
        e = ast.Call(func=ast.Attribute(value=ast.Name("torch", ast.Load()), attr="exp", ctx=ast.Load()),
                     args=[shifted], keywords=[])
        total = ast.Call(func=ast.Attribute(value=e, attr="sum", ctx=ast.Load()), args=[d], keywords=keep)
        return ast.BinOp(left=e, op=ast.Div(), right=total)


class _TopkAsArgsort(ast.NodeTransformer):
    """``x.topk(k).indices`` (last axis, largest first) as ``x.argsort(dim=-1, descending=True)[..., :k]``."""

    def visit_Attribute(self, n: ast.Attribute) -> ast.expr:
        self.generic_visit(n)
        c = n.value
        if n.attr == "indices" and isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and \
                c.func.attr == "topk" and len(c.args) == 1 and not (
                isinstance(c.func.value, ast.Name) and c.func.value.id in _NOT_TENSORS) and all(
                k.arg == "dim" and ast.unparse(k.value) == "-1" for k in c.keywords):
            order = ast.Call(func=ast.Attribute(value=c.func.value, attr="argsort", ctx=ast.Load()), args=[],
                             keywords=[ast.keyword(arg="dim", value=ast.parse("-1", mode="eval").body),
                                       ast.keyword(arg="descending", value=ast.Constant(value=True))])
            return ast.Subscript(value=order, slice=ast.Tuple(elts=[ast.Constant(value=...), ast.Slice(
                upper=c.args[0])], ctx=ast.Load()), ctx=ast.Load())
        return n


class _TopkOfNegated(ast.NodeTransformer):
    """``x.topk(k)`` as ``(-x).topk(k, largest=False)`` (the values negated back where read: ``.indices`` only)."""

    def visit_Attribute(self, n: ast.Attribute) -> ast.expr:
        self.generic_visit(n)
        c = n.value
        if n.attr == "indices" and isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and \
                c.func.attr == "topk" and not any(k.arg == "largest" for k in c.keywords) and not (
                isinstance(c.func.value, ast.Name) and c.func.value.id in _NOT_TENSORS):
            neg = ast.UnaryOp(op=ast.USub(), operand=c.func.value)
            call = ast.Call(func=ast.Attribute(value=neg, attr="topk", ctx=ast.Load()), args=c.args,
                            keywords=[*c.keywords, ast.keyword(arg="largest", value=ast.Constant(value=False))])
            return ast.Attribute(value=call, attr="indices", ctx=ast.Load())
        return n


class _DimPositional(ast.NodeTransformer):
    """``x.sum(dim=1)`` as ``x.sum(1)`` (the reverse of ``dim_keywords``)."""

    def visit_Call(self, n: ast.Call) -> ast.expr:
        self.generic_visit(n)
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr in _DIM_AT and not n.args and not (
                isinstance(f.value, ast.Name) and f.value.id in _NOT_TENSORS):
            dims = [k for k in n.keywords if k.arg == "dim"]
            if dims:
                n.args = [dims[0].value]
                n.keywords = [k for k in n.keywords if k.arg != "dim"]
        return n


class _ReceiversAsTemporaries(_Temporaries):
    """A method called on the result of another call computed into a temporary first (``x.float().sum(1)`` as
    ``_r0 = x.float()`` then ``_r0.sum(1)``), where ``_Temporaries`` lifts arguments."""

    prefix = "_r"

    def _lift(self, c: ast.Call, temporary: Callable[[ast.expr], ast.Name]) -> None:
        f = c.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Call):
            c.func = ast.Attribute(value=temporary(f.value), attr=f.attr, ctx=ast.Load())


def _module_names(tree: ast.Module) -> set[str]:
    """The names a function moved to the module's top level still sees: builtins, imports, the module's own
    definitions and top-level assignments (never passed as a helper's parameters)."""
    import builtins

    names = set(dir(builtins))
    for st in tree.body:
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in st.names)
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(st.name)
        elif isinstance(st, (ast.Assign, ast.AnnAssign)):
            for t in (st.targets if isinstance(st, ast.Assign) else [st.target]):
                names.update(x.id for x in ast.walk(t) if isinstance(x, ast.Name))
    return names


def _helpers_extracted(src: str) -> str:
    """Each call assigned to a name inside a method computed by a module-level helper of its own, its free names
    passed under the same names (``s = F.max_pool1d(a, 7, ...)`` as ``s = _h0(a)`` with ``def _h0(a): return
    F.max_pool1d(a, 7, ...)``): what a porter does who restructures code into helpers."""
    tree = ast.parse(src)
    module_names = _module_names(tree)
    helpers: list[ast.stmt] = []

    class Extract(ast.NodeTransformer):
        def visit_Assign(self, n: ast.Assign) -> ast.stmt:
            v = n.value
            if not isinstance(v, ast.Call) or any(isinstance(x, (ast.Lambda, ast.NamedExpr, ast.Yield, ast.Await,
                                                                  ast.Starred)) for x in ast.walk(v)):
                return n
            bound = {x.id for x in ast.walk(v) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)}
            free = sorted({x.id for x in ast.walk(v) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Load)}
                          - bound - module_names)
            name = f"_h{len(helpers)}"
            args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=a) for a in free], kwonlyargs=[], kw_defaults=[],
                                 defaults=[])
            helpers.append(ast.FunctionDef(name=name, args=args, body=[ast.Return(value=v)], decorator_list=[],
                                           returns=None, type_params=[]))
            n.value = ast.Call(func=ast.Name(name, ast.Load()), args=[ast.Name(a, ast.Load()) for a in free],
                               keywords=[])
            return n

    for cls in [st for st in tree.body if isinstance(st, ast.ClassDef)]:
        for fn in [x for x in cls.body if isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            Extract().visit(fn)
    at = next(i for i, st in enumerate(tree.body) if isinstance(st, ast.ClassDef)) if any(
        isinstance(st, ast.ClassDef) for st in tree.body) else len(tree.body)
    tree.body[at:at] = helpers
    return ast.unparse(ast.fix_missing_locations(tree))


def _pairs_extracted(src: str) -> str:
    """Two consecutive assignments to plain names inside a method computed by a module-level helper that returns
    both (``a = f(x); b = g(a)`` as ``a, b = _p0(x)``, the helper holding both lines): the multi-line helpers a porter
    writes. The free names are passed under the same names."""
    tree = ast.parse(src)
    module_names = _module_names(tree)
    helpers: list[ast.stmt] = []

    def plain(st: ast.stmt) -> bool:
        return isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) and \
            not any(isinstance(x, (ast.Lambda, ast.NamedExpr, ast.Yield, ast.Await)) for x in ast.walk(st.value))

    def block(body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        i = 0
        while i < len(body):
            st = body[i]
            for attr in ("body", "orelse"):
                inner = getattr(st, attr, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt) and not isinstance(
                        st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    setattr(st, attr, block(inner))
            if i + 1 < len(body) and plain(st) and plain(body[i + 1]):
                a, b = st, body[i + 1]
                assert isinstance(a, ast.Assign) and isinstance(b, ast.Assign)
                ta, tb = a.targets[0].id, b.targets[0].id  # type: ignore[attr-defined]
                stored = {x.id for s2 in (a, b) for x in ast.walk(s2.value) if isinstance(x, ast.Name) and
                          isinstance(x.ctx, ast.Store)}
                loads = {x.id for s2 in (a, b) for x in ast.walk(s2.value) if isinstance(x, ast.Name) and
                         isinstance(x.ctx, ast.Load)}
                free = sorted(loads - stored - module_names - ({ta} - {x.id for x in ast.walk(a.value)
                                                                        if isinstance(x, ast.Name)}))
                if ta != tb:
                    name = f"_p{len(helpers)}"
                    args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=x) for x in free], kwonlyargs=[],
                                         kw_defaults=[], defaults=[])
                    ret = ast.Return(value=ast.Tuple(elts=[ast.Name(ta, ast.Load()), ast.Name(tb, ast.Load())],
                                                     ctx=ast.Load()))
                    helpers.append(ast.FunctionDef(name=name, args=args, body=[a, b, ret], decorator_list=[],
                                                   returns=None, type_params=[]))
                    call = ast.Call(func=ast.Name(name, ast.Load()), args=[ast.Name(x, ast.Load()) for x in free],
                                    keywords=[])
                    out.append(ast.copy_location(ast.Assign(
                        targets=[ast.Tuple(elts=[ast.Name(ta, ast.Store()), ast.Name(tb, ast.Store())],
                                           ctx=ast.Store())], value=call), a))
                    i += 2
                    continue
            out.append(st)
            i += 1
        return out

    for cls in [st for st in tree.body if isinstance(st, ast.ClassDef)]:
        for fn in [x for x in cls.body if isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            fn.body = block(fn.body)
    at = next((i for i, st in enumerate(tree.body) if isinstance(st, ast.ClassDef)), len(tree.body))
    tree.body[at:at] = helpers
    return ast.unparse(ast.fix_missing_locations(tree))


def _transform(t: type[ast.NodeTransformer]) -> Callable[[str], str]:
    def apply(src: str) -> str:
        return ast.unparse(ast.fix_missing_locations(t().visit(ast.parse(src))))
    apply.__name__ = t.__name__.strip("_")
    return apply


DISGUISES: dict[str, Callable[[str], str]] = {
    "renamed": renamed,
    "torch_functions": _transform(_ToFunctions),
    "tensor_methods": _transform(_ToMethods),
    "matmul_as_call": _transform(_MatmulAsCall),
    "call_as_matmul": _transform(_CallAsMatmul),
    "functional_softmax": _transform(_FunctionalSoftmax),
    "dim_keywords": _transform(_DimKeyword),
    "transpose_as_mT": _transform(_LastTwoTransposed),
    "aug_assign_expanded": _transform(_AugExpanded),
    "masked_fill_as_where": _transform(_MaskedFillAsWhere),
    "amax_as_max_values": _transform(_AmaxAsMaxValues),
    "nested_calls_as_temporaries": _transform(_Temporaries),
    "mean_as_sum_over_size": _transform(_MeanAsSumOverSize),
    "functional_spelled_out": _transform(_FunctionalSpelledOut),
    "torch_names_imported": _transform(_TorchNamesImported),
    "comparisons_mirrored": _transform(_ComparisonsMirrored),
    "unsqueeze_as_none": _transform(_UnsqueezeAsNone),
    "size_as_shape": _transform(_SizeAsShape),
    "clamp_min_as_clamp": _transform(_ClampMinAsClamp),
    "softmax_written_out": _transform(_SoftmaxWrittenOut),
    "helpers_extracted": _helpers_extracted,
    "statement_pairs_extracted": _pairs_extracted,
    "topk_as_argsort": _transform(_TopkAsArgsort),
    "topk_of_negated": _transform(_TopkOfNegated),
    "dim_positional": _transform(_DimPositional),
    "receivers_as_temporaries": _transform(_ReceiversAsTemporaries),
}
