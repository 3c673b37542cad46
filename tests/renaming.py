"""Every identifier a method's author chose, renamed: what a disguised port does first. Shared by the tests that
check the code reader and the fingerprints are blind to names."""

from __future__ import annotations

import ast
import random

# the interface (hooks, the view, the class attributes the harness reads), the libraries and the builtins used
KEEP = {"self", "view", "model", "torch", "F", "math", "nn", "fn", "Keep", "LayerView", "EvictionMethod", "ModelInfo",
        "Rewrite", "rope_angles", "name", "query_window", "select", "layer_budgets", "question_queries",
        "reconstruction_queries", "setup", "on_decode", "range", "len", "min", "max", "int", "float", "tuple", "bool",
        "super", "ValueError", "round", "list"}


class Renamer(ast.NodeTransformer):
    """Classes, helpers, parameters, locals, module constants, class attributes and the module's own attributes
    (``self.x``) renamed consistently; everything in ``KEEP`` kept."""

    def __init__(self, tree: ast.Module) -> None:
        chosen: set[str] = set()
        for n in ast.walk(tree):
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                chosen.add(n.name)
            elif isinstance(n, ast.arg):
                chosen.add(n.arg)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                chosen.add(n.id)
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
                chosen.add(n.attr)
        rng = random.Random(0)
        self.map = {c: f"x{rng.randrange(10**6)}_{i}" for i, c in enumerate(sorted(chosen - KEEP))}

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self.map.get(node.id, node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self.map.get(node.arg, node.arg)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self.map.get(node.name, node.name)
        return self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = self.map.get(node.name, node.name)
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            node.attr = self.map.get(node.attr, node.attr)
        return self.generic_visit(node)


def renamed(src: str) -> str:
    tree = ast.parse(src)
    return ast.unparse(Renamer(tree).visit(tree))
