"""Every identifier a method's author chose, renamed: what a disguised port does first. Shared by the tests that
check the code reader and the fingerprints are blind to names (and by the disguise matrix, tests/disguise.py)."""

from __future__ import annotations

import ast
import builtins

# what the harness reads by name on a method class: renaming them changes what the method asks for
INTERFACE = frozenset({"name", "query_window", "question_queries", "reconstruction_queries", "select", "on_decode",
                       "setup", "layer_budgets", "self", "cls"})


def names_by_string(src: str) -> bool:
    """Code that reaches its own attributes by a string (``getattr(self, "_x")``): renaming would change it."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in (
        "getattr", "setattr", "hasattr", "delattr") for n in ast.walk(ast.parse(src)))


class _Bound(ast.NodeVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.imported: set[str] = set()
        self.classes: set[str] = set()

    def visit_Import(self, n: ast.Import) -> None:
        self.imported.update((a.asname or a.name).split(".")[0] for a in n.names)

    def visit_ImportFrom(self, n: ast.ImportFrom) -> None:
        self.imported.update(a.asname or a.name for a in n.names)

    def visit_Name(self, n: ast.Name) -> None:
        if isinstance(n.ctx, ast.Store):
            self.names.add(n.id)

    def visit_arg(self, n: ast.arg) -> None:
        self.names.add(n.arg)

    def visit_FunctionDef(self, n: ast.FunctionDef) -> None:
        self.names.add(n.name)
        self.generic_visit(n)

    def visit_ClassDef(self, n: ast.ClassDef) -> None:
        self.classes.add(n.name)
        self.generic_visit(n)

    def visit_Attribute(self, n: ast.Attribute) -> None:
        if isinstance(n.value, ast.Name) and n.value.id == "self" and isinstance(n.ctx, ast.Store):
            self.names.add(n.attr)
        self.generic_visit(n)


class _Rename(ast.NodeTransformer):
    def __init__(self, new: dict[str, str], owners: set[str]) -> None:
        self.new, self.owners = new, owners

    def visit_Name(self, n: ast.Name) -> ast.Name:
        n.id = self.new.get(n.id, n.id)
        return n

    def visit_arg(self, n: ast.arg) -> ast.arg:
        n.arg = self.new.get(n.arg, n.arg)
        return n

    def visit_FunctionDef(self, n: ast.FunctionDef) -> ast.FunctionDef:
        n.name = self.new.get(n.name, n.name)
        self.generic_visit(n)
        return n

    def visit_Attribute(self, n: ast.Attribute) -> ast.Attribute:
        own = isinstance(n.value, ast.Name) and n.value.id in self.owners
        self.generic_visit(n)
        if own:
            n.attr = self.new.get(n.attr, n.attr)
        return n

    def visit_Call(self, n: ast.Call) -> ast.Call:
        local = isinstance(n.func, ast.Name) and n.func.id in self.new or isinstance(n.func, ast.Attribute) and \
            isinstance(n.func.value, ast.Name) and n.func.value.id in self.owners
        self.generic_visit(n)
        if local:  # a helper's keyword arguments follow its renamed parameters
            for k in n.keywords:
                if k.arg is not None:
                    k.arg = self.new.get(k.arg, k.arg)
        return n


def renamed(src: str) -> str:
    """Every variable, parameter, function, method and class member the code binds, renamed ``v0``, ``v1``..."""
    tree = ast.parse(src)
    bound = _Bound()
    bound.visit(tree)
    names = sorted(bound.names - bound.imported - set(dir(builtins)) - INTERFACE)
    new = {n: f"v{i}" for i, n in enumerate(names) if not n.startswith("__")}
    return ast.unparse(_Rename(new, {"self", "cls", *bound.classes}).visit(tree))
