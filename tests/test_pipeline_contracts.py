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

    return (Stage(COUNT, "Count", (), count), Stage(LABEL, "Label", (COUNT,), label))


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

    reports = run_stages((Stage(COUNT, "Count", (), wrong),), ctx)
    assert reports[0].status == "failed" and "expected Count" in reports[0].reason


def test_only_and_skip_mark_stages_not_run(ctx):
    reports = run_stages(pipeline([]), ctx, only={"label"})
    assert reports[0].status == "not_run" and reports[0].reason == "not selected by --only"
    assert reports[1].data.text == "n=None"


def _stage_keys() -> dict[str, str]:
    """Every stage module's key variables (``BUNDLE``...) -> the stage name they stand for."""
    import importlib

    from reviewbench.stages import STAGES

    out: dict[str, str] = {}
    for stage in STAGES:
        mod = importlib.import_module(stage.module)
        out |= {n: v.name for n, v in vars(mod).items() if n.isupper() and isinstance(v, StageKey)}
    return out


def test_every_review_stage_reads_only_what_it_declares():
    """Every ctx.get/ctx.report call in a stage's module (its run function and its helpers) names a key of the
    stage's own `needs` (read from the source)."""
    from reviewbench.stages import STAGES

    keys = _stage_keys()
    for stage in STAGES:
        tree = ast.parse(Path(sys.modules[stage.module].__file__).read_text())
        read = {keys[a.id] for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr in ("get", "report") for a in n.args if isinstance(a, ast.Name) and a.id in keys}
        assert read <= {k.name for k in stage.needs}, (stage.name, read)


def test_every_stage_is_one_module_of_the_stages_package():
    """One module per stage, holding its output model, its key and STAGE; the names everywhere derive from STAGES
    (the CLI's import-free list is checked equal)."""
    import importlib

    from reviewbench.report import REPORT_TYPES, review_json_schema
    from reviewbench.stagelist import STAGE_NAMES
    from reviewbench.stages import STAGES

    assert tuple(s.name for s in STAGES) == STAGE_NAMES
    assert list(REPORT_TYPES) == list(STAGE_NAMES)
    defs = review_json_schema()["$defs"]
    for stage in STAGES:
        mod = importlib.import_module(stage.module)
        assert stage.module == f"reviewbench.stages.{stage.name}" and mod.STAGE is stage
        assert stage.key.model.__module__ == stage.module, (stage.name, stage.key.model.__module__)
        assert stage.key.model.model_config.get("extra") == "forbid", stage.name
        assert f"{stage.name.capitalize()}StageReport" in defs
    for domain in ("reviewbench/judges", "reviewbench/evidence", "reviewbench/logs", "reviewbench/flags"):
        for p in (ROOT / domain).rglob("*.py"):  # domain code never imports the stages (only for type checking)
            assert not {m for m in _imports(p, "reviewbench") if m.startswith("reviewbench.stages")}, p


# --- stage versions: derived from the code each stage declares --------------------------------------------------
# what a stage module may import without declaring it in its code: the pipeline itself, other stages (read through
# their hashed outputs) and shared data models and plumbing (a changed model that no longer parses a stored result
# recomputes it)
SHARED = {"reviewbench.pipeline", "reviewbench.findings", "reviewbench.verdict", "reviewbench.arena",
          "reviewbench.store", "reviewbench.overall", "reviewbench.evidence.facts", "reviewbench.evidence.behaviour"}


def test_each_stage_version_covers_the_code_its_module_calls():
    from reviewbench.sources import stage_files
    from reviewbench.stages import STAGES

    for stage in STAGES:
        for name in stage.code:
            assert stage_files((name,)), (stage.name, name)  # every declared name stands for files
        files = set(stage_files((stage.module, *stage.code)))
        own = ROOT / "reviewbench" / "stages" / f"{stage.name}.py"
        assert own in files and not {f for f in files if f.parent == own.parent and f != own}, stage.name
        for m in _imports(own, "reviewbench") | _imports(own, "harness"):
            if m.startswith("reviewbench.stages") or m in SHARED or not stage_files((m,)):
                continue  # another stage, shared models, or a name imported from a module (not a module)
            assert set(stage_files((m,))) <= files, f"stage {stage.name} calls {m}: add it to its code"


TOY_V1 = '''"""A toy."""
def run(ctx):  # a comment
    return 1
'''


def test_a_stage_version_changes_with_its_code_and_not_with_its_comments(tmp_path, monkeypatch):
    import importlib
    import os

    from reviewbench.pipeline import Stage

    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "toy_version_stage.py"
    path.write_text(TOY_V1)
    mod = importlib.import_module("toy_version_stage")
    stage = Stage(COUNT, "Count", (), mod.run)
    assert stage.module == "toy_version_stage"
    first = stage.version

    def rewrite(text: str, tick: int) -> str:
        path.write_text(text)
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + tick * 10**9))
        return stage.version

    assert rewrite(TOY_V1.replace("# a comment", "# another comment").replace("A toy.", "A toy, said again."), 1) \
        == first  # comments and docstrings are not code
    assert rewrite(TOY_V1.replace("return 1", "return 2"), 2) != first
    assert Stage(COUNT, "Count", (), mod.run, revision="blind").version.endswith("+blind")
    for s in pipeline([]):  # the tests' own stages: this file is their code
        assert s.module == __name__ and s.version


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


def test_stage_versions_do_not_depend_on_the_process():
    """Two processes with different hash seeds derive the same versions (a set constant's order is not code)."""
    import os

    code = "from reviewbench.stages import STAGES; print([s.version for s in STAGES])"
    outs = {subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(outs) == 1 and "[" in next(iter(outs)), outs
