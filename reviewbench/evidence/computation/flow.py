"""The feature tagger: which interface data (keys, values, queries, attention, positions, state) every value is
computed from, and the features the operations on them show."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from reviewbench.evidence.computation.syntax import (Defs, callable_alias, callee, const_int, dead_statements,
                                                     fitted_literal, flattens, is_true, kwarg, negative, parent_map,
                                                     self_attr, subtracts)
from reviewbench.evidence.computation.vocabulary import (ANGLE_CALLS, API_CALLS, API_SOURCES, CANON, CLUSTERING,
                                                         FUNCTION_WRAPPERS,
                                                         FACTORISATIONS, INLINE_DEPTH, INTEGER_CASTS, INTEGER_DTYPES,
                                                         INVERSES, LEARNED_CALLS, ORTHOGONAL_CALLS, QUANTISING_CALLS,
                                                         SIGN_CALLS, SIZES, SPECTRAL_CALLS)

# What a value per token is made of (keys, values, queries, attention, positions): a fitted number with none of
# these is chosen per head or per layer, so a test on it is a gate, not a score.
PER_TOKEN = frozenset({"K", "V", "Q", "A", "P"})
# reductions that, called without an axis, leave one number (``Tagger.call``'s scalars)
_SCALARS = frozenset({"mean", "sum", "max", "min", "amax", "amin", "median", "std", "var", "item", "nanmean",
                      "nansum", "prod", "logsumexp"})


# Operations the data flow reads as another it equals (not canonical classes: the code fingerprints stay as built):
# a matrix-vector product is a product, 2^x and e^x - 1 are exponentials (a softmax in base 2 is a softmax), a partial
# sort's indices rank, a segmented reduction reduces.
_EQUIVALENT = {"mv": "matmul", "exp2": "exp", "expm1": "exp", "argpartition": "argsort", "segment_reduce": "sum",
               "log10": "log"}


# Loss functions of torch.nn.functional, element by element (``reduction="none"``), are arithmetic on their two inputs.
_LOSSES = frozenset({"mse_loss", "l1_loss", "cosine_embedding_loss", "pairwise_distance"})


# comparisons written as calls (``x.gt(0)``, ``torch.lt(a, b)``, ``np.greater(x, y)``): read as the operator
_COMPARE_CALLS: dict[str, type[ast.cmpop]] = {"gt": ast.Gt, "greater": ast.Gt, "ge": ast.GtE, "greater_equal": ast.GtE,
                                              "lt": ast.Lt, "less": ast.Lt, "le": ast.LtE, "less_equal": ast.LtE}
# the methods Python runs for a binary operator on an object (and with the object on the right)
BINARY_DUNDERS: dict[type[ast.operator], tuple[str, str]] = {
    ast.MatMult: ("__matmul__", "__rmatmul__"), ast.Add: ("__add__", "__radd__"), ast.Sub: ("__sub__", "__rsub__"),
    ast.Mult: ("__mul__", "__rmul__"), ast.Div: ("__truediv__", "__rtruediv__"),
    ast.FloorDiv: ("__floordiv__", "__rfloordiv__"), ast.Mod: ("__mod__", "__rmod__"), ast.Pow: ("__pow__", "__rpow__"),
    ast.BitOr: ("__or__", "__ror__"), ast.BitAnd: ("__and__", "__rand__"), ast.BitXor: ("__xor__", "__rxor__"),
    ast.LShift: ("__lshift__", "__rlshift__"), ast.RShift: ("__rshift__", "__rrshift__"),
}


def _neighbour_pair(a: ast.expr, b: ast.expr) -> bool:
    """``x[:, 1:]`` against ``x[:, :-1]`` (or ``x`` against ``x.roll(1, ...)``): each row against the row beside it,
    not against every other row (a change between successive tokens, no redundancy over the whole cache)."""
    def rolled(x: ast.expr, y: ast.expr) -> bool:
        return isinstance(x, ast.Call) and callee(x.func)[0] == "roll" and (
            isinstance(x.func, ast.Attribute) and _same(x.func.value, y) or bool(x.args) and _same(x.args[0], y))

    if rolled(a, b) or rolled(b, a):
        return True
    if not (isinstance(a, ast.Subscript) and isinstance(b, ast.Subscript) and _same(a.value, b.value)):
        return False

    def parts(x: ast.Subscript) -> list[ast.expr]:
        return list(x.slice.elts) if isinstance(x.slice, ast.Tuple) else [x.slice]

    pa, pb = parts(a), parts(b)
    if len(pa) != len(pb):
        return False
    differ = [(x, y) for x, y in zip(pa, pb) if ast.dump(x) != ast.dump(y)]
    if len(differ) != 1:
        return False
    x, y = differ[0]
    if not (isinstance(x, ast.Slice) and isinstance(y, ast.Slice)):
        return False
    return any(u.lower is not None and u.upper is None and w.lower is None and w.upper is not None
               for u, w in ((x, y), (y, x)))  # one from an offset on, the other up to one before the end


def _signed_magnitude(node: ast.BinOp) -> ast.Call | None:
    """``sign(x) * x`` (either order; ``sgn``, ``x.sign()``) as ``abs(x)``."""
    if not isinstance(node.op, ast.Mult):
        return None
    for s, x in ((node.left, node.right), (node.right, node.left)):
        if isinstance(s, ast.Call) and callee(s.func)[0] in ("sign", "sgn"):
            inner = s.args[0] if len(s.args) == 1 else callee(s.func)[1] if not s.args else None  # sign(x), x.sign()
            if _same(inner, x):
                return ast.fix_missing_locations(ast.copy_location(ast.Call(
                    func=ast.Attribute(value=ast.Name(id="torch", ctx=ast.Load()), attr="abs", ctx=ast.Load()),
                    args=[x], keywords=[]), node))
    return None


def _denominator_norms(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[int]:
    """Assignments ``m = <a norm or a square root>`` to a name every read of which in ``fn`` is the norm against
    itself in a divisor, ``x / outer(m, m)`` or ``x / (m[:, None] * m[None, :])``: the denominator of a cosine matrix.
    Such a norm scales a similarity; it is no score of its own (``v_norm / m`` stays a ratio of two scores)."""
    parents = parent_map(fn)

    def divides(n: ast.AST, name: str, source: set[str]) -> bool:
        child, p = n, parents.get(id(n))
        paired = False  # in outer(m, m) or m[:, None] * m[None, :]: the norm against itself, a cosine's scale
        while p is not None and not isinstance(p, ast.stmt):
            if isinstance(p, ast.Call) and callee(p.func)[0] in ("outer", "ger") or isinstance(p, ast.BinOp) and \
                    isinstance(p.op, ast.Mult) and all(any(isinstance(x, ast.Name) and x.id == name
                                                           for x in ast.walk(side)) for side in (p.left, p.right)):
                paired = True
            if isinstance(p, ast.BinOp) and isinstance(p.op, ast.Div) and p.right is child:
                # (or the rows the norm was taken of over their own norms: x / m[:, None], m = sqrt(sum x^2): unit
                # vectors written over a name)
                return paired or bool(source) and any(isinstance(x, ast.Name) and x.id in source
                                                      for x in ast.walk(p.left))
            if isinstance(p, ast.BinOp) and not isinstance(p.op, (ast.Mult, ast.Div)) or \
                    isinstance(p, ast.Call) and callee(p.func)[0] not in ("outer", "ger", "unsqueeze", "clamp",
                                                                          "clamp_min", "view", "reshape", "maximum",
                                                                          "fmax", "clip"):
                return False  # added to something, or handed to another operation: more than a scale
            child, p = p, parents.get(id(p))
        return False

    out: set[int] = set()
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        if not (_root(node.value) or any(isinstance(c, ast.Call) and CANON.get(callee(c.func)[0] or "") == "norm"
                                         for c in ast.walk(node.value))):
            continue
        name = node.targets[0].id
        # the rows the norm is taken of: the one name it reads (sqrt(einsum("ij,ij->i", x, x)), x.norm(dim=-1))
        read = {x.id for x in ast.walk(node.value) if isinstance(x, ast.Name) and x.id not in ("torch", "np", "F",
                                                                                              "math", "numpy")}
        source = read if len(read) == 1 else set()
        reads = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
        if reads and all(divides(n, name, source) for n in reads):
            out.add(id(node))
    return out


def _clipped_sign(node: ast.Call, receiver: ast.expr | None, name: str) -> ast.Call | None:
    """The ``sign(...)`` call that ``node`` clips at zero from below (``sign(d).clamp_min(0)``, ``clamp(sign(d),
    min=0)``, ``relu(sign(d))``), else None: 1 where d > 0, 0 elsewhere."""
    on_tensor = isinstance(node.func, ast.Attribute) and isinstance(receiver, ast.Call)
    inner = receiver if on_tensor else node.args[0] if node.args else None
    if not isinstance(inner, ast.Call) or callee(inner.func)[0] not in ("sign", "sgn"):
        return None
    rest = node.args if on_tensor else node.args[1:]
    if name == "relu":
        return inner if not rest else None
    low = next((k.value for k in node.keywords if k.arg == "min"), rest[0] if rest else None)
    high = next((k.value for k in node.keywords if k.arg == "max"), rest[1] if len(rest) > 1 else None)
    zero = isinstance(low, ast.Constant) and low.value == 0 and not isinstance(low.value, bool)
    return inner if zero and (high is None or name == "clamp_min") else None


def _name_key(node: ast.Call) -> str | None:
    """The literal name a ``view.remember(name, x)`` / ``view.recall(name)`` call is given (None: computed)."""
    first = node.args[0] if node.args else None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def _python_slice(node: ast.Call, name: str) -> ast.expr | None:
    """``itertools.islice(x, n)`` (``islice(x, 0, n)``) as ``x[:n]``, ``collections.deque(x, maxlen=m)`` as ``x[-m:]``
    (a bounded queue keeps the newest it was fed): the first and the last entries of a list of positions."""
    args = node.args
    if not args or any(isinstance(a, ast.Starred) for a in args):
        return None
    if name == "islice":
        if len(args) == 2:
            sl = ast.Slice(lower=None, upper=args[1], step=None)
        elif len(args) == 3 and isinstance(args[1], ast.Constant) and args[1].value in (0, None):
            sl = ast.Slice(lower=None, upper=args[2], step=None)
        else:
            return None
    else:
        maxlen = next((k.value for k in node.keywords if k.arg == "maxlen"), args[1] if len(args) > 1 else None)
        if maxlen is None:
            return None
        sl = ast.Slice(lower=ast.UnaryOp(op=ast.USub(), operand=maxlen), upper=None, step=None)
    return ast.fix_missing_locations(ast.copy_location(ast.Subscript(value=args[0], slice=sl, ctx=ast.Load()), node))


def _zero(e: ast.expr) -> bool:
    """A zero tensor or number (``0``, ``zeros_like(x)``, ``x.new_zeros(())``, broadcast with ``expand_as``)."""
    while isinstance(e, ast.Call) and callee(e.func)[0] in ("expand_as", "expand", "broadcast_to", "to", "float") and \
            isinstance(e.func, ast.Attribute):
        e = e.func.value
    if isinstance(e, ast.Constant):
        return e.value == 0 and not isinstance(e.value, bool)
    return isinstance(e, ast.Call) and callee(e.func)[0] in ("zeros", "zeros_like", "new_zeros")


def _attention_written_out(node: ast.Call) -> ast.expr | None:
    """``F.scaled_dot_product_attention(q, k, v, ...)`` as ``softmax(q @ k.transpose(-2, -1)) @ v`` (its mask and scale
    change no operation): attention, and with the values its output."""
    if len(node.args) < 3 or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    q, k, v = node.args[:3]
    torch = ast.Name(id="torch", ctx=ast.Load())
    kt = ast.Call(func=ast.Attribute(value=k, attr="transpose", ctx=ast.Load()),
                  args=[ast.Constant(-2), ast.Constant(-1)], keywords=[])
    logits = ast.BinOp(left=q, op=ast.MatMult(), right=kt)
    probs = ast.Call(func=ast.Attribute(value=torch, attr="softmax", ctx=ast.Load()), args=[logits],
                     keywords=[ast.keyword(arg="dim", value=ast.Constant(-1))])
    eye = isinstance(v, ast.Call) and callee(v.func)[0] in ("eye", "expand", "expand_as", "repeat") and any(
        isinstance(x, ast.Call) and callee(x.func)[0] == "eye" for x in ast.walk(v))
    out: ast.expr = probs if eye else ast.BinOp(left=probs, op=ast.MatMult(), right=v)
    return ast.fix_missing_locations(ast.copy_location(out, node))


def _folded_hypot(node: ast.Call) -> ast.expr | None:
    """``functools.reduce(torch.hypot, x.unbind(d))`` as ``torch.linalg.vector_norm(x, dim=d)``: the square root of
    the sum of squares, two entries at a time."""
    if len(node.args) < 2 or not (isinstance(node.args[0], (ast.Attribute, ast.Name)) and callee(node.args[0])[0]
                                  == "hypot"):
        return None
    parts = node.args[1]
    if not (isinstance(parts, ast.Call) and isinstance(parts.func, ast.Attribute) and parts.func.attr == "unbind"):
        return None
    dim = parts.args[0] if parts.args else next((k.value for k in parts.keywords if k.arg == "dim"), ast.Constant(0))
    torch = ast.Name(id="torch", ctx=ast.Load())
    out = ast.Call(func=ast.Attribute(value=torch, attr="norm", ctx=ast.Load()), args=[parts.func.value],
                   keywords=[ast.keyword(arg="dim", value=dim)])
    return ast.fix_missing_locations(ast.copy_location(out, node))


def _loss_written_out(node: ast.Call, name: str) -> ast.expr | None:
    """``F.mse_loss(a, b, reduction="none")`` as ``(a - b) ** 2``, ``l1_loss`` as ``abs(a - b)``,
    ``cosine_embedding_loss(a, b, y, reduction="none")`` as ``1 - cosine_similarity(a, b, dim=-1)`` (for y = 1, the
    pairs to pull together), ``pairwise_distance(a, b)`` as ``norm(a - b, dim=-1)``. Reduced losses (a mean over
    every element) are one number, which the data flow reads as the mean of the same."""
    args = [a for a in node.args if not isinstance(a, ast.Starred)]
    if len(args) < 2 or len(args) != len(node.args):
        return None
    a, b = args[0], args[1]
    diff: ast.expr = a if _zero(b) else b if _zero(a) else ast.BinOp(left=a, op=ast.Sub(), right=b)
    torch = ast.Name(id="torch", ctx=ast.Load())
    if name == "mse_loss":
        out: ast.expr = ast.BinOp(left=diff, op=ast.Pow(), right=ast.Constant(2))
    elif name == "l1_loss":
        out = ast.Call(func=ast.Attribute(value=torch, attr="abs", ctx=ast.Load()), args=[diff], keywords=[])
    elif name == "pairwise_distance":
        return ast.fix_missing_locations(ast.copy_location(ast.Call(
            func=ast.Attribute(value=torch, attr="norm", ctx=ast.Load()), args=[diff],
            keywords=[ast.keyword(arg="dim", value=ast.Constant(-1))]), node))
    else:
        cos = ast.Call(func=ast.Attribute(value=torch, attr="cosine_similarity", ctx=ast.Load()), args=[a, b],
                       keywords=[ast.keyword(arg="dim", value=ast.Constant(-1))])
        out = ast.BinOp(left=ast.Constant(1), op=ast.Sub(), right=cos)
    reduction = next((k.value for k in node.keywords if k.arg == "reduction"), None)
    if not (isinstance(reduction, ast.Constant) and reduction.value == "none"):
        out = ast.Call(func=ast.Attribute(value=torch, attr="mean", ctx=ast.Load()), args=[out], keywords=[])
    return ast.fix_missing_locations(ast.copy_location(out, node))


def _by_position(t: set[str]) -> bool:
    """A score made of token indices or positions and nothing of the layer's data: ranking it keeps by position."""
    return bool(t & {"I", "P"}) and not t & {"K", "V", "Q", "A", "S", "W", "RND"}


DATA_TAGS = frozenset({"K", "V", "Q", "A", "S"})
# what a value is made of and how it was summarised (keys, a mean of them, unit vectors, key-key similarities): tags a
# ranking's indices carry from what was ranked, never passed on to the entries they pick
_WHAT_DATA = DATA_TAGS | {"KM", "KR", "M", "N", "KSIM", "KK2"}


def _count_like(t: set[str]) -> bool:
    """A per-token count of the queries that can see each key, made of token indices and positions alone: an arange
    (forward, reversed, a cumsum of ones), positions subtracted, a pairwise visibility matrix or a mask of non-zero
    attention summed, a searchsorted rank. A count under a root, a logarithm or a power (``SOFT``) is no longer one:
    a total divided by it is not the mean a count-normalised score takes."""
    return bool(t & {"I", "CNT"}) and not t & {"K", "V", "Q", "A", "W", "RND", "SOFT"}


def _damped_count(t: set[str], inverse: bool = False) -> bool:
    """A count of the queries that see each key under a root, a logarithm or a power (``SOFT``; with ``inverse``, a
    negative power or a reciprocal root, ``RSOFT``): dividing by it leaves part of the exposure in the score."""
    return ("RSOFT" if inverse else "SOFT") in t and _count_like(t - {"SOFT", "RSOFT"})


def _constant(e: ast.expr) -> object:
    """A literal's value (None for anything else)."""
    return e.value if isinstance(e, ast.Constant) else None


def _tuple_elts(e: ast.expr) -> list[ast.expr] | None:
    """The elements of a tuple or list display without a starred one (bound element by element), else None."""
    if isinstance(e, (ast.Tuple, ast.List)) and not any(isinstance(x, ast.Starred) for x in e.elts):
        return list(e.elts)
    return None


_NORMALISERS = ("max", "amax", "logsumexp")
# what turns a count into a softened one (``_count_like``)
_SOFTENERS = frozenset({"sqrt", "rsqrt", "log", "log1p", "log2", "log10", "pow", "float_power"})
_LOG_FOLDS = ("logaddexp", "logaddexp2")
# calls whose first argument gives only a shape, a type and a device
_SHAPE_ONLY = frozenset({"zeros_like", "ones_like", "full_like", "empty_like"})


def _attention_side(t: set[str]) -> bool:
    """A compared value that is attention: no ranking or index in it, and positions only through a visibility mask
    (``z.masked_fill(~seen, -inf)`` before the softmax: the causal mask's positions, no score of positions). A running
    sum of attention along the tokens against a bar is how many tokens reach a share (coverage), no token's own
    attention against one. Attention times a span of positions (``pos < 4``) is the share that span holds."""
    return "A" in t and not t & {"R", "I", "CUM"} and ("P" not in t or bool(t & {"PAIR", "SPAN"}))


def _calls_any(e: ast.expr, names: tuple[str, ...], defs: Defs | None, folds: tuple[str, ...] = ()) -> bool:
    """Whether ``e`` calls one of ``names``, or (with ``defs``) a helper of the module whose body calls one of
    ``names`` or ``folds`` (a log-sum-exp folded pairwise with ``logaddexp``)."""
    for c in ast.walk(e):
        if not isinstance(c, ast.Call):
            continue
        name = callee(c.func)[0]
        if name in names:
            return True
        if defs is not None and name in defs.by_name and any(
                isinstance(x, ast.Call) and callee(x.func)[0] in (*names, *folds)
                for fn in defs.by_name[name] for x in ast.walk(fn)):
            return True
    return False


def _shifted_by_own_extreme(arg: ast.expr | None, defs: Defs | None = None) -> bool:
    """``z - z.max(...)``, ``z - torch.amax(z, ...)``, ``z - torch.logsumexp(z, ...)``: logits shifted by their own
    largest value or log-normaliser (the exponential of it is a softmax, by hand). With ``defs``, also a helper of
    the module that computes one (a log-sum-exp folded pairwise with ``logaddexp``, a running maximum)."""
    return isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Sub) and _calls_any(
        arg.right, _NORMALISERS, defs, _LOG_FOLDS)


# The largest literal scale of a term read as a tie-break (``FeatureTagger._tie_break``).
TIE_BREAK = 1e-6


def _head_indexed(node: ast.expr, loop_vars: set[str]) -> bool:
    """``a[h]`` or ``a[h, ...]`` with ``h`` a loop variable: one entry of the first axis (the heads, on every tensor
    the harness hands over) per iteration."""
    if not isinstance(node, ast.Subscript):
        return False
    first = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
    return isinstance(first, ast.Name) and first.id in loop_vars


def _group_rows(node: ast.Subscript, loop_vars: set[str]) -> bool:
    """``q[h * g:(h + 1) * g]`` (first axis a slice whose bounds move with a loop variable): one group of heads."""
    first = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
    return isinstance(first, ast.Slice) and any(
        isinstance(n, ast.Name) and n.id in loop_vars for b in (first.lower, first.upper) if b is not None
        for n in ast.walk(b))


def _root(e: ast.expr, inverse: bool = False) -> bool:
    """A square root (``sqrt``, ``rsqrt``; with ``inverse`` only ``rsqrt``, which multiplies) in ``e``."""
    names = ("rsqrt",) if inverse else ("sqrt", "rsqrt")
    return any(isinstance(c, ast.Call) and callee(c.func)[0] in names for c in ast.walk(e))


def _norm_or_root(e: ast.expr) -> bool:
    """A norm call or a square root somewhere in ``e``: what a vector divided by it is made a unit one by."""
    return _root(e) or any(isinstance(c, ast.Call) and CANON.get(callee(c.func)[0] or "") == "norm" for c in ast.walk(e))


def _self_contraction(eq: ast.expr) -> bool:
    """An einsum equation that multiplies an operand by itself entry by entry and sums some axes: ``htd,htd->ht``."""
    if not (isinstance(eq, ast.Constant) and isinstance(eq.value, str) and "->" in eq.value):
        return False
    ins, out = eq.value.replace(" ", "").split("->")
    parts = ins.split(",")
    return len(parts) == 2 and parts[0] == parts[1] and set(out) < set(parts[0])


def _leaves(block: list[ast.stmt]) -> bool:
    """The block ends by leaving (a return, a raise, a continue or a break): what it binds does not reach past it."""
    return bool(block) and isinstance(block[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _infinite(e: ast.expr) -> bool:
    """``float("-inf")``, ``-math.inf``, ``torch.inf``, ``np.inf``, ``1e999``: an infinity, the sentinel a loop writes
    over entries it has taken (``s[i] = -inf``), never a bar a score is held to."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        e = e.operand
    if isinstance(e, ast.Constant) and isinstance(e.value, float):
        return e.value in (float("inf"), float("-inf"))
    if isinstance(e, ast.Attribute) and e.attr == "inf":
        return True
    return isinstance(e, ast.Call) and callee(e.func)[0] == "float" and len(e.args) == 1 and \
        isinstance(e.args[0], ast.Constant) and isinstance(e.args[0].value, str) and \
        e.args[0].value.strip().lower().lstrip("+-") in ("inf", "infinity")


def _same(a: ast.expr | None, b: ast.expr | None) -> bool:
    return a is not None and b is not None and ast.dump(a) == ast.dump(b)


def _dim(call: ast.Call, at: int) -> ast.expr | None:
    """The ``dim`` argument of a call (keyword, numpy's ``axis``, or positional at ``at`` counting the receiver's
    arguments)."""
    d = kwarg(call, "dim") or kwarg(call, "axis")
    if d is None and len(call.args) > at:
        d = call.args[at]
    return d


def _on_heads(call: ast.Call, at: int) -> bool:
    """The call works along axis 0 (heads: a GQA group repeated, split or regrouped), not along the tokens."""
    d = _dim(call, at)
    return isinstance(d, ast.Constant) and d.value == 0


def _stepped(it: ast.expr) -> set[str]:
    """``range(a, b, step)``, or consecutive pairs of a list of edges (``zip(e[:-1], e[1:])``, ``zip(e, e[1:])``,
    ``pairwise(e)``, through ``.tolist()``): the loop walks blocks of the tokens, their starts (and ends)."""
    if isinstance(it, ast.Call) and callee(it.func)[0] == "range" and len(it.args) == 3 and not (
            isinstance(it.args[2], ast.Constant) and it.args[2].value in (1, -1)) and not negative(it.args[2]):
        return {"BS"}
    if isinstance(it, ast.Call) and callee(it.func)[0] == "pairwise" and len(it.args) == 1:
        return {"BS"}
    if isinstance(it, ast.Call) and callee(it.func)[0] in ("split", "split_with_sizes", "tensor_split", "chunk",
                                                            "array_split") and it.args and not any(
            isinstance(a, ast.Constant) and isinstance(a.value, str) for a in it.args):
        return {"BS"}  # for piece in torch.split(idx, c): the pieces of a tensor, block by block (no str.split(","))
    if isinstance(it, ast.Call) and callee(it.func)[0] == "zip" and len(it.args) == 2:
        def plain(e: ast.expr) -> ast.expr:
            while isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in ("tolist", "long",
                                                                                                      "int", "cpu"):
                e = e.func.value
            return e

        def shifted(e: ast.expr, start: int | None, stop: int | None) -> ast.expr | None:
            """The sequence ``e`` slices as ``[start:stop]`` (``None``: that bound absent)."""
            if not isinstance(e, ast.Subscript) or not isinstance(e.slice, ast.Slice) or e.slice.step is not None:
                return None
            lo, hi = e.slice.lower, e.slice.upper
            got_lo: object = None if lo is None else (lo.value if isinstance(lo, ast.Constant) else "?")
            got_hi: object = None if hi is None else (
                f"-{hi.operand.value!r}" if isinstance(hi, ast.UnaryOp) and isinstance(hi.op, ast.USub) and
                isinstance(hi.operand, ast.Constant) else "?")
            want_hi = None if stop is None else str(stop)
            return e.value if (got_lo, got_hi) == (start, want_hi) else None

        a, b = plain(it.args[0]), plain(it.args[1])
        later = shifted(b, 1, None)
        earlier = shifted(a, None, -1)
        base = earlier if earlier is not None else a
        if later is not None and ast.unparse(plain(base)) == ast.unparse(plain(later)):
            return {"BS"}
    return set()


def _literal_bound(e: ast.expr) -> bool:
    """A loop bound made of literals and the module's attributes only (``1``, ``self.reach + 1``): a few steps, not
    a walk over the tokens or the blocks."""
    return all(isinstance(x, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Load)) or
               isinstance(x, ast.Attribute) and self_attr(x) or isinstance(x, ast.Name) and x.id == "self"
               for x in ast.walk(e))


def _fixed_count(e: ast.expr) -> bool:
    """A hyper-parameter (``self.n_sink``) or an integer literal: a count set before any data is seen."""
    return self_attr(e) or isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool)


def _broadcast(e: ast.expr) -> bool:
    """An operand laid out for a pairwise (outer) combination: ``x[:, None]``, ``x[None]``, ``x.unsqueeze(d)``,
    ``x.view(-1, 1)`` / ``x.reshape(1, -1)``."""
    for n in ast.walk(e):
        if isinstance(n, ast.Subscript):
            parts = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
            if any(isinstance(x, ast.Constant) and x.value is None for x in parts):
                return True
        if isinstance(n, ast.Call) and callee(n.func)[0] == "unsqueeze":
            return True
        if isinstance(n, ast.Call) and callee(n.func)[0] in ("view", "reshape") and any(
                isinstance(a, ast.Constant) and a.value == 1 for a in n.args):
            return True
    return False


def _mass_reached(loop: ast.For) -> set[str]:
    """Names a loop adds to (``got += ...``) and leaves once they pass a bar (``if got >= bar: break``)."""
    summed = {n.target.id for n in ast.walk(loop) if isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add)
              and isinstance(n.target, ast.Name)}
    tested: set[str] = set()
    for n in ast.walk(loop):
        if isinstance(n, ast.If) and any(isinstance(b, ast.Break) for b in n.body) and isinstance(n.test, ast.Compare):
            tested |= {x.id for x in [n.test.left, *n.test.comparators] if isinstance(x, ast.Name)}
    return summed & tested


def _rope_undone(node: ast.BinOp) -> bool:
    """``x * cos - rotate_half(x) * sin``: the rotary embedding applied backwards (the rotation by minus the angle)."""
    if not isinstance(node.op, ast.Sub):
        return False
    sides = [node.left, node.right]
    return all(isinstance(x, ast.BinOp) and isinstance(x.op, ast.Mult) for x in sides) and any(
        isinstance(c, ast.Call) and callee(c.func)[0] == "rotate_half" for c in ast.walk(node.right))


def _token_axis(dim: ast.expr | None) -> bool:
    """``dim=-2`` or ``dim=1``: the tokens (or queries) of a view's (heads, tokens, channels) tensor, so a reduction
    over it leaves one value per channel."""
    if isinstance(dim, ast.UnaryOp) and isinstance(dim.op, ast.USub) and isinstance(dim.operand, ast.Constant):
        return dim.operand.value == 2
    return isinstance(dim, ast.Constant) and dim.value == 1 and not isinstance(dim.value, bool)


def _per_channel_axis(dim: ast.expr | None, operand: ast.expr | None) -> bool:
    """A reduction over the tokens of a (heads, tokens, channels) tensor: ``dim=-2``, or ``dim=1`` on an operand
    not cut to one head (``k[h]``) nor reshaped (where axis 1 may be the channels)."""
    if not _token_axis(dim):
        return False
    if isinstance(dim, ast.UnaryOp):
        return True
    return operand is not None and not any(
        isinstance(n, ast.Call) and callee(n.func)[0] in ("reshape", "view", "flatten", "squeeze", "select")
        or isinstance(n, ast.Subscript) and not isinstance(
            n.slice.elts[0] if isinstance(n.slice, ast.Tuple) and n.slice.elts else n.slice, ast.Slice)
        for n in ast.walk(operand))


def _heads_to_middle(call: ast.Call, name: str | None) -> bool:
    """``x.transpose(0, 1)``, ``x.permute(1, 0, 2)``, ``x.movedim(0, 1)``, ``x.swapaxes(0, 1)``: the heads' axis moved
    behind the tokens' (so that a reshape merges the heads with the channels)."""
    vals = [a.value if isinstance(a, ast.Constant) else None for a in call.args]
    if len(vals) == 1 and isinstance(call.args[0], (ast.Tuple, ast.List)):
        vals = [e.value if isinstance(e, ast.Constant) else None for e in call.args[0].elts]
    if name in ("transpose", "swapaxes", "swapdims", "movedim", "moveaxis"):
        return sorted(v for v in vals[-2:] if isinstance(v, int)) == [0, 1]
    return name == "permute" and len(vals) >= 2 and vals[0] == 1 and vals[1] == 0


def _merges_heads_into_channels(pattern: ast.expr | None) -> bool:
    """An einops pattern whose output groups the first input axis (the heads) with the last (the channels):
    ``"h t d -> t (h d)"``."""
    if not (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str) and "->" in pattern.value):
        return False
    src, out = pattern.value.split("->", 1)
    axes = src.replace("(", " ").replace(")", " ").split()
    if len(axes) < 2:
        return False
    return any(axes[0] in g.split() and axes[-1] in g.split() for g in re.findall(r"\(([^)]*)\)", out))


def _negated_positions(args: list[ast.expr], tags: list[set[str]]) -> bool:
    """An argument that is positions negated (``-pos``, ``pos * -1``, ``-pos if undo else pos``): a rotation undone."""
    for a, t in zip(args, tags):
        if "P" not in t:
            continue
        for n in ast.walk(a):
            if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and not isinstance(n.operand, ast.Constant):
                return True
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult) and any(
                    negative(x) or isinstance(x, ast.Constant) and isinstance(x.value, (int, float)) and x.value < 0
                    for x in (n.left, n.right)):
                return True
    return False


def _joined(e: ast.expr) -> list[ast.expr]:
    """The parts a concatenation joins: a list or tuple's elements, the sides of a sum of lists (``[k] + [p for
    p in kept]``), a comprehension as one part."""
    if isinstance(e, (ast.List, ast.Tuple)):
        return list(e.elts)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        return _joined(e.left) + _joined(e.right)
    return [e]


NORM_CALLS = frozenset({"norm", "vector_norm"})


def _emptiness_test(node: ast.Compare) -> bool:
    """``x.norm(...) == 0`` (or ``<= eps``, ``> 0``): a norm against zero or a bar below 1e-3, nothing else in the
    test."""
    if len(node.ops) != 1:
        return False
    left, right = node.left, node.comparators[0]

    def is_norm(e: ast.expr) -> bool:
        return isinstance(e, ast.Call) and (isinstance(e.func, ast.Attribute) and e.func.attr in NORM_CALLS
                                            or isinstance(e.func, ast.Name) and e.func.id in NORM_CALLS)

    def small(e: ast.expr) -> bool:
        return isinstance(e, ast.Constant) and isinstance(e.value, (int, float)) and \
            not isinstance(e.value, bool) and 0 <= e.value <= 1e-3

    return is_norm(left) and small(right) or is_norm(right) and small(left)


def _one_side(lt: set[str], rt: set[str], tag: str) -> bool:
    return (tag in lt) != (tag in rt)


def _age_decay(base: set[str], exponent: set[str]) -> bool:
    """A per-token rate read from the token's own key or value (no attention, no query) raised to a power that is a
    position (the token's age): a retention that compounds with age. A constant factor ** age (a positional
    forgetting factor) or attention ** age is not one."""
    return _rate(base) and "P" in exponent and not exponent & DATA_TAGS


def _group_size(e: ast.expr) -> bool:
    """The model's query-group size (``view.model.group_size``, ``model.n_heads // model.n_kv_heads``)."""
    return any(isinstance(n, ast.Attribute) and n.attr in ("group_size", "n_kv_heads", "num_key_value_heads",
                                                             "num_key_value_groups") for n in ast.walk(e))


def _run_ends(e: ast.expr) -> bool:
    """A running count (``cumsum(counts) - 1``: where each run of a sorted sequence ends), not ranked picks."""
    return isinstance(e, ast.Call) and callee(e.func)[0] in ("cumsum", "cumulative_sum")


def _even_edges(e: ast.expr) -> bool:
    """Evenly spaced cut points (``linspace(lo, hi, n + 1)[1:-1]``, ``arange(0, n, step)``): the borders of equal
    segments, not positions of the data."""
    for _ in range(8):
        if isinstance(e, ast.Subscript):
            e = e.value
        elif isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in (
                "float", "long", "int", "to", "round", "floor", "ceil", "contiguous"):
            e = e.func.value
        else:
            break
    return isinstance(e, ast.Call) and callee(e.func)[0] in ("linspace", "arange") and len(e.args) >= 2


def _last_axis_norm(node: ast.expr) -> bool:
    """A norm of each vector (along the last axis, ``dim=-1``, or of a whole vector), not of each channel over the
    tokens (``dim=1``): through the casts and clamps around it."""
    call = _norm_of(node)
    if call is None:
        return False
    dim = kwarg(call, "dim")
    if dim is None:
        return len(call.args) <= 1
    return isinstance(dim, ast.UnaryOp) and isinstance(dim.op, ast.USub) and isinstance(dim.operand, ast.Constant) \
        and dim.operand.value == 1


def _getattr_self(e: ast.expr) -> ast.Attribute | None:
    """``getattr(self, "x", default)`` as the attribute ``self.x`` it reads (None for anything else)."""
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "getattr" and len(e.args) >= 2 and \
            isinstance(e.args[0], ast.Name) and e.args[0].id == "self" and isinstance(e.args[1], ast.Constant) and \
            isinstance(e.args[1].value, str):
        return ast.copy_location(ast.Attribute(value=e.args[0], attr=e.args[1].value, ctx=ast.Load()), e)
    return None


def _rate(t: set[str]) -> bool:
    """A per-token factor read from the token's own key or value alone (no attention, query, position or memory)."""
    return bool(t & {"K", "V"}) and not t & {"A", "Q", "P", "S"}


def _norm_of(node: ast.expr) -> ast.Call | None:
    """The norm call under the casts and clamps around it (``.float()``, ``.clamp_min(eps)``), if ``node`` is one."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
            "float", "double", "clamp", "clamp_min", "clip", "to", "detach"):
        module = isinstance(node.func.value, ast.Name) and node.func.value.id in ("torch", "np", "numpy")
        if module and not node.args:
            break
        node = node.args[0] if module else node.func.value  # torch.clamp_min(x, eps) as x.clamp_min(eps)
    return node if isinstance(node, ast.Call) and CANON.get(callee(node.func)[0] or "") == "norm" else None


def _norm_call(node: ast.expr) -> bool:
    """A norm taken per row (``x.norm(dim=-1)``, ``torch.linalg.vector_norm(x, dim=-1)``), through the casts and
    clamps around it (``.float()``, ``.clamp_min(eps)``)."""
    return _norm_of(node) is not None


def _const_axis(e: ast.expr | None) -> int | None:
    """An axis written as an integer constant (``1``, ``-2``), else None."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) and isinstance(e.operand, ast.Constant) and \
            isinstance(e.operand.value, int) and not isinstance(e.operand.value, bool):
        return -e.operand.value
    if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    return None


def _over_likeness(a: set[str], b: set[str]) -> bool:
    """Per-token scores (attention, no key or value data) against a likeness kernel of the keys (``KSIM``): each score
    spread to the keys alike to its own, a step of a walk on the keys' similarity graph."""
    return any("KSIM" in x and "A" in y and "KSIM" not in y and not y & {"K", "V"} for x, y in ((a, b), (b, a)))


def _swaps_tokens_and_channels(args: list[ast.expr], name: str | None) -> bool:
    """``x.transpose(1, 2)``, ``x.transpose(-1, -2)``, ``x.swapaxes(-2, -1)``, ``x.permute(0, 2, 1)`` (``args``: the
    axes given): the tokens' and the channels' axes of a (heads, tokens, channels) tensor exchanged (``x.t()`` of a
    (tokens, channels) one)."""
    if name == "t" and not args:
        return True
    vals = [_const_axis(a) for a in args]
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        vals = [_const_axis(e) for e in args[0].elts]
    axes = [v for v in vals if v is not None]
    if name in ("transpose", "swapaxes", "swapdims") and len(axes) == 2 == len(vals):
        return sorted(v - 3 if v > 0 else v for v in axes) == [-2, -1]  # axes of a 3-D tensor, counted back
    return name == "permute" and vals == [0, 2, 1]


def _einsum_token_letter(sub: str) -> str | None:
    """The token axis' letter of a (heads, tokens, channels) or (tokens, channels) operand's einsum subscript (the
    second last): ``hnd`` -> ``n``."""
    letters = sub.replace("...", "").replace(" ", "")
    return letters[-2] if len(letters) >= 2 else None


def _mentions(e: ast.expr, name: str) -> bool:
    if name.startswith("self."):
        return any(isinstance(n, ast.Attribute) and self_attr(n) and n.attr == name[5:] for n in ast.walk(e))
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(e))


def _uncast(e: ast.expr) -> ast.expr:
    """``x`` under up to three casts (``.float()``, ``.to(...)``, ``.long()``, ``.int()``, ``.double()``)."""
    for _ in range(3):
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in ("float", "to", "long",
                                                                                               "int", "double"):
            e = e.func.value
    return e


def _picked_indicator(e: ast.expr) -> bool:
    """``(top.values > 0).float()``: the picks' own values compared with a constant bar, a one (or zero) per pick."""
    e = _uncast(e)
    return isinstance(e, ast.Compare) and len(e.comparators) == 1 and isinstance(e.comparators[0], ast.Constant) \
        and isinstance(e.left, ast.Attribute) and e.left.attr == "values"


def _unit(e: ast.expr) -> bool:
    """A one or a tensor of ones: ``1``, ``1.0``, ``torch.ones(n)``, ``ones_like(top, dtype=...)``, ``x.new_ones(n)``,
    ``torch.full(s, 1.0)`` (through a cast)."""
    e = _uncast(e)
    if isinstance(e, ast.Constant):
        return e.value == 1
    if isinstance(e, ast.Call):
        name = callee(e.func)[0]
        if name in ("ones", "ones_like", "new_ones"):
            return True
        if name in ("full", "full_like", "new_full") and len(e.args) >= 2:
            return isinstance(e.args[-1], ast.Constant) and e.args[-1].value == 1
    return False


def _mentions_any(e: ast.expr, names: set[str]) -> bool:
    """Whether ``e`` reads one of ``names``."""
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(e))


def _mentions_as_data(e: ast.expr, name: str) -> bool:
    """``name`` read as the data of ``e``, not only inside an index (``x[lo:hi] @ a`` carries x; ``u[mates] @ u[hub]``
    reads ``mates`` as an index into u only)."""
    if isinstance(e, ast.Name):
        return e.id == name
    if isinstance(e, ast.Subscript):
        return _mentions_as_data(e.value, name)
    return any(_mentions_as_data(c, name) for c in ast.iter_child_nodes(e) if isinstance(c, ast.expr))


def _queries_only(t: set[str]) -> bool:
    """Tags of the queries alone (their rows, their Gram matrix): no keys, attention or values in them."""
    return "Q" in t and not t & {"K", "A", "V"}


def _splice(parts: ast.List | ast.Tuple) -> bool:
    """``[x[:i], x[i + 1:]]``: slices of one and the same tensor, joined back without what lies between them."""
    bases = [ast.dump(p.value) for p in parts.elts if isinstance(p, ast.Subscript) and isinstance(p.slice, ast.Slice)]
    return len(parts.elts) >= 2 and len(bases) == len(parts.elts) and len(set(bases)) == 1


def _one_bar(e: ast.expr) -> bool:
    """A single number (``0.95``, ``self.share``, ``torch.tensor([self.share])``, ``np.array([0.9])``): one bar, not a
    set of quantiles."""
    if isinstance(e, ast.Call) and callee(e.func)[0] in ("tensor", "as_tensor", "full", "array", "asarray") and e.args:
        e = e.args[0] if callee(e.func)[0] != "full" else e.args[1] if len(e.args) > 1 else e.args[0]
        if isinstance(e, (ast.List, ast.Tuple)):
            if len(e.elts) != 1:
                return False
            e = e.elts[0]
    return isinstance(e, ast.Constant) and isinstance(e.value, (int, float)) or \
        isinstance(e, ast.Attribute) and self_attr(e)


def _self_pairwise(node: ast.Compare) -> bool:
    """``s[..., None, :] > s[..., :, None]`` (or ``s.unsqueeze(1) < s.unsqueeze(2)``): one tensor broadcast against
    itself along two different new axes, every entry compared with every other."""
    if len(node.comparators) != 1 or not isinstance(node.ops[0], (ast.Gt, ast.GtE, ast.Lt, ast.LtE)):
        return False

    def spread(e: ast.expr) -> tuple[str, str] | None:
        if isinstance(e, ast.Subscript):
            elts = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
            nones = tuple(i for i, x in enumerate(elts) if isinstance(x, ast.Constant) and x.value is None)
            return (ast.dump(e.value), repr(nones)) if nones else None
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "unsqueeze" and e.args:
            return ast.dump(e.func.value), ast.dump(e.args[0])
        return None

    a, b = spread(node.left), spread(node.comparators[0])
    return a is not None and b is not None and a[0] == b[0] and a[1] != b[1]


def _matmul_operands(e: ast.AST) -> list[list[ast.expr]]:
    """The operands of every matrix product written in ``e``: ``a @ b``, ``torch.matmul(a, b)``, ``a.mm(b)``,
    ``torch.einsum(eq, a, b)``."""
    out: list[list[ast.expr]] = []
    for n in ast.walk(e):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
            out.append([n.left, n.right])
        elif isinstance(n, ast.Call):
            name, receiver = callee(n.func)
            if CANON.get(name or "") != "matmul":
                continue
            args = list(n.args[1:]) if name == "einsum" else list(n.args)
            root = receiver
            while isinstance(root, ast.Attribute):
                root = root.value
            if receiver is not None and isinstance(n.func, ast.Attribute) and not (
                    isinstance(root, ast.Name) and root.id in ("torch", "np", "numpy", "F", "scipy", "jnp", "linalg")):
                args = [receiver, *args]
            if len(args) >= 2:
                out.append(args)
    return out


def _carried(loop: ast.For | ast.While, names: set[str]) -> set[str]:
    """Names of ``names`` a loop's body reads before it binds them: what one iteration leaves for the next."""
    out = set()
    for name in names:
        stores = [n.lineno for n in ast.walk(loop) if isinstance(n, ast.Name) and n.id == name and
                  isinstance(n.ctx, ast.Store)]
        if not stores:
            continue
        first = min(stores)
        test = [loop.test] if isinstance(loop, ast.While) else []
        if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and (n.lineno < first or
               any(n is m for t in test for m in ast.walk(t))) for n in ast.walk(loop)):
            out.add(name)
    return out


def _shrinks(node: ast.stmt, loop_vars: set[str], exprs: dict[str, ast.expr] | None = None) -> bool:
    """A size divided down inside a loop: ``b //= 2``, ``b = b // 2``, ``b >>= 1``, ``b = top >> level`` or
    ``b = top // 2 ** level`` with ``level`` the loop's variable, ``b = half`` with ``half = b // 2`` bound before
    (``exprs``: what names were last bound to): each iteration works at a finer granularity."""
    def const(e: ast.expr) -> float | None:
        return e.value if isinstance(e, ast.Constant) and isinstance(e.value, (int, float)) and \
            not isinstance(e.value, bool) else None

    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        c = const(node.value)
        return c is not None and (isinstance(node.op, (ast.FloorDiv, ast.Div)) and c >= 2 or
                                  isinstance(node.op, ast.RShift) and c >= 1)
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        v = node.value
        if isinstance(v, ast.Call) and callee(v.func)[0] in ("max", "int"):
            arith = [a for a in v.args if isinstance(a, ast.BinOp)]
            v = arith[0] if len(arith) == 1 else v  # max(1, b // 2), int(b / 2)
        if not isinstance(v, (ast.BinOp, ast.Name)):
            return False
        target = node.targets[0].id
        if isinstance(v, ast.Name) and exprs is not None and v.id in exprs and v.id != target:
            v = exprs[v.id]  # b = half, half = b // 2
        if not isinstance(v, ast.BinOp):
            return False
        if isinstance(v.left, ast.Name) and v.left.id == target:
            c = const(v.right)
            return c is not None and (isinstance(v.op, (ast.FloorDiv, ast.Div)) and c >= 2 or
                                      isinstance(v.op, ast.RShift) and c >= 1)
        level = {n.id for n in ast.walk(v.right) if isinstance(n, ast.Name)} & loop_vars
        return bool(level) and (isinstance(v.op, ast.RShift) or isinstance(v.op, (ast.FloorDiv, ast.Div)) and
                                isinstance(v.right, ast.BinOp) and isinstance(v.right.op, ast.Pow))
    return False


def _decreasing_sizes(it: ast.expr) -> bool:
    """A loop over a literal run of sizes, each smaller than the one before (``for b in (64, 16, 4, 1)``)."""
    if not isinstance(it, (ast.Tuple, ast.List)) or len(it.elts) < 2:
        return False
    vals = [e.value for e in it.elts if isinstance(e, ast.Constant) and isinstance(e.value, int)]
    return len(vals) == len(it.elts) and all(a > b for a, b in zip(vals, vals[1:]))


def _ahead(node: ast.expr) -> bool:
    """An offset that moves positions forward: a positive constant, or a size or attribute (a window length)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool) and node.value > 0
    return isinstance(node, (ast.Attribute, ast.Name))


# in-place writes whose arguments flow into the tensor written, and those among them that add into it
_ADDS_IN_PLACE = frozenset({"add_", "index_add_", "scatter_add_", "addcmul_", "addcdiv_"})
_WRITES_IN_PLACE = _ADDS_IN_PLACE | frozenset({"copy_", "index_copy_", "index_put_", "put_", "scatter_",
                                               "masked_scatter_", "scatter_reduce_"})


# calls that only reshape or cast a tensor: its values, laid out otherwise
_RESHAPES = frozenset({"unsqueeze", "squeeze", "view", "reshape", "transpose", "t", "float", "double", "to", "clone",
                       "contiguous", "flatten", "permute", "detach", "mT", "T"})

def _unreshaped(e: ast.expr) -> ast.expr:
    """``e`` with the reshapes and casts around it taken off (``m.squeeze(1)`` -> ``m``)."""
    while isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in _RESHAPES:
        e = e.func.value
    return e


# calls that keep an index tensor's entries where they are (clipped, cast, laid out otherwise)
_INDEX_KEEPING = frozenset({"clamp", "clamp_min", "clamp_max", "clip", "long", "int", "to", "flatten", "reshape",
                            "view", "contiguous"})

class FeatureTagger(ast.NodeVisitor):
    """Tags every local name with the interface data it was computed from (K keys, V values, Q queries,
    A attention, P positions, L layer index, S remembered state, W fitted numbers: a literal table, a trained
    layer or loaded weights; RND random draws) and records features as it goes."""

    def __init__(self, defs: Defs, self_reads: set[str] | None = None) -> None:
        self.defs = defs
        self.self_reads = self_reads  # attributes read anywhere in the module; None: no dead-value pruning
        self.state_tables: set[str] = set()  # ``syntax.state_tables``: an entry read back is remembered state
        self.dead: set[int] = set()  # assignments whose value never reaches what a function returns
        self.denominators: set[int] = set()  # assignments of norms read only as a cosine's denominator
        # view.recall(name): with ``recall_tags``, the tags of what view.remember(name, ...) stores (found by an
        # earlier run), else a remembered score; ``stored``/``recalled``: what this run saw stored and recalled
        self.recall_tags: dict[str | None, set[str]] | None = None
        self.recall_default: set[str] = {"A"}
        self.stored: dict[str | None, set[str]] = {}
        self.recalled: set[str | None] = set()
        self.tags: dict[str, set[str]] = {}
        self.found: dict[str, int] = {}
        self.read: set[str] = set()  # the interface data live code reads (``API_SOURCES``' tags)
        self.stack: list[int] = []
        self.owner: str | None = None
        self.loop = 0
        self.loop_keys: dict[str, str] = {}  # loop variables over literal names, while such a loop runs per name
        self.current: str = ""
        self.aliases: dict[str, str] = {}
        self.normalising = 0
        self.rescaling = 0  # inside x's own maximum dividing x (``_rescaled``): a rescale, no aggregation
        self.kept_rank: set[str] = set()  # self attributes a ranking (a selection) is kept in, across calls
        self.attr_groups: list[frozenset[str]] = []  # self attributes bound together from one call (a store's accessors)
        self.layer_test = False  # a hook tests the layer index
        self.exprs: dict[str, ast.expr] = {}  # local name -> the expression it was last bound to (sizes in shapes)
        self.instances: dict[str, str] = {}  # local name -> the class of the module it holds an instance of
        # a node read as another written out once (``curve @ h`` as ``curve.__matmul__(h)``, ``x.gt(y)`` as ``x > y``),
        # by the node's id, kept with the node so that the ids the reader keys by stay unique
        self.written_out: dict[int, tuple[ast.AST, ast.expr | None]] = {}
        self.param_args: dict[str, ast.expr] = {}  # the inlined helper's parameters -> the caller's arguments
        # local name -> the attributes (their tags) an instance of a class of the module holds: what its __init__
        # stored, updated by its methods run on it; and by constructor call, until the call is bound to a name
        self.objects: dict[str, dict[str, set[str]]] = {}
        self.constructed: dict[int, dict[str, set[str]]] = {}
        # the tuples a sequence holds, element by element: a list name's (built by a comprehension of tuples or by
        # .append((a, b))), a comprehension's or a helper call's (by id); a loop over them binds each name its own
        self.seq_elts: dict[str, list[set[str]]] = {}
        self.node_seq: dict[int, list[set[str]]] = {}
        # (lower, upper) names bound together from one tuple of positions (for a, b in spans): x[a:b] is one segment
        self.span_pairs: set[tuple[str, str]] = set()
        # name -> what loops added into it since it was bound (nxt += x[lo:hi] @ part: a product summed tile by tile)
        self.accumulated: dict[str, list[ast.expr]] = {}
        self.head_vars: set[str] = set()  # loop variables running over the KV heads (range(view.n_kv_heads))
        # name -> the line of the squared row norms it holds (a term of ||a||^2 - 2 a.b + ||b||^2 read later)
        self.sq_norm_lines: dict[str, int] = {}
        # names bound to a hyper-parameter or a literal, or the smaller of one and something else
        # (``head = min(self.n_sink, size - 1)``): a count of a few, set before any data is seen
        self.few: set[str] = set()
        # names bound to the values of a top-k or a sort (``vals, idx = p.topk(k)``): the ranked weights themselves
        self.ranked_values: set[str] = set()
        self.constants: dict[str, float] = {}  # module and class constants bound to a number (name, self.name)
        self.tie_breaks: dict[str, int] = {}  # features only a tie-break computes (``_tie_break``)
        # where the sums read as "a score plus a tie-break" stand: (line, column, end line, end column, main is left)
        self.tie_nodes: set[tuple[int, int, int | None, int | None, bool]] = set()
        self.loop_vars: set[str] = set()  # the variables of the loops being run
        self.small_ranges: set[str] = set()  # loop variables over ranges with literal or attribute bounds
        self.pending_exp: dict[int, int] = {}
        self.pending_nucleus: dict[int, int] = {}  # shares of each query's own sorted attention (``finish``)
        self.pending_cumsum: dict[int, int] = {}  # running sums of attention not (yet) seen differenced  # exp of query-key logits not (yet) seen divided by its own sum
        # the loops being run, innermost last: whether they walk blocks of tokens, the names a ranking selected
        # from inside them and the names concatenated inside them (``_loop_end``: a kept set refilled per chunk)
        self.frames: list[dict[str, Any]] = []
        self.pending_random: dict[int, int] = {}  # draws of no data not (yet) seen turned into a fixed rotation
        # an arithmetic node's operands' tags, for ``_binop_storage``
        self._sides: dict[int, tuple[set[str], set[str]]] = {}
        # names (and self attributes) bound to a local function wrapped by vmap / partial / compile, with the tags of
        # the arguments a partial binds: calling them runs that function (``_wrapped``)
        self.wrapped: dict[str, tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[set[str]]]] = {}
        # a tuple returned by the helper being run, element by element (None: none yet; False: returns of other
        # shapes), and the same for each call of a helper: ``a, b = helper(x)`` binds each name its own element
        self.return_elts: list[set[str]] | bool | None = None
        # the object a helper returns when it returns one it constructs (``Digest.of(keys)`` ending in ``return
        # Digest(top, ...)``): its class and attributes, by the helper call's id
        self.return_obj: tuple[str, dict[str, set[str]]] | None = None
        self.call_objs: dict[int, tuple[str, dict[str, set[str]]]] = {}
        self.call_elts: dict[int, list[set[str]]] = {}

    def finish(self) -> None:
        """Features decided only once every hook has run: an exponential of the logits never normalised."""
        for line in sorted(self.pending_exp):
            self.add("exp_logit", line)
        for line in sorted(self.pending_cumsum):
            self.add("accumulate", line)
        for line in sorted(self.pending_nucleus):
            self.add("attention_coverage", line)
        for line in sorted(self.pending_random):
            self.add("random", line)

    def add(self, key: str, line: int) -> None:
        self.found.setdefault(key, line)
        if key in ("block_scores", "block_keys"):
            for frame in self.frames:
                frame["blocks_scored"] = True  # blocks of tokens scored inside the loops being run

    def run_def(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if id(fn) in self.stack or len(self.stack) > INLINE_DEPTH:
            return
        self.stack.append(id(fn))
        if self.self_reads is not None:
            self.dead |= dead_statements(fn, self.self_reads)
        self.denominators |= _denominator_norms(fn)
        saved, saved_cur = self.owner, self.current
        self.owner, self.current = self.defs.owner.get(id(fn), saved), fn.name
        for stmt in fn.body:
            self.visit(stmt)
        self.owner, self.current = saved, saved_cur
        self.stack.pop()

    def visit(self, node: ast.AST) -> None:
        if id(node) in self.dead:
            return None  # computed and thrown away: no part of the rule
        return super().visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        return None

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        return None

    def _few_bound(self, e: ast.expr) -> bool:
        """A count that is a constant, a module attribute or a name bound to few, or a ``min`` with one of those
        among its arguments (never more than it)."""
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "min" and e.args:
            return any(self._few_bound(a) for a in e.args)
        return isinstance(e, ast.Constant) or self_attr(e) or isinstance(e, ast.Name) and e.id in self.few

    # tags of an expression ------------------------------------------------------------------------
    def tag(self, node: ast.expr | None) -> set[str]:
        if node is None:
            return set()
        if isinstance(node, ast.Name):
            return set(self.tags.get(node.id, set()))
        if isinstance(node, ast.Attribute):
            if node.attr in SIZES:
                base = self.tag(node.value)
                # the view's layer index is no size when it places tokens: a span moving with it is a ladder
                if node.attr == "budget" and "VIEW" in base:
                    return {"BUD"}  # the view's budget: a count of tokens (a share of attention times it is a quota)
                return {"LI"} if node.attr == "layer" and "VIEW" in base else set()
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                # "@attr": made from the module's own value (a new value made from the old one is a running update)
                return set(self.tags.get(f"self.{node.attr}", set())) | {f"@{node.attr}"}
            if isinstance(node.value, ast.Name) and node.attr in self.objects.get(node.value.id, {}):
                return set(self.objects[node.value.id][node.attr])  # obj.attr: what the object's methods stored there
            base = self.tag(node.value)
            base = base - {"BAX0"} if node.attr in ("T", "mT") else base  # (the block's axis is no longer the first)
            if node.attr in ("T", "mT") and base & {"K", "V"} and not base & {"A", "Q"}:
                return (base - {"VIEW"}) ^ {"TT"}  # tokens and channels exchanged (twice: back as they were)
            if node.attr in API_SOURCES and not base - {"VIEW"} and ("VIEW" in base or isinstance(node.value, ast.Name)):
                if "VIEW" in base:
                    self.read.add(API_SOURCES[node.attr])
                return {API_SOURCES[node.attr]}
            return base - {"VIEW"}
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, (ast.BinOp, ast.Subscript)):
            overloaded = self._overloaded(node)
            if overloaded is not None:
                return self.call(overloaded)
        if isinstance(node, ast.Subscript):
            t = self.tag(node.value)
            self._slice_features(node, t)
            st = self.tag(node.slice)
            if "LK" in t and self_attr(node.value) and any(
                    isinstance(x, ast.Attribute) and x.attr == "layer" and "VIEW" in self.tag(x.value)
                    for x in [node.slice]):
                t = t - {"LK"}  # self.kept[view.layer]: this layer's own keys from an earlier call, no other layer's
            if self_attr(node.value) and not t & (DATA_TAGS | {"VIEW"}) and any(
                    isinstance(x, ast.Attribute) and x.attr == "layer" and "VIEW" in self.tag(x.value)
                    for x in [node.slice]):
                t = t | {"LI"}  # self.depth[view.layer]: a number per layer moves with the layer, as its index does
            if self._state_entry(node.value, node.slice):
                t = t | {"S"}  # self.memo[view.layer]: what an earlier call for this layer stored
            if isinstance(node.value, ast.Attribute) and node.value.attr in ("keys", "values") and \
                    "VIEW" in self.tag(node.value.value) and _head_indexed(node, self.loop_vars):
                t = t | {"H1"}  # view.keys[h, ...] in a loop over the heads: one head's, no head axis left
            elif t & {"K", "V"} and not t & {"A", "Q", "H1"} and _head_indexed(node, self.head_vars):
                t = t | {"H1"}  # keys[h, :n] of a copy of the keys, h running over the KV heads: one head's
            if isinstance(node.value, ast.Attribute) and node.value.attr == "queries" and \
                    "VIEW" in self.tag(node.value.value) and _group_rows(node, self.loop_vars):
                t = t | {"G1"}  # view.queries[h * g:(h + 1) * g]: one KV head's group of query heads
            if "QZ" in st and st & {"K", "V"} and not st & {"A", "Q", "R"} and not t & (DATA_TAGS | {"VIEW"}):
                return t | st  # table[codes]: a level table looked up by the entries' low-bit codes, dequantised
            if "QZI" in st and (t | st) & {"K", "V"} and not (t | st) & {"A", "Q"}:
                self.add("quantised", node.lineno)  # levels[nearest]: each entry replaced by its nearest level
                self._quantised_in(t | st, node.lineno)
                return (t | st | {"QZ"}) - {"QZI"}
            if "BID" in t and "R" in st and st & DATA_TAGS:
                t = t | {"BIDR"}  # segment ids in a score's order (cell[by_score]): sorted stably by segment next,
                # a ranking within each segment (a two-key sort)
            if "R" in st and t & (DATA_TAGS | {"I", "P"}):
                t = t | {"SEL"}  # entries picked by a ranking
                if "I" in t and not t & (DATA_TAGS | {"P"}):
                    t = t | {"R"}  # token indices read in a ranking's order (free[scores[free].argsort()]): a ranking
            if self._indexes_beside(node.slice):
                self.add("pick_neighbours", node.lineno)  # x[top + d]: what stands beside the chosen tokens
            if t & {"P", "I"} and not t & DATA_TAGS and self._lattice_index(node.slice, st) and not (
                    isinstance(node.value, ast.Attribute) and node.value.attr == "query_positions"):
                # (the queries' positions at a lattice: which probe queries read, no token kept)
                self.add("uniform_positions", node.lineno)  # free[linspace(0, n - 1, k).long()]: evenly spaced
            if self._sorted_quota(node):
                self.add("group_budget", node.lineno)
            elif self._sorted_head_quota(node):
                self.add("head_budget", node.lineno)
            if "KSIMC" in st and t & {"K", "V"} and not t & {"A", "Q", "KSIM"} and not isinstance(node.slice, ast.Slice):
                t = t | {"ASG"}  # keys[members], members the keys linked to one above a likeness bar: one group of
                # them (averaged into its representative, a leader clustering)
            if "ASG" in st and t & DATA_TAGS and "ASG" not in t:
                sl = node.slice.id if isinstance(node.slice, ast.Name) else None
                if isinstance(node.slice, ast.Compare) or isinstance(self.exprs.get(sl or ""), ast.Compare) or \
                        "Q" in t:
                    # x[assign == c]: the members of one cluster (their mean is its centre: a Lloyd step); a query's
                    # scores against the centres read at each key's code (table[:, codes]): scored by its cluster
                    t = t | {"ASG"}
            # the budget in an index (x[:, n - budget:]) picks entries; it does not scale them
            return t | (self._subscript_tags(node, t, st) - ({"BUD"} - t))
        if isinstance(node, ast.BinOp):
            tagged = self._tag_binop(node)
            operands = self._sides.pop(id(node), None)
            if operands is None:
                return tagged
            if isinstance(node.op, ast.Mult) and any("A" in a and "BUD" in b for a, b in (operands, operands[::-1])):
                tagged = tagged | {"QTA"}  # a share of attention times the budget: how many tokens a part gets
            if isinstance(node.op, ast.MatMult) and "BAX0" in operands[0] and "BAX0" in operands[1]:
                tagged = tagged - {"BLK", "BAX0"}  # x[lo:hi] @ rows[lo:hi]: the product sums over the tile's axis (a
                # vector-matrix product computed tile by tile), no block of tokens left in what it gives
            gained = self._binop_storage(node, operands[0], operands[1], tagged)
            return (tagged - {"A"}) | gained if "HSIM" in gained else tagged | gained
        if isinstance(node, ast.UnaryOp):
            return self.tag(node.operand)
        if isinstance(node, ast.Compare) and _self_pairwise(node):
            # s[:, None, :] > s[:, :, None]: every score against every other of the same row; summed, each one's
            # rank (a sort by counting wins), no score against a bar
            return self.tag(node.left) | {"R"}
        if isinstance(node, ast.Compare):
            before = {k: self.found[k] for k in ("key_norm", "value_norm") if k in self.found}
            sides = [self.tag(node.left), *(self.tag(c) for c in node.comparators)]
            if _emptiness_test(node):
                # c.norm(dim=1) == 0: whether a row is all zeros (an empty cluster, a padded slot), a guard around a
                # division or a fallback; no row is ranked by its size
                for k in ("key_norm", "value_norm"):
                    if k not in before and self.found.get(k) == node.lineno:
                        del self.found[k]
            t = set().union(*sides)
            exprs = [node.left, *node.comparators]
            if any(isinstance(x, ast.Attribute) and x.attr == "layer" and "VIEW" in self.tag(x.value)
                   for e in exprs for x in ast.walk(e)):
                self.layer_test = True  # the view's layer index tested: some layers do otherwise
            vis = "A" in t and any(isinstance(c, ast.Constant) and not isinstance(c.value, bool) and c.value == 0
                                   for c in exprs) and not any(isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops)
            if sum(bool(x & {"I", "P"}) and not x & DATA_TAGS for x in sides) >= 2:
                out_pair = t | {"PAIR"}  # index against index: a visibility (causal) matrix, counted once summed
            elif t & {"I", "P"} and not t & DATA_TAGS:
                out_pair = t | {"SPAN"}  # positions against a bound: a span of tokens (the first ones, the newest)
            else:
                out_pair = t
            if "ASG" in t:
                out_pair = out_pair | {"ASG"}
            if all(isinstance(o, ast.Eq) for o in node.ops) and any({"R", "A", "QROW"} <= x for x in sides) and \
                    any(x & {"I", "P"} and not x & (DATA_TAGS | {"R"}) for x in sides):
                # a.argmax(-1) == row + 1: whether each row's most attended token is the one a position of the row
                # names (the token a copy writes next): a head's copy (retrieval, induction) score
                self.add("copy_score", node.lineno)
            if "KSIM" in t and not t & {"A", "Q"} and not vis:
                out_pair = out_pair | {"KSIMC"}  # key likeness against a bar: which keys are linked to which
            if "IS" in t:
                out_pair = out_pair | {"ADM"}  # (row + column) compared: an anti-diagonal mask
            if "DD" in t and all(isinstance(o, ast.Eq) for o in node.ops):
                out_pair = out_pair | {"DDM"}  # (row - column) == d: one diagonal (a query-key distance) picked
            elif "DD" in t and not t & DATA_TAGS:
                out_pair = out_pair | {"PAIR"}  # the query-key distance against a bound: a visibility matrix
            sentinel = any(_infinite(x) for x in exprs)  # s[i] == -inf: taken already (the loop's own mark), no bar
            sentinel = sentinel or len(exprs) == 2 and self._own_extreme(exprs[0], exprs[1])  # (its group's best)
            if "A" in t and not t & {"P", "R", "I"} and not vis and not sentinel:
                out_pair = out_pair | {"AC"}  # a token's attention against a bar: the tokens strongly attended
            elif not vis and not sentinel and any("A" in s and not s & {"P", "R", "I"} for s in sides) and all(
                    "A" in s or not s & DATA_TAGS for s in sides) and not any(
                    isinstance(o, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for o in node.ops):
                out_pair = out_pair | {"AC"}  # attention against a bar made of positions (1 / how many it sees)
            quota = any("QTA" in s for s in sides)  # a share of attention times the budget: a count, no score
            # s[second] > s[first]: two tokens' scores of one tensor against each other, a match of a tournament (a
            # ranking, pair by pair), no bar
            # (nb = s[nbrs]; nb > s[:, None])
            first, second = [self._resolved(e) if e is not None else None for e in (exprs + [None, None])[:2]]
            quota = quota or len(exprs) == 2 and isinstance(first, ast.Subscript) and \
                isinstance(second, ast.Subscript) and _same(first.value, second.value) and \
                not _same(first.slice, second.slice)
            quota = quota or sentinel
            if not vis and not quota and any(_attention_side(s) for s in sides) and any(
                    "A" not in s for s in sides) and not any(
                    isinstance(o, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for o in node.ops):
                # attention against a bar that is no attention: a constant, an attribute, or a bar computed from
                # positions or sizes (1 / the number of tokens a query sees: the average attention)
                self.add("attention_threshold", node.lineno)
            if len(exprs) == 2 and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Gt, ast.GtE, ast.Lt, ast.LtE)):
                # positions at or after a start that moves with the layer index (pos >= lo, lo < pos), the start not
                # a recent window's (n - w: a window whose length varies is no span of the middle)
                ge = isinstance(node.ops[0], (ast.Gt, ast.GtE))
                pos, bound = (0, 1) if ge else (1, 0)
                if sides[pos] & {"P", "I"} and not sides[pos] & (DATA_TAGS | {"LI"}) and "LI" in sides[bound] and \
                        not sides[bound] & DATA_TAGS and not self._tail_bound(exprs[bound]):
                    self.add("layer_span", node.lineno)
            # the token index counted from the newest back, below a number: the last tokens (a recent window)
            from_end = "REVI" in t and not t & (DATA_TAGS | {"BID", "W", "RND", "BLK"}) and len(node.ops) == 1 and \
                isinstance(node.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE))
            if from_end:
                self.add("recent", node.lineno)
            elif len(exprs) == 2 and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Gt, ast.GtE, ast.Lt, ast.LtE)):
                # the token index (or position) at or past the count less a width (i >= n - w): the newest w tokens
                ge = isinstance(node.ops[0], (ast.Gt, ast.GtE))
                idx, bound = (0, 1) if ge else (1, 0)
                limit = exprs[bound]
                # (the width may be computed from the data, a span per head: n less it is still where the newest end)
                if sides[idx] & {"I", "P", "LIVEIDX"} and not sides[idx] & (DATA_TAGS | {"BID", "W", "RND", "BLK", "LI"}) \
                        and isinstance(limit, ast.BinOp) and isinstance(limit.op, ast.Sub) and \
                        not self.tag(limit.left) & (DATA_TAGS | {"R", "SEL"}) and not any(
                            isinstance(x, ast.Attribute) and x.attr in ("query_positions",) for x in ast.walk(exprs[bound])):
                    self.add("recent", node.lineno)
            # positions (or the token index, an arange) below a number: the first tokens
            index = bool(t & {"I", "LIVEIDX"}) and not t & (DATA_TAGS | {"BID", "W", "RND", "BLK"})
            if not from_end and ("P" in t or index) and "DD" not in t and not any(
                    isinstance(o, (ast.Is, ast.IsNot)) for o in node.ops) and any(
                    isinstance(c, ast.Constant) and isinstance(c.value, int) or self_attr(c) or self._first_plus(c) or
                    isinstance(c, ast.Name) and c.id in self.defs.int_consts and c.id not in self.tags
                    for c in [node.left, *node.comparators]):
                self.add("sinks", node.lineno)  # positions < 4: the first tokens
            if "A" in t and not vis and not quota and not t & {"P", "R", "I"} and not any(
                    isinstance(o, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for o in node.ops):
                self.add("attention_threshold", node.lineno)  # attention against a threshold (counted, kept)
            self._gate(t, node.lineno)
            if sum("RND" in x and not x & {"K", "Q", "A"} for x in sides) and sum(
                    bool(x & {"K", "Q", "A"}) for x in sides):
                self.add("importance_sampling", node.lineno)  # uniform draws against a data-made probability
            if "RND" in t and t & {"K", "Q"} and "A" not in t and "ABS" not in t and any(
                    isinstance(c, ast.Constant) and c.value == 0 for c in [node.left, *node.comparators]):
                # a random projection of keys or queries against 0: a hash bit (a magnitude against a small bar,
                # |r_ii| < eps, guards a division and splits nothing by direction)
                self.add("hashing", node.lineno)
                out_pair = out_pair | {"SGN"}
            if vis:
                return (out_pair - {"A", "R", "BUD"}) | {"VIS"}  # attention != 0: which queries see a key (a causal mask)
            return out_pair - {"BUD"}  # a mask, no count: attention times it is no share of the budget (a quota)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            out: set[str] = set()
            for e in node.elts:
                out |= self.tag(e)
            return out | ({"W"} if fitted_literal(node) else set())
        if isinstance(node, ast.IfExp):
            self._gate(self.tag(node.test), node.lineno)
            return self.tag(node.body) | self.tag(node.orelse)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            for g in node.generators:
                it = self.tag(g.iter) | _stepped(g.iter)
                self._bind_each(g.target, g.iter, it)
            self.loop += 1
            if isinstance(node.elt, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in node.elt.elts):
                each = [self.tag(e) for e in node.elt.elts]
                self.node_seq[id(node)] = each
                t = set().union(*each) | ({"W"} if fitted_literal(node.elt) else set())
            else:
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

    def _normed_source(self, node: ast.expr) -> str | None:
        """"K" or "V" when ``node`` is a norm of the keys or of the values themselves (``view.keys.float().norm()``,
        ``k.norm()`` with ``k`` read off the keys alone), read without tagging anything; None for a norm of anything
        else (a difference: a relative residual ||v - p|| / ||v|| is one quantity's size, not two norms)."""
        while isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute):
                recv = f.value
                module = isinstance(recv, ast.Name) and not self.tags.get(recv.id) or \
                    isinstance(recv, ast.Attribute) and recv.attr not in API_SOURCES
                # torch.norm(x), torch.linalg.vector_norm(x): the data is the argument; x.norm(), x.float(): the receiver
                node = node.args[0] if node.args and module else recv
            elif node.args:
                node = node.args[0]
            else:
                return None
        if isinstance(node, ast.Attribute) and node.attr in ("keys", "values") and isinstance(node.value, ast.Name) \
                and "VIEW" in self.tags.get(node.value.id, set()):
            return API_SOURCES[node.attr]
        if isinstance(node, ast.Name):
            t = self.tags.get(node.id, set()) & DATA_TAGS
            return next(iter(t)) if t in ({"K"}, {"V"}) else None
        return None

    def _floored(self, node: ast.Call, receiver: ast.expr | None) -> bool:
        """``torch.maximum(a, a.max() * c)``, ``a.maximum(floor)``: a tensor against a single number (a full reduction,
        a constant, a product of them): a floor clamped under it, no largest value over the queries. (``max``'s second
        argument may be a dimension: only the two-tensor forms are read.)"""
        if callee(node.func)[0] not in ("maximum", "fmax"):
            return False
        others = list(node.args[1:]) if not self._on_tensor(receiver) else list(node.args)
        others += [k.value for k in node.keywords if k.arg == "other"]

        def one_number(e: ast.expr) -> bool:
            if isinstance(e, ast.Constant) or isinstance(e, ast.UnaryOp) and isinstance(e.operand, ast.Constant):
                return True
            if isinstance(e, ast.BinOp):
                return one_number(e.left) and one_number(e.right) or (
                    one_number(e.left) and self_attr(e.right) or self_attr(e.left) and one_number(e.right))
            if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and not e.args and not e.keywords and \
                    CANON.get(e.func.attr) in ("extreme", "reduce"):
                return True  # a.max(): every entry reduced to one
            return self_attr(e)

        return len(others) == 1 and one_number(others[0])

    def _log_normaliser(self, e: ast.expr) -> bool:
        """``logsumexp(z)`` (torch's or torch.special's), or a helper of the module folding ``logaddexp``/``logsumexp``:
        the log of a softmax's denominator; also through a name bound to one (``lse = logsumexp(z); exp(z - lse)``)."""
        return _calls_any(e, ("logsumexp",), self.defs, _LOG_FOLDS) or isinstance(e, ast.Name) and \
            e.id in self.exprs and _calls_any(self.exprs[e.id], ("logsumexp",), self.defs, _LOG_FOLDS)

    def _tag_binop(self, node: ast.BinOp) -> set[str]:
        """The tags of an arithmetic expression, and the features its operation shows."""
        tie = self._tie_break(node)
        if tie is not None:
            return tie
        magnitude = _signed_magnitude(node)
        if magnitude is not None:
            return self.tag(magnitude)  # sign(x) * x is |x|: read as written out
        divisor_norm = isinstance(node.op, ast.Div) and (any(
            isinstance(c, ast.Call) and CANON.get(callee(c.func)[0] or "") == "norm" for c in ast.walk(node.right))
            or self._outer_of_norms(node.right) or self._named_norm(node.right))
        if divisor_norm and _norm_call(node.left) and _norm_call(node.right):
            num, den = self._normed_source(node.left), self._normed_source(node.right)
            if num is not None and den is not None and num != den:
                divisor_norm = False  # ||v|| / ||k||: a ratio of two norms of different data, both scores
        # x / sqrt(sum x^2), x * rsqrt(sum x^2): a unit vector written out (a root of data, not of a size)
        root_side = node.right if isinstance(node.op, ast.Div) and _root(node.right) else (
            node.right if isinstance(node.op, ast.Mult) and _root(node.right, inverse=True) else
            node.left if isinstance(node.op, ast.Mult) and _root(node.left, inverse=True) else None)
        # ||a|| * ||b||: the denominator of a cosine (two norms of the same kind of data multiplied), no norm score
        norm_pair = isinstance(node.op, ast.Mult) and _last_axis_norm(node.left) and _last_axis_norm(node.right)
        if norm_pair:
            num, den = self._normed_source(node.left), self._normed_source(node.right)
            norm_pair = num is None or den is None or num == den
        self.normalising += norm_pair
        self.normalising += root_side is node.left
        lt = self.tag(node.left)
        self.normalising -= root_side is node.left
        self.normalising += divisor_norm or root_side is node.right  # x / x.norm(): a unit vector, not a norm score
        rescaled = isinstance(node.op, ast.Div) and self._own_maximum(node.left, node.right)
        self.rescaling += rescaled
        rt = self.tag(node.right)
        self.rescaling -= rescaled
        self.normalising -= divisor_norm or root_side is node.right
        self.normalising -= norm_pair
        self._sides[id(node)] = (set(lt), set(rt))
        if divisor_norm and _damped_count(rt):
            divisor_norm = False  # a root of a count of queries, bound to a name: no row made a unit vector
        if isinstance(node.op, ast.Div) and ("DG" in rt or {"DD", "A"} <= rt) and "A" in lt and not lt & {"DG", "DD"}:
            # attention over the mean attention at its own distance (a table of diagonal sums read back per entry, or
            # sums over bins of the distance): a correction of the positional bias, no slash lines scored; a later use
            # of the sums as scores adds them again
            self.found.pop("diagonal_sums", None)
            return (lt | rt) - {"DG", "DD"}
        if isinstance(node.op, ast.Div) and (rest := self._one_minus(node.right)) is not None and "A" in self.tag(rest):
            self.add("removal_rescale", node.lineno)  # x / (1 - a_j): the other weights renormalised once j is gone
        if isinstance(node.op, ast.Sub) and "LIVEIDX" in rt and "REVI" not in rt and not (lt | rt) & DATA_TAGS and \
                "LIVEIDX" not in lt and isinstance(node.left, ast.Call) and callee(node.left.func)[0] in (
                    "sum", "count_nonzero", "numel", "len"):
            return lt | rt | {"REVI"}  # how many there are minus each one's running index: counted from the newest
        if isinstance(node.op, (ast.Div, ast.Pow)) and "RND" in lt and not lt & {"V", "K", "A", "Q"} and \
                rt & {"V", "K", "A", "Q"}:
            # draws / w (an exponential race) or u ** (1 / w): keys whose order, ranked, draws the tokens without
            # replacement with a probability made of the data (a weighted sample, as multinomial draws it)
            self.add("importance_sampling", node.lineno)
        if isinstance(node.op, ast.Sub) and "A" in lt and "KSIM" not in lt and {"A", "KSIM"} <= rt and \
                "V" not in lt | rt and self._similarity_weighted(node.right):
            # level - s * (sim * level[nbrs]).sum(-1): each token's score lowered by the scores of the tokens its key
            # resembles, weighted by the likeness (a decay propagated over the key-similarity graph)
            self.add("similarity_suppression", node.lineno)
        if isinstance(node.op, ast.Sub) and {"Q", "K"} <= lt and "A" not in lt and self._log_normaliser(node.right):
            return lt | rt | {"A"}  # z - logsumexp(z): log_softmax by hand, the attention in log space (as log_softmax)
        if divisor_norm:
            if "KK2" in lt and not lt & {"Q", "A"} and self._outer_of_norms(node.right):
                self.add("key_similarity", node.lineno)  # K K^T / outer(|k|, |k|): the keys' cosine matrix
            return lt | {"N", "UR"}
        if root_side is not None and (rt if root_side is node.right else lt) & {"K", "V", "Q"}:
            return (lt if root_side is node.right else rt) | {"N", "UR"}
        if isinstance(node.op, ast.Mult) and self._co_moment(node) and "A" in lt | rt:
            return lt | rt | {"CTR"}  # (a - mean a) * (t - mean t), summed: attention's covariance with t (a trend)
        if isinstance(node.op, ast.Mult) and _same(node.left, node.right):
            if not subtracts(node.left) and not self._centred(node.left):  # c * c with c = k - mean: a spread
                return lt | {"SQ"}  # x * x: squared entries, summed a norm written by hand
            if "A" in lt:
                return lt | {"CSQ"}
        lt = set(lt)
        if isinstance(node.op, ast.Sub) and "M2" in lt and "A" in lt and "SQ" in rt and "A" in rt and "M2" not in rt:
            self.add("attention_variance", node.lineno)  # E[a^2] - E[a]^2: the spread of attention, written out
        if isinstance(node.op, ast.Sub) and "K" in lt and "K" in rt and not (lt | rt) & {"Q", "A"} and \
                _broadcast(node.left) and _broadcast(node.right):
            return lt | rt | {"KKB"}  # k[:, None] - c[None]: keys against keys (or centroids), pair by pair
        binop = self._binop_blocks(node, lt, rt)
        if binop is not None:
            return binop
        if isinstance(node.op, ast.Mult):
            for a, b in ((lt, rt), (rt, lt)):
                if "A" in a and "PAIR" in b and not b & DATA_TAGS:
                    return set(a)  # attention times a visibility (causal) mask: still that attention, masked
                if "K" in a and not a & {"A", "Q", "CHI"} and "CHI" in b:
                    return a | {"CH"}  # keys times a mask of the channels a ranking chose: those channels alone
        if isinstance(node.op, ast.MatMult):
            self._matmul(lt, rt, node.lineno)
            gained = self._spectral_product(lt, rt, node.lineno) | (
                {"KSIM"} if self._key_sim(lt, rt) else set())
            lt |= self._pair(lt, rt, node.lineno) | gained
        if isinstance(node.op, ast.Pow) and _count_like(lt) and not (
                isinstance(node.right, ast.Constant) and node.right.value == 1):
            neg = isinstance(node.right, ast.UnaryOp) and isinstance(node.right.op, ast.USub) or \
                isinstance(node.right, ast.Constant) and isinstance(node.right.value, (int, float)) and \
                node.right.value < 0
            return lt | rt | {"SOFT"} | ({"RSOFT"} if neg else set())  # count ** 0.5: a softened count
        if isinstance(node.op, ast.Pow) and _age_decay(lt, rt):
            self.add("age_decay", node.lineno)  # rate ** age: a per-token rate compounded over the token's age
        if isinstance(node.op, ast.Pow) and isinstance(node.right, ast.Constant) and node.right.value == 2:
            if not lt & (DATA_TAGS | {"W", "RND", "S"}):
                return lt  # a constant squared (self.sigma ** 2): a scale, no squared entries of data
            if not any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) and self._literal(n.left) is None
                       for n in ast.walk(node.left)) and not self._centred(node.left):
                # squared entries, summed: a norm written by hand ((x - mean) ** 2: a variance; (a / (1 - a)) ** 2
                # subtracts from a constant, no mean)
                return lt | {"SQ"}
            if "A" in lt:
                return lt | {"CSQ"}  # (a - a.mean()) ** 2: attention's squared deviations, a variance once averaged
        factor = None
        if isinstance(node.op, ast.Mult) and "S" in (lt | rt):
            factor = self._literal(node.left)
            factor = self._literal(node.right) if factor is None else factor
        if factor is not None and not any(
                isinstance(x, ast.Call) and callee(x.func)[0] in ("float", "int", "item")
                for x in (node.left, node.right)) and not (abs(factor) >= 1e3 or 0 < abs(factor) <= 1e-4):
            # the state scaled; a scalar taken out of it (float(s[h])) is not, nor a tier lifted by 1e6 or a
            # tie-break scaled by 1e-6 (a lexicographic order of two scores)
            self.add("decay", node.lineno)
        if isinstance(node.op, (ast.Mult, ast.Sub, ast.Add)) and "L" in (lt | rt) and self.current == "layer_budgets":
            self.add("pyramid", node.lineno)
        if isinstance(node.op, ast.Add) and ("P" in lt and "P" not in rt and _ahead(node.right) or
                                             "P" in rt and "P" not in lt and _ahead(node.left)):
            return lt | rt | {"FP"}  # positions moved forward: where decoding will be
        if isinstance(node.op, ast.Sub) and "P" in lt and "S" in rt and "S" not in lt:
            return lt | rt | {"EL"}  # a step minus a remembered step: the time elapsed since it
        if isinstance(node.op, ast.Sub) and "X" in lt and "X" in rt:
            return lt | rt | {"XR"}  # max - min of keys or values: their range
        if isinstance(node.op, ast.Div) and "XR" in rt and (lt | rt) & {"K", "V"} and not (lt | rt) & {"A", "Q"}:
            self.add("minmax_norm", node.lineno)  # (x - min) / (max - min): min-max normalised keys or values (logits,
            # q.k, so rescaled are a score's range)
        if isinstance(node.op, ast.Mult) and "K" in lt and "K" in rt and "N" in lt | rt and not (lt | rt) & {"Q", "A"}:
            if _neighbour_pair(node.left, node.right):
                self.add("successive_similarity", node.lineno)  # each key against the key beside it
            return lt | rt | {"KK"}  # unit keys times unit keys: a cosine similarity once summed over channels
        envelope = "X" in lt | rt and "QZ" not in lt | rt  # a channel's min or max, not a dequantised copy
        if isinstance(node.op, ast.Mult) and not ((lt | rt) & {"A", "W"} or envelope) and (
                "Q" in lt and "K" not in lt and "K" in rt and "Q" not in rt or
                "Q" in rt and "K" not in rt and "K" in lt and "Q" not in lt):
            return lt | rt | {"QKE"}  # queries times keys entry by entry: q.k once summed over the channels
            # (times a key envelope, a channel's min or max: a bound, Quest's, not q.k)
        if isinstance(node.op, ast.Mult) and ("W" in lt and "K" in rt and "W" not in rt or
                                              "W" in rt and "K" in lt and "W" not in lt):
            return lt | rt | {"WK"}  # keys times fitted numbers: a projection once summed over channels
        return lt | rt

    def _binop_storage(self, node: ast.BinOp, lt: set[str], rt: set[str], out: set[str]) -> set[str]:
        """Tags (and features) of the storage and architecture mechanisms written with arithmetic: keys or queries
        times a fixed random or orthogonal matrix (a rotation), keys minus their low-bit copy (the quantisation
        residual), the rotary embedding undone by hand, channels masked by a channel selection, this layer's unit keys
        or values against another layer's kept ones, unit attention rows against unit attention rows."""
        line = node.lineno
        both = lt | rt
        more: set[str] = set()
        if isinstance(node.op, ast.MatMult):
            more |= self._rotated([lt, rt])
            if "A" in lt and "A" in rt and "N" in lt and "N" in rt:
                self.add("head_clustering", line)  # unit attention rows against unit attention rows: their cosines
                more.add("HSIM")
        if isinstance(node.op, ast.Sub):
            if _one_side(lt, rt, "QZ") and lt & {"K", "V"} and rt & {"K", "V"} and not both & {"A", "Q"}:
                more.add("QRES")  # x - dequantised(x): the quantisation residual
            if _rope_undone(node) and both & {"K"}:
                self.add("pre_rope", line)  # x * cos - rotate_half(x) * sin: the rotary embedding undone
            if _one_side(lt, rt, "LK") and ("K" in lt and "K" in rt or "V" in lt and "V" in rt) and \
                    not both & {"A", "Q"}:
                more.add("LD")  # this layer's keys (values) minus another layer's kept ones: summed, a distance
        if isinstance(node.op, ast.Mult):
            for a, b in ((lt, rt), (rt, lt)):
                if "CHI" in a and b & {"Q", "K"}:
                    more.add("CH")  # queries or keys times a mask of selected channels
            if _one_side(lt, rt, "LK") and ("N" in both or "KK" in out) and (
                    "K" in lt and "K" in rt or "V" in lt and "V" in rt) and not both & {"A", "Q"}:
                more.add("KKL")  # unit keys (values) times another layer's unit keys: a cosine once summed
        return more

    def _clusterer(self, receiver: ast.expr | None) -> bool:
        """A library k-means object: ``KMeans(n)`` called in place, or a name bound to one."""
        if isinstance(receiver, ast.Name):
            receiver = self.exprs.get(receiver.id, receiver)
        return isinstance(receiver, ast.Call) and callee(receiver.func)[0] in CLUSTERING

    def _token_range(self, e: ast.expr | None) -> bool:
        """``torch.arange(n)``: a run of indices (cut into pieces of a size, the blocks a score is summed over)."""
        e = self._resolved(e) if isinstance(e, ast.Name) else e
        if not (isinstance(e, ast.Call) and callee(e.func)[0] == "arange" and len(e.args) == 1):
            return False
        n = self._resolved(e.args[0]) if isinstance(e.args[0], ast.Name) else e.args[0]
        # arange(view.n_kv_heads), arange(a.shape[0]): the heads (axis 0 of every tensor the harness hands over);
        # arange(q.shape[1]), arange(len(view.query_positions)): the query rows, chunks of which are no blocks of tokens
        return not any(isinstance(x, ast.Attribute) and x.attr in ("n_heads", "n_kv_heads", "group_size", "n_layers",
                                                                   "query_positions")
                       or isinstance(x, ast.Subscript) and isinstance(x.value, ast.Attribute) and
                       x.value.attr == "shape" and (isinstance(x.slice, ast.Constant) and x.slice.value == 0 or
                                                    _queries_only(self.tag(x.value.value)))
                       for x in ast.walk(n))

    def _step_compare(self, node: ast.Call, receiver: ast.expr | None) -> ast.Compare | None:
        """``torch.heaviside(x - bar, v)`` (or ``(x - bar).heaviside(v)``) as the comparison ``x > bar`` (``x > 0``
        where no difference is taken): the step is 1 exactly where the comparison holds."""
        x = receiver if self._on_tensor(receiver) else node.args[0] if node.args else None
        if x is None or isinstance(x, ast.Starred):
            return None
        if isinstance(x, ast.BinOp) and isinstance(x.op, ast.Sub):
            cmp = ast.Compare(left=x.left, ops=[ast.Gt()], comparators=[x.right])
        else:
            cmp = ast.Compare(left=x, ops=[ast.Gt()], comparators=[ast.Constant(0)])
        return ast.copy_location(cmp, node)

    def _fused_multiply_add(self, node: ast.Call, receiver: ast.expr | None, name: str) -> ast.BinOp | None:
        """``torch.addcmul(x, a, b, value=v)`` (``x.addcmul(a, b)``) as ``x + a * b`` (``x - a * b`` for a negative
        ``v``; ``a / b`` for ``addcdiv``)."""
        args = list(node.args)
        if self._on_tensor(receiver) and receiver is not None:
            args = [receiver, *args]
        if len(args) != 3 or any(isinstance(a, ast.Starred) for a in args):
            return None
        value = kwarg(node, "value")
        negative = isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) or isinstance(
            value, ast.Constant) and isinstance(value.value, (int, float)) and value.value < 0
        inner = ast.BinOp(left=args[1], op=ast.Div() if name.startswith("addcdiv") else ast.Mult(), right=args[2])
        out = ast.BinOp(left=args[0], op=ast.Sub() if negative else ast.Add(), right=inner)
        ast.copy_location(inner, node)
        return ast.copy_location(out, node)

    def _boolean(self, receiver: ast.expr | None, node: ast.Call) -> bool:
        """A cast of a comparison (``(x @ planes > 0).long()``): hash bits packed as integers, no rounding of values."""
        x = self._operand(receiver, list(node.args))
        x = self._resolved(x) if x is not None else None
        return isinstance(x, ast.Compare) or isinstance(x, ast.Call) and callee(x.func)[0] in SIGN_CALLS

    def _quantised_in(self, t: set[str], line: int) -> None:
        """What the values just quantised went through: a random rotation first (``rotation``), a polar transform
        (their angles quantised: ``polar``)."""
        if "RP" in t:
            self.add("rotation", line)
        if "PA" in t:
            self.add("polar", line)
        if "FB" in t and t & {"K", "V"} and "QRES" not in t:
            self.add("transform_coded", line)  # keys projected on a basis of their own factorisation, then rounded

    def _rotated(self, operands: list[set[str]]) -> set[str]:
        """Keys, values or queries times a matrix built without data from random draws or an orthogonal construction
        (``RP``: a random rotation or projection)."""
        fixed = any(o & {"RND", "ORTH"} and not o & DATA_TAGS for o in operands)
        data = any(o & {"K", "V", "Q"} for o in operands)
        return {"RP"} if fixed and data else set()

    # --- a tie-break --------------------------------------------------------------------------------
    def _literal(self, e: ast.expr) -> float | None:
        """The number ``e`` stands for: a literal, a negated one, a module or class constant bound to one."""
        if isinstance(e, ast.Constant) and isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
            return float(e.value)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            v = self._literal(e.operand)
            return None if v is None else (-v if isinstance(e.op, ast.USub) else v)
        key = e.id if isinstance(e, ast.Name) else f"self.{e.attr}" if self_attr(e) and isinstance(e, ast.Attribute) \
            else None
        if key and key in self.constants:
            return self.constants[key]
        bound = self.exprs.get(e.id) if isinstance(e, ast.Name) else None
        if isinstance(bound, (ast.Constant, ast.UnaryOp)):
            return self._literal(bound)  # eps = 1e-9 in the function itself
        return None

    def _factors(self, e: ast.expr) -> tuple[list[ast.expr], list[ast.expr]]:
        """A product / quotient chain as (numerator factors, denominator factors)."""
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult):
            a, b = self._factors(e.left), self._factors(e.right)
            return a[0] + b[0], a[1] + b[1]
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Div):
            a, b = self._factors(e.left), self._factors(e.right)
            return a[0] + b[1], a[1] + b[0]
        return [e], []

    def _local(self, call: ast.Call) -> tuple[list[ast.expr], dict[str, ast.expr]] | None:
        """A helper of the module a call runs: (what it returns, its names bound to the expression each was last
        assigned), or None."""
        fn = self.defs.resolve(call, self.owner)
        if fn is None:
            return None
        env: dict[str, ast.expr] = {}
        rets: list[ast.expr] = []
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                env[n.targets[0].id] = n.value
            elif isinstance(n, ast.Return) and n.value is not None:
                rets.append(n.value)
        return rets, env

    def _along_tokens(self, node: ast.Call, name: str | None, operand: ast.expr | None, t: set[str]) -> bool:
        """A frequency transform of a (heads, tokens, channels) tensor along its tokens: ``dim=1`` / ``dim=-2`` (the
        n-d transforms: among their axes), ``dim=0`` of one head's (tokens, channels) slice, or the default last axis
        of the keys put behind the channels (``k.transpose(1, 2)``)."""
        d = None
        for key in ("dim", "axis", "axes"):
            d = d or kwarg(node, key)
        if d is None and name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft") and len(node.args) >= 3:
            d = node.args[2]
        axes = list(d.elts) if isinstance(d, (ast.Tuple, ast.List)) else [d]
        for a in axes:
            axis = -1 if a is None else _const_axis(a)
            if axis == -1:
                if "TT" in t:
                    return True
                continue
            one_head = operand is not None and isinstance(operand, ast.Subscript) and not isinstance(
                operand.slice.elts[0] if isinstance(operand.slice, ast.Tuple) and operand.slice.elts else
                operand.slice, ast.Slice)
            if "TT" not in t and (_per_channel_axis(a, operand) or axis == 0 and (one_head or "H1" in t)):
                return True
        return False

    def _spectral_product(self, lt: set[str], rt: set[str], line: int) -> set[str]:
        """A fixed frequency basis (cosines of token indices, a transformed identity) times keys or values, contracted
        along their tokens (the basis on the left of them, or on the right of them put behind the channels): the
        cache's spectrum over positions."""
        for basis, data, behind in ((lt, rt, False), (rt, lt, True)):
            if "FBS" in basis and not basis & DATA_TAGS and data & {"K", "V"} and not data & {"A", "Q"} and \
                    ("TT" in data) == behind:
                self.add("token_spectrum", line)
                return {"SPEC"}
        return set()

    def _spectral_einsum(self, eq: ast.expr, operands: list[set[str]], line: int) -> set[str]:
        """``einsum("mn,hnd->hmd", basis, keys)``: a fixed frequency basis sharing the keys' (values') token index."""
        if not (isinstance(eq, ast.Constant) and isinstance(eq.value, str) and "->" in eq.value):
            return set()
        subs = eq.value.replace(" ", "").split("->")[0].split(",")
        if len(subs) != len(operands):
            return set()
        for i, basis in enumerate(operands):
            if "FBS" not in basis or basis & DATA_TAGS:
                continue
            for j, data in enumerate(operands):
                letter = _einsum_token_letter(subs[j])
                if j != i and data & {"K", "V"} and not data & {"A", "Q"} and letter and letter in subs[i]:
                    self.add("token_spectrum", line)
                    return {"SPEC"}
        return set()

    def _key_sim(self, lt: set[str], rt: set[str]) -> bool:
        """Keys against keys, one of them unit vectors (no query, no attention, no mean key, no other layer's keys):
        a matrix of key-key cosine similarities."""
        both = lt | rt
        return "K" in lt and "K" in rt and "N" in both and not both & {"Q", "A", "KM", "S"} and \
            not _one_side(lt, rt, "LK")

    def _names_tagged(self, e: ast.expr, tag: str) -> bool:
        """Whether a name (or a self attribute) read in ``e`` carries ``tag``."""
        for n in ast.walk(e):
            if isinstance(n, ast.Name) and tag in self.tags.get(n.id, set()):
                return True
            if isinstance(n, ast.Attribute) and self_attr(n) and tag in self.tags.get(f"self.{n.attr}", set()):
                return True
        return False

    def _iterated_walk(self, target: str, value: ast.expr, line: int) -> None:
        """Inside a loop, ``x = A @ x`` (``x = d * (a.T @ x) + (1 - d) / n``, ``einsum(..., a, x)``, or through a name
        bound in the loop just before: ``y = x @ a; x = d * y + c``): a vector carried through attention again and
        again, a power iteration (PageRank over the attention graph); the same over the graph of the keys' likeness
        (a key-key similarity matrix) is a walk on the tokens' graph too."""
        here = self.frames[-1]["bound"] if self.frames else set()

        def bound_in(e: ast.expr) -> list[str]:  # names bound in the loop just before, read in e
            return [n.id for n in ast.walk(e) if isinstance(n, ast.Name) and n.id != target and n.id in here and
                    n.id in self.exprs]

        parts = [value] + [self.exprs[n] for n in bound_in(value)] + [
            e for n in bound_in(value) for e in self.accumulated.get(n, [])]  # (y = 0; y += x[lo:hi] @ a[lo:hi])
        for part in map(_unreshaped, parts[1:]):  # y = m.squeeze(1), m = x @ a bound in the loop too: the product
            if isinstance(part, ast.Name) and part.id != target and part.id in here and part.id in self.exprs:
                parts.append(self.exprs[part.id])

        def carries(e: ast.expr) -> bool:  # e is the carried vector, or it reshaped on the line before (x.unsqueeze(1))
            return _mentions_as_data(e, target) or any(
                isinstance(u := _unreshaped(self.exprs[n]), ast.Name) and u.id == target for n in bound_in(e))

        for ops in [o for part in parts for o in _matmul_operands(part)]:
            if any(carries(o) for o in ops) and any(
                    not carries(o) and (self._names_tagged(o, "A") or self._names_tagged(o, "KSIM"))
                    for o in ops):
                self.add("attention_propagation", line)
                return
            if any(carries(o) for o in ops) and any(not carries(o) and self._query_gram(o) for o in ops):
                self.add("query_svd", line)  # v = (Q^T Q) v again and again: the queries' principal direction
                return

    def _query_gram(self, e: ast.expr) -> bool:
        """A matrix made of the queries alone (their Gram ``Q^T Q``, a covariance): no keys, attention or values."""
        t = self.tag(e)
        return "Q" in t and not t & {"K", "A", "V", "RND"}

    def _recursive_power(self, local: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.Call) -> bool:
        """A helper calling itself with ``G @ x`` for one of its own parameters ``x`` and the same ``G`` passed on
        (``return self.settle(g, (g @ v) / norm, n - 1)``): a power iteration written as recursion."""
        params = {a.arg for a in local.args.args}
        for arg in node.args:
            for ops in _matmul_operands(arg):
                if any(isinstance(o, ast.Name) and o.id in params for o in ops) and any(
                        isinstance(o, ast.Name) and o.id in params and self._query_gram(o) for o in ops):
                    return True
        return False

    def _picked_similarity(self, e: ast.expr) -> bool:
        """Rows (or columns) of a key-key similarity matrix picked by a ranking: ``sim[:, top]``, ``sim[h, best]``,
        ``sim.gather(-1, idx)``, ``torch.index_select(sim, 1, top)``: how like the chosen tokens each token is."""
        for n in ast.walk(e):
            if isinstance(n, ast.Name) and {"KSIM", "SEL"} <= self.tags.get(n.id, set()):
                return True  # near = sim.gather(1, top): bound before
            if isinstance(n, ast.Subscript):
                if "KSIM" in self.tag(n.value) and self.tag(n.slice) & {"R", "SEL", "ASG"}:
                    return True  # (ASG: the single best token, argmax: a greedy pick one at a time)
            elif isinstance(n, ast.Call) and callee(n.func)[0] in ("gather", "index_select", "take_along_dim"):
                name, receiver = callee(n.func)
                parts = [receiver, *n.args] if self._on_tensor(receiver) else list(n.args)
                tags = [self.tag(x) for x in parts if x is not None]
                if any("KSIM" in x for x in tags) and any(x & {"R", "SEL"} and "KSIM" not in x for x in tags):
                    return True
            elif isinstance(n, ast.Call) and n.args and callee(n.func)[0] not in CANON and "KSIM" in self.tag(n):
                # graph.damping(chosen): a helper given the picks returns their similarity to each token
                if any(t & {"R", "SEL"} and "KSIM" not in t for t in map(self.tag, n.args)):
                    return True
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult) and self._picked_rows_product(n):
                return True  # unit @ unit[nxt]: every token's similarity to the key just picked, made on the spot
        return False

    def _running_cover(self, name: str, value: ast.expr) -> bool:
        """Greedy max-min (farthest-point) selection, inside a loop: every token's similarity or distance to its
        nearest chosen token, folded with the row of the token just chosen (``cover = torch.minimum(cover,
        dist[nxt])``, ``near = torch.maximum(near, sim[:, pick])``, ``cover.minimum_(d[i])``). Each pick lowers
        the claim of its near neighbours, as a score decayed by similarity does; no attention needed."""
        if not self.loop or not isinstance(value, ast.Call):
            return False
        fn, receiver = callee(value.func)
        if fn not in ("minimum", "maximum", "fmin", "fmax", "min", "max", "minimum_", "maximum_", "fmin_", "fmax_"):
            return False
        parts = [x for x in ([receiver, *value.args] if self._on_tensor(receiver) else list(value.args))
                 if x is not None]
        if len(parts) != 2 or value.keywords or not any(_mentions(x, name) for x in parts):
            return False
        for x in parts:
            if _mentions(x, name):
                continue
            rows = [n for n in ast.walk(x) if isinstance(n, ast.Subscript) and "KSIM" in self.tag(n.value)]
            if any(self.tag(n.slice) & {"R", "SEL", "ASG"} for n in rows) or self._picked_similarity(x):
                return True
        return False

    def _suppression(self, target: ast.expr, value: ast.expr | None, line: int, update: bool) -> None:
        """An attention score lowered where tokens resemble the ones already picked: the score updated (``s -= ...``,
        ``s = s * (1 - ...)``, ``s = s.masked_fill(...)``) with key-key similarities picked by a ranking, or its
        entries at the chosen tokens' most similar neighbours scaled (``s[nb] *= decay``): selection with redundancy
        suppressed (a decay propagated over the key similarity graph)."""
        base = target.value if isinstance(target, ast.Subscript) else target
        if isinstance(base, ast.Attribute) and self_attr(base):
            base = ast.Name(id=f"self.{base.attr}", ctx=ast.Load())  # self.gain in a helper object: its own score
        if not isinstance(base, ast.Name):
            return
        score = self.tags.get(base.id, set())
        if "KSIM" in score and not score & {"A", "V"} and value is not None and self._running_cover(base.id, value):
            self.add("similarity_suppression", line)
            return
        if not ("A" in score or {"Q", "K"} <= score) or score & {"V", "KSIM"}:
            return  # (a query-key logit, a relevance before any softmax, is an attention score too)
        if isinstance(target, ast.Subscript):
            st = self.tag(target.slice)
            if "KSIM" in st and st & {"R", "SEL"}:
                self.add("similarity_suppression", line)
                return
        if value is None or not (update or _mentions(value, base.id)):
            return
        if self._picked_similarity(value):
            self.add("similarity_suppression", line)

    def _on_tensor(self, receiver: ast.expr | None) -> bool:
        """``x.op(...)`` on a tensor, not ``torch.op(x, ...)`` / ``F.op(x, ...)`` on a module."""
        return receiver is not None and not (isinstance(receiver, ast.Name) and receiver.id in self.defs.modules)

    def _group_quota(self, node: ast.Call, receiver: ast.expr | None, arg_tags: list[set[str]]) -> bool:
        """A top-k over a subset of the tokens (``a[h, members]``, ``a[s:e]``) whose size is a share of attention times
        the budget: the budget shared out over groups of tokens in proportion to their attention, each group
        keeping its own best tokens. The groups are the method's own; a published rule that fixes one quota per
        segment (``block_quota``) or per head (``head_budget``) is no such share."""
        sizes = arg_tags[0:1] if self._on_tensor(receiver) else arg_tags[1:2]
        sizes = sizes + [self.tag(k.value) for k in node.keywords if k.arg == "k"]
        return any("QTA" in k for k in sizes) and self._token_subset(self._operand(receiver, list(node.args)))

    def _sorted_quota(self, node: ast.Subscript) -> bool:
        """``a[h, members].argsort(descending=True)[:q]``: ``_group_quota`` with the top-k written as a sort cut."""
        order = node.value
        if not isinstance(order, ast.Call) or callee(order.func)[0] not in ("argsort", "sort"):
            return False
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not any(isinstance(p, ast.Slice) and "QTA" in self.tag(p.upper) for p in parts):
            return False
        return self._token_subset(self._operand(callee(order.func)[1], list(order.args)))

    def _shared_count(self, size: ast.expr | None) -> bool:
        """A count that is one part's share of the budget by data-made weights (``QTA``: a share of attention times
        the budget), read at the loop's own index (``quota[h]``, ``k = min(int(quota[h]), n)``): the budget shared
        out over the parts a loop runs over (heads), each part ranking with its own count."""
        if size is None or not ({"QTA"} <= self.tag(size) and self.tag(size) & {"A", "K", "V", "Q"}):
            return False
        size = self._resolved(size, 3)
        return any(isinstance(x, ast.Subscript) and isinstance(x.slice, ast.Name) and x.slice.id in self.loop_vars
                   for x in ast.walk(size))

    def _head_quota(self, node: ast.Call, receiver: ast.expr | None, arg_tags: list[set[str]]) -> bool:
        """A top-k of a whole row (no subset of the tokens: ``_group_quota``) with a count ``_shared_count`` gives:
        budgets shared out over heads by their scores."""
        at = 0 if self._on_tensor(receiver) else 1
        size = kwarg(node, "k") or (node.args[at] if len(node.args) > at else None)
        return callee(node.func)[0] in ("topk", "kthvalue") and self._shared_count(size)

    def _sorted_head_quota(self, node: ast.Subscript) -> bool:
        """``_head_quota`` written as a sort cut: ``argsort(s, descending=True)[:quota[h]]``."""
        order = node.value
        if not isinstance(order, ast.Call) or callee(order.func)[0] not in ("argsort", "sort"):
            return False
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return any(isinstance(p, ast.Slice) and p.lower is None and self._shared_count(p.upper) for p in parts)

    def _token_subset(self, ranked: ast.expr | None) -> bool:
        """What is ranked is a subset of the tokens: read at a list of indices or between computed bounds (negated
        or cast first, as the same ranking reversed)."""
        while True:
            if isinstance(ranked, ast.UnaryOp):
                ranked = ranked.operand
            elif isinstance(ranked, ast.Call) and isinstance(ranked.func, ast.Attribute) and ranked.func.attr in (
                    "float", "double", "half", "clone", "detach", "neg", "to"):
                ranked = ranked.func.value
            else:
                break
        if not isinstance(ranked, ast.Subscript):
            return False
        parts = ranked.slice.elts if isinstance(ranked.slice, ast.Tuple) else [ranked.slice]
        for part in parts:
            if isinstance(part, ast.Slice) and not all(
                    b is None or isinstance(b, ast.Constant) for b in (part.lower, part.upper)):
                return True  # a run of tokens between computed bounds
            if not isinstance(part, ast.Slice) and self.tag(part) & {"I", "P"}:
                return True  # the tokens at a list of indices
        return False

    def _operand(self, receiver: ast.expr | None, args: list[ast.expr]) -> ast.expr | None:
        """What a call operates on: the tensor it is called on, else (a module's function) its first argument."""
        return receiver if self._on_tensor(receiver) else (args[0] if args else None)

    def _unit(self, e: ast.expr, depth: int = 0, env: dict[str, ast.expr] | None = None) -> bool:
        """Vectors of norm at most 1 by construction: normalised (``F.normalize``, ``x / x.norm()``), or an average,
        a slice or a layout change of such vectors."""
        env = self.exprs if env is None else env
        if depth > 16:
            return False
        if isinstance(e, ast.Name):
            return e.id in env and self._unit(env[e.id], depth + 1, env)
        if isinstance(e, ast.Subscript):
            return self._unit(e.value, depth + 1, env)
        if isinstance(e, ast.Attribute) and e.attr in ("T", "mT"):
            return self._unit(e.value, depth + 1, env)
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Div):
            return any(isinstance(c, ast.Call) and CANON.get(callee(c.func)[0] or "") == "norm"
                       for c in ast.walk(e.right))
        if isinstance(e, ast.Call):
            name, receiver = callee(e.func)
            if name == "normalize":
                return True
            inner = self._operand(receiver, e.args)
            if name in ("float", "half", "double", "to", "clone", "detach", "contiguous", "transpose", "permute",
                        "squeeze", "unsqueeze", "mean", "expand", "repeat_interleave", "view", "reshape"):
                return inner is not None and self._unit(inner, depth + 1, env)
        return False

    def _bounded(self, e: ast.expr, depth: int = 0, env: dict[str, ast.expr] | None = None) -> bool:
        """A value whose entries are at most 1 in size by construction: probabilities (a softmax, the view's
        attention, an average or maximum of them), uniform draws, a sigmoid or tanh, a comparison, a value over its
        own maximum, sum or norm, the product of two vectors of norm at most 1 (a cosine, by Cauchy-Schwarz); what
        a helper of the module returns when each of its returns is."""
        env = self.exprs if env is None else env
        if depth > 16:
            return False
        if isinstance(e, ast.Name):
            bound = env.get(e.id)
            return bound is not None and self._bounded(bound, depth + 1, env)
        if isinstance(e, ast.Constant):
            return isinstance(e.value, (int, float)) and abs(e.value) <= 1
        if isinstance(e, ast.Compare):
            return True
        if isinstance(e, ast.UnaryOp):
            return self._bounded(e.operand, depth + 1, env)
        if isinstance(e, ast.Subscript):
            return self._bounded(e.value, depth + 1, env)
        if isinstance(e, ast.Attribute) and e.attr in ("values", "T", "mT", "real"):
            return self._bounded(e.value, depth + 1, env)
        if isinstance(e, ast.IfExp):
            return self._bounded(e.body, depth + 1, env) and self._bounded(e.orelse, depth + 1, env)
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.MatMult):
            return self._unit(e.left, depth + 1, env) and self._unit(e.right, depth + 1, env)
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Mult, ast.Div)):
            num, den = self._factors(e)
            big = [f for f in den if (v := self._literal(f)) is not None and abs(v) >= 1]
            free = [f for f in num if not self._bounded(f, depth + 1, env)]
            if not free:
                return len(big) == len(den)  # bounded factors over numbers of at least 1
            # one factor over its own maximum, sum or norm (x / x.max(), p / p.amax())
            return len(free) == 1 and any(isinstance(c, ast.Call) and callee(c.func)[0] in (
                "max", "amax", "sum", "norm", "vector_norm", "linalg_norm") for f in den for c in ast.walk(f))
        if isinstance(e, ast.Call):
            name, receiver = callee(e.func)
            args = list(e.args)
            local = self._local(e) if name not in API_CALLS else None
            if local is not None:
                rets, inner_env = local
                return bool(rets) and all(self._bounded(r, depth + 1, inner_env) for r in rets)
            if name in ("softmax", "sigmoid", "tanh", "rand", "rand_like", "cosine_similarity", "normalize", "cos",
                        "sin", "erf"):
                return True
            if name in ("matmul", "bmm") and len(args) == 2:
                return self._unit(args[0], depth + 1, env) and self._unit(args[1], depth + 1, env)
            if name == "attention" and receiver is not None:
                red = kwarg(e, "reduce")
                return red is None or isinstance(red, ast.Constant) and red.value in ("mean", "max")
            inner = self._operand(receiver, args)
            if name == "group" and len(args) >= 2 and isinstance(args[1], ast.Constant) and \
                    args[1].value in ("mean", "max"):
                return self._bounded(args[0], depth + 1, env)
            if name in ("float", "half", "double", "to", "clone", "detach", "contiguous", "expand", "expand_as",
                        "squeeze", "unsqueeze", "view", "reshape", "flatten", "mean", "amax", "max", "amin", "min",
                        "abs", "gather", "index_select", "take_along_dim", "repeat_interleave", "transpose",
                        "permute", "masked_fill", "type_as", "nanmean"):
                return inner is not None and self._bounded(inner, depth + 1, env)
        return False

    def _coarse(self, e: ast.expr, depth: int = 0) -> bool:
        """A score with few distinct values (a comparison, a rounding, an integer division): a small term added
        to it decides the order within each class of equal values, which is no tie-break."""
        if isinstance(e, ast.Name) and depth < 6 and e.id in self.exprs:
            return self._coarse(self.exprs[e.id], depth + 1)
        if isinstance(e, ast.Compare) or isinstance(e, ast.BinOp) and isinstance(e.op, (ast.FloorDiv, ast.Mod)):
            return True
        if isinstance(e, ast.Call):
            name, receiver = callee(e.func)
            if name in ("round", "floor", "ceil", "trunc", "sign", "bucketize", "searchsorted"):
                return True
            if name in ("float", "int", "long", "to", "type_as", "half", "double") and receiver is not None:
                return self._coarse(receiver, depth + 1)
        return False

    def _scale(self, num: list[ast.expr], den: list[ast.expr]) -> tuple[float, list[ast.expr]]:
        """The literal scale of a product / quotient chain (1 without literals) and its literal factors."""
        scale, lits = 1.0, []
        for f in num:
            if (v := self._literal(f)) is not None:
                scale *= abs(v)
                lits.append(f)
        for f in den:
            if (v := self._literal(f)) is not None and v != 0:
                scale /= abs(v)
                lits.append(f)
        return scale, lits

    def _tie_break(self, node: ast.BinOp) -> set[str] | None:
        """``score + 1e-9 * other``: the score, plus a tie-break. The small term is read as a tie-break (its
        operations are kept apart in ``tie_breaks``, not among the features) only when it provably cannot reorder
        the score's distinct values beyond near-ties: its literal scale is at most ``TIE_BREAK`` times the score's
        own (``score * 1e3 + other * 1e-4`` as ``score + other * 1e-7``; a constant of the module or class counts
        as a literal) and what it scales is bounded by 1 by construction
        (``_bounded``: probabilities, uniform draws, unit vectors, a value over its own maximum...), so it moves
        no score by more than ``TIE_BREAK``; and the score it is added to is continuous (``_coarse``: not a
        comparison or a rounding, whose classes of equal values a small term would order) and is made of
        per-token data. Otherwise the term stays an operation of its own, whatever its literal: ``1e-6 *
        positions`` (up to 1e-6 * 32K) or ``1e-9 * a norm`` (unbounded) can reorder, and a rule hidden behind
        ``1e-9 *`` with nothing but a constant or a coarse class beside it is still that rule."""
        if not isinstance(node.op, (ast.Add, ast.Sub)):
            return None
        for main, small in ((node.left, node.right), (node.right, node.left)):
            num, den = self._factors(small)
            mnum, mden = self._factors(main)
            small_scale, lits = self._scale(num, den)
            main_scale, _ = self._scale(mnum, mden)
            if not lits or main_scale == 0 or small_scale / main_scale > TIE_BREAK:
                continue  # relative scales: main * 1e3 + other * 1e-4 is the same as main + other * 1e-7
            rest_num = [f for f in num if not any(f is x for x in lits)]
            rest_den = [f for f in den if not any(f is x for x in lits)]
            if not rest_num:
                continue
            ok = all(self._bounded(f) for f in rest_num) and all(self._bounded(f) for f in rest_den) or bool(
                len(rest_num) == 1 and rest_den and self._bounded(ast.BinOp(left=rest_num[0], op=ast.Div(),
                                                                             right=rest_den[0])))
            if not ok or self._coarse(main):
                continue
            mt = self.tag(main)
            if not mt & (PER_TOKEN | {"S"}):
                continue
            before = dict(self.found)
            pending = set(self.pending_random)
            self.tag(small)
            for k in [k for k in self.found if k not in before]:
                self.tie_breaks.setdefault(k, self.found.pop(k))
            for line in [x for x in self.pending_random if x not in pending]:
                self.tie_breaks.setdefault("random", self.pending_random.pop(line))
            self.tie_nodes.add((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset,
                                main is node.left))
            return mt
        return None

    def _tail_bound(self, e: ast.expr) -> bool:
        """``n - w`` (possibly under ``max`` / ``clamp`` or bound to a name first): the start of the last w tokens."""
        r = self._resolved(e)
        if isinstance(r, ast.BinOp):
            return isinstance(r.op, ast.Sub)
        if isinstance(r, ast.Call) and callee(r.func)[0] in ("max", "min", "clamp", "clamp_min", "clip", "int"):
            return any(self._tail_bound(a) for a in r.args)
        return False

    def _centred(self, e: ast.expr) -> bool:
        """A name bound to a difference (``c = k - k.mean(...)``): its square is a spread, not a norm."""
        r = self._resolved(e)
        return isinstance(e, ast.Name) and isinstance(r, ast.BinOp) and isinstance(r.op, ast.Sub)

    def _lattice_index(self, index: ast.expr, tags: set[str]) -> bool:
        """An index (not a slice's bound: segment edges are no lattice) of evenly spaced values (``linspace``);
        ``tags``: the index's own, already read (a tuple's parts are read one by one)."""
        if not isinstance(index, ast.Tuple):
            return not isinstance(index, ast.Slice) and "UNI" in tags and "R" not in tags
        return any(not isinstance(p, ast.Slice) and "UNI" in (t := self.tag(p)) and "R" not in t for p in index.elts)

    def _indexes_beside(self, index: ast.expr) -> bool:
        """An index (not a slice's bound) made of a ranking's picks shifted by a few positions: ``x[top + 1]``,
        ``t = top + d; x[t[ok]]`` (a name bound to the shift, masked or not)."""
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        return any(not isinstance(p, ast.Slice) and self._beside(p) for p in parts)

    def _beside(self, e: ast.expr) -> bool:
        for _ in range(4):  # t[ok], (top + 1).clamp(max=n - 1), torch.clamp(top + 1, 0, n - 1), a name bound to it
            if isinstance(e, ast.Subscript):
                e = e.value
            elif isinstance(e, ast.Call) and callee(e.func)[0] in _INDEX_KEEPING and isinstance(e.func, ast.Attribute):
                module = isinstance(e.func.value, ast.Name) and e.func.value.id == "torch"
                if module and not e.args:
                    break
                e = e.args[0] if module else e.func.value
            elif isinstance(e, ast.Name):
                r = self._resolved(e)
                if r is e:
                    break
                e = r
            else:
                break
        return isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)) and any(
            "R" in self.tag(a) and self._small_offset(o) and not _run_ends(a)
            for a, o in ((e.left, e.right), (e.right, e.left)))

    def _small_offset(self, e: ast.expr) -> bool:
        """A shift of a few positions: a literal up to 16, or the variable of a loop over a range whose bounds are
        literals or the module's attributes (``for d in range(1, self.reach + 1)``)."""
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            e = e.operand
        if isinstance(e, ast.Constant):
            return isinstance(e.value, int) and not isinstance(e.value, bool) and 0 < e.value <= 16
        return isinstance(e, ast.Name) and e.id in self.small_ranges

    def _subtracts(self, e: ast.expr | None) -> bool:
        """``subtracts`` of ``e`` or of what the name ``e`` was bound to (``start = max(0, n - w)``, then
        ``arange(start, n)`` or ``x[:, start:]``: the last w, however the start was spelt)."""
        if subtracts(e):
            return True
        r = self._resolved(e) if isinstance(e, ast.Name) else None
        tops = r.args if isinstance(r, ast.Call) and isinstance(r.func, ast.Name) and r.func.id in ("max", "int") \
            else [r]  # max(0, n - w), max(n - w, 0), int(n - w)
        return any(isinstance(x, ast.BinOp) and isinstance(x.op, ast.Sub) for x in tops)  # a difference itself

    def _co_moment(self, node: ast.BinOp) -> bool:
        """``(a - a_mean) * d`` with ``a_mean`` a reduction of attention (a mean over the queries) and ``d`` another
        centred quantity (``(t - t_mean) * w``): summed, the covariance of attention with it, a least-squares trend."""
        for side, other in ((node.left, node.right), (node.right, node.left)):
            s = self._resolved(side)
            o = self._resolved(other)
            if isinstance(s, ast.BinOp) and isinstance(s.op, ast.Sub) and "A" in self.tag(s.left) and \
                    "A" in self.tag(s.right) and self._holds_reduce(s.right) and not _same(side, other) and \
                    subtracts(o) and "A" not in self.tag(other):
                return True
        return False

    def _holds_reduce(self, e: ast.expr, depth: int = 0) -> bool:
        """Whether ``e`` reduces (a sum, a mean...), through the names it was computed from (``s = e.sum(-1)``,
        ``d = s.clamp_min(eps)``, then ``e / d``: each call's receiver moved into a temporary of its own)."""
        for c in ast.walk(e):
            if isinstance(c, ast.Call) and CANON.get(callee(c.func)[0] or "") == "reduce":
                return True
            if isinstance(c, ast.Name) and depth < 4 and c.id in self.exprs and self.exprs[c.id] is not e and \
                    self._holds_reduce(self.exprs[c.id], depth + 1):
                return True
        return False

    def _own_maximum(self, num: ast.expr, den: ast.expr) -> bool:
        """``x / x.amax(dim, keepdim=True)`` (eps-guarded or clamped, through a temporary, as ``max(...).values``):
        x rescaled by its own largest entry, which puts scores on one scale and aggregates nothing (a maximum over
        queries or heads is taken of something else)."""
        for _ in range(6):
            if isinstance(den, ast.Name) and den.id in self.exprs:
                den = self.exprs[den.id]
            elif isinstance(den, ast.Call) and callee(den.func)[0] in ("clamp_min", "clamp", "clip", "add", "float") \
                    and (operand := self._operand(callee(den.func)[1], list(den.args))) is not None:
                den = operand  # x.clamp_min(eps), torch.clamp_min(x, eps)
            elif isinstance(den, ast.BinOp) and isinstance(den.op, ast.Add) and isinstance(den.right, ast.Constant):
                den = den.left  # x.amax() + eps
            elif isinstance(den, ast.Attribute) and den.attr == "values" or isinstance(den, ast.Subscript) and \
                    isinstance(den.slice, ast.Constant) and den.slice.value == 0:
                den = den.value  # x.max(dim).values, x.max(dim)[0]
            else:
                break
        if not isinstance(den, ast.Call):
            return False
        name, receiver = callee(den.func)
        if name not in ("amax", "max"):
            return False
        operand = self._operand(receiver, list(den.args))
        if operand is None or ast.unparse(operand) != ast.unparse(num):
            return False
        if self.found.get("max_attention") == den.lineno and den.lineno != num.lineno:
            del self.found["max_attention"]  # the maximum was taken into a temporary first: read there as a score
        return True

    def _first_plus(self, e: ast.expr) -> bool:
        """``pos.min() + 4``, ``first + self.lead`` (``first = pos[ok].min()``), ``pos[0] + n``: a few past the first
        position: what lies below it is the first tokens."""
        if not isinstance(e, ast.BinOp) or not isinstance(e.op, ast.Add):
            return False
        for a, b in ((e.left, e.right), (e.right, e.left)):
            if not (isinstance(a, ast.Constant) and isinstance(a.value, int) or self_attr(a)):
                continue
            first = self._resolved(b)
            if isinstance(first, ast.IfExp):
                first = first.body
            smallest = isinstance(first, ast.Call) and callee(first.func)[0] in ("min", "amin")
            first_entry = isinstance(first, ast.Subscript) and isinstance(first.slice, ast.Constant) and \
                first.slice.value == 0
            if smallest or first_entry:
                t = self.tag(first)
                if t & {"P", "I"} and not t & DATA_TAGS:
                    return True
        return False

    def _python_number(self, e: ast.expr, depth: int = 0) -> bool:
        """A count held as one Python number (``int(ok.sum())``, ``max(1, n)``, ``x.item()``, ``len(rows)``): how
        many rows a mean runs over, no count per key."""
        e = self._resolved(e)
        if not isinstance(e, ast.Call) or depth > 3:
            return False
        name = callee(e.func)[0]
        builtin = isinstance(e.func, ast.Name)
        if builtin and name in ("int", "float", "len", "round") or name == "item":
            return True
        if not (builtin and name in ("max", "min")):
            return False
        # the builtin max or min of a literal and a value, or of Python numbers: a number (a tensor of many entries
        # cannot be compared so)
        return len(e.args) >= 2 and any(isinstance(a, ast.Constant) for a in e.args) or any(
            self._python_number(a, depth + 1) for a in e.args)

    def _one_minus(self, e: ast.expr) -> ast.expr | None:
        """``x`` where ``e`` is one minus it (``1 - x``, ``(1.0 - x).clamp_min(eps)``, ``1 - x + eps``,
        ``torch.clamp(1 - x, min=eps)``, a name bound to one of them), else None."""
        for _ in range(4):
            e = self._resolved(e)
            if isinstance(e, ast.Call) and (callee(e.func)[0] or "") in ("clamp", "clamp_min", "clip", "add", "float",
                                                                         "double", "maximum"):
                module = isinstance(e.func, ast.Attribute) and isinstance(e.func.value, ast.Name) and \
                    e.func.value.id in ("torch", "np", "numpy")
                inner = e.args[0] if (module or isinstance(e.func, ast.Name)) and e.args else \
                    e.func.value if isinstance(e.func, ast.Attribute) and not module else None
                if inner is None:
                    return None
                e = inner
            elif isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) and self._literal(e.right) is not None:
                e = e.left  # 1 - x + eps
            else:
                break
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Sub) and self._literal(e.left) == 1.0:
            return e.right
        return None

    def _resolved(self, e: ast.expr, depth: int = 1) -> ast.expr:
        """A name resolved to the expression it was last bound to (n = (t + b - 1) // b), through up to ``depth``
        names bound to names."""
        for _ in range(depth):
            if not (isinstance(e, ast.Name) and e.id in self.exprs):
                break
            e = self.exprs[e.id]
        return e

    def _binop_blocks(self, node: ast.BinOp, lt: set[str], rt: set[str]) -> set[str] | None:
        """Operations of this issue's rules written with arithmetic: attention over a count of the queries that see
        each key, the query against a channel-wise key envelope, a block id per token (index // size), sums of two
        token indices (anti-diagonals), a strongly attended mask times the step (when a token was last attended)."""
        line = node.lineno
        both = lt | rt
        if isinstance(node.op, ast.Div):
            if "A" in lt and "EL" not in lt and _damped_count(rt):
                self.add("count_damped", line)  # attention summed, over a root or a log of how many queries see it
            if "A" in lt and "EL" not in lt and _count_like(rt) and not self._python_number(node.right):
                # (a time elapsed over a count is an age's share; a total over a Python number of rows is a mean)
                self.add("count_normalised", line)  # attention summed, over how many queries see each key
                return lt | rt
            if not lt & (DATA_TAGS | {"I", "P"}) and _count_like(rt):
                return rt | {"RCNT"}  # 1 / the count: a weight per key
        if isinstance(node.op, ast.Sub):
            shared = {x for x in lt & rt if x.startswith("CSUM")}
            if shared and isinstance(node.left, ast.Subscript) and isinstance(node.right, ast.Subscript):
                for x in shared:  # c[:, w:] - c[:, :-w] of one running sum: a sum over a sliding window (pooling)
                    self.pending_cumsum.pop(int(x[4:]), None)
                self.add("pooling", line)
                return {x for x in both if not x.startswith("CSUM")}
        if isinstance(node.op, ast.Div):
            shared = {x for x in lt & rt if x.startswith("EXP")}
            if shared and self._holds_reduce(node.right):
                for x in shared:  # exp(z) / exp(z).sum(): a softmax written by hand, not an exponential logit
                    self.pending_exp.pop(int(x[3:]), None)
                return {x for x in both if not x.startswith("EXP")} | {"A"}
        if isinstance(node.op, ast.Mult):
            if "RCNT" in lt and "A" in rt or "RCNT" in rt and "A" in lt:
                self.add("count_normalised", line)
            if "A" in lt and "EL" not in lt and _damped_count(rt, inverse=True) or \
                    "A" in rt and "EL" not in rt and _damped_count(lt, inverse=True):
                self.add("count_damped", line)  # attention times count ** -0.5 or rsqrt(count)
            for a, b in ((lt, rt), (rt, lt)):
                if {"UR", "K"} <= a and not a & {"A", "Q"} and "K" in b and not b & {"A", "Q"}:
                    # unit keys (centres) times key lengths: keys rebuilt from a direction and a length, no norm score
                    for x in b:
                        if x.startswith("KN") and x[2:].isdigit() and self.found.get("key_norm") == int(x[2:]):
                            del self.found["key_norm"]
            self._pair(lt, rt, line, elementwise=True)
            for a, b in ((lt, rt), (rt, lt)):
                if "AC" in a and "A" not in b and b & {"S", "P", "I"}:
                    self.add("last_attended", line)  # the strongly attended mask times the step: when last attended
        if isinstance(node.op, ast.FloorDiv) and both & {"I", "P"} and not both & DATA_TAGS:
            if _group_size(self._resolved(node.right)):
                return both  # query head // group size: the KV head it shares, no block of tokens
            return both | {"BID"}  # token index // block size: a block id per token
        if isinstance(node.op, ast.FloorDiv) and lt & {"K", "V"} and not both & {"A", "Q", "N", "R"}:
            self.add("quantised", line)  # keys // step: keys floored to a grid, a low-bit copy of them
            return both | {"QZ"}
        if isinstance(node.op, (ast.Add, ast.Sub)):
            for a, b in ((lt, rt), (rt, lt)):
                if b & {"KK2", "KKB"}:  # ||x||^2 - 2 x.c + ||c||^2: a squared distance written out, no key norm
                    lines = [int(x[3:]) for x in a if x.startswith("SQN")]
                    for side in (node.left, node.right):  # (aa - 2 a.b + bb with aa a name bound to the norms)
                        while isinstance(side, ast.Subscript):
                            side = side.value
                        if isinstance(side, ast.Name) and side.id in self.sq_norm_lines and "NSQ" in a:
                            lines.append(self.sq_norm_lines[side.id])
                    for at in lines:
                        if self.found.get("key_norm") == at:
                            del self.found["key_norm"]
        if isinstance(node.op, (ast.Add, ast.Sub)) and not both & (DATA_TAGS | {"W", "RND"}):
            if isinstance(node.op, ast.Add) and "I" in lt and "I" in rt:
                return both | {"IS"}  # row index + column index: constant along an anti-diagonal
            if isinstance(node.op, ast.Sub) and lt & {"I", "P"} and rt & {"I", "P"} and (
                    _broadcast(node.left) or _broadcast(node.right)):
                # row position - column position, pairwise: the query-key distance (constant on a diagonal), no
                # count per key (compared with a bound, a visibility matrix: ``tag``'s Compare)
                return both | {"DD"}
            if both & {"I", "P"} and "DD" not in both:
                lt.add("CNT")  # positions or indices offset: how many queries lie after a key
        return None

    def _pair(self, lt: set[str], rt: set[str], line: int, elementwise: bool = False) -> set[str]:
        """Two operands combined (a product or a matmul): the query against key summaries, strided slices,
        selected channels, a shared low-rank basis. Returns tags the result gains."""
        out: set[str] = set()
        self._estimators(lt, rt, line)
        if "LOGA" in lt and "A" in rt or "LOGA" in rt and "A" in lt:
            self.add("entropy", line)  # attention against its own log: -sum p log p, written by hand or as a product
        if not elementwise and any("Q" in a and ("K" not in a or a & {"CH", "CHI"}) and
                                   ("QRED" not in a or "CH" in a) and
                                   "K" in b and ("Q" not in b or b & {"CH", "CHI"}) and not (a | b) & {"A", "V"}
                                   for a, b in ((lt, rt), (rt, lt))):
            # (queries and keys on the channels a ranking of both chose carry that ranking's tags, its mean over the
            # queries among them: still each query against the keys)
            out.add("QROW")  # queries against keys, one row per query: nothing summed over the queries yet
        for a, b in ((lt, rt), (rt, lt)):
            if "Q" in a and "K" not in a and "X" in b and "K" in b and "QZ" not in b:
                self.add("key_envelope", line)  # q_c times a channel's min or max of the keys: an upper bound
            if not elementwise and "Q" in a and "K" in b and "KR" in b and b & {"BLK", "BID"} and "X" not in b:
                self.add("block_keys", line)  # the query against a summary of each block's keys
            if not elementwise and "Q" in a and "K" in b and "STQ" in a and "STK" in b and "REV" in a | b:
                self.add("antidiagonal", line)  # strided queries against reversed strided keys: anti-diagonal sums
            if not elementwise and "Q" in a and "K" in b and "CH" in a | b:
                self.add("channel_selection", line)  # the query against the keys on a few selected channels
            if not elementwise and "Q" in a and "K" in b and "FB" in a and "FB" in b:
                self.add("low_rank_scores", line)  # query and keys both projected on a factorisation's basis
        if not elementwise and "K" in lt and "K" in rt and ("Q" not in lt | rt or any(
                "QKU" in a and "Q" not in b and not (a | b) & {"A", "V"} for a, b in ((lt, rt), (rt, lt)))):
            out.add("KK2")  # keys against keys (or centroids made of keys; keys and queries as one set of points)
        return out

    def _estimators(self, lt: set[str], rt: set[str], line: int) -> None:
        """The query against a cheap copy of the keys (a product, a matmul, an einsum pair): the sign bits of a random
        projection of the keys against the query's projection left real-valued (an asymmetric sketch estimator of
        q.k; both signed is a Hamming distance, ``hashing`` alone), or keys rounded to a few levels (a low-bit copy
        scoring in place of the keys)."""
        for a, b in ((lt, rt), (rt, lt)):
            if "Q" in a and "K" not in a and "K" in b:
                if "SGN" in b and "RND" in a and "SGN" not in a:
                    self.add("sign_sketch", line)
                if "QZ" in b:
                    self.add("quantised_scores", line)

    def _subscript_tags(self, node: ast.Subscript, t: set[str], st: set[str]) -> set[str]:
        out: set[str] = set()
        if "K" in t and not t & {"A", "Q"} and {"BLK", "R"} <= st:
            out.add("KR")  # keys[h, members[top]]: a block's keys picked by a ranking, its representatives
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if "A" in t:
            # attention read at paired index tensors, one offset from the other (a[:, rows, cols - d]): the entries
            # at one query-key distance, a diagonal
            index = [p for p in parts if not isinstance(p, ast.Slice) and not (
                isinstance(p, ast.Constant) and p.value in (None, Ellipsis))]
            tags = [self.tag(p) for p in index]
            lines = [x for x in tags if x & {"I", "P"} and not x & (DATA_TAGS | {"R", "W", "RND"})]
            paired = [p for p, x in zip(index, tags) if x in lines]
            if len(lines) >= 2 and "QROW" in t and not any("DD" in x for x in lines) and not any(
                    _broadcast(p) for p in paired) and all(
                    not isinstance(p, ast.BinOp) or isinstance(p.op, (ast.Add, ast.Sub)) and (
                        isinstance(p.right, ast.Constant) or isinstance(p.left, ast.Constant)) for p in paired):
                # a[:, rows, at] and a[:, rows, at + 1], the index tensors side by side (not laid out pairwise) and
                # offset by a literal at most: each row's attention on the token its own position names, or the
                # next one (a head's echo or induction score), not a table of diagonals over every distance
                self.add("copy_score", getattr(node, "lineno", 0))
            elif len(lines) >= 2 and (any("DD" in x for x in lines) or any(
                    isinstance(p, ast.BinOp) and isinstance(p.op, (ast.Add, ast.Sub)) for p, x in zip(index, tags)
                    if x in lines)):
                out.add("DG")
        for axis, p in enumerate(parts):
            if not isinstance(p, ast.Slice):
                continue
            if p.step is not None and not (isinstance(p.step, ast.Constant) and p.step.value == 1):
                out |= {"STQ"} if "Q" in t else set()
                out |= {"STK"} if "K" in t else set()
                if self._subtracts(p.lower):
                    out.add("REV")
            lower_names = {n.id for n in ast.walk(p.lower) if isinstance(n, ast.Name)} if p.lower is not None else set()
            stepped = any("BS" in self.tags.get(n, set()) for n in lower_names) or (
                p.lower is not None and "BS" in self.tag(p.lower)) or (  # (a comprehension's own stepping variable)
                isinstance(p.lower, ast.BinOp) and isinstance(p.lower.op, ast.Mult) and axis > 0)  # axis 0: heads
            channels = "A" not in t and (  # view.keys[h, :, j * d:(j + 1) * d], x[..., a:b]: a slice of the channels
                isinstance(node.value, ast.Attribute) and node.value.attr in ("keys", "values", "queries") and
                axis == 2 and len(parts) == 3 or axis == len(parts) - 1 and axis > 0 and any(
                    isinstance(x, ast.Constant) and x.value is Ellipsis for x in parts[:axis]))
            if isinstance(p.lower, ast.Name) and isinstance(p.upper, ast.Name) and \
                    (p.lower.id, p.upper.id) in self.span_pairs and t & {"K", "V", "A", "S"} and not channels:
                out.add("BLK")  # x[a:b] for a, b in spans: one segment of a partition of the tokens
            elif stepped and (t & {"K", "V", "A", "S"} or "I" in t and not t & {"Q", "QAX"}) and \
                    not ("QAX" in t and axis == 1) and not channels:
                # (a run of token indices cut in steps: the members of one block, read through them later)
                out |= {"BLK", "BAX0"} if axis == 0 else {"BLK"}  # (BAX0: the block runs along the first axis)
                # x[:, c:c + b] in a loop stepping by b (or x[:, i * b:...]): one block of tokens
                # (attn[:, a:b] of the unreduced attention is a run of its queries, no block of tokens)
            elif axis > 0 and "A" in t and "QAX" not in t and not stepped and self._shifted(p):
                out.add("SHF")  # s[:, 1:], s[:, :-1], padded[:, i:i + T]: the score moved along the tokens
        if "BID" in st and t & DATA_TAGS:
            out.add("BLK")  # a per-block value read at each token's block id
        if "BLK" in st and "I" in st and not st & DATA_TAGS and t & DATA_TAGS:
            out.add("BLK")  # a[idx] with idx one piece of split(arange(T), b): one block's tokens
        if "CHI" in st and t & {"Q", "K"}:
            out.add("CH")
        return out

    def _picked_rows_product(self, n: ast.BinOp) -> bool:
        """``unit @ unit[nxt]`` (``u[i] @ u[i][pick].T``): unit keys against the unit keys a ranking picked, read off
        the names' tags (nothing tagged again)."""
        def bare(e: ast.expr) -> ast.expr:
            while True:
                if isinstance(e, ast.Attribute) and e.attr in ("T", "mT"):
                    e = e.value
                elif isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in (
                        "t", "transpose", "float", "clone") and not e.args[2:]:
                    e = e.func.value
                else:
                    return e
        sides = [bare(n.left), bare(n.right)]
        if not all({"K", "UR"} <= self._peek(x) and not self._peek(x) & {"A", "Q"} for x in sides):
            return False
        return any(isinstance(x, ast.Subscript) and (self._peek(x.slice) if isinstance(x.slice, (
            ast.Name, ast.Attribute, ast.Subscript)) else set()) & {"R", "SEL", "ASG"} for x in sides)

    def _peek(self, e: ast.expr) -> set[str]:
        """The tags a name, a self attribute or a subscript of one holds, without tagging anything again."""
        while isinstance(e, ast.Subscript):
            e = e.value
        if isinstance(e, ast.Name):
            return self.tags.get(e.id, set())
        if isinstance(e, ast.Attribute) and self_attr(e):
            return self.tags.get(f"self.{e.attr}", set())
        return set()

    def _similarity_weighted(self, e: ast.expr) -> bool:
        """A product in ``e`` of key-key likenesses (no attention) and scores (attention): other tokens' scores
        weighted by how much their keys resemble each token's (``(w * level[nbrs]).sum(-1)``)."""
        for n in ast.walk(e):
            if not (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult)):
                continue
            factors: list[ast.expr] = []
            stack: list[ast.expr] = [n]
            while stack:
                x = stack.pop()
                if isinstance(x, ast.BinOp) and isinstance(x.op, ast.Mult):
                    stack += [x.left, x.right]
                else:
                    factors.append(x)
            held = [self._peek(f) for f in factors]
            if any("KSIM" in h and "A" not in h for h in held) and any("A" in h for h in held):
                return True
        return False

    def _named_norm(self, e: ast.expr) -> bool:
        """A divisor that is a name bound to a norm or a root of the rows, clamped at most (``lengths = sqrt((k *
        k).sum(1))``; ``k / maximum(lengths, eps)``): the rows made unit vectors (a sum of norms divides no row into a
        unit one)."""
        while isinstance(e, ast.Call) and callee(e.func)[0] in ("maximum", "fmax", "clamp", "clamp_min", "clip",
                                                                "add", "float", "unsqueeze"):
            name, receiver = callee(e.func)
            e = receiver if self._on_tensor(receiver) and receiver is not None else (e.args[0] if e.args else e)
            if not isinstance(e, ast.Call):
                break
        while isinstance(e, ast.Subscript):  # lengths[:, None]
            e = e.value
        return isinstance(e, ast.Name) and e.id in self.exprs and _norm_or_root(self.exprs[e.id])

    def _outer_of_norms(self, e: ast.expr) -> bool:
        """``outer(m, m)`` (``ger``) of one vector of norms (a norm call, or a square root: ``sqrt(diag(K K^T))``):
        the denominator that makes a Gram matrix of cosines."""
        if not (isinstance(e, ast.Call) and callee(e.func)[0] in ("outer", "ger") and len(e.args) == 2 and
                _same(e.args[0], e.args[1])):
            return False
        return _norm_or_root(self._resolved(e.args[0], 2))

    def _sliding_max(self, name: str | None, node: ast.Call, receiver: ast.expr | None,
                     arg_tags: list[set[str]]) -> bool:
        """``torch.maximum(s, s_shifted)`` or ``torch.stack([s[:, i:i + T] for i ...]).amax(0)``: the largest of a
        score and its copies moved along the tokens, a sliding maximum (pooling), not the largest over queries."""
        if name in ("maximum", "fmax") and len(arg_tags) >= 2:
            return any("SHF" in a for a in arg_tags)
        if name in ("amax", "max"):
            operand = self._operand(receiver, list(node.args))
            if isinstance(operand, ast.Name) and isinstance(bound := self.exprs.get(operand.id), ast.Call) and \
                    callee(bound.func)[0] in ("stack", "cat"):
                return "SHF" in self.tags.get(operand.id, set())  # shifts = stack([...]); shifts.amax(0)
            return isinstance(operand, ast.Call) and callee(operand.func)[0] in ("stack", "cat") and \
                "SHF" in self.tag(operand)
        return False

    def _shifted(self, p: ast.Slice) -> bool:
        """A slice that moves a per-token score by a few tokens (``1:``, ``:-1``, ``i:i + T``): a neighbour's score
        beside each token's own, what a pooling window reads (``_sliding_max``)."""
        def small(e: ast.expr | None, sign: int) -> bool:
            if sign < 0:
                return isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub) and isinstance(e.operand, ast.Constant) \
                    and isinstance(e.operand.value, int) and 1 <= e.operand.value <= 8
            return isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool) and \
                1 <= e.value <= 8

        if p.lower is None and small(p.upper, -1) or small(p.lower, 1) and p.upper is None:
            return True
        lo, hi = p.lower, p.upper  # (a loop's or a comprehension's offset: a block loop's is stepped, read before)
        return isinstance(lo, ast.Name) and isinstance(hi, ast.BinOp) and isinstance(hi.op, ast.Add) and \
            any(isinstance(x, ast.Name) and x.id == lo.id for x in (hi.left, hi.right))

    def _gate(self, t: set[str], line: int) -> None:
        if "L" in t or "LK" in t and t & {"K", "V"}:
            self.layer_test = True  # the layer index tested, or how this layer's keys compare with another layer's
        if {"Q", "S"} <= t and t & {"M", "N", "UR", "QRED"} and not t & {"K", "V", "A", "P", "RND", "VIEW", "LI"}:
            # this call's queries held against what an earlier call left (its queries), reduced to a likeness: a
            # branch taken while consecutive queries stay alike, an earlier selection reused (TokenSelect's
            # selection cache, RefreshKV's refresh); positions, draws or the view are no likeness of queries
            self.add("query_reuse", line)
        self._gate_fitted(t, line)

    def _gate_fitted(self, t: set[str], line: int) -> None:
        """A test on fitted numbers that carry no per-token data (a per-head or per-layer table entry, a trained
        gate's output for a head): the table decides which rule a head or layer follows."""
        if "W" in t and not t & PER_TOKEN:
            self.add("learned_gate", line)

    def _slice_features(self, node: ast.Subscript, t: set[str]) -> None:
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for p in parts:
            if isinstance(p, ast.Slice):
                lower = self.tag(p.lower) if p.lower is not None else set()
                if "LI" in lower and not lower & DATA_TAGS and t & {"K", "V", "P", "I"} and "R" not in t and \
                        p.lower is not None and not self._tail_bound(p.lower):
                    self.add("layer_span", node.lineno)  # the tokens from a start that moves with the layer index
                if "Q" in t and (negative(p.lower) or isinstance(p.lower, ast.Constant) and
                                 isinstance(p.lower.value, int) and p.lower.value < 0):
                    if isinstance(p.lower, ast.UnaryOp) and isinstance(p.lower.operand, ast.Constant) and \
                            p.lower.operand.value == 1:
                        self.add("last_query", node.lineno)
                    else:
                        self.add("window_queries", node.lineno)
                lower = self.tag(p.lower) if isinstance(p.lower, ast.Name) else set()
                if isinstance(p.lower, ast.Constant) and p.lower.value == 0:
                    lower = lower | {"Z"}  # x[0:n]: the first n, as x[:n]
                if isinstance(p.lower, ast.BinOp) and isinstance(p.lower.op, ast.Sub) and p.upper is not None and \
                        ast.unparse(p.lower.left) == ast.unparse(p.upper):
                    lower = lower | {"D"}  # x[n - w:n]: the last w, as x[n - w:]
                if (p.lower is None or "Z" in lower) and p.upper is not None and not negative(p.upper) and \
                        t & {"K", "V", "P", "I"} and "R" not in t and not (
                            isinstance(p.upper, ast.Constant) and p.upper.value == 0):
                    # (the first n of a ranking is a top-n; x[:0] is an empty selection of the same type)
                    self.add("sinks", node.lineno)
                if "D" in lower and t & {"K", "V", "P", "I"}:
                    self.add("recent", node.lineno)
                if (negative(p.lower) or p.upper is None and self._subtracts(p.lower)) and t & {"K", "V", "P", "I"}:
                    self.add("recent", node.lineno)
            elif isinstance(p, ast.UnaryOp) and isinstance(p.op, ast.USub) and isinstance(p.operand, ast.Constant) \
                    and p.operand.value == 1 and t & {"Q", "A"}:
                self.add("last_query", node.lineno)

    def _stored_range(self, target: ast.Subscript) -> None:
        """``s[:, :n] = inf`` forces the first n in (sinks); ``s[:, n - w:] = inf`` the last w (a recent window)."""
        parts = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        for p in parts:
            if isinstance(p, ast.Slice):
                if p.lower is None and p.upper is not None and not negative(p.upper):
                    self.add("sinks", target.lineno)
                elif negative(p.lower) or self._subtracts(p.lower):
                    self.add("recent", target.lineno)
                elif (self_attr(p.lower) or isinstance(p.lower, ast.Constant)) and isinstance(p.upper, ast.BinOp) \
                        and isinstance(p.upper.op, ast.Add):
                    # s[:, c : c + m] = 0: the first c survive, the m after them go, the rest (the newest) stay
                    self.add("sinks", target.lineno)
                    self.add("recent", target.lineno)

    def _einsum(self, operands: list[set[str]], line: int) -> None:
        """``einsum`` over several operands: keys against keys, queries against keys, queries against queries."""
        if len(operands) == 2 and _one_side(operands[0], operands[1], "LK") and not any(
                o & {"A", "Q"} for o in operands) and any("N" in o for o in operands) and (
                all("K" in o for o in operands) or all("V" in o for o in operands)):
            self.add("layer_similarity", line)  # this layer's unit keys against another layer's kept ones
            return
        if len(operands) == 2 and _over_likeness(operands[0], operands[1]):
            self.add("similarity_propagation", line)  # scores carried over the keys' likeness graph
        if len(operands) == 2 and all("A" in o and "N" in o for o in operands):
            self.add("head_clustering", line)  # unit attention patterns against each other
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
        if any("A" in o for o in operands) and any("V" in o and "A" not in o for o in operands):
            self.add("attention_output", line)
        if any("W" in o and "K" not in o for o in operands) and any("K" in o and "W" not in o for o in operands):
            self.add("key_projection", line)
        if any("Q" in o and "K" not in o for o in operands) and any("FB" in o for o in operands) and any(
                "K" in o and "FB" in o for o in operands):
            self.add("low_rank_scores", line)  # the query against the keys, both through a factorisation's basis
        for i, a in enumerate(operands):
            for b in operands[i + 1:]:
                self._pair(a, b, line)

    def _matmul(self, lt: set[str], rt: set[str], line: int) -> None:
        both = lt | rt
        self._estimators(lt, rt, line)
        if "A" in lt and "A" in rt and "N" in lt and "N" in rt:
            self.add("head_clustering", line)  # unit attention patterns against each other: their cosines
        elif _over_likeness(lt, rt):
            self.add("similarity_propagation", line)  # scores carried over the keys' likeness graph (not the attention
            # graph: a walk along attention is ``attention_propagation``)
        elif "A" in lt and "A" in rt and not (lt & {"K", "V"} and rt & {"K", "V"}):
            # attention composed with attention: a walk on the token graph (keys or values scaled by attention on both
            # sides are data: their weighted Gram, contracted over the tokens, as a leverage score builds it)
            self.add("attention_propagation", line)
        if "Q" in lt and "K" in rt or "K" in lt and "Q" in rt:
            self.add("attention", line)
        elif _one_side(lt, rt, "LK") and ("K" in lt and "K" in rt or "V" in lt and "V" in rt) and "N" in both and \
                "A" not in both:
            self.add("layer_similarity", line)  # unit keys (values) against another layer's kept unit keys
        elif "K" in lt and "K" in rt and "Q" not in both:
            if "KM" in both and "BLK" not in both:
                self.add("mean_key", line)  # keys against the mean key (KeyDiff)
            elif "N" in both:
                self.add("key_similarity", line)  # unit keys against unit keys: cosine similarity
        elif "Q" in lt and "Q" in rt and "K" not in both:
            self.add("query_statistics", line)
        if "A" in lt and "V" in rt and "A" not in rt or "V" in lt and "A" in rt and "A" not in lt:
            self.add("attention_output", line)  # attention weights times values: the attention output
        if "W" in lt and "K" in rt and "W" not in rt or "K" in lt and "W" in rt and "W" not in lt:
            self.add("key_projection", line)  # keys against fitted vectors (a learned filter per head)

    def call(self, node: ast.Call) -> set[str]:
        name, receiver = callee(node.func)
        if name == "append" and isinstance(receiver, ast.Name) and len(node.args) == 1 and \
                isinstance(node.args[0], ast.Tuple) and not any(isinstance(x, ast.Starred) for x in node.args[0].elts):
            each = [self.tag(x) for x in node.args[0].elts]  # spans.append((start, i)): the list's tuples
            known = self.seq_elts.get(receiver.id)
            self.seq_elts[receiver.id] = each if known is None or len(known) != len(each) else \
                [a | b for a, b in zip(known, each)]
        if name == "heaviside":
            step = self._step_compare(node, receiver)
            if step is not None:
                return self.tag(step)  # a unit step of x - bar is the comparison x > bar (a count of the times)
        if name in ("clamp_min", "clamp", "clip", "relu") and (sign := _clipped_sign(node, receiver, name)) is not None:
            step = self._step_compare(sign, callee(sign.func)[1])
            if step is not None:
                return self.tag(step)  # sign(x - bar) clipped at 0 is the unit step: the comparison x > bar
        if name in ("addcmul", "addcmul_", "addcdiv", "addcdiv_"):
            written = self._fused_multiply_add(node, receiver, name)
            if written is not None:
                return self.tag(written)  # addcmul(x, a, b, value=-1) is x - a * b: read as written out
        if name in _COMPARE_CALLS and name not in self.defs.by_name:
            written_out = self._comparison_call(node, name, receiver)
            if written_out is not None:
                return self.tag(written_out)  # x.gt(0), torch.lt(a, b): the comparison written as an operator
        if name == "narrow" and receiver is not None and self._on_tensor(receiver) and len(node.args) == 3:
            start, length = node.args[1], node.args[2]
            window = ast.fix_missing_locations(ast.copy_location(ast.Subscript(
                value=receiver, slice=ast.Tuple(elts=[ast.Constant(Ellipsis), ast.Slice(
                    lower=start, upper=ast.BinOp(left=start, op=ast.Add(), right=length))], ctx=ast.Load()),
                ctx=ast.Load()), node))
            return self.tag(window)  # x.narrow(d, i, n) is x[..., i:i + n] (along d): a slice, a shift when i moves
        if name in ("islice", "deque") and receiver is None or isinstance(receiver, ast.Name) and \
                receiver.id in ("itertools", "collections"):
            taken = _python_slice(node, str(name))
            if taken is not None:
                return self.tag(taken)  # islice(x, n) is x[:n]; deque(x, maxlen=m) keeps x[-m:]
        if name == "scaled_dot_product_attention":
            sdpa = _attention_written_out(node)
            if sdpa is not None:
                return self.tag(sdpa)  # softmax(q k^T) v: with the identity as v, the attention weights themselves
        if name in ("multi_dot", "chain_matmul"):
            mats = list(node.args[0].elts) if len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple)) \
                else list(node.args)
            if len(mats) >= 2 and not any(isinstance(m, ast.Starred) for m in mats):
                chain = mats[0]
                for m in mats[1:]:
                    chain = ast.BinOp(left=chain, op=ast.MatMult(), right=m)
                return self.tag(ast.fix_missing_locations(ast.copy_location(chain, node)))  # a @ b @ c
        if name == "reduce" and (norm := _folded_hypot(node)) is not None:
            return self.tag(norm)  # functools.reduce(torch.hypot, x.unbind(d)): the norm of x along d
        if name in _LOSSES:
            loss = _loss_written_out(node, name)
            if loss is not None:
                return self.tag(loss)  # mse_loss(k, 0, reduction="none") is k ** 2: read as written out
        # a reduction over every axis (x.mean(), torch.max(x), x.item()): one number for the layer, so a norm inside
        # it is a scale (a ridge, a normaliser), no per-token score (``normalising`` keeps norms from being one)
        scalar = name in _SCALARS and not node.keywords and (
            not node.args if self._on_tensor(receiver) else len(node.args) == 1 and receiver is not None)
        self.normalising += scalar
        rt = self.tag(receiver) if receiver is not None else set()
        if name in _SHAPE_ONLY and node.args and not self._on_tensor(receiver):
            # torch.full_like(z[..., :1], v): the first argument gives a shape (and a type), none of its data
            arg_tags: list[set[str]] = [set()] + [self.tag(a) for a in node.args[1:]]
        else:
            arg_tags = [self.tag(a) for a in node.args]
        self.normalising -= scalar
        kw_tags = {k.arg: self.tag(k.value) for k in node.keywords}
        all_args: set[str] = set().union(*arg_tags, *kw_tags.values()) if (arg_tags or kw_tags) else set()
        if name in SIZES:
            return set()
        if name in ("histc", "histogram", "histogramdd"):
            return {"CNT"}  # how many values fall in each bin: counts of a distribution, none of the values themselves
        if receiver is None and (named := _getattr_self(node)) is not None:
            attr = named.attr  # getattr(self, "x", default): self.x
            return set(self.tags.get(f"self.{attr}", set())) | {f"@{attr}"} | set().union(*arg_tags[2:])
        if name == "getattr" and receiver is None and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) \
                and node.args[0].id == "self" and not isinstance(node.args[1], ast.Constant) and \
                self.current not in ("__init__", "setup"):
            # getattr(self, f"_hold_{view.layer}"): an attribute named per layer, what an earlier call stored
            return {"S"} | (set().union(*arg_tags[2:]) - {"LI"})
        if name in self.aliases:
            name = self.aliases[name]
        if name == "extend" and isinstance(receiver, ast.Name) and len(node.args) == 1 and \
                isinstance(queue := self.exprs.get(receiver.id), ast.Call) and callee(queue.func)[0] == "deque" and \
                not queue.args and (maxlen := kwarg(queue, "maxlen")) is not None:
            # a bounded queue fed a list keeps its newest entries: q = deque(maxlen=m); q.extend(x) is x[-m:]
            kept = ast.fix_missing_locations(ast.copy_location(ast.Subscript(
                value=node.args[0], slice=ast.Slice(lower=ast.UnaryOp(op=ast.USub(), operand=maxlen)),
                ctx=ast.Load()), node))
            self.tags[receiver.id] = self.tags.get(receiver.id, set()) | self.tag(kept)
            return set()
        if name in ("append", "extend", "insert", "appendleft") and isinstance(receiver, ast.Name) and \
                receiver.id not in self.defs.modules and all_args:
            # parts.append(x): the list now also carries x (a per-head or per-level list stacked later)
            self.tags[receiver.id] = self.tags.get(receiver.id, set()) | all_args
            if "SEL" in all_args and self.frames:
                self.frames[-1]["sel"].add(receiver.id)
            return set()
        if name in ("append", "extend", "insert", "appendleft") and isinstance(receiver, ast.Attribute) and \
                self_attr(receiver) and all_args and self.current not in ("__init__", "setup"):
            # self.trail.append(keys): kept on the module by a hook, as self.trail[layer] = keys would be (what the
            # calls for the next layers read as another layer's)
            key = f"self.{receiver.attr}"
            self.tags[key] = self.tags.get(key, set()) | all_args | {"S"} | (
                {"LK"} if self._layer_kept(all_args) else set())
            return set()
        if name in ("get", "pop", "setdefault") and receiver is not None and not self_attr(receiver) and \
                (named := _getattr_self(receiver)) is not None:
            receiver = named  # getattr(self, "memo", {}).get(view.layer): self.memo.get(view.layer)
        if name in ("get", "pop", "setdefault") and receiver is not None and self_attr(receiver) and node.args and \
                isinstance(node.args[0], ast.Attribute) and node.args[0].attr == "layer" and \
                "VIEW" in self.tag(node.args[0].value):
            got = (rt | set().union(*arg_tags[1:])) - {"LK"}  # self.kept.get(view.layer): this layer's own, kept
            if self._state_entry(receiver, node.args[0]):
                return got | {"S"}  # self.memo.get(view.layer): what an earlier call for this layer stored
            # a table of numbers keyed by the layer (self.depth.get(view.layer), built from the model's layers): a
            # number that moves with the layer, as the layer index does
            return got | ({"LI"} if not rt & (DATA_TAGS | {"VIEW"}) else set())
        wrapped = self._wrapped(node.func)
        if wrapped is not None:  # vmap(f)(q, k), self.est(q, k) with self.est = partial(f, proj): f run on them
            fn, bound = wrapped
            call = ast.Call(func=node.func, args=[ast.Constant(None) for _ in bound] + list(node.args),
                            keywords=node.keywords)
            return self._inline(fn, call, bound + arg_tags, kw_tags) | all_args | set().union(*bound)
        init = self._constructor(node)
        if init is not None:
            attrs = self._as_object(None, lambda: self._inline(init, node, arg_tags, kw_tags))
            self.constructed[id(node)] = attrs
            return set().union(*attrs.values()) | all_args
        fields = self.defs.fields.get(node.func.id) if isinstance(node.func, ast.Name) else None
        if fields is not None:  # Digest(top, bottom, sizes=n): a dataclass's fields bound by position or by name
            attrs = {f: set(t) for f, t in zip(fields, arg_tags)} | {
                k: set(t) for k, t in kw_tags.items() if k in fields}
            self.constructed[id(node)] = attrs
            return set().union(*attrs.values(), set()) | all_args
        func = node.func
        made = func.value if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) else None
        if isinstance(func, ast.Attribute) and made is not None and id(made) in self.constructed and \
                isinstance(made.func, ast.Name):
            # Helper(keys, rel).run(k): a method of the object just made, run on what its __init__ stored
            cls = made.func.id
            method_def = next((d for d in self.defs.by_name.get(func.attr, []) if self.defs.owner.get(id(d)) == cls),
                              None)
            if method_def is not None and id(method_def) not in self.stack:
                from_made: set[str] = set()
                run_def = method_def

                def run_made() -> None:
                    from_made.update(self._inline(run_def, node, arg_tags, kw_tags))
                self.constructed[id(made)] = self._as_object(self.constructed[id(made)], run_made)
                return from_made | all_args
        local = self.defs.resolve(node, self.owner) or self._instance_method(node)
        if local is not None and id(local) in self.stack and self._recursive_power(local, node):
            self.add("query_svd", node.lineno)  # the queries' principal direction by a recursive power iteration
        if local is not None and name not in API_CALLS and name not in ("remember", "recall"):
            obj = node.func.id if isinstance(node.func, ast.Name) else node.func.value.id if isinstance(
                node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) else None
            if isinstance(node.func, ast.Attribute) and self_attr(node.func) and \
                    node.func.attr in self.defs.attr_instances and local.name == "__call__":
                obj = f"self.{node.func.attr}"  # self.signer(x): the object kept there, made by its constructor
                if obj not in self.objects:
                    made = self.defs.attr_calls[node.func.attr]
                    self.tag(made)
                    self.objects[obj] = self.constructed.get(id(made), {})
            if obj is not None and obj in self.objects:
                out: set[str] = set()
                method = local

                def run() -> None:
                    out.update(self._inline(method, node, arg_tags, kw_tags))
                self.objects[obj] = self._as_object(self.objects[obj], run)
                return out | all_args
            return self._inline(local, node, arg_tags, kw_tags) | all_args
        interface = self._interface_call(name, node, receiver, rt, arg_tags, all_args)
        if interface is not None:
            return interface
        return self._op_call(name, node, receiver, rt, arg_tags, all_args)

    def _wrapped(self, e: ast.expr) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[set[str]]] | None:
        """The local function ``e`` runs when called, and the tags of the arguments it already binds: ``vmap(f)``,
        ``torch.compile(f)``, ``functools.partial(f, a)`` (nested: ``vmap(partial(f, a))``), or a name or self
        attribute bound to one of them."""
        key = e.id if isinstance(e, ast.Name) else f"self.{e.attr}" if isinstance(e, ast.Attribute) and self_attr(e) \
            else None
        if key is not None and key in self.wrapped:
            return self.wrapped[key]
        if not (isinstance(e, ast.Call) and callee(e.func)[0] in FUNCTION_WRAPPERS and e.args):
            return None
        first = e.args[0]
        inner = self._wrapped(first)
        if inner is None:
            name = first.id if isinstance(first, ast.Name) else first.attr if isinstance(first, ast.Attribute) and \
                self_attr(first) else None
            fns = self.defs.by_name.get(name or "")
            if not fns:
                return None
            same = [d for d in fns if self.defs.owner.get(id(d)) == self.owner]
            inner = ((same or fns)[0], [])
        bound = [self.tag(a) for a in e.args[1:]] if callee(e.func)[0] == "partial" else []
        return inner[0], inner[1] + bound

    def _seq_of(self, e: ast.expr) -> list[set[str]] | None:
        """The element tags of the tuples a sequence holds (``seq_elts``), through ``sorted``/``reversed``/``list``."""
        for _ in range(4):
            if isinstance(e, ast.Call) and callee(e.func)[0] in ("sorted", "reversed", "list", "tuple") and e.args \
                    and isinstance(e.func, ast.Name):
                e = e.args[0]
            else:
                break
        if isinstance(e, ast.Name):
            return self.seq_elts.get(e.id)
        return self.node_seq.get(id(e))

    def _bind_each(self, target: ast.expr, it_node: ast.expr, it: set[str]) -> None:
        """A loop target over ``it_node``: a tuple target over a sequence of tuples binds each name its element
        (``for score, a, b in sorted(worth)``: the bounds carry no score); two names bound from one tuple of plain
        positions are a segment's bounds (``span_pairs``)."""
        each = self._seq_of(it_node) if isinstance(target, ast.Tuple) else None
        if each is None or not isinstance(target, ast.Tuple) or len(each) != len(target.elts) or any(
                isinstance(x, ast.Starred) for x in target.elts):
            self._bind(target, it)
            return
        for x, xt in zip(target.elts, each):
            self._bind(x, xt)
        names = [(x.id if isinstance(x, ast.Name) else None, xt) for x, xt in zip(target.elts, each)]
        for (a, at), (b, bt) in zip(names, names[1:]):
            if a and b and not (at | bt) & DATA_TAGS:
                self.span_pairs.add((a, b))

    def _constructor(self, node: ast.Call) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """``Helper(keys, ...)`` for a class of the module other than the one being read: its ``__init__``."""
        func = node.func
        if not (isinstance(func, ast.Name) and func.id in self.defs.classes and func.id != self.owner):
            return None
        return next((d for d in self.defs.by_name.get("__init__", []) if self.defs.owner.get(id(d)) == func.id), None)

    def _as_object(self, attrs: dict[str, set[str]] | None, run: Callable[[], object]) -> dict[str, set[str]]:
        """Run a method of a helper object with ``self.<attr>`` standing for that object's attributes (``attrs``;
        None: a new one) rather than the eviction class's: what its code stores there and reads back is the
        object's data (keys, centroids, a table), carried to the caller's ``obj.attr``. The attributes after the
        run."""
        outer = {k: v for k, v in self.tags.items() if k.startswith("self.")}
        for k in outer:
            del self.tags[k]
        self.tags.update({f"self.{a}": set(t) for a, t in (attrs or {}).items()})
        try:
            run()
        finally:
            mine = {k[5:]: v for k, v in self.tags.items() if k.startswith("self.")}
            for k in mine:
                del self.tags[f"self.{k}"]
            self.tags.update(outer)
        return {a: t - {"S"} for a, t in mine.items()}

    def _own_extreme(self, a: ast.expr, b: ast.expr) -> bool:
        """``imp >= best[run]`` with ``best`` each group's maximum (or minimum) of ``imp`` itself, unscaled: whether a
        token is its group's best (an argmax per group), no bar a score is held to."""
        for x, y in ((a, b), (b, a)):
            if not isinstance(x, ast.Name):
                continue
            while isinstance(y, ast.Subscript):
                y = y.value
            bound = self._resolved(y)
            if isinstance(bound, ast.Call) and callee(bound.func)[0] in (
                    "amax", "max", "amin", "min", "scatter_reduce", "scatter_reduce_") and any(
                    isinstance(n, ast.Name) and n.id == x.id for n in ast.walk(bound)):
                return True
        return False

    def _once(self, node: ast.AST, build: Callable[[], ast.expr | None]) -> ast.expr | None:
        """What ``build`` writes ``node`` out as, built on the first reading of the node only."""
        if id(node) not in self.written_out:
            self.written_out[id(node)] = (node, build())
        return self.written_out[id(node)][1]

    def _comparison_call(self, node: ast.Call, name: str, receiver: ast.expr | None) -> ast.Compare | None:
        """``x.gt(y)``, ``torch.gt(x, y)``, ``np.greater(x, y)`` as ``x > y``."""
        def build() -> ast.Compare | None:
            sides = [receiver, node.args[0]] if self._on_tensor(receiver) and len(node.args) == 1 and \
                receiver is not None else list(node.args) if len(node.args) == 2 and not self._on_tensor(receiver) \
                else None
            if sides is None or node.keywords:
                return None
            return ast.copy_location(ast.Compare(left=sides[0], ops=[_COMPARE_CALLS[name]()],
                                                 comparators=[sides[1]]), node)
        made = self._once(node, build)
        return made if isinstance(made, ast.Compare) else None

    def _overloaded(self, node: ast.BinOp | ast.Subscript) -> ast.Call | None:
        """An operator on an instance of a class of the module that defines it: ``curve @ h`` runs its
        ``__matmul__`` (``h @ curve`` its ``__rmatmul__``), ``table[i]`` its ``__getitem__``; the call it stands for,
        made once per node (``_once``)."""
        def build() -> ast.Call | None:
            if isinstance(node, ast.Subscript):
                pairs = [(node.value, "__getitem__", node.slice)] if isinstance(node.ctx, ast.Load) else []
            else:
                names = BINARY_DUNDERS.get(type(node.op))
                pairs = [(node.left, names[0], node.right), (node.right, names[1], node.left)] if names else []
            for obj, method, arg in pairs:
                cls = self.instances.get(obj.id) if isinstance(obj, ast.Name) else None
                if cls is not None and any(self.defs.owner.get(id(d)) == cls
                                           for d in self.defs.by_name.get(method, [])):
                    return ast.copy_location(ast.Call(func=ast.copy_location(
                        ast.Attribute(value=obj, attr=method, ctx=ast.Load()), node), args=[arg], keywords=[]), node)
            return None
        made = self._once(node, build)
        return made if isinstance(made, ast.Call) else None

    def _instance_method(self, node: ast.Call) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """A call on an instance of a class of the module: ``sc(q, k)`` runs its ``__call__``, ``sc.score(x)`` its
        ``score`` (``sc = Scorer(...)`` bound before)."""
        func = node.func
        held = (self.instances.get(f"self.{func.attr}") or self.defs.attr_instances.get(func.attr)) if isinstance(
            func, ast.Attribute) and self_attr(func) else None
        cls, name = (self.instances.get(func.id), "__call__") if isinstance(func, ast.Name) else (
            held, "__call__") if held is not None else (
            self.instances.get(func.value.id), func.attr) if isinstance(func, ast.Attribute) and isinstance(
            func.value, ast.Name) else (None, "")
        if cls is None:
            return None
        return next((d for d in self.defs.by_name.get(name, []) if self.defs.owner.get(id(d)) == cls), None)

    def _inline(self, local: ast.FunctionDef | ast.AsyncFunctionDef, node: ast.Call, arg_tags: list[set[str]],
                kw_tags: dict[str | None, set[str]]) -> set[str]:
        """A helper defined in the code, run with its parameters tagged by the arguments; the tags it returns."""
        params = [a.arg for a in local.args.args]
        shared = {n for x in ast.walk(local) if isinstance(x, (ast.Global, ast.Nonlocal)) for n in x.names}
        own = ({a.arg for a in [*local.args.args, *local.args.kwonlyargs, *local.args.posonlyargs]} |
               {x.id for x in ast.walk(local) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)}) - shared
        caller: dict[str, set[str] | None] = {n: self.tags.get(n) for n in own if n not in self.loop_vars}
        if params and id(local) in self.defs.methods and not any(
                ast.unparse(d) == "staticmethod" for d in local.decorator_list):
            params = params[1:]  # a method's own self (cls): the call's arguments start after it
        for p, t, a in zip(params, arg_tags, node.args):
            # a helper called with 0 or with `n - w` slices the first / the last tokens inside
            self.tags[p] = t | ({"Z"} if isinstance(a, ast.Constant) and a.value == 0 else set()) | (
                {"D"} if subtracts(a) else set())
        for k, t in kw_tags.items():
            if k:
                self.tags[k] = t
        self.tags.pop("__return__", None)
        self.seq_elts.pop("__return__", None)
        outer, self.return_elts = self.return_elts, None
        outer_args, self.param_args = self.param_args, dict(zip(params, node.args))
        outer_obj, self.return_obj = self.return_obj, None
        self.run_def(local)
        self.param_args = outer_args
        if self.return_obj is not None:
            self.call_objs[id(node)] = self.return_obj
        self.return_obj = outer_obj
        if isinstance(self.return_elts, list):
            self.call_elts[id(node)] = self.return_elts
        self.return_elts = outer
        out = self.tags.pop("__return__", set())
        seq = self.seq_elts.pop("__return__", None)
        if seq is not None:
            self.node_seq[id(node)] = seq
        # the helper's locals are its own: the caller's names hold what they held (their tags; the expressions a name
        # was bound to stay readable, as a tuple returned and unpacked reads its elements through them)
        for name, was in caller.items():
            if was is None:
                self.tags.pop(name, None)
            else:
                self.tags[name] = was
        return out

    def _interface_call(self, name: str | None, node: ast.Call, receiver: ast.expr | None, rt: set[str],
                        arg_tags: list[set[str]], all_args: set[str]) -> set[str] | None:
        """A call of the harness interface (``view.attention``, ``remember``/``recall``, ``group``, the RoPE
        helpers): its tags, or None when the call is not one."""
        line = node.lineno
        if name == "attention" and (rt == {"VIEW"} or receiver is not None):
            self.add("attention", line)
            red = kwarg(node, "reduce")
            if isinstance(red, ast.Constant) and red.value == "max":
                self.add("max_attention", line)  # attention(reduce="max"): the largest over the queries
            # unreduced: (heads, queries, tokens), its axis 1 the queries
            return {"A"} | (all_args - {"Q"}) | (set() if red is not None else {"QAX", "QROW"})
        if name == "reference_attention" and len(arg_tags) >= 2 and "Q" in arg_tags[0] and "K" in arg_tags[1]:
            # harness.api.reference_attention(q, k, ...): the interface's own softmax(q k^T), as view.attention
            self.add("attention", line)
            red = kwarg(node, "reduce")
            if isinstance(red, ast.Constant) and red.value == "max":
                self.add("max_attention", line)
            return {"A"} | (all_args - {"Q"}) | (set() if red is not None else {"QAX", "QROW"})
        if name == "recall":
            key = self._key(node)
            self.recalled.add(key)
            if self.recall_tags is None:
                return {"S", "A"}  # what was stored is not known yet: read as a remembered score (attention)
            return {"S"} | self.recall_tags.get(key, self.recall_default)
        if name == "remember":
            stored = set().union(*arg_tags[1:2]) if len(arg_tags) > 1 else set().union(
                *[self.tag(k.value) for k in node.keywords if k.arg in ("value", "tensor")])
            key = self._key(node)
            self.stored.setdefault(key, set()).update(stored)
            if "S" in stored or not stored & (DATA_TAGS | {"S"}):
                self.add("accumulate", line)  # what is stored carries what was recalled: a running quantity (a
                # store whose content the reader cannot tell is read as one, as before)
            return set()
        if name == "group":
            return all_args | rt
        if name == "same_for_all_heads":
            self.add("head_average", line)
            return all_args
        if name in ("rotate", "apply_rope", "rope_angles"):
            first = arg_tags[0] if arg_tags else set()
            if name != "rope_angles" and "K" in first and "Q" not in first and \
                    _negated_positions(list(node.args[1:]), arg_tags[1:]):
                self.add("pre_rope", line)  # the keys rotated by minus their positions: their pre-RoPE form
            args = [self._resolved(a) for a in node.args]  # (a position range bound to a name the line before)
            if any(isinstance(a, ast.BinOp) or isinstance(a, ast.Call) and callee(a.func)[0] == "arange"
                   for a in args[1:]) and "P" not in (arg_tags[1] if len(arg_tags) > 1 else set()) or \
                    any("FP" in a for a in arg_tags[1:]):
                self.add("future_rope", line)
            if name == "rope_angles" and args and isinstance(args[0], ast.Call) and \
                    callee(args[0].func)[0] == "arange":
                self.add("future_rope", line)
            return all_args | rt
        return None

    @staticmethod
    def _query_axis(node: ast.Call, t: set[str], at: int) -> bool:
        """The call works along the query axis of an unreduced attention matrix (heads, queries, tokens): its
        ``dim`` is 1 or -2 (``attn.chunk(4, dim=1)``: the window's queries in parts; as ``attn[:, a:b]``)."""
        return "QAX" in t and const_int(_dim(node, at)) in (1, -2)

    def _op_call(self, name: str | None, node: ast.Call, receiver: ast.expr | None, rt: set[str],
                 arg_tags: list[set[str]], all_args: set[str]) -> set[str]:
        """A tensor operation: the features its canonical class shows on what it reads, and its tags."""
        line = node.lineno
        op = CANON.get(name or "", "") or CANON.get(_EQUIVALENT.get(name or "", ""), "")
        t = rt | all_args
        if name in _SOFTENERS and _count_like(t):
            # sqrt(count), log1p(count): a softened count (a total over it is no mean); rsqrt multiplies
            return t | {"SOFT"} | ({"RSOFT"} if name == "rsqrt" else set())
        if name == "sqrt" and "NSQ" in t and t & {"K", "V", "Q"}:
            return (t - {"NSQ", "SQ"}) | {"N"}  # the root of each row's squared norm: its norm, bound to divide by
        if op in ("reduce", "extreme"):
            if "QROW" in t and self._query_axis(node, t, 0 if self._on_tensor(receiver) else 1):
                for nuc in [tag for tag in t if tag.startswith("NUC")]:
                    # each query's nucleus of its own attention, summed over the queries: a vote of the entries
                    # inside it, weighted; no share of the mass sizes what is kept
                    self.pending_nucleus.pop(int(nuc[3:]), None)
            t = t - {"QAX", "QROW"}  # (the attention matrix reduced: no query axis left to slice)
            if "VOH" in t:
                t = t | {"VOTE"}  # one-hot rows of each query's picks summed: how many queries picked each token
            if "Q" in t and not t & {"K", "A"}:
                t = t | {"QRED"}  # the queries summarised (a mean query): one row, not one per query
        if (op == "rank" or name == "from_topk") and "VOTE" in t:
            self.add("query_votes", line)  # tokens ranked by how many queries' own top-k picked them
        if op == "scatter" and name in ("bincount", "scatter_add", "scatter_add_", "index_add", "index_add_") and \
                {"R", "QROW"} <= self._counted(node, receiver, rt, arg_tags) and self._unit_counts(node, receiver):
            t = t | {"VOTE"}  # each query's top-k picks counted by token: its fetch (hit) counts
        if name in ("scatter", "scatter_") and self._on_tensor(receiver) and len(node.args) >= 3 and \
                isinstance(receiver, ast.Call) and callee(receiver.func)[0] in ("zeros", "zeros_like") and \
                "R" in arg_tags[1] and ({"R", "A"} <= arg_tags[2] and not arg_tags[2] & {"BLK", "BID"} and (
                    isinstance(node.args[2], ast.Attribute) and node.args[2].attr == "values" or
                    isinstance(node.args[2], ast.Name) and node.args[2].id in self.ranked_values) or
                    "QROW" in arg_tags[1] and (_picked_indicator(node.args[2]) or _unit(self._resolved(node.args[2])))):
            # zeros.scatter_(-1, top.indices, top.values): each head's (or query's) own top-k picks written with
            # their weights and nothing else, summed later: a soft vote per head (TokenSelect's), not its attention
            # (the top-k's own values written back, not a mask or a share computed from the ranking); written as
            # ones, or as the picks' own values tested against a bar (top.values > 0), where each query picked its
            # own (a row per query): a plain vote per pick (one ranking's picks as ones are a mask, no vote)
            t = t | {"VOTE"}
        if name == "one_hot" and {"R", "QROW"} <= t:
            t = t | {"VOH"}
        if name == "unique" and {"R", "QROW"} <= t and is_true(kwarg(node, "return_counts")):
            t = t | {"VOTE"}
        if self._inverse_transform(name, node, receiver, arg_tags) or self._nearest_quantile(name, node, receiver):
            self.add("importance_sampling", line)  # draws (or even quantiles) located in a data-made CDF
            return {x for x in t if not x.startswith("CSUM")} - {"V", "K", "Q", "A"} | {"I", "RND"}
        if name in ("topk", "kthvalue"):
            # how many to pick is a size, not what is ranked: a count cut by a divisor (left // 64 picks a round)
            # makes no block of the ranked scores
            at = 0 if self._on_tensor(receiver) else 1
            k_node = kwarg(node, "k") or (node.args[at] if len(node.args) > at else None)
            if k_node is not None:
                ranked = set(rt).union(*(a for a, x in zip(arg_tags, node.args) if x is not k_node))
                t = ranked | (all_args - {"BID", "BLK"})
        if name in LEARNED_CALLS or self_attr(node.func) and "W" in self.tags.get(f"self.{name}", set()):
            if "K" in t and "W" in self.tags.get(f"self.{name}", set()):
                self.add("key_projection", line)  # a trained layer of the module applied to the keys
            if t & {"K", "V", "Q", "A"} and (name not in LEARNED_CALLS or self._on_tensor(receiver)):
                self.add("learned_scorer", line)  # a trained network of the module applied to per-token data
            t = t | {"W"}  # a trainable layer, fitted weights loaded, or one of them applied
        if name in ("linear", "bilinear") and "W" in t and t & {"K", "V", "Q", "A"}:
            self.add("learned_scorer", line)
        if name == "functional_call" and len(arg_tags) >= 3 and "W" in arg_tags[0] | arg_tags[1] and \
                arg_tags[2] & {"K", "V", "Q", "A"}:
            self.add("learned_scorer", line)  # torch.func.functional_call(net, params, (x,)): the network run on x
        if op == "act" and "W" in t and t & {"K", "V", "Q", "A"}:
            self.add("learned_scorer", line)  # fitted weights, a nonlinearity: a network written out
        if name in ("expand_as", "view_as", "reshape_as", "type_as") and receiver is not None:
            return rt  # the argument gives only a shape or a type
        if name in ("transpose", "swapaxes", "swapdims", "permute", "t") and t & {"K", "V"} and \
                not t & {"A", "Q"} and _swaps_tokens_and_channels(
                    node.args if self._on_tensor(receiver) else node.args[1:], name):
            return t ^ {"TT"}  # the tokens behind the channels (twice: back as they were)
        if name in SPECTRAL_CALLS:
            operand = node.args[0] if node.args else receiver
            if t & {"K", "V"} and not t & {"A", "Q"} and self._along_tokens(node, name, operand, t):
                self.add("token_spectrum", line)  # keys or values transformed along the tokens: their spectrum
                return t | {"SPEC"}
            if not t & DATA_TAGS:
                return t | {"FBS"}  # a transform of no data (of an identity): a fixed frequency basis
        if op in ("trig", "exp") and "I" in t and not t & (DATA_TAGS | {"P", "W", "RND"}):
            t = t | {"FBS"}  # cosines (or complex exponentials) of token indices: a fixed frequency basis
        if name == "matrix_power" and "A" in t:
            self.add("attention_propagation", line)  # attention composed with itself: a walk on the token graph
        if name in ORTHOGONAL_CALLS and not t & DATA_TAGS:
            return t | {"ORTH"}  # a Hadamard or orthogonal matrix built from no data
        if name in FACTORISATIONS and not t & (DATA_TAGS | {"W"}) and t & {"RND", "ORTH"}:
            for drawn in [d for d in t if d.startswith("RNDL")]:  # the draws made a fixed rotation, no random score
                self.pending_random.pop(int(drawn[4:]), None)
            return {d for d in t if not d.startswith("RNDL")} | {"ORTH"}  # a random rotation, no basis of the data
        if name in FACTORISATIONS and "QRES" in t and t & {"K", "V"} and not t & {"A", "Q"}:
            self.add("residual_low_rank", line)  # a low-rank factorisation of keys minus their low-bit copy
            return t | {"FB"}
        if name in FACTORISATIONS and "XL" in t and t & {"K", "V"} and not t & {"A", "Q"}:
            self.add("cross_layer_basis", line)  # one factorisation of several layers' keys joined
        if name in FACTORISATIONS and "HCH" in t and "K" in t and not t & {"A", "Q"}:
            self.add("grouped_head_basis", line)  # one basis for several heads' keys laid side by side
        if name in FACTORISATIONS or name in INVERSES:
            if "K" in t and "Q" in t and name in FACTORISATIONS and "A" not in t:
                self.add("query_key_basis", line)  # one basis of the keys and the queries together
                return {"FB"}  # axes: keys or queries projected on them stay what they were
            if t & {"K", "V"}:
                self.add("leverage", line)  # a factorisation or inverse of the keys' or values' (Gram) matrix
            elif "Q" in t and name in FACTORISATIONS:
                self.add("query_svd", line)  # the principal directions of the queries
            return t | ({"FB"} if name in FACTORISATIONS else set())
        if name in CLUSTERING and "K" in t:
            self.add("key_clustering", line)  # keys clustered by a library k-means
        if name in ("fit", "fit_predict", "fit_transform") and "K" in all_args and not all_args & {"A", "Q"} and \
                self._clusterer(receiver):
            self.add("key_clustering", line)  # KMeans(n).fit(keys): the keys clustered by a library k-means
        if op == "reduce" and "LD" in t and not t & {"A", "Q"}:
            self.add("layer_similarity", line)  # (k - k of another layer) squared and summed: how far they differ
        if name in CLUSTERING and "A" in t and "K" not in t or name == "corrcoef" and "A" in t:
            self.add("head_clustering", line)  # attention patterns clustered or correlated: heads grouped by them
            return (t - {"A"}) | {"HSIM"}  # a similarity (or grouping) of heads, no attention of a token
        if name == "cdist" and len(arg_tags) >= 2 and "A" in arg_tags[0] and "A" in arg_tags[1]:
            self.add("head_clustering", line)  # distances between attention patterns
            return (t - {"A"}) | {"HSIM"}
        if name in ORTHOGONAL_CALLS and "kron" == name:
            return t
        if name in ANGLE_CALLS and t & {"K", "V"} and not t & {"A", "Q"}:
            t = t | {"PA"}  # the angle of pairs of key coordinates: a polar transform
        if name in ("transpose", "swapaxes", "swapdims", "movedim", "moveaxis", "permute") and \
                t & {"K", "V"} and _heads_to_middle(node, name):
            t = t | {"TH"}  # the heads moved behind the tokens
        if name == "rearrange" and len(node.args) >= 2 and t & {"K", "V"} and _merges_heads_into_channels(node.args[1]):
            t = t | {"HCH"}
        if name == "apply" and _negated_positions(list(node.args[1:]), arg_tags[1:]) and \
                "K" in (arg_tags[0] if arg_tags else set()) | rt and "Q" not in (arg_tags[0] if arg_tags else set()):
            self.add("pre_rope", line)  # rope.apply(keys, -positions): the keys' rotation undone
        if name == "cdist":
            if len(arg_tags) >= 2 and "K" in arg_tags[0] and "K" in arg_tags[1] and "Q" not in t:
                if "N" in arg_tags[0] and "N" in arg_tags[1]:
                    self.add("key_similarity", line)  # distances of unit keys: a monotone of their cosines
                    return t | {"KK2", "KSIM"}
                return t | {"KK2"}
            if len(arg_tags) == 2 and not arg_tags[1] & (DATA_TAGS | {"W", "RND"}) and "Q" not in t:
                if "K" in arg_tags[0] and "V" not in arg_tags[0] and not self.normalising:
                    self.add("key_norm", line)  # the distance of each key to the origin: its norm
                elif "V" in arg_tags[0] and "K" not in arg_tags[0] and not self.normalising:
                    self.add("value_norm", line)
                return t
            if len(arg_tags) >= 2:
                self._matmul(arg_tags[0], arg_tags[1], line)
        if name in ("searchsorted", "bucketize") and t & {"P", "I"} and not t & DATA_TAGS:
            edges = node.args[1 if name == "bucketize" else 0] if len(node.args) >= 2 and not self._on_tensor(receiver) \
                else None
            if edges is not None and _even_edges(self._resolved(edges)):
                return t | {"BID"}  # token indices placed between evenly spaced edges: a segment id per token
            return t | {"CNT"}  # how many positions lie before each one: a count per token
        if name in ("div", "true_divide", "divide") and (self._on_tensor(receiver) and arg_tags or len(arg_tags) >= 2):
            num, den = (rt, arg_tags[0]) if receiver is not None and rt else (arg_tags[0], arg_tags[1])
            if "A" in num and _count_like(den):
                self.add("count_normalised", line)
            if "A" in num and _damped_count(den):
                self.add("count_damped", line)
        if name in ("flip", "fliplr", "flipud") and t & {"A", "Q", "K"}:
            return t | {"FL"}  # reversed along an axis: a diagonal of it is an anti-diagonal
        if name in ("flip", "fliplr", "flipud") and t & {"P", "VIEW"} and not t & DATA_TAGS:
            t = t | {"FLP"}  # the valid mask (positions) reversed: counted along, the tokens from the newest back
        if op == "diag" and "KK2" in t and "Q" not in t and "N" not in t and name in ("diagonal", "diag") and \
                not self.normalising:
            self.add("key_norm", line)  # the diagonal of k k^T: each key's squared norm
        if name in ("mean", "sum") and isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and \
                receiver.func.attr in ("diagonal", "diag") and self.found.get("key_norm") == line and \
                all(_const_axis(a) == -1 for a in [*node.args, *(k.value for k in node.keywords if k.arg == "dim")]):
            del self.found["key_norm"]  # the diagonal summed whole: a Gram's trace, one number per head (a ridge's
            # scale), no norm per key
        if op == "diag" and "FL" in t and t & {"A", "Q", "K"}:
            self.add("antidiagonal", line)
        if op == "triangle" and not t & PER_TOKEN:
            return t | {"PAIR"}  # a causal (triangular) mask of ones: counted once summed
        shift = 0 if self._on_tensor(receiver) else 1  # torch.f(x, a, dim) holds x where x.f(a, dim) does not
        if name in ("split", "chunk", "tensor_split") and t & DATA_TAGS and not _on_heads(node, 1 + shift) and not (
                len(node.args) > shift and _constant(node.args[shift]) == 2) and not (
                "Q" in t and not t & {"K", "A", "V", "P"}) and not self._query_axis(node, t, 1 + shift):
            # the tokens cut into blocks (not heads into groups, not a tensor halved, not the query rows in batches,
            # not the unreduced attention's rows: its queries in parts)
            return t | {"BLK"}
        if name in ("split", "chunk", "tensor_split") and "I" in t and not t & DATA_TAGS and not (
                len(node.args) > shift and _constant(node.args[shift]) == 2) and \
                self._token_range(self._operand(receiver, list(node.args))):
            return t | {"BLK"}  # split(arange(T), b): the token indices cut into blocks, each read off a score later
        if name == "repeat_interleave" and t & DATA_TAGS and _dim(node, 1 + shift) is not None and \
                not _on_heads(node, 1 + shift) and not ("Q" in t and not t & {"K", "V", "A"}):
            # (the queries' rows repeated, each placed at several positions: copies of queries, no blocks of tokens)
            self.add("block_scores", line)  # one value per block spread back over its tokens (not heads over groups)
            return t | {"BLK"}
        last_axis = _const_axis(_dim(node, shift)) == -1 and t & {"K", "V", "Q"} and "A" not in t
        if name == "unflatten" and t & DATA_TAGS and (not _on_heads(node, shift) or "H1" in t) and not last_axis:
            return t | {"BLK"}  # (one head's keys, x[h]: their first axis is the tokens; the last axis of keys or
            # queries, or of their projections, is their channels: bits packed into bytes, no blocks of tokens)
        if name in ("reshape", "view") and t & DATA_TAGS:
            given = node.args[shift] if len(node.args) == 1 + shift else None
            shape = given.elts if isinstance(given, (ast.Tuple, ast.List)) else node.args[shift:]
            splits = [i for i, (a, b) in enumerate(zip(shape, shape[1:])) if any(
                isinstance(x, ast.BinOp) and (isinstance(x.op, ast.FloorDiv) or isinstance(x.op, ast.Div) and any(
                    isinstance(c, ast.Call) and callee(c.func)[0] == "ceil" for c in ast.walk(self._resolved(a))))
                and _same(x.right, b) for x in ast.walk(self._resolved(a)))]  # (n // b, b) or (ceil(n / b), b)
            # (the last axis of keys, values or queries split, (..., d // 2, 2): their channels in pairs, no blocks of
            # tokens)
            channels = t & {"K", "V", "Q"} and "A" not in t
            if any(i + 2 < len(shape) or not channels for i in splits):
                return t | {"BLK"}  # (..., n // b, b, ...): an axis split into blocks of b
            minus = next((i for i, a in enumerate(shape) if negative(a)), None)
            if minus is not None and minus + 2 < len(shape) and t & {"K", "V"} and not t & {"A", "Q"}:
                return t | {"BLK"}  # keys.view(-1, b, d), keys.view(H, -1, b, d): the tokens in blocks of b
            if "A" in t and not t & {"K", "V", "Q"} and len(shape) >= 2 and negative(shape[-2]) and (
                    self_attr(shape[-1]) or isinstance(shape[-1], ast.Constant) and isinstance(shape[-1].value, int)
                    and shape[-1].value > 1):
                # scores per token (padded to a multiple of b) as rows of b: blocks of b tokens (a size of the
                # layer, heads or channels, is never a module's own number)
                return t | {"BLK"}
        if name in SIGN_CALLS and "RND" in t and t & {"K", "Q"}:
            self.add("hashing", line)  # the sign of a random projection: a locality-sensitive hash bit
            t = t | {"SGN"}
        if (name in QUANTISING_CALLS or name in ("to", "type") and any(
                isinstance(a, ast.Attribute) and a.attr in INTEGER_DTYPES for a in node.args) or
                name in INTEGER_CASTS and self._on_tensor(receiver) and not node.args or
                name in ("div", "divide") and kwarg(node, "rounding_mode") is not None or
                name in ("bucketize", "searchsorted") and not self._on_tensor(receiver)) and \
                t & {"K", "V"} and not t & {"A", "Q", "N", "R", "SGN"} and not self._boolean(receiver, node) and not (
                    "I" in rt and name not in QUANTISING_CALLS and name not in ("div", "divide", "bucketize",
                                                                                   "searchsorted")):
            # (indices a mask of the keys gave, nonzero(taken).long(), are cast, not rounded)
            self.add("quantised", line)  # keys or values rounded to a few levels: a low-bit copy of them
            self._quantised_in(t, line)
            t = t | {"QZ"}
        if op == "diag" and name in ("diagonal", "diag") and "A" in t and "FL" not in t and (
                kwarg(node, "offset") is not None or len(node.args) > (0 if self._on_tensor(receiver) else 1)):
            t = t | {"DG"}  # one off-diagonal of the attention: the queries at one distance from their keys
        if name == "sort" and "A" in t and not t & {"I", "P"}:
            t = t | {"SRT"}  # attention scores sorted along the tokens: each head's best first
        if name == "sorted" and receiver is None and any(k.arg == "key" for k in node.keywords):
            t = t | {"R"}  # sorted(range(n), key=lambda i: -score[i]): the indices in the score's order, a ranking
        if name == "sort":
            if is_true(kwarg(node, "descending")) or "R" not in t and t & DATA_TAGS:
                # sorted largest first (its head is a top-k), or scores sorted (its tail is one): a ranking; kept
                # indices put back in order (already a ranking's) rank nothing
                op = "rank"
            t = t | {"R"}
        if op == "norm":
            if self.normalising:
                return t | {"N"}
            for normed in [*node.args[:1], receiver]:  # torch.linalg.norm(x - m) or (x - m).norm()
                if isinstance(normed, ast.BinOp) and isinstance(normed.op, ast.Sub) and not t & {"A", "Q"} and \
                        any(x in self.tag(normed.left) and x in self.tag(normed.right) for x in ("K", "V")):
                    lt_, rt_ = self.tag(normed.left), self.tag(normed.right)
                    if _one_side(lt_, rt_, "LK"):
                        self.add("layer_similarity", line)  # ||k - k of another layer||: how far the layers differ
                    elif _one_side(lt_, rt_, "KM") and "K" in lt_ | rt_ and not (lt_ | rt_) & {"BLK", "V"}:
                        self.add("mean_key", line)  # ||k - mean k||: each key's distance from the mean key
                    return t | {"N"}  # ||k - m||: a distance between two key (or value) quantities, not a norm
            if "QRES" in t:
                return t | {"N"}  # the size of a quantisation error, no norm of the keys
            on_tensor = self._on_tensor(receiver)
            ndim = kwarg(node, "dim")
            if ndim is None and len(node.args) > (1 if on_tensor else 2):
                ndim = node.args[1 if on_tensor else 2]
            if _per_channel_axis(ndim, self._operand(receiver, list(node.args))) and t & {"K", "Q"} and \
                    not t & {"A", "V"} and not self.loop:
                return t | {"PC"}  # each channel's norm over the tokens (or queries): a per-channel magnitude
            if "FB" in t and t & {"K", "V"} and "Q" not in t and "A" not in t:
                self.add("leverage", line)  # row norms of a factorisation's basis: leverage scores (and a norm)
            if "UR" in t:
                pass  # the length of unit rows: one for every row, no norm of the data
            elif "K" in t and "V" not in t and "Q" not in t and "A" not in t:
                self.add("key_norm", line)
                t = t | {f"KN{line}"}  # (taken back where it only scales unit keys back to their length)
            elif "V" in t and "K" not in t:
                self.add("value_norm", line)
            return t | {"N"} if "K" in t else t
        if op == "normalize":
            return t | {"N", "UR"}
        if name == "cosine_similarity" and len(arg_tags) >= 2:
            if "A" in arg_tags[0] and "A" in arg_tags[1]:
                self.add("head_clustering", line)  # attention patterns against attention patterns
                return (t - {"A"}) | {"HSIM"}
            if _one_side(arg_tags[0], arg_tags[1], "LK") and not t & {"A", "Q"} and t & {"K", "V"}:
                self.add("layer_similarity", line)  # this layer's keys (values) against another layer's kept ones
                return t
        if name == "cosine_similarity":
            if "K" in t and "Q" not in t and len(node.args) >= 2 and _neighbour_pair(node.args[0], node.args[1]):
                self.add("successive_similarity", line)  # each key against the key beside it
            if "K" in t and "Q" not in t:
                # (keys against their own block's mean: a similarity to the block's representative, no mean key of
                # the head: KeyDiff's is one mean over every token)
                self.add("mean_key" if "KM" in t and "BLK" not in t else "key_similarity", line)
                return t | ({"KSIM"} if "KM" not in t and not t & {"A", "S"} else set())
            return t
        if op == "matmul":
            if len(arg_tags) >= 2:
                if name == "einsum" and len(node.args) == 3 and _same(node.args[1], node.args[2]) and \
                        _self_contraction(node.args[0]):
                    # einsum("htd,htd->ht", x, x): x's squared row norms (a norm written out)
                    if not self.normalising and not t & {"A", "Q", "UR"}:
                        if "K" in t and "V" not in t:
                            if "key_norm" not in self.found:
                                t = t | {f"SQN{line}"}  # (taken back where it turns out a squared distance's term)
                            self.add("key_norm", line)
                        elif "V" in t and "K" not in t:
                            self.add("value_norm", line)
                    return t | {"SQ", "NSQ"}
                if name == "einsum" and len(arg_tags) >= 3:
                    self._einsum(arg_tags[1:], line)
                    if len(arg_tags) == 3:  # two operands: what their pair is (keys against keys), as a @ b
                        t = t | self._pair(arg_tags[1], arg_tags[2], line)
                    t = t | self._spectral_einsum(node.args[0], arg_tags[1:], line) | (
                        {"KSIM"} if len(arg_tags) == 3 and self._key_sim(arg_tags[1], arg_tags[2]) else set())
                else:
                    self._matmul(arg_tags[-2], arg_tags[-1], line)
                    t = t | self._pair(arg_tags[-2], arg_tags[-1], line)  # torch.matmul(a, b) reads as a @ b
                    t = t | self._spectral_product(arg_tags[-2], arg_tags[-1], line) | (
                        {"KSIM"} if self._key_sim(arg_tags[-2], arg_tags[-1]) else set())
            elif receiver is not None and arg_tags:
                self._matmul(rt, arg_tags[0], line)
                t = t | self._pair(rt, arg_tags[0], line)
                t = t | self._spectral_product(rt, arg_tags[0], line) | (
                    {"KSIM"} if self._key_sim(rt, arg_tags[0]) else set())
            operands = arg_tags[1:] if name == "einsum" else ([rt, *arg_tags] if self._on_tensor(receiver) else arg_tags)
            if len(operands) == 2 and all("A" in o and "N" in o for o in operands):
                return (t - {"A"}) | {"HSIM"}  # a similarity of heads' attention patterns (``_matmul``)
            return t | self._rotated(operands)
        if name == "linear" and len(arg_tags) >= 2 and not t & {"W"}:
            self._matmul(arg_tags[0], arg_tags[1], line)  # F.linear(q, k) = q @ k.T
        if name == "softmin":
            op = "softmax"  # softmin(-z) = softmax(z)
        if op == "softmax":
            if "KK2" in t and "Q" not in t and not t & {"A", "KSIM"}:
                self.add("key_similarity", line)  # keys against keys, each row made a distribution: how alike each
                # key is to the others (a likeness kernel over the keys, as cosines are)
                return t | {"A", "KSIM"}
            return t | ({"A"} if t & {"Q", "K"} else set())
        if name in ("conv1d", "conv2d") and len(arg_tags) >= 2 and arg_tags[0] & DATA_TAGS and \
                arg_tags[1] & {"K", "Q", "V"} and not arg_tags[1] & {"W", "C1"}:
            # filters made of the layer's data (queries as 1x1 taps over the keys' channels): a product of the two
            self._matmul(arg_tags[0], arg_tags[1], line)
            return t | self._pair(arg_tags[0], arg_tags[1], line)
        if op == "pool":
            kernel = node.args[1] if len(node.args) > 1 else kwarg(node, "kernel_size")
            stride = node.args[2] if len(node.args) > 2 else kwarg(node, "stride")
            if name != "conv1d" and "K" in t and not t & {"A", "Q", "W", "V"} and not (
                    isinstance(kernel, ast.Constant) and kernel.value == 1) and stride is not None:
                # keys pooled along the tokens with a stride: a compressed key per block (overlapping or not), no
                # smoothing of a score
                if _same(stride, kernel):
                    self.add("block_scores", line)
                if isinstance(stride, ast.Constant) and stride.value in (1, (1,)):
                    return t | {"KR"}  # stride 1: each key's neighbourhood mean, a sliding window, no blocks
                return t | {"KR", "BLK"}
            if name in ("max_pool1d", "avg_pool1d") and kernel is not None and stride is not None and \
                    _same(stride, kernel) and not (isinstance(kernel, ast.Constant) and kernel.value == 1):
                self.add("block_scores", line)  # a window as wide as its stride: one value per block, no smoothing
                return t | {"BLK"}
            if name == "conv1d" and stride is not None and not (isinstance(stride, ast.Constant) and
                                                               stride.value in (1, (1,))) and "A" in t:
                self.add("block_scores", line)  # a score convolved with a stride: one value per step of the stride
                return t | {"BLK"}
            self.add("pooling", line)
            if name in ("max_pool1d", "avg_pool1d", "max_pool2d", "avg_pool2d") and kernel is not None and not (
                    isinstance(kernel, ast.Constant) and kernel.value == 1) and (stride is None or _same(stride, kernel)):
                self.add("block_scores", line)  # pooled with a stride of its own width: one value per block
                return t | {"BLK"}
            return t
        sliced = self._operand(receiver, list(node.args)) if op == "rank" else None
        within = isinstance(sliced, ast.Subscript) and isinstance(sliced.value, ast.Name) and "BLK" in t and \
            "BLK" not in self.tags.get(sliced.value.id, set())
        if op == "rank" and "BIDR" in all_args:
            self.add("block_quota", line)  # sorted by segment after a score: each segment's tokens in score order
        rdim = kwarg(node, "axis") or (kwarg(node, "dim") if name in ("topk", "kthvalue", "argsort", "sort") else
                                       _dim(node, 0 if self._on_tensor(receiver) else 1))
        if op in ("reduce", "extreme", "rank") and "BAX0" in t and "BID" not in t and isinstance(rdim, ast.Constant) \
                and isinstance(rdim.value, int) and not isinstance(rdim.value, bool) and rdim.value >= 1:
            # rows[lo:hi] of a pairwise matrix reduced along its columns (dim=1): one value per row of the tile, each
            # token's own (a matrix computed in tiles to bound memory), no block of tokens reduced
            t = t - {"BLK", "BAX0"}
        if op == "extreme" and name in ("maximum", "minimum", "fmax", "fmin") and \
                len(node.args) + self._on_tensor(receiver) >= 2:
            pass  # maximum(d, 0): two tensors (or a tensor and a floor) entry by entry, no reduction of a block
        elif op in ("reduce", "extreme", "rank") and t & {"BLK", "BID"} and t & DATA_TAGS:
            # a value per block of tokens (reduced within it, or blocks ranked); a block's own tokens ranked within it
            # (a[:, s:e].topk(q): a quota of tokens per block, segmented heavy hitters) ranks tokens, not blocks
            self.add("block_quota" if within else "block_scores", line)
        if (op == "reduce" and "ADM" in t or op == "scatter" and t & {"IS", "ADM"}) and "A" in t:
            self.add("antidiagonal", line)  # attention summed where row + column is constant
        if (op == "reduce" and t & {"DDM", "DG"} or op == "scatter" and t & {"DD", "DDM"}) and "A" in t:
            self.add("diagonal_sums", line)  # attention summed where row - column (the query-key distance) is constant
        if (op in ("reduce", "scatter") or name in ("index_reduce", "index_reduce_")) and "ASG" in t and "K" in t:
            self.add("key_clustering", line)  # keys pooled by their nearest centroid: k-means
        if op == "scatter" and "BID" in t and t & DATA_TAGS:
            if "K" in t and not t & {"A", "Q"}:
                t = t | {"KR"}  # keys summed by block id: a summary of each block's keys (its mean once divided)
            else:
                self.add("block_scores", line)  # values summed by block id
        if op == "reduce" and not t & DATA_TAGS and t & {"PAIR", "VIS"}:
            return t | {"CNT"}  # a visibility matrix summed over the queries: how many see each key
        if op in ("reduce", "extreme") and "K" in t:
            t = t | {"KR"}  # keys reduced (a mean, a min or max): a summary of them
        if op == "rank" and name in ("argmax", "argmin") and ("KK2" in t or "KKB" in t and "LVD" not in t):
            return t | {"ASG"}  # each key's nearest centroid
        if (op == "rank" and name == "argmin" or op == "extreme" and name in ("min", "amin")) and "LVD" in t:
            return (t - {"LVD"}) | {"QZI"}  # the nearest of a few levels, entry by entry: a quantiser's code
        if op == "rank" and "PC" in t and t & {"Q", "K"} and not t & {"A", "V"}:
            t = t | {"CHI"}  # channels ranked by a per-channel magnitude of the queries and keys
        if op == "rank" and "Q" in t and not t & {"A", "K"}:
            t = t | {"CHI"}  # queries' magnitudes ranked: channels chosen by the query
        elif op == "rank" and "M" in t and "KR" in t and "A" not in t and "BID" not in t:
            # (a bound per block, summed over the channels, ranks blocks: BID)
            t = t | {"CHI"}  # per-channel statistics of queries and keys (each reduced over tokens) ranked: channels
        if op == "gather" and "CHI" in t and t & {"Q", "K"}:
            t = t | {"CH"}
        # torch.gather(src, ...) or src.gather(...)
        src, rest = (arg_tags[0], arg_tags[1:]) if not self._on_tensor(receiver) and arg_tags else (rt, arg_tags)
        if op == "gather" and any("QZI" in a for a in rest) and t & {"K", "V"} and not t & {"A", "Q"}:
            self.add("quantised", line)  # the level each entry is nearest to, read from the levels: a quantiser
            self._quantised_in(t, line)
            t = (t - {"QZI"}) | {"QZ"}
        if op == "gather" and any("R" in a for a in rest):
            # entries picked by a ranking: what they are is the source's (keys picked by their norm are keys, no
            # summary of them: the index's own tags stay with the index)
            t = (t - ((set().union(*rest) - src) & _WHAT_DATA)) | {"SEL"}
        if op == "gather" and "A" in src and "QROW" in src and "DG" not in src and any(
                a & {"I", "P"} and not a & (DATA_TAGS | {"R", "DD"}) for a in rest):
            # each row's attention on a token its own position names (the next to copy); not a table of diagonal
            # sums read at each key's distance (the slash scores projected onto the entries)
            self.add("copy_score", line)
        if op == "gather" and "A" in src and any("DD" in a for a in rest):
            t = t | {"DG"}  # attention gathered at a query-key distance from each query: the entries of a diagonal
        if op == "gather" and "K" in src and (src | set().union(*rest)) & {"BLK", "BID"} and any("R" in a for a in rest):
            t = t | {"KR"}  # each block's keys picked by a ranking: its representative keys, a summary of the block
        # the spread of every entry at once (x.std(), torch.std_mean(x)): one number, a scale (a z-score's
        # denominator), no spread per token or per channel
        spread = op == "var" and not (_dim(node, 0 if self._on_tensor(receiver) else 1) is None and not any(
            k.arg in ("dim", "axis") for k in node.keywords) and len(node.args) <= (0 if self._on_tensor(receiver) else 1))
        if spread and "Q" in t and "A" not in t:
            self.add("query_statistics", line)
        if spread and "A" in t:
            self.add("attention_variance", line)
        if spread and t & {"K", "V"} and not t & {"A", "Q", "N"}:
            self.add("key_variance", line)  # the spread of key or value channels (a spread of norms is not it)
        if name == "mul_" and self._on_tensor(receiver) and arg_tags and "S" in rt and not rt & {"A", "Q"} and \
                _rate(arg_tags[0]):
            self.add("age_decay", line)  # r.mul_(rate): the rate compounded once per call, in place
        if name in ("pow", "float_power"):  # torch.pow(rate, age), rate.pow(age), torch.float_power(rate, age)
            base, expo = (rt, arg_tags[0]) if self._on_tensor(receiver) and arg_tags else (
                (arg_tags[0], arg_tags[1]) if len(arg_tags) > 1 else (set(), set()))
            if _age_decay(base, expo):
                self.add("age_decay", line)
        power = self._operand(receiver, list(node.args)) if op == "exp" else None  # torch.exp(x) and x.exp()
        if isinstance(power, ast.BinOp) and isinstance(power.op, (ast.Mult, ast.Div)):
            a, b = self.tag(power.left), self.tag(power.right)
            if _age_decay(a, b) or _age_decay(b, a):  # exp(age * log(rate)), exp(-age / life(k, v)): rate ** age
                self.add("age_decay", line)
        if op in ("abs", "pow") and t & {"K", "V"} and not t & {"A", "Q"}:
            diff = self._operand(receiver, node.args)
            if diff is not None and subtracts(diff) and _broadcast(diff):
                t = t | {"LVD"}  # |x[..., None] - levels|: each entry's distance to a few levels
        if op == "abs" and t & {"K", "V"} and not t & {"A", "Q"}:
            x = self._operand(receiver, node.args)
            if x is not None and not subtracts(x) and not self._centred(x):
                t = t | {"ABS"}  # magnitudes of keys or values (|k - m| is a distance, not a norm)
        if op == "pow" and (name == "square" or any(isinstance(a, ast.Constant) and a.value == 2 for a in node.args)):
            x = self._operand(receiver, node.args)
            if "A" in t and "V" not in t and x is not None and (subtracts(x) or self._centred(x)):
                # ((full - narrow) outputs, attention applied to the values, squared: an output error, no spread)
                return t | {"CSQ"}  # (a - a.mean()).square(): squared deviations of attention
            if not (x is not None and subtracts(x)):
                return t | {"SQ"}
        if op == "reduce" and "CSQ" in t:
            self.add("attention_variance", line)  # squared deviations of attention averaged: its variance
            t = t - {"CSQ"}
        if op == "reduce" and "CTR" in t:
            self.add("attention_trend", line)  # attention's deviations times another centred quantity's: a slope
            t = t - {"CTR"}
        if op == "reduce" and "SQ" in t and "A" in t:
            t = t | {"M2"}  # attention's squares averaged: its second moment (minus the squared mean: a variance)
        if op == "reduce" and "QKE" in t and "A" not in t:
            d = _dim(node, 0 if self._on_tensor(receiver) else 1)
            if isinstance(d, ast.UnaryOp) and isinstance(d.op, ast.USub) and isinstance(d.operand, ast.Constant) \
                    and d.operand.value == 1:
                self.add("attention", line)  # (q[:, :, None] * k[:, None]).sum(-1): the query-key products
            t = t - {"QKE"}  # summed (over the channels: q.k; over anything else: no product of the two left)
        if op == "reduce" and "KKL" in t:
            self.add("layer_similarity", line)  # (unit_k * unit_k_other_layer).sum(-1): the layers' keys by cosine
            t = t - {"KKL", "KK"}
        if op == "reduce" and "LVD" in t:
            t = t - {"LVD"}  # distances summed over the channels: to vectors (centroids), no level per entry
        if op == "reduce" and "KK" in t and "KM" in t:
            self.add("mean_key", line)  # (unit_k * unit_mean_key).sum(-1): the keys against their mean (KeyDiff)
            t = t - {"KK"}
        elif op == "reduce" and "KK" in t:
            self.add("key_similarity", line)  # (unit_k * unit_k').sum(-1): keys against keys by cosine
            t = t | {"KSIM"}
        if op == "reduce" and "WK" in t:
            self.add("key_projection", line)  # (filter * keys).sum(-1): the keys' projection on a fitted vector
        if op == "reduce":
            dim = _dim(node, 0 if self._on_tensor(receiver) else 1)
            whole = isinstance(dim, ast.Tuple) and len(dim.elts) > 1  # over tokens and channels: one scale per head
            whole = whole or dim is None and not node.keywords and (
                not node.args if self._on_tensor(receiver) else len(node.args) == 1)  # x.mean(): one number in all
            if "SQ" in t and "FB" in t and t & {"K", "V"} and "A" not in t and "Q" not in t and not whole:
                self.add("leverage", line)  # squared row norms of a factorisation's basis: leverage scores
            last = isinstance(dim, ast.UnaryOp) and isinstance(dim.op, ast.USub) and isinstance(
                dim.operand, ast.Constant) and dim.operand.value == 1
            # one head's keys (k[h]: tokens by channels) reduced along axis 1: along each row's channels, as -1
            row_axis = "H1" in t and t & {"K", "V"} and not t & {"A", "Q", "BLK"} and isinstance(dim, ast.Constant) and \
                dim.value == 1 and not isinstance(dim.value, bool)
            last = last or bool(row_axis)
            l1 = "ABS" in t and last  # x.abs().sum(-1): the L1 norm of each row
            pdim = kwarg(node, "dim")
            if pdim is None and len(node.args) > (0 if self._on_tensor(receiver) else 1):
                pdim = node.args[0 if self._on_tensor(receiver) else 1]
            if t & {"SQ", "ABS"} and t & {"Q", "K"} and not t & {"A", "V"} and not self.loop and \
                    _per_channel_axis(pdim, self._operand(receiver, list(node.args))) and not self.normalising:
                return t | {"PC"}  # squares or magnitudes summed over the tokens: one energy per channel
            if ("SQ" in t or l1) and "A" not in t and "Q" not in t and not whole and not self.normalising and \
                    not t & {"KK2", "KKB", "UR"}:  # (squared distances between keys are pairwise, no row's norm;
                # unit rows squared and summed are one for every row)
                # x.pow(2).sum(-1): a norm written out (under a root that divides: a unit vector, no score); the rows of
                # a factorisation's basis squared and summed are leverage scores, no norm of the keys
                if "K" in t and "V" not in t and not ("FB" in t and "leverage" in self.found):
                    if "key_norm" not in self.found:
                        t = t | {f"SQN{line}"}  # (taken back where it turns out a squared distance's term)
                    self.add("key_norm", line)
                elif "V" in t and "K" not in t:
                    self.add("value_norm", line)
                t = t | {"NSQ"}  # each row's squared norm (its root a norm: what a unit vector is divided by)
            operand = self._operand(receiver, list(node.args))
            # a name bound the line before to what is reduced (p = (q[h] @ c.T).softmax(-1))
            bound = self._resolved(operand, 2) if operand is not None else None
            group_slice = isinstance(operand, ast.Subscript) and isinstance(operand.slice, ast.Slice)
            heads = isinstance(dim, ast.Constant) and dim.value == 0 or isinstance(dim, ast.Tuple) and any(
                isinstance(d, ast.Constant) and d.value == 0 for d in dim.elts)  # dim=0 or dim=(0, 1)
            one_head = operand is not None and any(
                isinstance(x, ast.Subscript) and not isinstance(
                    first := (x.slice.elts[0] if isinstance(x.slice, ast.Tuple) and x.slice.elts else x.slice),
                    ast.Slice) and not (isinstance(first, ast.Constant) and first.value in (None, Ellipsis)) and not (
                    isinstance(x.value, ast.Attribute) and x.value.attr == "shape")  # (a broadcast axis, a size)
                for x in ast.walk(operand)) or bound is not None and bound is not operand and any(  # ...named
                isinstance(x, ast.Subscript) and isinstance(first := (x.slice.elts[0] if isinstance(x.slice, ast.Tuple)
                                                                       and x.slice.elts else x.slice), ast.Name)
                and first.id in self.loop_vars for x in ast.walk(bound))  # a[h]...: one head's values, not every head's
            # (inside a loop the value reduced is one iteration's: one head's, one block's)
            everything = dim is None and not node.keywords and (
                not node.args if self._on_tensor(receiver) else receiver is not None and len(node.args) == 1) and \
                not one_head and not self.loop
            if "SRT" in t and "A" in t and heads and not one_head and not group_slice:
                self.add("rank_aligned", line)  # each head's sorted scores combined across heads, rank by rank
            if "A" in t and (heads and not one_head or everything) and not group_slice and "G1" not in t:
                # over the heads (dim 0), or over every axis at once (x.mean()): one value for the whole layer
                self.add("head_average", line)  # (a[g * i:g * (i + 1)].sum(0) reduces one GQA group, not the heads)
            if "Q" in t and "A" not in t and "K" not in t and not last:  # (along its own last axis, channels or
                return t | {"M"}  # sign bits, each query is reduced alone: no statistic of the queries)
            if "K" in t and "A" not in t and "Q" not in t and "NSQ" not in t and not (row_axis or l1):
                return t | {"KM"}  # (each row's squared norm, summed over its channels, is no summary of the keys;
                # nor is each row's sum of magnitudes, its L1 norm)
        if name == "sliding_window_view" and node.args:  # numpy's windows of step 1 along an axis: pooling
            self.add("pooling", line)
            return t | {"U"}
        if name == "as_strided":
            # x.as_strided((rows, n, w), (row_stride, 1, 1)): windows whose start moves by the same step as their
            # entries, overlapping: sliding windows (pooling written out); equal to the width, blocks
            on = self._on_tensor(receiver)
            stride = kwarg(node, "stride") or kwarg(node, "strides") or (
                node.args[1 if on else 2] if len(node.args) > (1 if on else 2) else None)
            size = kwarg(node, "size") or kwarg(node, "shape") or (
                node.args[0 if on else 1] if len(node.args) > (0 if on else 1) else None)
            if isinstance(stride, ast.Tuple) and len(stride.elts) >= 2 and \
                    ast.unparse(stride.elts[-1]) == ast.unparse(stride.elts[-2]):
                self.add("pooling", line)
                return t | {"U"}
            if isinstance(stride, ast.Tuple) and isinstance(size, ast.Tuple) and len(stride.elts) >= 2 and \
                    len(size.elts) == len(stride.elts) and _same(size.elts[-1], stride.elts[-2]):
                return t | {"BLK"}
        if name == "unfold" and receiver is not None:  # sliding windows along an axis: pooling written out
            size = node.args[1] if len(node.args) > 1 else kwarg(node, "size")
            step = node.args[2] if len(node.args) > 2 else kwarg(node, "step")
            if _same(size, step):
                return t | {"BLK"}  # windows as wide as their step: blocks
            self.add("pooling", line)
            return t | {"U"}
        if op == "extreme" and "A" in t and self._sliding_max(name, node, receiver, arg_tags):
            self.add("pooling", line)  # the largest of a score and its shifted copies: a sliding max, no query's
        elif op == "extreme" and "A" in t and "U" not in t and not self.rescaling and (
                len(node.args) > (0 if self._on_tensor(receiver) else 1) or node.keywords) and \
                name not in ("min", "amin", "minimum") and not (isinstance(node.func, ast.Name) and name == "max") and \
                not self._floored(node, receiver):
            # the least attention (an agreement) is not the most; the builtin max(0, n) clamps a number
            self.add("max_attention", line)
        if name == "diff" and "P" in t and "DD" not in t:
            return t | {"EL"}  # successive steps differenced (steps at which a token was hit): the time between them
        if name in ("maximum", "fmax", "max") and len(arg_tags) >= 2 and any("S" in a and "EL" not in a for a in arg_tags) \
                and any("EL" in a for a in arg_tags):
            self.add("recurrence_interval", line)  # a remembered value raised to the time since a stamp: the longest gap
        if name in ("maximum", "fmax", "max") and len(arg_tags) >= 2 and any(
                "S" in a and not a & {"EL", "P"} for a in arg_tags) and any(
                "A" in a and not a & {"S", "EL", "AC"} for a in arg_tags):
            self.add("carried_peak", line)  # this call's attention against the one remembered from earlier calls, the
            # larger kept: a running maximum across evictions (a peak over the generation, no one window's)
        if op == "extreme" and name in ("amax", "max") and "ABS" in t and "K" in t and not t & {"A", "V"} and \
                not self.loop:
            at = 0 if self._on_tensor(receiver) else 1
            xdim = kwarg(node, "dim") or (node.args[at] if len(node.args) > at else None)
            if _per_channel_axis(xdim, self._operand(receiver, list(node.args))):
                return t | {"PC"}  # each channel's largest magnitude over the tokens: a per-channel magnitude
            if isinstance(xdim, ast.UnaryOp) and isinstance(xdim.op, ast.USub) and isinstance(
                    xdim.operand, ast.Constant) and xdim.operand.value == 1 and "Q" not in t and \
                    not self.normalising and not is_true(kwarg(node, "keepdim")):
                # x.abs().amax(-1): each key's largest entry, its L-infinity norm (kept as a dim: a per-row scale)
                self.add("key_norm", line)
        if op == "extreme" and name in ("amax", "max") and "ABS" in t and "V" in t and not t & {"A", "K", "Q"} and \
                not self.loop and not self.normalising:
            xdim = kwarg(node, "dim") or (node.args[0 if self._on_tensor(receiver) else 1] if len(node.args) > (
                0 if self._on_tensor(receiver) else 1) else None)
            if isinstance(xdim, ast.UnaryOp) and isinstance(xdim.op, ast.USub) and isinstance(
                    xdim.operand, ast.Constant) and xdim.operand.value == 1 and not is_true(kwarg(node, "keepdim")):
                self.add("value_norm", line)  # v.abs().amax(-1): each value's L-infinity norm
        xd = _dim(node, 0 if self._on_tensor(receiver) else 1) if op == "extreme" or name == "aminmax" else None
        if (op == "extreme" or name == "aminmax") and t & {"K", "V"} and not t & {"A", "N"} and not (
                isinstance(xd, ast.Tuple) and len(xd.elts) > 1):
            t = t | {"X"}  # a per-channel minimum or maximum of keys or values (over tokens and channels at once: one
            # number per head, a shift that keeps an exponential finite, no envelope)
        if name in ("scatter_reduce", "scatter_reduce_", "index_reduce", "index_reduce_") and t & {"K", "V"} and \
                not t & {"A", "N", "Q"}:
            how = kwarg(node, "reduce") or next((a for a in node.args if isinstance(a, ast.Constant) and isinstance(
                a.value, str)), None)
            if isinstance(how, ast.Constant) and how.value in ("amax", "amin"):
                t = t | {"X", "KR"}  # each group's channel-wise maximum (minimum) of its keys: an envelope of the group
        if name in ("sample", "rsample") and receiver is not None and not rt & DATA_TAGS:
            op = "random"  # a distribution's draws (torch.distributions.Gumbel(0, 1).sample(shape))
            t = set()  # the shape asked for
        if name in ("exponential_", "uniform_", "normal_", "bernoulli_", "geometric_", "cauchy_", "log_normal_",
                    "random_"):
            op = "random"  # a tensor filled in place with draws
            t = set()  # the receiver gives only a shape
        if op == "random":
            if name and name.endswith("_like"):
                t = set()  # rand_like(x): only x's shape
            if t & DATA_TAGS:
                self.add("random", line)
            else:  # draws of no data: random scores, unless only a fixed rotation is made of them (``finish``)
                self.pending_random[line] = line
                t = t | {f"RNDL{line}"}
            if name in ("multinomial", "bernoulli") and t & {"K", "Q", "A", "V"}:
                self.add("importance_sampling", line)  # tokens drawn with a probability made of the data (keys,
                # queries, attention or values: SubGen draws values by their norms)
            t = t | {"RND"}
        if op == "exp" and "Q" in t and "K" in t:
            arg = self._operand(receiver, node.args)
            if _shifted_by_own_extreme(arg, self.defs):
                return t | {"A"}  # exp(z - max z) or exp(z - logsumexp z): a softmax written by hand
            if "A" in t and not t & {"LOGA"} or isinstance(arg, ast.Call) and callee(arg.func)[0] == "log_softmax":
                return t | {"A"}  # exp(log_softmax(z)): the attention itself, back from log space
            self.pending_exp[line] = line  # exp of query-key logits: expected attention, unless divided by its sum
            return t | {f"EXP{line}"}
        if op == "log" and "A" in t:
            # p * log p (Shannon entropy, a KL term) when multiplied by attention (``_pair``); a log alone is a
            # monotone transform of a score (ranking log s keeps what ranking s keeps), no entropy
            return t | {"LOGA"}
        if name in ("entr", "xlogy", "entropy") and "A" in t | rt:
            self.add("entropy", line)  # torch.special.entr(p), xlogy(p, p), Categorical(probs=p).entropy()
        if op == "cumsum" and t & {"P", "VIEW"} and not t & (DATA_TAGS | {"I", "LIVEIDX"}) and name == "cumsum":
            # a running count of the valid mask: each token's index among the live ones (reversed first: counted from
            # the newest, how far back a token is)
            return t | {"LIVEIDX"} | ({"REVI"} if "FLP" in t else set())
        if op == "cumsum" and "C1" in t and not t & PER_TOKEN:
            return t | {"I"}  # a running count of ones along the tokens: the token index, written out
        if op == "cumsum" and t & {"A", "V", "K", "Q"}:
            t = t | {"CUM"}  # a running sum of data-made weights (read as a CDF by ``_nearest_quantile``)
        if op == "cumsum" and "A" in t:
            # over sorted attention: how many tokens reach a share of the mass; otherwise a running sum (unless two
            # shifted slices of it are subtracted: a moving-window sum, decided in ``tag``)
            if t & {"R", "SEL", "FL"} and "QROW" in t:
                # each query's own row sorted and summed: a share of that query's mass (its nucleus); a coverage
                # unless what it masks is then summed over the queries (``_op_call``'s reduction: votes)
                self.pending_nucleus[line] = line
                t = t | {f"NUC{line}"}
            elif t & {"R", "SEL", "FL"}:
                # sorted, read in a ranking's order (a[order], a[topk.indices]), or reversed (a.flip(-1): from the
                # newest back, the share of the mass a recent span of each length covers)
                self.add("attention_coverage", line)
            else:
                self.pending_cumsum[line] = line
                t = t | {f"CSUM{line}"}
        if op == "arange" and len(node.args) >= 2 and "LI" in arg_tags[0] and not all_args & DATA_TAGS and \
                not self._tail_bound(node.args[0]):
            self.add("layer_span", line)  # a run of token indices from a start that moves with the layer index
        if name == "linspace":
            return t | {"UNI"}  # evenly spaced values: as indices, a lattice over the tokens (a stepped range or
            # slice is as often a block's starts or a bipartite split, and is not read so)
        if op == "arange":
            # a run of indices between two lattice points is no lattice; the counts and bounds it is given (how many
            # entries a state holds) make indices, none of the data they were counted from
            t = t - {"UNI"} - DATA_TAGS
            if len(node.args) >= 2 and self._subtracts(node.args[0]):
                self.add("recent", line)
                return t | {"I", "TAILI"}
            if len(node.args) == 1 and self._few_bound(node.args[0]):
                return t | {"I", "HEADI"}  # arange(4): the first few indices (arange(min(4, n)): at most those)
            return t | {"I"}
        if op == "nonzero":
            return t | {"I"}
        if name == "from_topk" and arg_tags and _by_position(arg_tags[0]):
            self.add("recent", line)  # ranked by the token index alone: the newest tokens stay
        if name == "from_topk" and (any("W" in a for a in arg_tags[1:2]) or any(
                "W" in self.tag(k.value) for k in node.keywords if k.arg == "k")):
            self.add("head_budget", line)  # Keep.from_topk(scores, k) with k from a fitted table: per-head budgets
        if name == "from_topk" and any(a & {"A", "K", "V", "Q"} and "CUM" not in a for a in arg_tags[1:2] + [
                self.tag(k.value) for k in node.keywords if k.arg == "k"]):
            # Keep.from_topk(scores, counts) with counts made of the data: head budgets (counts read off a running sum
            # of attention are the coverage rule's own cut, as for a top-k)
            self.add("head_budget", line)
        if op == "rank":
            ranked = rt | (arg_tags[0] if arg_tags else set())
            if _by_position(ranked):
                self.add("recent", line)  # a top-k of the token index alone: the newest tokens
            if "W" in ranked and not ranked & PER_TOKEN:
                self.add("learned_gate", line)  # heads ranked by a fitted table: which are streaming heads
            if any("W" in a for a in arg_tags[1:]) or any("W" in self.tag(k.value) for k in node.keywords
                                                          if k.arg == "k"):
                self.add("head_budget", line)  # a top-k whose size comes from a fitted table (per-head budgets)
            quota = self._group_quota(node, receiver, arg_tags)
            if quota:
                self.add("group_budget", line)
            elif self._head_quota(node, receiver, arg_tags):
                self.add("head_budget", line)
            t = t | {"R"}
        if op == "where" and len(arg_tags) >= 2 + (name != "where" and not self._on_tensor(receiver)):
            # x.masked_fill(m, v) and torch.masked_fill(x, m, v): where m, v; torch.where(c, a, b)
            at = 0 if name == "where" or self._on_tensor(receiver) else 1
            cond, branches = arg_tags[at], arg_tags[at + 1:at + 2] if name != "where" else arg_tags[1:]
            if name != "where":  # x.masked_fill(m, v): x is the other branch (a step stamped where m is not)
                branches = [*branches, rt if at == 0 else arg_tags[0]]
            if "AC" in cond and any("A" not in b and b & {"S", "P", "I"} for b in branches) and not (
                    name == "where" and node.args and self._row_condition(node.args[0])):
                # (a bar per head, broadcast along the tokens, picks a head's rule: a head gate, no time stamp)
                self.add("last_attended", line)  # where strongly attended, the step; elsewhere the old stamp
        if name == "from_topk":
            t = t | {"R"}
        if name == "where" and len(node.args) == 3 and self._row_condition(node.args[0]) and \
                arg_tags[0] & (DATA_TAGS | {"V"}) and any(
                    a & {"P", "I"} and not a & (DATA_TAGS | {"W", "RND"}) for a in arg_tags[1:]) and any(
                    a & {"A", "K", "V"} for a in arg_tags[1:]):
            # where(opened[:, None], attention, positions): heads picked by a test on the data keep their data score,
            # the others positions alone (streaming heads): a head gate written as one select
            self.add("head_gate", line)
        if op == "const" and name and name.endswith("_like"):
            t = set().union(*arg_tags[1:]) if len(arg_tags) > 1 else set()  # full_like(x, v): x gives only a shape
        if op == "const" and not t & PER_TOKEN:
            return t | {"C1"}  # a tensor of one constant (ones, zeros, full): no data of the layer in it
        if op == "cat" and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)) and self.frames and \
                not _splice(node.args[0]):
            # what a loop concatenates: a kept set grown by the next chunk (``_loop_end``); cat([x[:i], x[i + 1:]])
            # takes one entry out, nothing new comes in
            self.frames[-1]["cat"] |= {n.id for e in node.args[0].elts for n in ast.walk(e) if isinstance(n, ast.Name)}
        if op == "cat" and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
            parts = [self.tag(e) for e in node.args[0].elts]
            if any("HEADI" in p for p in parts) and any("TAILI" in p for p in parts):
                self.add("sinks", line)  # cat([arange(4), arange(T - w, T)]): the first tokens and the last
        if op == "cat" and node.args:
            parts = [self.tag(e) for e in _joined(node.args[0])]
            if any("K" in p and not p & {"Q", "A"} for p in parts) and \
                    any("Q" in p and not p & {"K", "A"} for p in parts):
                t = t | {"QKU"}  # keys and queries joined as points of one space (clustered together: routing)
            if any("LK" in p and p & {"K", "V"} for p in parts) and \
                    any("LK" not in p and p & {"K", "V"} for p in parts) and not t & {"A", "Q"}:
                t = t | {"XL"}  # this layer's keys (values) joined with another layer's kept ones
        if name in ("cat", "concat", "concatenate", "hstack") and "BLK" in t and not self.loop:
            t = t - {"BLK"}  # blocks of the tokens joined back along them: one value per token again
        if name == "where" and len(arg_tags) == 3 and "A" in arg_tags[0] and any(
                "QZ" in a and a & {"K", "V"} and "QZ" not in b and b & {"K", "V"}
                for a, b in ((arg_tags[1], arg_tags[2]), (arg_tags[2], arg_tags[1]))):
            self.add("mixed_precision", line)  # full keys where a score says so, their low-bit copy elsewhere
        if op == "where" and "CHI" in t and t & {"Q", "K"}:
            t = t | {"CH"}  # queries or keys masked to the selected channels
        if op in ("rank", "gather", "cat", "where", "const", "scatter"):
            if op == "rank" and ("F" in rt or any("F" in a for a in arg_tags[:1]) or any(flattens(c) for a in [receiver, *node.args] if a is not None
                                                  for c in ast.walk(a) if isinstance(c, ast.Call))):
                self.add("head_budget", line)  # one top-k over every (head, token) pair of the layer
            if op == "scatter" and name in ("bincount", "scatter_add", "scatter_add_") and not t & {"ASG", "BID", "DD"} \
                    and not self._votes(node, receiver, arg_tags) and "QROW" not in t and {"R", "F"} <= self._counted(
                        node, receiver, rt, arg_tags):
                # the picks of one ranking over the flattened heads and tokens counted by the head they fall in (a
                # ranking along one head's tokens, scattered by token, counts no head)
                self.add("head_budget", line)
            return t
        if (name == "flatten" or flattens(node)) and receiver is not None and not (
                "I" in t and not t & (DATA_TAGS | {"W", "RND"})) and "H1" not in t and not (
                isinstance(receiver, ast.Call) and callee(receiver.func)[0] in ("nonzero", "argwhere")) and not (
                "Q" in t and not t & {"K", "A", "V", "P"}):
            # (x.nonzero().flatten(): a list of indices; one head's scores, or the queries' heads and rows, have no
            # (head, token) axis to merge)
            return t | {"F"} | ({"HCH"} if "TH" in t else set())  # heads behind the tokens, merged with the channels
        return t

    # statements -----------------------------------------------------------------------------------
    def _bind(self, target: ast.expr, t: set[str]) -> None:
        if any(x.startswith("SQN") for x in t):  # a squared norm's mark lives in its expression (``_binop_blocks``)
            if isinstance(target, ast.Name):  # ...and with the name it is bound to (aa = (a * a).sum(-1))
                self.sq_norm_lines[target.id] = min(int(x[3:]) for x in t if x.startswith("SQN"))
            t = {x for x in t if not x.startswith("SQN")}
        if isinstance(target, ast.Name):
            self.tags[target.id] = set(t)
            if "SEL" in t and self.frames:
                self.frames[-1]["sel"].add(target.id)  # a value a ranking picked from, inside a loop
            if t & {"R", "SEL"} and t & (DATA_TAGS | {"I"}) and self.frames:
                self.frames[-1]["rank"].add(target.id)  # a ranking (or what it picked) bound inside a loop
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            key = f"self.{target.attr}"
            if self.current not in ("__init__", "setup") and key in self.tags and "A" in t | self.tags[key] and \
                    "R" not in t and f"@{target.attr}" in t:  # a selection kept, or a value replaced, is no running sum
                self.add("accumulate", target.lineno)
            if self.current not in ("__init__", "setup") and ("R" in t or {"SEL", "P"} <= t):
                self.kept_rank.add(target.attr)  # a selection (or the positions it picked) kept on the module: another
                # layer may read it
            self.tags[key] = set(t) | ({"S"} if self.current not in ("__init__", "setup") else set()) | (
                {"LK"} if self._layer_kept(t) else set())
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute) and \
                self_attr(target.value) and self.current not in ("__init__", "setup") and (
                    "R" in t or {"SEL", "P"} <= t):
            self.kept_rank.add(target.value.attr)  # self.ledger.beam = positions a ranking picked: kept on the module
        elif isinstance(target, (ast.Tuple, ast.List)):
            for e in target.elts:
                self._bind(e, t)
        elif isinstance(target, ast.Subscript):
            base = self.tag(target.value)
            self._stored_range(target)
            st = self.tag(target.slice)
            if self._indexes_beside(target.slice):
                self.add("pick_neighbours", target.lineno)  # keep[top + 1] = True: the picks' neighbours kept
            if self._lattice_index(target.slice, st):
                self.add("uniform_positions", target.lineno)  # keep[linspace(0, n - 1, k).long()] = True
            if "A" in st and (
                    "QZ" in base and base & {"K", "V"} and "QZ" not in t and t & {"K", "V"} or
                    "QZ" in t and t & {"K", "V"} and "QZ" not in base and base & {"K", "V"}):
                self.add("mixed_precision", target.lineno)  # copy[picked] = keys[picked]: full precision where ranked
            if "AC" in st and "A" not in t and t & {"S", "P", "I"}:
                self.add("last_attended", target.lineno)  # stamp[strongly attended] = step
            if isinstance(target.value, ast.Attribute) and self_attr(target.value) and "R" in t and \
                    self.current not in ("__init__", "setup"):
                self.kept_rank.add(target.value.attr)  # self.sel[layer] = a ranking: kept for other layers
            if isinstance(target.value, ast.Attribute) and self_attr(target.value) and \
                    self.current not in ("__init__", "setup") and "A" in t and "R" not in t and \
                    f"@{target.value.attr}" in t and "S" in t:
                # self.memo[layer] = a score made from what was recalled from it and attention: a running quantity
                self.add("accumulate", target.lineno)
            if isinstance(target.value, ast.Attribute) and isinstance(target.value.value, ast.Name) and \
                    target.value.attr == "state" and t & {"K", "V", "Q", "A", "R", "SEL"}:
                # data carried across calls (a score, keys, a selection); positions, counts and flags alone (the
                # newest position seen, the calls so far) are bookkeeping about the calls, not a score accumulated
                self.add("accumulate", target.lineno)
            first = target.slice.elts[0] if isinstance(target.slice, ast.Tuple) and target.slice.elts else target.slice
            if "BAX0" in t and isinstance(first, ast.Slice) and "BS" in self.tag(first.lower):
                t = t - {"BLK", "BAX0"}  # out[lo:lo + step] = a tile's rows: each token's value in its own place, the
                # buffer a per-token array (what a matrix computed tile by tile leaves), no block's value
            if isinstance(target.value, ast.Name):
                self.tags[target.value.id] = base | t
            elif isinstance(target.value, ast.Attribute) and self_attr(target.value) and self._layer_kept(t):
                # self.kept[layer] = keys: one layer's keys or values kept for the calls of the layers after it
                key = f"self.{target.value.attr}"
                self.tags[key] = self.tags.get(key, set()) | set(t) | {"S", "LK"}

    def _state_entry(self, table: ast.expr, key: ast.expr) -> bool:
        """``self.memo[view.layer]`` (or ``.get``) read in a hook, where some call writes that table entry by entry:
        this layer's entry from an earlier call (``syntax.state_tables``)."""
        return isinstance(table, ast.Attribute) and self_attr(table) and table.attr in self.state_tables and \
            self.current not in ("__init__", "setup") and isinstance(key, ast.Attribute) and key.attr == "layer" and \
            "VIEW" in self.tag(key.value)

    def _layer_kept(self, t: set[str]) -> bool:
        """Keys or values (not a score, a selection or the queries) kept on the module by a hook: what the calls for
        the next layers read as another layer's."""
        return self.current not in ("__init__", "setup") and bool(t & {"K", "V"}) and not t & {"A", "R", "Q", "I"}

    def visit_Assign(self, node: ast.Assign) -> None:
        for tgt in node.targets:
            if isinstance(tgt, ast.Tuple) and isinstance(node.value, ast.Call) and all(
                    isinstance(e, ast.Attribute) and self_attr(e) for e in tgt.elts):
                # self.get, self.put = make_store(): accessors made together share one store (a closure's dict)
                self.attr_groups.append(frozenset(e.attr for e in tgt.elts if isinstance(e, ast.Attribute)))
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) and node.targets[0].elts and \
                isinstance(node.targets[0].elts[0], ast.Name) and isinstance(node.value, ast.Call) and \
                callee(node.value.func)[0] in ("topk", "sort"):
            self.ranked_values.add(node.targets[0].elts[0].id)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            v = node.value
            if _fixed_count(v) or isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "min" \
                    and any(_fixed_count(a) for a in v.args):
                self.few.add(node.targets[0].id)
            else:
                self.few.discard(node.targets[0].id)
        alias = callable_alias(node.value)
        if alias is not None and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.aliases[node.targets[0].id] = alias
            return
        wrapped = self._wrapped(node.value) if isinstance(node.value, ast.Call) else None
        if wrapped is not None:
            for tgt in node.targets:  # est = partial(f, proj), self.est = vmap(f): calling it runs f
                key = tgt.id if isinstance(tgt, ast.Name) else f"self.{tgt.attr}" if isinstance(
                    tgt, ast.Attribute) and self_attr(tgt) else None
                if key is not None:
                    self.wrapped[key] = wrapped
        if self._keyed_unpack(node):
            return
        elts = _tuple_elts(node.value)
        denominator = id(node) in self.denominators
        self.normalising += denominator  # m = k.norm(-1) read only in x / outer(m, m): a cosine's scale, no norm score
        each = [self.tag(e) for e in elts] if elts is not None else None
        t = set().union(*each) if each is not None else self.tag(node.value)
        self.normalising -= denominator
        if each is None and isinstance(node.value, ast.Call):
            each = self.call_elts.get(id(node.value))
        for tgt in node.targets:
            self._compounds(tgt, node.value, node.lineno)
        if isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) and \
                node.value.func.id in self.defs.classes:
            for tgt in node.targets:  # an instance of a class of the module: its methods run when called
                if isinstance(tgt, ast.Name):
                    self.instances[tgt.id] = node.value.func.id
                    if id(node.value) in self.constructed:
                        self.objects[tgt.id] = self.constructed[id(node.value)]
                elif isinstance(tgt, ast.Attribute) and self_attr(tgt) and self.owner != node.value.func.id:
                    self.instances[f"self.{tgt.attr}"] = node.value.func.id  # self.printer = Printer(...) in setup
        elif isinstance(node.value, ast.BoolOp) and (made := next((v for v in node.value.values if isinstance(
                v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in self.defs.classes), None)) is not None \
                and isinstance(made.func, ast.Name):
            for tgt in node.targets:  # p = getattr(self, "_p", None) or Printer(...): an instance either way
                if isinstance(tgt, ast.Name):
                    self.instances[tgt.id] = made.func.id
                    if id(made) in self.constructed:
                        self.objects[tgt.id] = self.constructed[id(made)]
        elif isinstance(node.value, ast.Call) and id(node.value) in self.call_objs:
            cls, attrs = self.call_objs[id(node.value)]
            for tgt in node.targets:  # dg = Digest.of(keys): the instance a factory helper made
                if isinstance(tgt, ast.Name):
                    self.instances[tgt.id] = cls
                    self.objects[tgt.id] = attrs
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.accumulated.pop(node.targets[0].id, None)
            seq = self._seq_of(node.value)  # spans = helper(...), worth = [(s, a, b) for ...]: its tuples' elements
            if seq is None:
                self.seq_elts.pop(node.targets[0].id, None)
            else:
                self.seq_elts[node.targets[0].id] = seq
        for tgt in node.targets:
            if isinstance(tgt, ast.Name):
                self.exprs[tgt.id] = node.value
            elif isinstance(tgt, (ast.Tuple, ast.List)) and elts is not None and len(elts) == len(tgt.elts):
                for e, v in zip(tgt.elts, elts):  # lo, hi = 4, n - w: each name bound to its own expression
                    if isinstance(e, ast.Name):
                        self.exprs[e.id] = v
        if self.loop and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self._iterated_walk(node.targets[0].id, node.value, node.lineno)
            if self.frames:
                self.frames[-1]["bound"].add(node.targets[0].id)
        for tgt in node.targets:
            self._suppression(tgt, node.value, node.lineno, update=False)
        if self.frames and _shrinks(node, self.loop_vars, self.exprs):
            self.frames[-1]["shrink"] = True
        for tgt in node.targets:
            if each is not None and isinstance(tgt, (ast.Tuple, ast.List)) and len(tgt.elts) == len(each) and \
                    not any(isinstance(e, ast.Starred) for e in tgt.elts):
                for e, et in zip(tgt.elts, each):  # a, b = x, y (or a helper's tuple): each name its own element
                    self._bind(e, et)
            else:
                self._bind(tgt, t)
        if self.current not in ("__init__", "setup") and any(
                isinstance(x, ast.Subscript) and "R" in self.tag(x.slice) for x in ast.walk(node.value)):
            for tgt in node.targets:  # self.sel = (n, positions[ranked]) or self.sel[key] = positions[ranked]: the
                if isinstance(tgt, ast.Subscript):  # positions a ranking chose, kept on the module (one per key)
                    tgt = tgt.value
                if isinstance(tgt, ast.Attribute) and self_attr(tgt):
                    self.kept_rank.add(tgt.attr)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, self.tag(node.value))

    def _compounds(self, target: ast.expr, value: ast.expr, line: int) -> None:
        """A remembered retention multiplied by a per-token rate from the key or value and stored back (``r *= rate``,
        ``st["r"] = st["r"] * rate``): each call compounds the rate once more, rate ** age written as a recurrence.
        A remembered score scaled by a constant (a forgetting factor) or by attention is not one."""
        pairs: list[tuple[ast.expr, ast.expr]] = []
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
            pairs = [(value.left, value.right), (value.right, value.left)]
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "mul":
            if len(value.args) == 1:  # r.mul(rate)
                pairs = [(value.func.value, value.args[0])]
            elif len(value.args) == 2:  # torch.mul(r, rate)
                pairs = [(value.args[0], value.args[1]), (value.args[1], value.args[0])]
        if pairs:
            for mem, rate in pairs:
                if ast.unparse(mem) != ast.unparse(target):
                    continue  # tags are read only for a real recurrence (reading one may record features)
                m = self.tag(mem)
                if "S" in m and not m & {"A", "Q"} and _rate(self.tag(rate)):
                    self.add("age_decay", line)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        t = self.tag(node.value)
        if self.loop and isinstance(node.op, ast.Add) and isinstance(node.target, ast.Name):
            self.accumulated.setdefault(node.target.id, []).append(node.value)
        prior = self.tag(node.target)
        self._suppression(node.target, node.value, node.lineno, update=True)
        if self.frames and _shrinks(node, self.loop_vars):
            self.frames[-1]["shrink"] = True
        if isinstance(node.op, ast.Mult) and "S" in prior and not prior & {"A", "Q"} and _rate(t):
            self.add("age_decay", node.lineno)  # r *= rate: the rate compounded once per call
        if isinstance(node.op, ast.Add) and "A" in t and ("S" in prior or isinstance(node.target, ast.Attribute)):
            self.add("accumulate", node.lineno)
        if isinstance(node.op, ast.Mult) and "S" in prior:
            self.add("decay", node.lineno)
        if isinstance(node.op, ast.Add) and "A" in t and _head_indexed(node.value, self.loop_vars) and not (
                isinstance(node.target, ast.Subscript) and _head_indexed(node.target, self.loop_vars)):
            self.add("head_average", node.lineno)  # acc += a[h] over the heads: attention summed over every head
        if isinstance(node.op, ast.Add) and isinstance(node.target, ast.Subscript) and _unit(node.value) and \
                not (isinstance(node.target.slice, ast.Subscript) and isinstance(node.target.slice.slice, ast.Slice)) \
                and {"R", "QROW"} <= self.tag(node.target.slice):
            # (extra[order[:left]] += 1: one more for the first of one ranking, a largest-remainder rounding)
            t = t | {"VOTE"}  # counts[picks] += 1 (or a loop over them): each query's top-k picks counted
        if isinstance(node.op, ast.Add) and isinstance(node.target, ast.Subscript) and _unit(node.value) and \
                {"ASG", "K"} <= self.tag(node.target.slice) and not self.tag(node.target.slice) & {"A", "Q"}:
            self.add("key_clustering", node.lineno)  # size[nearest] += 1: each key counted in the cell of the
            # representative it resembles most (a cluster's membership), a clustering of the keys
        self._bind(node.target, prior | t)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            elts = _tuple_elts(node.value)
            if elts is not None:
                each = [self.tag(e) for e in elts]
                t = set().union(*each)
                known = self.return_elts
                self.return_elts = each if known is None else [a | b for a, b in zip(known, each)] if isinstance(
                    known, list) and len(known) == len(each) else False
            else:
                t = self.tag(node.value)
                self.return_elts = False
            self.tags["__return__"] = self.tags.get("__return__", set()) | t
            seq = self._seq_of(node.value)
            if seq is not None:
                self.seq_elts["__return__"] = seq
            made = node.value
            if isinstance(made, ast.Call) and isinstance(made.func, ast.Name) and id(made) in self.constructed:
                self.return_obj = (made.func.id, self.constructed[id(made)])
            if isinstance(node.value, ast.Call) and callee(node.value.func)[0] == "Rewrite":
                self.add("merge", node.lineno)
                if node.value.args and "CH" in self.tag(node.value.args[0]):
                    self.add("channel_selection", node.lineno)  # kept keys carry only the channels a ranking chose

    def _fallback_guard(self, test: ast.expr) -> bool:
        """``if view.budget >= view.n_tokens or view.queries is None:`` (parts joined by ``or``): a test that only
        asks whether the budget holds every token or an input is missing. What its branch returns (every token, the
        newest when no query came) is the harness's fallback, no rule of the method's."""
        parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test]
        budget_part = False
        for p in parts:
            if not (isinstance(p, ast.Compare) and len(p.ops) == 1):
                return False
            op, right = p.ops[0], p.comparators[0]
            if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
                continue
            if isinstance(op, (ast.GtE, ast.LtE)):
                big, small = (p.left, right) if isinstance(op, ast.GtE) else (right, p.left)
                big, small = self._resolved(big), self._resolved(small)  # (b = view.budget; n = view.n_tokens)
                if isinstance(big, ast.Attribute) and big.attr == "budget" and \
                        isinstance(small, ast.Attribute) and small.attr == "n_tokens":
                    budget_part = True
                    continue
            return False
        return budget_part

    def visit_If(self, node: ast.If) -> None:
        self._gate(self.tag(node.test), node.lineno)
        before = {n: set(t) for n, t in self.tags.items()} if not node.orelse else {}
        fallback = dict(self.found) if not node.orelse and _leaves(node.body) and len(node.body) <= 2 and \
            self._fallback_guard(node.test) else None
        for s in node.body:
            self.visit(s)
        if fallback is not None:
            self.found = fallback  # (the guard's return: the harness's fallback, no operation of the method)
        if not node.orelse:
            # the branch may not run: a name it rebinds still holds what it held before (``w = ones`` when the
            # weights sum to zero leaves the weights as they were on every other input)
            for n, t in before.items():
                if self.tags.get(n) != t and not any(x.startswith("SQN") for x in t):
                    self.tags[n] = self.tags.get(n, set()) | t
        if not node.orelse:
            return
        after_body = {n: set(t) for n, t in self.tags.items()}
        for s in node.orelse:
            self.visit(s)
        self._head_gate(node, after_body)
        if not _leaves(node.body) and not _leaves(node.orelse):
            # both arms fall through: after the if a name holds what either arm bound (read = attention when there
            # are queries, positions otherwise: both), not only what the last arm read bound
            for n, t in after_body.items():
                if n in self.tags and self.tags[n] != t and not n.startswith("__") and \
                        not any(x.startswith("SQN") for x in t | self.tags[n]):
                    self.tags[n] = self.tags[n] | t
        elif _leaves(node.orelse) and not _leaves(node.body):
            # the else arm leaves (a fallback that returns): past the if, names hold what the body bound
            for n, t in after_body.items():
                if not n.startswith("__"):
                    self.tags[n] = t

    def _row_condition(self, e: ast.expr) -> bool:
        """A condition per row broadcast along the tokens: ``mask[:, None]``, ``mask.unsqueeze(-1)``, ``m[..., None]``
        (a name bound to one, too)."""
        e = self._resolved(e)
        if isinstance(e, ast.Subscript):
            parts = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
            return len(parts) >= 2 and isinstance(parts[-1], ast.Constant) and parts[-1].value is None
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in ("unsqueeze", "view",
                                                                                               "reshape"):
            return e.func.attr == "unsqueeze" and bool(e.args) and isinstance(e.args[0], (ast.Constant, ast.UnaryOp))
        return False

    def _head_gate(self, node: ast.If, after_body: dict[str, set[str]]) -> None:
        """``if h in opened: s = attention[h] else: s = positions[h]`` in a loop: a decision per head (or per
        layer) made from the data (the heads ranked by how their output, attention or keys behave) sends some heads
        to a score of positions alone (a streaming head: sinks and a window) and the others to a data score. The
        retrieval/streaming head split of DuoAttention, RazorAttention and RLKV, with the profile or learned gate
        replaced by a test on this prompt."""
        if not self.loop or not _mentions_any(node.test, self.loop_vars):
            return
        test = self.tag(node.test)
        if not test & (DATA_TAGS | {"V"}) or not test & {"R", "X"} and not isinstance(node.test, ast.Compare):
            return
        body_names = {n for n in ast.walk(ast.Module(body=node.body, type_ignores=[])) if isinstance(n, ast.Name) and
                      isinstance(n.ctx, ast.Store)}
        else_names = {n for n in ast.walk(ast.Module(body=node.orelse, type_ignores=[])) if isinstance(n, ast.Name) and
                      isinstance(n.ctx, ast.Store)}
        for name in {n.id for n in body_names} & {n.id for n in else_names}:
            arms = (after_body.get(name, set()), self.tags.get(name, set()))
            if any(a & {"P", "I"} and not a & (DATA_TAGS | {"W", "RND"}) for a in arms) and \
                    any(a & {"A", "K", "V"} for a in arms):
                self.add("head_gate", node.lineno)
                return

    def _key(self, node: ast.Call) -> str | None:
        """``_name_key``, and the loop's current literal where the name is a loop variable over literal names."""
        first = node.args[0] if node.args else None
        if isinstance(first, ast.Name) and first.id in self.loop_keys:
            return self.loop_keys[first.id]
        return _name_key(node)

    def _literal_names(self, e: ast.expr) -> tuple[str, ...] | None:
        """A tuple of literal names: written out, or a module's or class's constant."""
        if isinstance(e, (ast.Tuple, ast.List)) and e.elts and all(
                isinstance(x, ast.Constant) and isinstance(x.value, str) for x in e.elts):
            return tuple(x.value for x in e.elts)  # type: ignore[attr-defined]
        if isinstance(e, ast.Name):
            return self.defs.str_tuples.get(e.id)
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self":
            return self.defs.str_tuples.get(f"self.{e.attr}")
        return None

    def _keyed_items(self, target: ast.expr, it: ast.expr) -> list[tuple[str, str, list[tuple[ast.expr, ast.expr]]]] | None:
        """A loop over literal names that remembers or recalls under them: ``for t in _TAGS``, ``for t, x in
        zip(_TAGS, (s1, s2, n))``. Each item: (the name variable, its literal, the other targets with their
        element), so that each store and read is keyed by its own literal rather than one unknown key."""
        if isinstance(target, ast.Name):
            names = self._literal_names(it)
            return None if names is None else [(target.id, n, []) for n in names]
        if isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name) and \
                isinstance(it, ast.Call) and callee(it.func)[0] == "zip" and len(it.args) == 2 and not it.keywords:
            names = self._literal_names(it.args[0])
            other = it.args[1]
            if names is not None and isinstance(other, (ast.Tuple, ast.List)) and len(other.elts) == len(names) and \
                    not any(isinstance(e, ast.Starred) for e in other.elts):
                return [(target.elts[0].id, n, [(target.elts[1], e)]) for n, e in zip(names, other.elts)]
        return None

    def _keyed_loop(self, node: ast.For) -> bool:
        """Runs a loop over literal names (``_keyed_items``) once per name, where its body remembers or recalls under
        the loop variable. Returns whether it did."""
        items = self._keyed_items(node.target, node.iter)
        if items is None or len(items) > 8 or node.orelse:
            return False
        var = items[0][0]
        if not any(isinstance(n, ast.Call) and callee(n.func)[0] in ("remember", "recall") and n.args and
                   isinstance(n.args[0], ast.Name) and n.args[0].id == var for st in node.body for n in ast.walk(st)):
            return False
        self.loop += 1
        for _, name, binds in items:
            self.loop_keys[var] = name
            self.tags[var] = set()
            for tgt, e in binds:
                self._bind(tgt, self.tag(e))
            for st in node.body:
                self.visit(st)
        self.loop_keys.pop(var, None)
        self.loop -= 1
        return True

    def _keyed_unpack(self, node: ast.Assign) -> bool:
        """``s1, s2, n = (view.recall(t) for t in _TAGS)`` (or a list comprehension): each name bound to what its own
        literal recalls. Returns whether the assignment was read so."""
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Tuple) or \
                not isinstance(node.value, (ast.GeneratorExp, ast.ListComp)) or len(node.value.generators) != 1:
            return False
        gen = node.value.generators[0]
        targets = node.targets[0].elts
        if gen.ifs or gen.is_async or not isinstance(gen.target, ast.Name) or any(
                not isinstance(t, ast.Name) for t in targets):
            return False
        names = self._literal_names(gen.iter)
        if names is None or len(names) != len(targets):
            return False
        var = gen.target.id
        for tgt, name in zip(targets, names):
            self.loop_keys[var] = name
            self._bind(tgt, self.tag(node.value.elt))
        self.loop_keys.pop(var, None)
        return True

    def visit_For(self, node: ast.For) -> None:
        if self._keyed_loop(node):
            return
        it = self.tag(node.iter) | _stepped(node.iter)
        if isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Call) and \
                callee(node.iter.func)[0] == "range" and any(
                    isinstance(x, ast.Attribute) and x.attr in ("n_kv_heads", "n_heads") for x in ast.walk(node.iter)):
            self.head_vars.add(node.target.id)
        target = node.target
        each = self.call_elts.get(id(node.iter)) if isinstance(target, ast.Tuple) else None
        if each is not None and isinstance(target, ast.Tuple) and len(each) == len(target.elts) and not any(
                isinstance(e, ast.Starred) for e in target.elts):
            for e, et in zip(target.elts, each):  # for a, b in gen(): a generator's tuples, element by element
                self._bind(e, et)
        else:
            self._bind_each(node.target, node.iter, it)
        names = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        added = names - self.loop_vars
        self.loop_vars |= added
        if isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Call) and \
                callee(node.iter.func)[0] == "range" and all(_literal_bound(a) for a in node.iter.args):
            self.small_ranges |= added
        self.loop += 1
        self.frames.append({"blocks": bool(it & {"BS", "BLK"}), "sel": set(), "cat": set(), "node": node,
                            "shrink": _decreasing_sizes(node.iter), "rank": set(), "blocks_scored": False,
                            "bound": set()})
        for s in node.body + node.orelse:
            self.visit(s)
        if {"R", "A"} <= it and _mass_reached(node) & {n for n in self.tags if "A" in self.tags[n]}:
            # walking items best first by their attention, adding their attention up and stopping once the sum
            # reaches a bar: the fewest items covering a share of the mass (a cumsum of sorted attention, by hand)
            self.add("attention_coverage", node.lineno)
        self._loop_end(node.lineno)
        self.loop -= 1
        self.loop_vars -= added
        self.small_ranges -= added

    def visit_While(self, node: ast.While) -> None:
        self.tag(node.test)
        self.loop += 1
        # a while loop streams chunks where it reads a run of the data from a start that moves (x[pos:pos + c],
        # x[start:]); a loop that only ranks and folds what it holds (mates[order[:left - room]]) reads no chunk
        body: list[ast.AST] = [n for st in node.body for n in ast.walk(st)]
        for c in [n for n in body if isinstance(n, ast.Call)]:  # (and the helpers the body calls, their statements)
            local = self.defs.resolve(c, self.owner)
            if local is not None:
                body += [n for st in local.body for n in ast.walk(st)]
        streams = any(isinstance(n, ast.Subscript) and any(
            isinstance(p, ast.Slice) and p.lower is not None and any(isinstance(x, ast.Name) for x in ast.walk(p.lower))
            for p in (n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice])) or isinstance(n, ast.Call) and
            callee(n.func)[0] == "arange" and len(n.args) >= 2 and any(isinstance(x, ast.Name) for x in ast.walk(
                n.args[0])) for n in body)  # (or arange(pos, pos + c): that run's indices)
        self.frames.append({"blocks": streams, "sel": set(), "cat": set(), "node": node, "shrink": False,
                            "rank": set(), "blocks_scored": False, "bound": set()})
        for s in node.body + node.orelse:
            self.visit(s)
        self._loop_end(node.lineno)
        self.loop -= 1

    def _inverse_transform(self, name: str | None, node: ast.Call, receiver: ast.expr | None,
                           arg_tags: list[set[str]]) -> bool:
        """Inverse-transform sampling: ``searchsorted(cdf, u)`` (``bucketize(u, cdf)``) with ``cdf`` a running sum of
        weights made of the data (attention, value or key norms) and ``u`` uniform draws or evenly spaced quantiles:
        tokens drawn with a probability made of the data, as ``multinomial`` draws them (ATS's deterministic
        sampling); the running sum is that distribution's CDF, no accumulation, and is cleared from the pending
        accumulations."""
        if name not in ("searchsorted", "bucketize") or self._on_tensor(receiver) or len(node.args) < 2 or \
                len(arg_tags) < 2:
            return False
        cdf_at, u_at = (0, 1) if name == "searchsorted" else (1, 0)
        if not self._cumsum_of_data(node.args[cdf_at]) or arg_tags[u_at] & {"A", "V", "K", "Q"} and not \
                self._lattice_levels(node.args[u_at]):
            return False
        if _one_bar(node.args[u_at]) or _one_bar(self._resolved(node.args[u_at])):
            # one share located in the running sum (searchsorted(cdf, [0.95])): how many tokens reach that share of
            # the mass, a coverage count, no draws
            if "A" in arg_tags[cdf_at]:
                self.add("attention_coverage", node.lineno)
            return False
        for x in arg_tags[cdf_at]:
            if x.startswith("CSUM"):
                self.pending_cumsum.pop(int(x[4:]), None)
        return True

    def _lattice_levels(self, e: ast.expr) -> bool:
        """Levels that are an evenly spaced lattice (``arange``/``linspace``), though shifted or stretched by a number
        read off the data (``lo + (1 - lo) * arange(n) / (n - 1)`` with ``lo`` the curve's first step): quantiles."""
        e = self._resolved(e, 3)
        if isinstance(e, ast.Name) and e.id in self.param_args:
            e = self.param_args[e.id]  # a helper's parameter: what its caller passed (``curve @ curve.heights(k)``)

        def lattice(c: ast.Call) -> bool:
            if callee(c.func)[0] in ("arange", "linspace"):
                return True
            helper = self.defs.resolve(c, self.owner) or self._instance_method(c)  # levels a helper makes
            return helper is not None and any(isinstance(x, ast.Call) and callee(x.func)[0] in ("arange", "linspace")
                                              for x in ast.walk(helper))
        return any(isinstance(c, ast.Call) and lattice(c) for c in ast.walk(e))

    def _cumsum_of_data(self, e: ast.expr) -> bool:
        """``e`` carries a running sum of data-made weights (``CUM``: a cumsum of attention, value or key norms, also
        rescaled or sliced)."""
        return "CUM" in self.tag(e)

    def _nearest_quantile(self, name: str | None, node: ast.Call, receiver: ast.expr | None) -> bool:
        """``(cdf[:, None, :] - u[None, :, None]).abs().argmin(-1)``: for each of evenly spaced quantiles (or draws),
        the token whose running share of a data-made weight is nearest to it - inverse-transform sampling written
        as a nearest-point search."""
        if name != "argmin":
            return False
        x = receiver if self._on_tensor(receiver) else (node.args[0] if node.args else None)
        while isinstance(x, ast.Call) and callee(x.func)[0] in ("abs", "square") and (
                x.args or isinstance(x.func, ast.Attribute)):
            x = x.args[0] if x.args and not self._on_tensor(callee(x.func)[1]) else callee(x.func)[1]
        if not isinstance(x, ast.BinOp) or not isinstance(x.op, ast.Sub):
            return False
        for a, b in ((x.left, x.right), (x.right, x.left)):
            if self._cumsum_of_data(a) and not self.tag(b) & {"A", "V", "K", "Q"}:
                return True
        return False

    def _counted(self, node: ast.Call, receiver: ast.expr | None, rt: set[str], arg_tags: list[set[str]]) -> set[str]:
        """The tags of the ids a count counts: ``bincount``'s input (``torch.bincount(x)``, ``x.bincount()``), a
        scatter-add's index (``c.scatter_add_(dim, index, src)``, ``torch.scatter_add(c, dim, index, src)``). Only a
        ranking's picks counted by id are a budget shared out over heads; ids read off positions or a fixed split
        (log-distance buckets, equal strata) count the tokens of each group, no allocation by a score."""
        if callee(node.func)[0] == "bincount":
            return rt if self._on_tensor(receiver) else (arg_tags[0] if arg_tags else set())
        at = 1 if self._on_tensor(receiver) else 2
        return arg_tags[at] if len(arg_tags) > at else set()

    def _unit_counts(self, node: ast.Call, receiver: ast.expr | None) -> bool:
        """A count adds one per id (``bincount`` without weights, a scatter or index add of ones: ``ones_like``, a
        literal 1, a name bound to ones) or the attention each query pays its pick; not a share of a budget."""
        name = callee(node.func)[0]
        if name == "bincount":  # torch.bincount(x, weights, minlength), x.bincount(weights, minlength)
            at = 0 if self._on_tensor(receiver) else 1
            weights = kwarg(node, "weights") or (node.args[at] if len(node.args) > at else None)
            return weights is None or isinstance(weights, ast.Constant) and weights.value is None or _unit(weights)
        at = 2 if self._on_tensor(receiver) else 3
        src = kwarg(node, "src") or kwarg(node, "source") or (node.args[at] if len(node.args) > at else None)
        if src is None:
            return False
        if _unit(self._resolved(src)):
            return True
        # each pick weighted by the attention its query pays it over the fetched keys (a softmax over the top-k
        # logits): attention restricted to each query's retrieved keys, summed; not a share of a budget
        added = self.tag(src)
        return bool(added & {"A", "Q"}) and not added & {"QTA", "BUD"}

    def _votes(self, node: ast.Call, receiver: ast.expr | None, arg_tags: list[set[str]]) -> bool:
        """``counts.scatter_add_(1, top, ones)`` with ``top`` a ranking's indices along the tokens, unflattened: each
        token counted once per ranking that picked it (a vote), no share of a budget counted per head (that
        counts the head of each pick of one ranking over the flattened heads and tokens)."""
        if callee(node.func)[0] not in ("scatter_add", "scatter_add_") or not self._on_tensor(receiver) or \
                len(node.args) < 2:
            return False
        index = arg_tags[1] if len(arg_tags) > 1 else set()
        dim = node.args[0]
        along_tokens = isinstance(dim, ast.Constant) and dim.value in (1, -1) or \
            isinstance(dim, ast.UnaryOp) and isinstance(dim.op, ast.USub)
        return along_tokens and "R" in index and "F" not in index

    def _bisection(self, loop: ast.For | ast.While) -> bool:
        """Spans halved and the best halves kept, level after level: the midpoint of two bounds the loop carries
        (``mid = (lo + hi) // 2``, ``>> 1``) and those bounds re-bound from entries picked by a ranking (``lo, hi =
        s2[top], e2[top]``): a tree search over the tokens written with span bounds rather than a block size. A
        binary search re-binds its bounds to the midpoint, never to a ranking's pick."""
        stored = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        carried = _carried(loop, stored)
        if len(carried) < 2:
            return False

        def halves(n: ast.AST) -> bool:
            return isinstance(n, ast.BinOp) and isinstance(n.right, ast.Constant) and (
                isinstance(n.op, ast.FloorDiv) and n.right.value == 2 or isinstance(n.op, ast.RShift) and
                n.right.value == 1) and isinstance(n.left, ast.BinOp) and isinstance(n.left.op, ast.Add) and \
                len({x.id for x in ast.walk(n.left) if isinstance(x, ast.Name)} & carried) >= 2

        if not any(halves(n) for n in ast.walk(loop)):
            return False
        picked = set()
        for n in ast.walk(loop):
            if not isinstance(n, ast.Assign):
                continue
            for tgt in n.targets:
                names = tgt.elts if isinstance(tgt, (ast.Tuple, ast.List)) else [tgt]
                values = n.value.elts if isinstance(n.value, ast.Tuple) and len(n.value.elts) == len(names) else \
                    [n.value] * len(names)
                for t, v in zip(names, values):
                    if isinstance(t, ast.Name) and t.id in carried and isinstance(v, ast.Subscript) and \
                            isinstance(v.slice, ast.Name) and "R" in self.tags.get(v.slice.id, set()):
                        picked.add(t.id)
        return len(picked) >= 2

    def _loop_end(self, line: int) -> None:
        """A loop over chunks of the tokens that concatenates a name and also picks from it by a ranking: a kept set
        (a pot) refilled with each chunk and cut back by its scores, so that each chunk competes with what earlier
        chunks left, not with the whole context."""
        frame = self.frames.pop()
        if frame.get("shrink") and frame.get("blocks_scored") and _carried(frame["node"], frame["rank"]):
            # a loop that scores blocks, picks the best, carries the pick to the next round and shrinks the block
            # size: a coarse-to-fine (tree) search, each level refining the branches the one before kept (what it
            # carries is a pick among the branches, not a kept set refilled with new tokens)
            self.add("coarse_to_fine", line)
        elif self._bisection(frame["node"]):
            self.add("coarse_to_fine", line)
        elif frame["blocks"] and frame["sel"] & frame["cat"] and "attention" in self.found:
            self.add("chunked_refill", line)
        if self.frames:
            self.frames[-1]["rank"] |= frame["rank"]

    def visit_Expr(self, node: ast.Expr) -> None:
        v = node.value
        if isinstance(v, (ast.Yield, ast.YieldFrom)):
            # a generator helper: what it yields is what a loop over its call binds (``for c in self.order(s)``)
            if v.value is not None:
                self.visit_Return(ast.copy_location(ast.Return(value=v.value), node))  # (a tuple: element by element)
            return
        if not isinstance(v, ast.Constant):
            self.tag(v)
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr in _WRITES_IN_PLACE:
            self._written_in_place(v, v.func.value, node.lineno)
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "at" and \
                isinstance(v.func.value, ast.Attribute) and v.func.value.attr == "add" and len(v.args) >= 2 and \
                isinstance(v.args[0], ast.Name) and {"R", "QROW"} <= self.tag(v.args[1]) and \
                (len(v.args) < 3 or _unit(v.args[2])):
            # np.add.at(counts, picks, 1): each query's top-k picks counted by token
            self.tags[v.args[0].id] = self.tags.get(v.args[0].id, set()) | {"VOTE"}
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr in (
                "sub_", "mul_", "div_", "masked_fill_", "index_fill_", "index_put_", "scatter_", "copy_") and \
                isinstance(v.func.value, (ast.Name, ast.Subscript)):
            self._suppression(v.func.value, v, node.lineno, update=True)  # s.mul_(1 - sim[:, top].amax(-1)), s[h].sub_

    def _written_in_place(self, call: ast.Call, receiver: ast.expr, line: int) -> None:
        """``ledger.index_add_(0, pos, credit)``, ``acc.add_(a)``, ``buf.copy_(x)``: what the arguments carry flows
        into the tensor written (what the data is made of, not its shape: a scatter's entries are its index's).
        Added into what the next call reads (the module's attribute, a remembered tensor,
        ``view.state``), attention is a running sum over the calls, as ``self.acc += a`` is."""
        name = call.func.attr if isinstance(call.func, ast.Attribute) else ""
        base = receiver
        while isinstance(base, ast.Subscript):
            base = base.value
        carried = set().union(*[self.tag(a) for a in call.args], *[self.tag(k.value) for k in call.keywords
                                                                    if k.arg not in ("accumulate", "reduce")])
        if any(self._beside(a) for a in call.args):
            self.add("pick_neighbours", line)  # prio.scatter_(0, top + d, ...): written beside the chosen tokens
        reduce = kwarg(call, "reduce") or (call.args[3] if len(call.args) > 3 else None)
        adds = name in _ADDS_IN_PLACE or name in ("index_put_", "put_") and is_true(kwarg(call, "accumulate")) or \
            name == "scatter_reduce_" and isinstance(reduce, ast.Constant) and reduce.value == "sum"
        key = f"self.{base.attr}" if isinstance(base, ast.Attribute) and self_attr(base) else \
            base.id if isinstance(base, ast.Name) else None
        remembered = self_attr(base) or isinstance(base, ast.Name) and "S" in self.tags.get(base.id, set()) or \
            isinstance(base, ast.Attribute) and base.attr == "state"
        if adds and remembered and "A" in carried and self.current not in ("__init__", "setup"):
            self.add("accumulate", line)
        if name in ("scatter_", "index_fill_", "index_put_") and "CHI" in carried:
            carried = carried | {"CHIM"}  # a mask written at the channels a ranking chose
        if adds and {"R", "QROW"} <= carried and self._unit_counts(call, receiver):
            carried = carried | {"VOTE"}  # counts.index_add_(0, picks, ones): each query's top-k picks counted
        if key is not None:
            self.tags[key] = self.tags.get(key, set()) | (carried & (_WHAT_DATA | {"VOTE"})) | (
                {"CHI"} if "CHIM" in carried else set()) | (
                {"S"} if self_attr(base) and self.current not in ("__init__", "setup") else set())

    def generic_visit(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.tag(child)
            else:
                self.visit(child)
