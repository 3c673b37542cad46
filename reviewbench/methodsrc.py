"""Static facts about ``method.py``, read with ``ast``: untrusted code is never imported by the reviewer."""

from __future__ import annotations

import ast

from pydantic import BaseModel

from harness.contract import INTERFACE_BASE, INTERFACE_HOOK, OPTIONAL_HOOKS
from reviewbench.errors import BundleError
from reviewbench.findings import Finding

# Imports a method has no business making inside the sandbox: worth a reviewer's eye, not a refusal.
SUSPICIOUS_IMPORTS = {"socket", "subprocess", "requests", "httpx", "urllib", "http", "ctypes", "multiprocessing",
                      "shutil", "huggingface_hub", "datasets", "pickle", "importlib"}


class MethodClass(BaseModel):
    name: str
    line: int
    bases: list[str]
    hooks: list[str]  # interface hooks it defines
    attributes: dict[str, str | int | float | bool | None]  # literal class attributes (name, query_window, ...)
    docstring: str | None


class MethodInfo(BaseModel):
    source: str
    n_lines: int
    imports: list[str]
    candidate: MethodClass | None
    other_classes: list[str]


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_base_name(node.value)}.{node.attr}"
    return ast.unparse(node)


def _literal_attributes(cls: ast.ClassDef) -> dict[str, str | int | float | bool | None]:
    out: dict[str, str | int | float | bool | None] = {}
    for stmt in cls.body:
        target, value = None, None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            target, value = stmt.target.id, stmt.value
        if target and isinstance(value, ast.Constant) and isinstance(value.value, (str, int, float, bool, type(None))):
            out[target] = value.value
    return out


def _imports(tree: ast.Module) -> list[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return sorted(names)


def _interface_subclasses(tree: ast.Module, classes: list[ast.ClassDef]) -> list[ast.ClassDef]:
    """The module's classes that subclass the interface, directly, through a class imported from the harness
    (a reference method), or through another such class of the module: what the harness's loader counts."""
    from_harness: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "harness":
            from_harness |= {a.asname or a.name for a in node.names if a.name != "*"}
        elif isinstance(node, ast.Import):
            from_harness |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] == "harness"}
    methods_ok = {n for n in from_harness if n not in ("Keep", "Rewrite", "LayerView", "ModelInfo")}
    found: list[ast.ClassDef] = []
    names: set[str] = set()
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name in names:
                continue
            for b in (_base_name(x) for x in cls.bases):
                last, first = b.split(".")[-1], b.split(".")[0]
                if last == INTERFACE_BASE or b in methods_ok or (first in from_harness and "." in b) or b in names:
                    found.append(cls)
                    names.add(cls.name)
                    changed = True
                    break
    return sorted(found, key=lambda c: c.lineno)


def analyse_method(source: str, filename: str = "method.py") -> tuple[MethodInfo, list[Finding]]:
    """Parse and locate the class on the harness interface. A syntax error refuses the bundle."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as e:
        raise BundleError(f"{filename}:{e.lineno or 0}", f"does not parse as Python: {e.msg}") from None

    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    subclassing = _interface_subclasses(tree, classes)
    if not subclassing:
        hooked = [c.name for c in classes if INTERFACE_HOOK in
                  {n.name for n in c.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}]
        extra = (f" (class {hooked[0]} defines {INTERFACE_HOOK} but does not subclass it)" if hooked else "")
        raise BundleError(filename, f"no class subclasses {INTERFACE_BASE}{extra}: the harness loads exactly one")
    if len(subclassing) > 1:
        raise BundleError(f"{filename}:{subclassing[1].lineno}", f"{len(subclassing)} classes subclass "
                          f"{INTERFACE_BASE} ({', '.join(c.name for c in subclassing)}): the harness loads exactly "
                          "one; make the others plain helpers")
    on_interface: list[MethodClass] = []
    for cls in subclassing:
        bases = [_base_name(b) for b in cls.bases]
        methods = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        on_interface.append(MethodClass(
            name=cls.name, line=cls.lineno, bases=bases,
            hooks=sorted(m for m in methods if m in (INTERFACE_HOOK, *OPTIONAL_HOOKS)),
            attributes=_literal_attributes(cls), docstring=ast.get_docstring(cls),
        ))

    findings: list[Finding] = []
    imports = _imports(tree)
    for mod in imports:
        if mod.split(".")[0] in SUSPICIOUS_IMPORTS:
            findings.append(Finding(code="method.suspicious_import", severity="warning",
                                    message=f"imports {mod}, which an eviction method should not need", location=filename))
    candidate = on_interface[0]
    if INTERFACE_HOOK not in candidate.hooks and not any(b.split(".")[-1] != INTERFACE_BASE for b in candidate.bases):
        findings.append(Finding(code="method.no_select", severity="error",
                                message=f"class {candidate.name} does not define {INTERFACE_HOOK}(view)",
                                location=f"{filename}:{candidate.line}"))
    info = MethodInfo(source=source, n_lines=len(source.splitlines()), imports=imports, candidate=candidate,
                      other_classes=[c.name for c in classes if candidate is None or c.name != candidate.name])
    return info, findings
