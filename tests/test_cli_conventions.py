"""CLI conventions, for every command and subcommand of the typer app (walked, so a new command is covered the day
it is added): `-h`/`--help` work, usage errors are one line on stderr with exit 2, unknown subcommands say so,
a bare group prints its help; help and tables are readable at 80 columns and under NO_COLOR (wrapped, never cut)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from reviewbench.cli import app, main
from tests import smallarena

ROOT = Path(__file__).resolve().parent.parent
KNOWN = {"review", "review run", "review show", "review board", "review publish", "review audit", "review schema",
         "review harness", "review harness run", "review harness baselines", "review harness split",
         "review harness bars", "review harness check", "review calibrate", "review calibrate build",
         "review site"}


def _walk(cmd: Any, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    out = [(path, cmd)]
    for name, sub in getattr(cmd, "commands", {}).items():
        out += _walk(sub, path + (name,))
    return out


COMMANDS = _walk(typer.main.get_command(app), ())
IDS = ["review " + " ".join(p) if p else "review" for p, _ in COMMANDS]
LEAVES = [(p, c) for p, c in COMMANDS if not hasattr(c, "commands")]


def _run(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def _one_line_usage_error(rc: int, err: str, path: tuple[str, ...]) -> None:
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err


def test_the_walk_finds_every_command():
    assert KNOWN <= set(IDS), sorted(KNOWN - set(IDS))


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=IDS)
def test_help_works_everywhere(path, capsys):
    for flag in ("-h", "--help"):
        rc, out, err = _run([*path, flag], capsys)
        assert rc == 0 and err == "", (flag, err)
        assert out.startswith(f"Usage: {' '.join(('review', *path))} ")


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=IDS)
def test_an_unknown_option_is_one_line_and_exit_2(path, capsys):
    rc, _, err = _run([*path, "--no-such-option"], capsys)
    _one_line_usage_error(rc, err, path)
    assert "--no-such-option" in err and " ".join(("review", *path)) in err


def _params(cmd: Any) -> list[Any]:
    return [p for p in cmd.params if p.name not in ("help",)]


@pytest.mark.parametrize("path", [p for p, c in LEAVES if any(x.required for x in _params(c))],
                         ids=["review " + " ".join(p) for p, c in LEAVES if any(x.required for x in _params(c))])
def test_a_missing_argument_or_option_is_one_line_and_exit_2(path, capsys):
    rc, _, err = _run(list(path), capsys)
    _one_line_usage_error(rc, err, path)
    assert "Missing" in err


def _required_filled(cmd: Any) -> list[str]:
    """Dummy values for the required parameters, so that the error tested is the one given."""
    args: list[str] = []
    for p in _params(cmd):
        if p.required and p.param_type_name == "argument":
            args.append("x")
        elif p.required:
            args += [p.opts[0], "x"]
    return args


NUMERIC = [(p, c, o) for p, c in LEAVES for o in _params(c)
           if o.param_type_name == "option" and re.sub(r"\W", "", str(o.display_type(None))).split("range")[0]
           in ("int", "float")]


@pytest.mark.parametrize("path,cmd,opt", NUMERIC, ids=[f"review {' '.join(p)} {o.opts[0]}" for p, _, o in NUMERIC])
def test_a_bad_number_is_one_line_and_exit_2(path, cmd, opt, capsys):
    rc, _, err = _run([*path, opt.opts[0], "abc", *_required_filled(cmd)], capsys)
    _one_line_usage_error(rc, err, path)
    assert opt.opts[0] in err


def test_numeric_options_exist_to_be_tested():
    assert {("harness", "run"), ("harness", "baselines"), ("harness", "check")} <= {p for p, _, _ in NUMERIC}


@pytest.mark.parametrize("path,word,hint", [((), "boardd", "did you mean 'board'?"),
                                            (("harness",), "boardd", "No such command 'boardd'"),
                                            (("calibrate",), "boardd", "No such command 'boardd'")])
def test_an_unknown_subcommand_says_so(path, word, hint, capsys):
    rc, out, err = _run([*path, word], capsys)
    _one_line_usage_error(rc, err, path)
    assert hint in err and out == ""


def test_a_missing_submission_folder_is_not_taken_for_a_command(capsys, tmp_path):
    rc, _, err = _run([str(tmp_path / "submit" / "agent1-03")], capsys)
    _one_line_usage_error(rc, err, ())
    assert "no such submission folder" in err


@pytest.mark.parametrize("path", [(), ("harness",)], ids=["review", "review harness"])
def test_a_bare_group_prints_its_help_and_exits_2(path, capsys):
    rc, out, err = _run(list(path), capsys)
    assert rc == 2 and err == "" and out.startswith(f"Usage: {' '.join(('review', *path))} ") and "Commands:" in out


def test_a_path_the_system_refuses_is_one_line(capsys, tmp_path):
    rc, _, err = _run(["schema", "--out", str(tmp_path / "no" / "such" / "dir" / "s.json")], capsys)
    _one_line_usage_error(rc, err, ("schema",))
    assert "No such file or directory" in err and str(tmp_path / "no") in err


# --- 80 columns and NO_COLOR: real subprocesses, as a terminal would run them ---------------------------------
def _review(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "TERM")}
    return subprocess.run([sys.executable, "-m", "reviewbench", *args], cwd=cwd, capture_output=True, text=True,
                          env={**base, **env}, timeout=300)


ANSI = re.compile(r"\x1b\[[0-9;]*m")
COLOR_SGR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-7]|9[0-7]|4[0-7]|10[0-7]|38|48)(?:;[0-9;]*)?m")


def _visible_lines(text: str) -> list[str]:
    return [ANSI.sub("", line) for line in text.splitlines()]


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", ANSI.sub("", text))


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    return smallarena.build(tmp_path_factory.mktemp("conv") / "arena")


def test_help_at_80_columns_wraps_and_never_cuts():
    for path, _ in COMMANDS:
        r = _review(*path, "-h", COLUMNS="80")
        assert r.returncode == 0, r.stderr
        lines = _visible_lines(r.stdout)
        assert all(len(line) <= 80 for line in lines), (path, max(lines, key=len))
        assert "…" not in r.stdout, (path, r.stdout)
    # every option name is whole in the help (rich's help panels cut them to '--evidence-to-jud…' at 80 columns)
    r = _review("calibrate", "-h", COLUMNS="80")
    assert "--evidence-to-judges / --no-evidence-to-judges" in r.stdout


def test_board_at_80_columns_wraps_and_never_cuts_and_no_color_means_no_color(small):
    r = _review("board", "--arena", str(small), COLUMNS="80", NO_COLOR="1", FORCE_COLOR="1")
    assert r.returncode == 0, r.stderr
    assert not COLOR_SGR.search(r.stdout), "NO_COLOR must remove every colour"
    lines = _visible_lines(r.stdout)
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    assert "…" not in r.stdout
    for word in ("baseline:expected_attention", "baseline:snapkv", "agent1-001", "agent2-001", "agent1-002",
                 "RULE_VIOLATION", "agent3-001"):
        assert word in r.stdout, word  # ids and flags stay whole on one line at 80 columns
    assert "0.6768" in r.stdout and "accuracy" in r.stdout  # the components are there, in their own table
    # the control: a forced terminal without NO_COLOR does colour (so the assertion above can fail)
    coloured = _review("board", "--arena", str(small), COLUMNS="80", FORCE_COLOR="1")
    assert COLOR_SGR.search(coloured.stdout)


@pytest.mark.parametrize("columns", ["40", "60"])
def test_board_on_a_narrow_terminal_stays_inside_it(small, columns):
    r = _review("board", "--arena", str(small), COLUMNS=columns)
    assert r.returncode == 0, r.stderr
    assert all(len(line) <= int(columns) for line in r.stdout.splitlines()) and "…" not in r.stdout


@pytest.mark.parametrize("width", [24, 40, 60, 80, 120])
def test_a_fold_table_loses_no_character_at_any_width(width):
    """Folding moves characters to the next line; cropping or an ellipsis would lose some: count them."""
    import io
    from collections import Counter

    from rich.console import Console

    from reviewbench.tables import fold_table

    rows = [["baseline:expected_attention", "", "0.5310", "", "RULE_VIOLATION,MISSTATED_METHOD"],
            ["agent1-001", "agent1", "0.6768", "baseline:snapkv 0.5310", ""],
            ["x" * 70, "a b c d e f g h", "1", "[bold]not markup[/]", "<script>"]]
    t = fold_table("entry", "agent", "Overall", "best before", "flags", numeric=("Overall",),
                   min_width={"entry": 24, "flags": 14}, title="Board A (a long title that must wrap, not crop)")
    for r in rows:
        t.add_row(*r)
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(t)
    out = buf.getvalue()
    assert all(len(line) <= width for line in out.splitlines())
    chars = lambda text: Counter(c for c in text if not c.isspace() and c != "─")
    expected = chars("".join(["Board A (a long title that must wrap, not crop)", "entry", "agent", "Overall",
                              "best before", "flags", *(c for r in rows for c in r)]))
    assert chars(out) == expected


def test_fit_widths():
    from reviewbench.tables import fit_widths

    assert fit_widths([10, 5, 7], 40, [0, 0, 0]) == [10, 5, 7]  # fits: natural widths
    w = fit_widths([27, 6, 6, 15, 14], 56, [24, 0, 0, 0, 14], [False, False, True, False, False])
    assert sum(w) <= 56 and w[0] == 24 and w[4] == 14 and w[2] == 6  # ids and flags whole, numbers whole
    w = fit_widths([27, 6, 6, 15, 14], 50, [24, 0, 0, 0, 14], [False, False, True, False, False])
    assert sum(w) <= 50 and w[2] == 6 and w[0] < 24  # too little left for the others: ids fold, numbers whole
    w = fit_widths([27, 6, 6, 15, 14], 30, [24, 0, 0, 0, 14], [False, False, True, False, False])
    assert sum(w) <= 30 and w[2] == 6 and min(w) >= 3  # too narrow to keep ids: shared, numbers still whole
    w = fit_widths([30] * 6, 20, [0] * 6)
    assert sum(w) <= 20 + 6 and min(w) >= 3  # the floor of 3 columns may exceed a hopeless budget, never crop


def test_board_is_one_table_per_board_on_a_wide_terminal(small):
    r = _review("board", "--arena", str(small), COLUMNS="140")
    header = next(line for line in r.stdout.splitlines() if line.startswith("#"))
    assert header.split()[:6] == ["#", "entry", "Overall", "points", "flags", "agent"]  # ranked; points, flags first
    assert header.split()[-4:] == ["acc", "mem", "speed", "ovh"]
    assert "components" not in r.stdout


def test_audit_proof_is_wrapped_not_cut_at_80_columns():
    from reviewbench.logs.arena_audit import audit_paths

    arena = ROOT / "examples" / "arena"
    r = _review("audit", "logs/", COLUMNS="80", NO_COLOR="1", cwd=arena)
    assert r.returncode == 0, r.stderr
    assert all(len(line) <= 80 for line in _visible_lines(r.stdout))
    flat = _squeezed(r.stdout)
    cwd = os.getcwd()
    try:
        os.chdir(arena)
        findings = audit_paths([Path("logs/")], arena_dir=None, agent=None, fmt="auto").findings
    finally:
        os.chdir(cwd)
    assert findings
    for f in findings:  # the file:line and the evidence, whole (whitespace aside: they wrap)
        assert re.sub(r"\s+", "", f.source) in flat, f.source
        assert re.sub(r"\s+", "", f.evidence[:400]) in flat, f.evidence


def test_untrusted_text_is_printed_literally(small):
    r = _review("show", "agent1-002", "--arena", str(small), COLUMNS="200", FORCE_COLOR="1")
    assert r.returncode == 0, r.stderr
    assert smallarena.HOSTILE in ANSI.sub("", r.stdout)  # "[bold red]pwn[/]" shown as written, not as markup
