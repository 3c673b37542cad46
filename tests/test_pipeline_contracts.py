"""run_stages with small fake stages: typed outputs, caching, reruns, a failing stage, an undeclared read; and the
architecture rules the layout promises (no import cycles, harness never imports reviewbench, the type checker)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from reviewbench.pipeline import Stage, StageContext, StageKey, StageOutput, UndeclaredRead, run_stages
from reviewbench.store import Store
from tests.conftest import EXAMPLE_ARENA, ROOT


class Count(BaseModel):
    n: int


class Label(BaseModel):
    text: str


COUNT = StageKey("count", Count)
LABEL = StageKey("label", Label)
OTHER = StageKey("other", Count)


@pytest.fixture
def ctx(tmp_path):
    from reviewbench.arena import load_arena
    from reviewbench.bundle import load_bundle
    from reviewbench.rubric import RUBRICS_DIR, load_rubric

    arena = load_arena(EXAMPLE_ARENA)
    bundle = load_bundle(EXAMPLE_ARENA / "submit" / "agent1-002")
    store = Store(tmp_path / "store.sqlite")
    yield StageContext(arena=arena, bundle=bundle, rubric=load_rubric(RUBRICS_DIR / "default.toml"), store=store,
                       author_family="anthropic", earlier=[])
    store.close()


def pipeline(calls: list[str], n: int = 3, fail: bool = False, undeclared: bool = False) -> tuple[Stage, ...]:
    def count(c: StageContext) -> StageOutput[Count]:
        calls.append("count")
        if fail:
            raise RuntimeError("boom")
        return StageOutput(status="ok", data=Count(n=n))

    def label(c: StageContext) -> StageOutput[Label]:
        calls.append("label")
        got = c.get(COUNT)
        if undeclared:
            c.get(OTHER)
        return StageOutput(status="ok", data=Label(text=f"n={got.n if got else None}"))

    return (Stage(COUNT, "Count", "1", (), count), Stage(LABEL, "Label", "1", (COUNT,), label))


def test_typed_outputs_flow_and_replay_from_the_store(ctx):
    calls: list[str] = []
    reports = run_stages(pipeline(calls), ctx)
    assert [r.status for r in reports] == ["ok", "ok"]
    assert isinstance(reports[1].data, Label) and reports[1].data.text == "n=3"
    ctx.reports.clear()
    again = run_stages(pipeline(calls), ctx)
    assert calls == ["count", "label"] and all(r.cached for r in again)
    assert again[1].data == Label(text="n=3")  # replayed as the declared model, not a dict


def test_a_changed_upstream_output_reruns_its_readers_only(ctx):
    calls: list[str] = []
    run_stages(pipeline(calls, n=3), ctx)
    ctx.reports.clear()
    calls.clear()
    reports = run_stages(pipeline(calls, n=3), ctx, rerun={"count"})
    assert calls == ["count"] and reports[1].cached  # same output: the reader replays
    ctx.reports.clear()
    calls.clear()
    reports = run_stages(pipeline(calls, n=4), ctx, rerun={"count"})
    assert calls == ["count", "label"] and reports[1].data.text == "n=4"


def test_a_failing_stage_is_reported_and_its_readers_see_nothing(ctx):
    calls: list[str] = []
    reports = run_stages(pipeline(calls, fail=True), ctx)
    assert reports[0].status == "failed" and "RuntimeError: boom" in reports[0].reason
    assert reports[1].status == "ok" and reports[1].data.text == "n=None"
    ctx.reports.clear()
    calls.clear()
    run_stages(pipeline(calls, fail=True), ctx)
    assert calls[0] == "count"  # a failure is never cached: it is tried again


def test_an_undeclared_read_is_an_error_not_a_stale_replay(ctx):
    with pytest.raises(UndeclaredRead, match="'label' read 'other'"):
        run_stages(pipeline([], undeclared=True), ctx)


def test_a_stage_returning_the_wrong_model_fails(ctx):
    def wrong(c: StageContext) -> StageOutput[Count]:
        return StageOutput(status="ok", data=Label(text="x"))  # type: ignore[arg-type]

    reports = run_stages((Stage(COUNT, "Count", "1", (), wrong),), ctx)
    assert reports[0].status == "failed" and "expected Count" in reports[0].reason


def test_only_and_skip_mark_stages_not_run(ctx):
    reports = run_stages(pipeline([]), ctx, only={"label"})
    assert reports[0].status == "not_run" and reports[0].reason == "not selected by --only"
    assert reports[1].data.text == "n=None"


def test_every_review_stage_reads_only_what_it_declares():
    """Each stage function's ctx.get/ctx.report calls name keys of its own `needs` (read from the source)."""
    from reviewbench.stages import STAGES

    import reviewbench.contracts as contracts

    keys = {name: getattr(contracts, name).name for name in dir(contracts) if name.isupper()
            and isinstance(getattr(contracts, name), StageKey)}
    for stage in STAGES:
        fn = stage.run
        src = Path(sys.modules[fn.__module__].__file__).read_text()
        tree = ast.parse(src)
        body = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == fn.__name__)
        read = {keys[a.id] for n in ast.walk(body) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr in ("get", "report") for a in n.args if isinstance(a, ast.Name) and a.id in keys}
        assert read <= {k.name for k in stage.needs}, (stage.name, read)


# --- architecture ---------------------------------------------------------------------------------------------------
def _runtime_nodes(tree: ast.AST):
    """Every node except those under ``if TYPE_CHECKING:`` (never executed: no cycle at run time)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        yield node
        yield from _runtime_nodes(node)


def _imports(path: Path, package: str) -> set[str]:
    """Modules of ``package`` a file imports (at any depth: lazy imports inside functions count too)."""
    out: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == package:
                out.add(node.module)
                out |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == package}
    return out


def _module_graph(package: str) -> dict[str, set[str]]:
    root = ROOT / package
    modules = {}
    for p in root.rglob("*.py"):
        name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = p
    graph = {}
    for name, p in modules.items():
        graph[name] = {m for m in _imports(p, package) if m in modules and m != name}
    return graph


def _top_level_graph(package: str) -> dict[str, set[str]]:
    """Module-level imports only: what runs when a module is imported (where a cycle breaks at import time)."""
    root = ROOT / package
    graph: dict[str, set[str]] = {}
    mods = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p for p in root.rglob("*.py")}
    for name, p in mods.items():
        deps = set()
        for node in ast.parse(p.read_text()).body:
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == package:
                deps |= {m for m in (node.module, *(f"{node.module}.{a.name}" for a in node.names)) if m in mods}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in mods}
        graph[name] = deps - {name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_no_import_cycles_in_reviewbench():
    """Not at import time (module-level imports), and not through the lazy imports inside functions either: data
    flows one way, so even a deferred import never reaches back up."""
    assert _cycle(_top_level_graph("reviewbench")) is None
    cyc = _cycle(_module_graph("reviewbench"))
    assert cyc is None, " -> ".join(cyc or [])


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_harness_never_imports_reviewbench():
    for p in (ROOT / "harness").rglob("*.py"):
        assert not _imports(p, "reviewbench"), p


def test_the_type_checker_passes():
    r = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:]
