"""Reading a module's syntax tree: small predicates on nodes and the table of the functions it defines."""

from __future__ import annotations

import ast
import copy

from reviewbench.evidence.computation.vocabulary import CANON


def callee(func: ast.expr) -> tuple[str | None, ast.expr | None]:
    """(name, receiver) of a call: ``torch.topk`` -> ("topk", torch), ``x.topk`` -> ("topk", x), ``f`` -> ("f", None)."""
    if isinstance(func, ast.Attribute):
        return func.attr, func.value
    if isinstance(func, ast.Name):
        return func.id, None
    return None, None


def kwarg(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def is_false(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def negative(node: ast.expr | None) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)


def parent_map(tree: ast.AST) -> dict[int, ast.AST]:
    """Each node's parent in ``tree``, by the child's id: for tests that read what encloses a node."""
    return {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}


def subtracts(node: ast.expr | None) -> bool:
    """An index computed as ``n - w`` (the start of the last w), possibly inside ``max(0, n - w)``."""
    return node is not None and any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) for n in ast.walk(node))


def callable_alias(node: ast.expr) -> str | None:
    """The canonical callable a name is bound to (``pool = F.max_pool1d``), if any."""
    options = [node.body, node.orelse] if isinstance(node, ast.IfExp) else [node]
    for o in options:
        name = o.attr if isinstance(o, ast.Attribute) else o.id if isinstance(o, ast.Name) else None
        if name in CANON:
            return name
    return None


def self_attr(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def parse_source(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def flattens(call: ast.Call) -> bool:
    """``x.flatten()`` (``ravel``), ``x.reshape(-1)``, ``x.view(b, -1)``, ``x.reshape(b, h * n)``: heads and tokens in one
    axis."""
    name = callee(call.func)[0]
    if name in ("flatten", "ravel"):
        return True
    if name not in ("reshape", "view"):
        return False
    shape = list(call.args)  # x.reshape(b, -1); x.reshape((b, -1)) and torch.reshape(x, (b, -1)): the tuple's items
    if shape and isinstance(shape[-1], (ast.Tuple, ast.List)) and len(shape) <= 2:
        shape = list(shape[-1].elts)
    return 1 <= len(shape) <= 2 and (
        negative(shape[-1]) or isinstance(shape[-1], ast.BinOp) and isinstance(shape[-1].op, ast.Mult))


def rope_idiom(node: ast.BinOp) -> bool:
    """``x * cos + rotate_half(x) * sin`` (in either order): RoPE applied by hand."""
    if not isinstance(node.op, ast.Add):
        return False
    sides = [node.left, node.right]
    return all(isinstance(x, ast.BinOp) and isinstance(x.op, ast.Mult) for x in sides) and any(
        isinstance(c, ast.Call) and callee(c.func)[0] == "rotate_half" for x in sides for c in ast.walk(x))


def dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def class_attrs(tree: ast.Module) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    out.setdefault(stmt.targets[0].id, stmt.value)
                elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                    out.setdefault(stmt.target.id, stmt.value)
    return out


def const_int(node: ast.expr | None) -> int | None:
    try:
        v = ast.literal_eval(node) if node is not None else None
    except (ValueError, SyntaxError, TypeError):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.LShift):
            left, right = const_int(node.left), const_int(node.right)
            return left << right if left is not None and right is not None else None
        return None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


class Defs:
    """Every function and method of a module by name, with the class each belongs to."""

    def __init__(self, tree: ast.Module) -> None:
        self.by_name: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.owner: dict[int, str | None] = {}
        self.classes: set[str] = set()
        self.methods: set[int] = set()  # functions defined directly in a class body (not nested in a method)
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
                    if isinstance(node, ast.ClassDef):
                        self.methods.add(id(child))
                    walk(child, owner)
                else:
                    walk(child, owner)

        walk(tree, None)
        # self attributes bound to an instance of a class of the module anywhere in the code (``self.signer =
        # Signer(...)`` in ``setup``): calling the attribute runs that class's ``__call__``
        self.attr_instances: dict[str, str] = {}
        self.attr_calls: dict[str, ast.Call] = {}  # (the constructor call itself)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and isinstance(
                    node.value.func, ast.Name) and node.value.func.id in self.classes:
                for tgt in node.targets:
                    if isinstance(tgt, ast.Attribute) and isinstance(tgt.value, ast.Name) and tgt.value.id == "self":
                        self.attr_instances[tgt.attr] = node.value.func.id
                        self.attr_calls[tgt.attr] = node.value
        # a class of the module with no ``__init__`` of its own and annotated fields (a dataclass, a NamedTuple):
        # its fields in order, which a constructor call binds by position or by name
        self.fields: dict[str, list[str]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and not any(
                    isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) and b.name == "__init__" for b in node.body):
                own = [b.target.id for b in node.body if isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name)]
                if own:
                    self.fields[node.name] = own
        # tuples of literal names at module or class level (``_TAGS = ("s1", "s2", "n")``): the keys a loop over them
        # remembers and recalls one by one (read as ``self._TAGS`` too where a class holds them)
        self.str_tuples: dict[str, tuple[str, ...]] = {}
        # module-level integer constants (``SINKS = 4``): a literal count under a name
        self.int_consts: dict[str, int] = {}
        holders: list[ast.Module | ast.ClassDef] = [tree, *(c for c in tree.body if isinstance(c, ast.ClassDef))]
        for holder in holders:
            for st in holder.body:
                if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)):
                    continue
                target, value = st.targets[0].id, st.value
                if holder is tree and isinstance(value, ast.Constant) and type(value.value) is int:
                    self.int_consts[target] = value.value
                elif isinstance(value, (ast.Tuple, ast.List)) and value.elts and all(
                        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
                    names = tuple(e.value for e in value.elts)  # type: ignore[attr-defined]
                    self.str_tuples[target] = names
                    if holder is not tree:
                        self.str_tuples[f"self.{target}"] = names

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
                dotted(func.value) is not None and str(dotted(func.value)).startswith("self.") and \
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


def _floats(node: ast.expr) -> int:
    return sum(isinstance(e, ast.Constant) and isinstance(e.value, float) for e in getattr(node, "elts", []))


def smoothing_window(node: ast.expr) -> bool:
    """A short symmetric run of numbers (``[1, 2, 3, 2, 1]``, ``(0.25, 0.5, 0.25)``): a smoothing kernel's taps, which
    a hand writes, not numbers fitted to data (a per-head or per-layer table has no reason to read the same backwards)."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return False
    values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, (int, float))
              and not isinstance(e.value, bool)]
    return 3 <= len(values) == len(node.elts) <= 9 and values == values[::-1]


def fitted_literal(node: ast.expr) -> bool:
    """A literal table of fitted numbers: at least four non-integer values, rows of them, or a table of rows of
    0/1 flags (a per-layer, per-head profile: which heads are retrieval heads). Plain constants are not it."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return False
    if smoothing_window(node):
        return False
    if _floats(node) >= 4:
        return True
    rows = [e for e in node.elts if isinstance(e, (ast.List, ast.Tuple))]
    if len(rows) < 2 or len(rows) != len(node.elts):
        return False
    if all(_floats(r) >= 2 for r in rows):
        return True
    flags = [e for r in rows for e in r.elts]
    return len(flags) >= 4 and all(isinstance(e, ast.Constant) and e.value in (0, 1) and not isinstance(e.value, float)
                                   for e in flags) and all(len(r.elts) >= 2 for r in rows)


def self_attr_reads(tree: ast.AST) -> set[str] | None:
    """Attribute names read anywhere in the module, on any object (a value kept on ``self`` may be read back by
    another call, through ``self`` or through a helper handed ``self``); None where attributes are reached by
    name (``getattr``, ``vars``, ``__dict__``): then any kept value may be read, and nothing is pruned."""
    reads: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and n.attr == "__dict__":
            return None
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("getattr", "vars", "setattr"):
            return None
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
            reads.add(n.attr)
    return reads


def state_tables(tree: ast.AST) -> set[str]:
    """Attributes of ``self`` written entry by entry outside ``__init__`` and ``setup`` (``self.memo[layer] = ...``):
    tables that carry what one call stores to a later call, so an entry read back is remembered state, whether the
    read stands before or after the write in the code."""
    out: set[str] = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.name in ("__init__", "setup"):
            continue
        # a local name bound to one entry of a self table (book = self.vault[view.layer], or .setdefault / .get):
        # writing into it writes into the table's entry
        entries: dict[str, str] = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and \
                    (table := _self_table_entry(n.value)) is not None:
                entries[n.targets[0].id] = table
        for n in ast.walk(fn):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
            for t in targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Attribute) and \
                        isinstance(t.value.value, ast.Name) and t.value.value.id == "self":
                    out.add(t.value.attr)
                elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in entries:
                    out.add(entries[t.value.id])  # book["heard"] = ...: the table's entry written
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                    and n.func.value.id in entries and n.func.attr in ("update", "setdefault", "__setitem__", "pop",
                                                                       "append", "extend", "clear"):
                out.add(entries[n.func.value.id])  # book.update(...): the same
    return out


def _self_table_entry(e: ast.expr) -> str | None:
    """The self attribute ``e`` reads one entry of: ``self.t[k]``, ``self.t.setdefault(k, ...)``, ``self.t.get(k)``."""
    if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute) and isinstance(e.value.value, ast.Name) \
            and e.value.value.id == "self":
        return e.value.attr
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in ("setdefault", "get") and \
            isinstance(e.func.value, ast.Attribute) and isinstance(e.func.value.value, ast.Name) and \
            e.func.value.value.id == "self":
        return e.func.value.attr
    return None


def dead_statements(fn: ast.FunctionDef | ast.AsyncFunctionDef, self_reads: set[str]) -> set[int]:
    """The assignments of a function whose value never reaches what it returns: no name they bind is read by a
    statement that does (a return, a call made for its effect, a test, a loop's iterator, a value kept on ``self``
    that the module reads back, another such assignment). Their operations are computed and thrown away, so they
    are no part of the rule. Order-blind (a name read anywhere in a live statement is live), so loops stay live."""
    def names(node: ast.AST | None) -> set[str]:
        return set() if node is None else {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}

    # Names the function rebinds itself (not global or nonlocal): only their values can die with it; a value
    # written into anything else (a parameter, a module-level table, a closure's cell) outlives the call.
    outer = {n for node in ast.walk(fn) if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names}
    local = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} - outer

    def bound(target: ast.expr) -> tuple[set[str], bool]:
        """Names a target binds or mutates, and whether it also keeps a value where others may read it."""
        if isinstance(target, ast.Name):
            return {target.id}, target.id in outer
        if isinstance(target, ast.Attribute):
            if isinstance(target.value, ast.Name) and target.value.id == "self":  # kept, or stored for no one
                return ({f"self.{target.attr}"}, False) if target.attr not in self_reads else (set(), True)
            base = names(target.value)  # an attribute of a parameter or a global outlives the call, and one
            return base, not base <= local or target.attr in self_reads  # read back anywhere may be this one
        if isinstance(target, ast.Subscript):
            inner, kept = bound(target.value)
            return inner, kept or not inner <= local
        if isinstance(target, (ast.Tuple, ast.List)):
            out: set[str] = set()
            keep = False
            for e in target.elts:
                n, k = bound(e.value if isinstance(e, ast.Starred) else e)
                out |= n
                keep = keep or k
            return out, keep
        return set(), True

    assigns: list[tuple[ast.stmt, set[str], set[str]]] = []  # (statement, names bound, names read)
    live: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out: set[str] = set()
            kept = False
            for tgt in targets:
                n, k = bound(tgt)
                out |= n
                kept = kept or k
            reads = names(node.value) | {n for t in targets for s in ast.walk(t) if isinstance(s, ast.Subscript)
                                         for n in names(s.slice)}
            if isinstance(node, ast.AugAssign):
                reads |= out
            if kept or not out:
                live |= reads
            else:
                assigns.append((node, out, reads))
        elif isinstance(node, (ast.Return, ast.Expr)):
            live |= names(node.value)
        elif isinstance(node, (ast.If, ast.While)):
            live |= names(node.test)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            live |= names(node.iter)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                live |= names(item.context_expr)
    changed = True
    while changed:
        changed = False
        for stmt, out, reads in assigns:
            if out & live and not reads <= live:
                live |= reads
                changed = True
    return {id(stmt) for stmt, out, _ in assigns if not out & live}


def inline_expression_helpers(tree: ast.Module, rounds: int = 3) -> ast.Module:
    """``tree``, changed in place (the caller's own parse), with each call of a helper whose body is one ``return <expression>`` (a docstring
    aside) replaced by that expression, its parameters by the call's arguments: a module function ``f(a, b)``, a
    method called on ``self`` (``self._f(a)``) or a static method (``self._f(a)``, ``Cls._f(a)``). A porter who
    moves each line of a rule into a helper of its own computes the rule still; read inline, each operation keeps
    the context it has in the caller (a window's start, the carried vector of an iteration, the argument a pooling
    takes). A parameter read more than once is substituted only by a name, an attribute or a constant (a call is not
    evaluated twice); helpers that call themselves, take ``*args``/``**kwargs`` or other decorators are left as they
    are."""
    for _ in range(rounds):
        helpers: dict[str, tuple[ast.FunctionDef, bool]] = {}  # name -> (def, its first parameter is self)
        scopes: list[tuple[list[ast.stmt], str | None]] = [(tree.body, None)] + [
            (c.body, c.name) for c in tree.body if isinstance(c, ast.ClassDef)]
        for scope, cls in scopes:
            for fn in scope:
                if not isinstance(fn, ast.FunctionDef) or fn.args.vararg or fn.args.kwarg or fn.args.posonlyargs or \
                        fn.args.kwonlyargs:
                    continue
                static = [ast.unparse(d) for d in fn.decorator_list] == ["staticmethod"] and cls is not None
                if fn.decorator_list and not static:
                    continue
                body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(
                    fn.body[0].value, ast.Constant) else fn.body
                if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
                    continue
                if any(isinstance(x, ast.Name) and x.id == fn.name or isinstance(x, ast.Attribute) and
                       x.attr == fn.name for x in ast.walk(body[0].value)):
                    continue  # recursive
                if any(isinstance(x, (ast.Lambda, ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr))
                       for x in ast.walk(body[0].value)):
                    continue
                keys = [fn.name] if cls is None else [f"self.{fn.name}"] + ([f"{cls}.{fn.name}"] if static else [])
                for key in keys:
                    if key in helpers or (cls is None and any(isinstance(x, ast.Name) and x.id == fn.name and
                                                              isinstance(x.ctx, ast.Store) for x in ast.walk(tree))):
                        helpers.pop(key, None)  # defined twice, or rebound: which one runs is not known
                        continue
                    helpers[key] = (fn, cls is not None and not static)
        if not helpers:
            break
        changed = False

        class Inline(ast.NodeTransformer):
            def visit_Call(self, n: ast.Call) -> ast.expr:
                nonlocal changed
                self.generic_visit(n)
                f = n.func
                key = f.id if isinstance(f, ast.Name) else f"{f.value.id}.{f.attr}" if isinstance(
                    f, ast.Attribute) and isinstance(f.value, ast.Name) else None
                if key is None or key not in helpers or any(isinstance(a, ast.Starred) for a in n.args) or any(
                        k.arg is None for k in n.keywords):
                    return n
                fn, bound = helpers[key]
                params = [a.arg for a in fn.args.args]
                if bound:
                    if not params:
                        return n
                    params = params[1:]
                defaults = dict(zip(params[len(params) - len(fn.args.defaults):], fn.args.defaults))
                if len(n.args) > len(params):
                    return n
                given: dict[str, ast.expr] = dict(zip(params, n.args))
                for k in n.keywords:
                    if k.arg not in params or k.arg in given:
                        return n
                    given[k.arg] = k.value
                for p in params:
                    if p not in given:
                        if p not in defaults:
                            return n
                        given[p] = defaults[p]
                value = copy.deepcopy(fn.body[-1].value)  # type: ignore[attr-defined]
                uses: dict[str, int] = {}
                for x in ast.walk(value):
                    if isinstance(x, ast.Name) and x.id in given:
                        uses[x.id] = uses.get(x.id, 0) + 1
                if any(uses.get(p, 0) > 1 and not isinstance(a, (ast.Name, ast.Attribute, ast.Constant))
                       for p, a in given.items()):
                    return n
                if any(isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store) and x.id in given
                       for x in ast.walk(value)):
                    return n  # a comprehension rebinding a parameter's name

                class Put(ast.NodeTransformer):
                    def visit_Name(self, m: ast.Name) -> ast.expr:
                        return ast.copy_location(copy.deepcopy(given[m.id]), m) if m.id in given else m

                changed = True
                return ast.copy_location(Put().visit(value), n)

        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                for fn in node.body:
                    if isinstance(fn, ast.FunctionDef) and f"self.{fn.name}" not in helpers:
                        Inline().visit(fn)
            elif isinstance(node, ast.FunctionDef) and node.name not in helpers:
                Inline().visit(node)
        ast.fix_missing_locations(tree)
        if not changed:
            break
    return tree


_NORMS = frozenset({"norm", "vector_norm"})


def inline_divisor_norms(tree: ast.Module) -> ast.Module:
    """``tree``, changed in place (the caller's own parse), where a name bound to a norm (``n = k.norm(dim=-1, keepdim=True)``) and read once, in the
    divisor of a division (``k / n.clamp_min(1e-6)``), is read inline there: a unit vector with its norm named the
    line before is the unit vector written in one line, not a norm score beside it."""
    for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        loads: dict[str, list[ast.Name]] = {}
        stores: dict[str, int] = {}
        for x in ast.walk(fn):
            if isinstance(x, ast.Name):
                if isinstance(x.ctx, ast.Load):
                    loads.setdefault(x.id, []).append(x)
                else:
                    stores[x.id] = stores.get(x.id, 0) + 1
        normed = {st.targets[0].id for st in ast.walk(fn) if isinstance(st, ast.Assign) and len(st.targets) == 1 and
                  isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.Call) and
                  callee(st.value.func)[0] in _NORMS}

        def a_norm(e: ast.expr) -> bool:  # ||v|| / ||k||: a ratio of two norms, each a score, no unit vector
            return isinstance(e, ast.Name) and e.id in normed or isinstance(e, ast.Call) and callee(e.func)[0] in _NORMS

        divisors = {id(x) for b in ast.walk(fn) if isinstance(b, ast.BinOp) and isinstance(b.op, ast.Div) and
                    not a_norm(b.left) for x in ast.walk(b.right) if isinstance(x, ast.Name)}
        for st in [x for x in ast.walk(fn) if isinstance(x, ast.Assign)]:
            if len(st.targets) != 1 or not isinstance(st.targets[0], ast.Name):
                continue
            name, value = st.targets[0].id, st.value
            if not (isinstance(value, ast.Call) and callee(value.func)[0] in _NORMS) or stores.get(name) != 1:
                continue
            uses = loads.get(name, [])
            if len(uses) != 1 or id(uses[0]) not in divisors:
                continue
            target, bound = uses[0], value

            class Put(ast.NodeTransformer):
                def visit_Name(self, m: ast.Name) -> ast.expr:
                    return ast.copy_location(copy.deepcopy(bound), m) if m is target else m

            Put().visit(fn)
            st.value = ast.copy_location(ast.Constant(value=None), value)  # read where it divides, not here
    ast.fix_missing_locations(tree)
    return tree


# torch.nn layers that hold no weights, each the functional call it runs (constructor arguments after the input)
STATELESS_LAYERS = {"AvgPool1d": "avg_pool1d", "MaxPool1d": "max_pool1d", "AvgPool2d": "avg_pool2d",
                    "MaxPool2d": "max_pool2d", "AdaptiveAvgPool1d": "adaptive_avg_pool1d",
                    "AdaptiveMaxPool1d": "adaptive_max_pool1d", "Softmax": "softmax", "LogSoftmax": "log_softmax",
                    "CosineSimilarity": "cosine_similarity", "PairwiseDistance": "pairwise_distance"}


def inline_stateless_layers(tree: ast.Module) -> ast.Module:
    """A weightless ``torch.nn`` layer built once (``self.pool = nn.AvgPool1d(7, 1, 3)``, in ``setup`` or at module
    level) and called later (``self.pool(x)``) is the functional call it runs (``F.avg_pool1d(x, 7, 1, 3)``): each
    call is rewritten so, in place. A name bound twice is left alone (which layer runs is not known)."""
    bound: dict[str, ast.Call] = {}
    twice: set[str] = set()
    for n in ast.walk(tree):
        if not (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.value, ast.Call)):
            continue
        t = n.targets[0]
        key = t.id if isinstance(t, ast.Name) else f"self.{t.attr}" if isinstance(t, ast.Attribute) and self_attr(t) \
            else None
        ctor = callee(n.value.func)[0]
        if key is None:
            continue
        if ctor in STATELESS_LAYERS:
            if key in bound:
                twice.add(key)
            bound[key] = n.value
    for n in ast.walk(tree):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                key = t.id if isinstance(t, ast.Name) else f"self.{t.attr}" if isinstance(t, ast.Attribute) and \
                    self_attr(t) else None
                if key in bound and not (isinstance(n, ast.Assign) and n.value is bound[key]):
                    twice.add(key)
    layers = {k: v for k, v in bound.items() if k not in twice}

    class Put(ast.NodeTransformer):
        def visit_Call(self, n: ast.Call) -> ast.expr:
            self.generic_visit(n)
            f = n.func
            key = f.id if isinstance(f, ast.Name) else f"self.{f.attr}" if isinstance(f, ast.Attribute) and \
                self_attr(f) else None
            ctor = layers.get(key or "")
            if isinstance(f, ast.Call) and callee(f.func)[0] in STATELESS_LAYERS:
                ctor = f  # nn.MaxPool1d(k, 1, k // 2)(x): built and called at once
            if ctor is None or not n.args or any(isinstance(a, ast.Starred) for a in n.args) or any(
                    k.arg is None for k in n.keywords):
                return n
            fn = STATELESS_LAYERS[callee(ctor.func)[0] or ""]
            func = ast.Attribute(value=ast.Attribute(value=ast.Attribute(value=ast.Name(id="torch", ctx=ast.Load()),
                                 attr="nn", ctx=ast.Load()), attr="functional", ctx=ast.Load()), attr=fn, ctx=ast.Load())
            # the call's inputs first (one, or two for a distance), then the layer's own settings
            return ast.copy_location(ast.Call(func=func, args=[*n.args, *ctor.args],
                                              keywords=[*ctor.keywords, *n.keywords]), n)

    return ast.fix_missing_locations(Put().visit(tree))


_MOMENT_PAIRS = {"std_mean": ("std", "mean"), "var_mean": ("var", "mean")}


def split_moment_pairs(tree: ast.Module) -> ast.Module:
    """``torch.std_mean(x, dim=0)[1]`` is ``torch.mean(x, dim=0)`` (``[0]`` the std), and ``s, m = torch.var_mean(x)``
    binds the two one by one: the pair's parts read as the reductions they are (a mean over heads is a head average,
    no statistic of the data's spread). Rewritten in place; options of the spread only (``correction``, ``unbiased``)
    are dropped from the mean."""

    def part(call: ast.Call, which: int) -> ast.Call:
        name = callee(call.func)[0] or ""
        op = _MOMENT_PAIRS[name][which]
        func: ast.expr = ast.Attribute(value=call.func.value, attr=op, ctx=ast.Load()) if isinstance(
            call.func, ast.Attribute) else ast.Name(id=op, ctx=ast.Load())
        args = list(call.args)
        keywords = [k for k in call.keywords if which == 0 or k.arg not in ("correction", "unbiased")]
        if which == 1 and len(args) >= 3:
            args = args[:2]  # torch.std_mean(x, dim, unbiased): the positional spread option
        return ast.copy_location(ast.Call(func=func, args=args, keywords=keywords), call)

    def pair(e: ast.expr) -> bool:
        return isinstance(e, ast.Call) and (callee(e.func)[0] or "") in _MOMENT_PAIRS and \
            not any(isinstance(a, ast.Starred) for a in e.args)

    class Put(ast.NodeTransformer):
        def visit_Subscript(self, n: ast.Subscript) -> ast.expr:
            self.generic_visit(n)
            which = n.slice.value if isinstance(n.slice, ast.Constant) else None
            if pair(n.value) and isinstance(which, int) and which in (0, 1, -1, -2) and isinstance(n.value, ast.Call):
                return part(n.value, which % 2)
            return n

        def visit_Assign(self, n: ast.Assign) -> ast.stmt | list[ast.stmt]:
            self.generic_visit(n)
            t = n.targets[0] if len(n.targets) == 1 else None
            if isinstance(t, ast.Tuple) and len(t.elts) == 2 and pair(n.value) and isinstance(n.value, ast.Call) and \
                    all(isinstance(e, ast.Name) for e in t.elts):
                call = n.value
                return [ast.copy_location(ast.Assign(targets=[e], value=part(call, i)), n)
                        for i, e in enumerate(t.elts)]
            return n

    return ast.fix_missing_locations(Put().visit(tree))
