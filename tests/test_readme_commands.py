"""The README's commands, run exactly as written: every line of a fenced code block that starts with ``review``,
in order, through bash with the virtualenv's ``review`` on PATH, from the folder the block's ``cd`` lines lead to
(each block starts at the repository root), on a copy of the example arena and of the calibration suite, offline
(REVIEWBENCH_OFFLINE=1, no API keys). A command is expected to exit 0 unless its comment says ``(exit N)``.

A fast test checks every line without running it (the subcommand exists, options and values parse, no
placeholders like ``[--json]`` or ``A|B``); the slow one runs them all (a full review takes minutes on 2 cores).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer

from reviewbench.cli import app

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Command:
    line: str  # as written, comment included
    lineno: int
    cwd: str  # relative to the repository root
    expect: int

    @property
    def words(self) -> list[str]:
        return shlex.split(self.line, comments=True)


def readme_commands(text: str) -> list[Command]:
    out: list[Command] = []
    for block in FENCE.finditer(text):
        cwd = Path(".")
        first = text.count("\n", 0, block.start(1)) + 1
        for i, raw in enumerate(block.group(1).splitlines()):
            line = raw.strip()
            if line.startswith("cd "):
                cwd = cwd / shlex.split(line, comments=True)[1]
            elif line.startswith("review ") or line == "review":
                m = re.search(r"\(exit (\d+)\)", line.split("#", 1)[1] if "#" in line else "")
                out.append(Command(line=line, lineno=first + i, cwd=str(cwd), expect=int(m.group(1)) if m else 0))
    return out


COMMANDS = readme_commands(README.read_text(encoding="utf-8"))
IDS = [f"L{c.lineno}:{' '.join(c.words[1:3])}" for c in COMMANDS]


def _resolve(words: list[str]) -> tuple[list[str], object, list[str]]:
    """The command path, the click command and its own arguments (``review DIR`` is ``review run DIR``)."""
    cmd = typer.main.get_command(app)
    path: list[str] = []
    rest = words[1:]
    while hasattr(cmd, "commands"):
        if rest and rest[0] in cmd.commands:  # type: ignore[attr-defined]
            path.append(rest[0])
            cmd, rest = cmd.commands[rest[0]], rest[1:]  # type: ignore[attr-defined]
        elif not path and rest and not rest[0].startswith("-"):
            path.append("run")
            cmd = cmd.commands["run"]  # type: ignore[attr-defined]
        else:
            break
    return path, cmd, rest


def test_the_readme_has_commands_for_every_command_of_the_cli():
    assert len(COMMANDS) >= 15
    used = {" ".join(_resolve(c.words)[0]) for c in COMMANDS}
    for name in ("run", "show", "board", "site", "publish", "schema", "audit", "harness check", "harness run",
                 "harness baselines", "harness bars", "harness split", "calibrate", "calibrate build"):
        assert name in used, f"README shows no `review {name}`"


@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_each_readme_command_parses_as_written(cmd):
    text = cmd.line.split("#", 1)[0]
    assert not re.search(r"[\[\]|]|\.\.\.|\bFILE\b|\bDIR\b|\bPATH\b", text), \
        f"README line {cmd.lineno} is a synopsis, not a command: {cmd.line}"
    path, click_cmd, rest = _resolve(cmd.words)
    assert path, f"README line {cmd.lineno}: no such command"
    ctx = click_cmd.make_context(" ".join(["review", *path]), list(rest))  # type: ignore[attr-defined]
    assert ctx.params is not None


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A repository-shaped copy: examples/arena (no earlier reviews) and calibration (no stored judge calls)."""
    root = tmp_path_factory.mktemp("readme") / "repo"
    shutil.copytree(ROOT / "examples" / "arena", root / "examples" / "arena",
                    ignore=shutil.ignore_patterns("reviews"))
    (root / "examples" / "arena" / "reviews").mkdir()
    shutil.copytree(ROOT / "calibration", root / "calibration", ignore=shutil.ignore_patterns("reviews"))
    return root


@pytest.fixture(scope="module")
def ran(workspace) -> dict[int, subprocess.CompletedProcess]:
    """Every command once, in README order (later commands read what earlier ones wrote)."""
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "COLUMNS")}
    env.update(REVIEWBENCH_OFFLINE="1", PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               COLUMNS="100")
    results = {}
    for c in COMMANDS:
        results[c.lineno] = subprocess.run(["bash", "-c", c.line], cwd=workspace / c.cwd, env=env, text=True,
                                           capture_output=True, timeout=1800)
    return results


@pytest.mark.heavy  # minutes: `make test-all` runs it, `make test` (CI) does not
@pytest.mark.slow
@pytest.mark.parametrize("cmd", COMMANDS, ids=IDS)
def test_each_readme_command_runs_as_written(cmd, ran):
    r = ran[cmd.lineno]
    assert r.returncode == cmd.expect, f"README line {cmd.lineno}: `{cmd.line}` exited {r.returncode}\n" \
                                       f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    assert "Traceback" not in r.stderr, r.stderr[-3000:]


@pytest.mark.heavy  # minutes: `make test-all` runs it, `make test` (CI) does not
@pytest.mark.slow
def test_what_the_readme_commands_wrote(workspace, ran):
    """The outputs the README's comments promise are there (a command could exit 0 and write nothing)."""
    arena = workspace / "examples" / "arena"
    written = [p for p in arena.parent.iterdir() if p.name != "arena"]
    site = next((p for p in written if (p / "site.json").is_file()), None)
    assert site is not None and (site / "index.html").is_file()
    reviewed = [p.name for p in (arena / "reviews").iterdir() if (p / "review.json").is_file()]
    assert reviewed and all((site / "reviews" / sid / "index.html").is_file() for sid in reviewed)
    assert any((p / "partial" / "review.json").is_file() for p in (arena / "reviews").iterdir() if p.is_dir())
