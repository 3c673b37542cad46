"""Mechanical disguises a porter applies without changing what a method computes, for the reader's invariance
matrix (tests/test_reader_disguise_invariance.py): every locally bound name made opaque, tensor methods written as
torch functions and back, ``@`` as ``torch.matmul`` and back, every softmax spelled ``torch.nn.functional.softmax``,
dimensions passed by keyword, the last two axes swapped with ``.mT``.
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
}
