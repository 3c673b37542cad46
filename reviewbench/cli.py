"""The ``review`` command. ``review BUNDLE_DIR`` is the main job; the other verbs are subcommands.

User mistakes (a bad bundle, a typo in arena.toml, a wrong option) print one line on stderr and exit 2;
nothing is written for a refused input. Heavy imports happen inside the commands, so ``review --help`` and
``review audit`` start without torch.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from typer._click import exceptions as click_exceptions  # typer ships its own click: catch its exceptions
from typer.core import TyperGroup

from reviewbench import __version__
from reviewbench.errors import UserError
from reviewbench.stagelist import STAGE_NAMES, canonical, check_stage, stage_names
from reviewbench.tables import fold_table, plain, print_rows

console = Console()
err_console = Console(stderr=True)


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]


class _Group(TyperGroup):
    """Plain click help (wrapped at any width, never cut with an ellipsis as rich's help panels are at 80
    columns), with each command's first sentence whole in the command list."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = [(name, _first_sentence(cmd.help or cmd.short_help or ""))
                for name, cmd in self.commands.items() if not cmd.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class _ReviewGroup(_Group):
    """Lets ``review BUNDLE_DIR`` stand for ``review run BUNDLE_DIR``; a word that is neither a command nor an
    existing path is an unknown command (with a suggestion), not a folder."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            word = args[0]
            if not Path(word).exists():
                if "/" in word or word.startswith("."):
                    raise UserError(word, "no such submission folder")
                from difflib import get_close_matches

                close = get_close_matches(word, list(self.commands), n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise UserError(None, f"unknown command {word!r}: {hint}(commands: {', '.join(self.commands)}; "
                                      f"or give a submission folder, e.g. submit/agent1-003)")
            args = ["run", *args]
        return list(super().parse_args(ctx, args))


app = typer.Typer(
    cls=_ReviewGroup,
    help="Review KV-cache eviction submissions: `review BUNDLE_DIR` runs a full review "
         "(bundle -> audit -> evidence -> harness -> benchmark -> judges -> verdict -> points) and writes "
         "reviews/<id>/review.{json,md,html} in the arena.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

ArenaOpt = Annotated[Optional[Path], typer.Option("--arena", help="Arena folder (default: found from the bundle's "
                                                  "parents, or the current folder).", file_okay=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _stage_set(value: str | None) -> set[str] | None:
    if value is None:
        return None
    names = {canonical(v.strip()) for v in value.split(",") if v.strip()}
    for n in names:
        if not check_stage(n):
            raise UserError(None, f"unknown stage {n!r} (stages: {', '.join(stage_names())})")
    return names


@app.command("run", help="Review one submission bundle (also: `review BUNDLE_DIR`). With --only or --skip the "
                          "review is a partial draft: written under reviews/<id>/partial/, never counted on a board. "
                          "Exit 1 when no configured judge gave a verdict.")
def run_cmd(
    bundle_dir: Annotated[Path, typer.Argument(help="The submission folder, e.g. submit/agent1-003.")],
    arena: ArenaOpt = None,
    only: Annotated[Optional[str], typer.Option(help=f"Run only these stages (comma list of {', '.join(STAGE_NAMES)}).")] = None,
    skip: Annotated[Optional[str], typer.Option(help="Skip these stages (comma list).")] = None,
    rerun: Annotated[Optional[str], typer.Option(help="Recompute these stages even if stored results match.")] = None,
    fresh: Annotated[Optional[str], typer.Option(help="`judges`: query the judges again instead of replaying their "
                                                 "stored calls (implies --rerun judges).")] = None,
    as_json: JsonOpt = False,
) -> None:
    from reviewbench.review import review
    from reviewbench.terminal import StageProgress

    rerun_set = _stage_set(rerun) or set()
    if fresh is not None:
        if fresh != "judges":
            raise UserError(None, f"--fresh takes 'judges', got {fresh!r}")
        rerun_set.add("judges")
    live = StageProgress(console, quiet=as_json)

    def ready(_bundle: Any) -> None:  # only once the bundle, the arena and its files are validated
        if not as_json:
            console.print(f"Reviewing {bundle_dir}", style="bold", markup=False, highlight=False, soft_wrap=True)

    report, out_dir = review(bundle_dir, arena, only=_stage_set(only), skip=_stage_set(skip) or set(),
                             rerun=rerun_set, on_stage=live.done, on_start=live.start, progress=live.line,
                             fresh_judges=fresh is not None, on_ready=ready)
    if as_json:
        sys.stdout.write(report.to_json())
    else:
        console.print()
        console.print(report.headline, style="yellow", highlight=False, markup=False)
        console.print(f"{report.submission.id}: {report.outcome}", style="bold", highlight=False, markup=False)
        console.print(f"Report: {out_dir}/review.md (also review.json, review.html)", highlight=False)
    judges = report.stage("judges")
    if judges is not None and judges.status == "failed":
        err_console.print(f"error: no judge gave a verdict: {judges.reason}", highlight=False, markup=False,
                          soft_wrap=True)
        raise typer.Exit(1)


@app.command("show", help="Show the last complete review of a submission (and say when a newer partial draft exists).")
def show_cmd(
    submission_id: Annotated[str, typer.Argument(help="Submission id, e.g. agent1-003.")],
    arena: ArenaOpt = None,
    as_json: JsonOpt = False,
    partial: Annotated[bool, typer.Option("--partial", help="Show the partial draft instead.")] = False,
) -> None:
    from reviewbench.report import load_report
    from reviewbench.review import open_arena

    a = open_arena(None, arena)
    folder = a.reviews_dir / submission_id
    path = folder / "partial" / "review.json" if partial else folder / "review.json"
    if not path.is_file():
        raise UserError(path, f"no {'partial ' if partial else ''}review of {submission_id} yet "
                              f"(run `review submit/{submission_id}`)")
    report = load_report(path)
    if as_json:
        sys.stdout.write(report.to_json())
        return
    console.print(report.headline, style="yellow", highlight=False, markup=False)
    console.print(f"{report.submission.id} ({report.submission.short_name or '-'}), board "
                  f"{report.submission.board or '-'}: {report.outcome}", style="bold", highlight=False, markup=False)
    table = fold_table("stage", "status", "summary")
    for s in report.stages:  # summaries quote submissions: plain text, folded
        table.add_row(plain(s.title), plain(s.status + (" (replayed)" if s.cached else "")),
                      plain(s.summary if s.status == "ok" else s.reason))
    console.print(table)
    if report.points:
        for reason in report.points.reasons:
            console.print(f"  - {reason}", highlight=False, markup=False)
    if not partial and (folder / "partial" / "review.json").is_file():
        console.print(f"A newer partial draft exists: `review show {submission_id} --partial`", highlight=False)


@app.command("board", help="Leaderboard per board (every baseline and complete review with its Overall on the "
                            "board's hidden test split, the best before it, points and flags) and per-agent totals.")
def board_cmd(
    arena: ArenaOpt = None,
    as_json: JsonOpt = False,
    fmt: Annotated[Optional[str], typer.Option("--format", help="json | csv | parquet (parquet needs pandas and "
                                               "pyarrow) — with --out, or to stdout for json/csv.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Write the export (or --html page) here.")] = None,
    html: Annotated[bool, typer.Option("--html", help="Write one self-contained HTML leaderboard to --out.")] = False,
) -> None:
    from reviewbench.boardview import board_export, print_board, write_board_html
    from reviewbench.leaderboard import build_leaderboard
    from reviewbench.review import open_arena
    from reviewbench.store import Store

    a = open_arena(None, arena)
    if not a.store_path.exists():
        raise UserError(a.store_path, "no reviews yet in this arena")
    if fmt is not None and fmt not in ("json", "csv", "parquet"):
        raise UserError(None, f"--format: expected json, csv or parquet, got {fmt!r}")
    if out is None and (html or fmt == "parquet"):  # name the option the user gave, not one they did not
        raise UserError(None, f"{'--html' if html else '--format parquet'} needs --out FILE")
    with Store(a.store_path) as store:
        lb = build_leaderboard(a, store)
    if html:
        assert out is not None
        write_board_html(lb, out)
        console.print(f"wrote {out}", highlight=False)
    elif as_json or fmt is not None:
        board_export(lb, "json" if as_json and fmt is None else fmt or "json", out)
        if out is not None:
            console.print(f"wrote {out}", highlight=False)
    else:
        print_board(lb, console)


@app.command("publish", help="Write the agents' view of the arena to --out: leaderboard, per-submission Overall, "
                              "criterion scores, flag names and points — never the judges' reasoning, the evidence "
                              "or a test item.")
def publish_cmd(
    out: Annotated[Path, typer.Option(help="Folder to write board.json and index.html into.", file_okay=False)],
    arena: ArenaOpt = None,
) -> None:
    from reviewbench.publish import publish
    from reviewbench.review import open_arena

    a = open_arena(None, arena)
    if not a.store_path.exists():
        raise UserError(a.store_path, "no reviews yet in this arena")
    for p in publish(a, out):
        console.print(f"wrote {p}", highlight=False)


AUDIT_EVIDENCE_CHARS = 400


def _clip(text: str) -> str:
    """An audit's evidence whole up to a screenful; beyond that the cut is said, and --json has it all."""
    if len(text) <= AUDIT_EVIDENCE_CHARS:
        return text
    return f"{text[:AUDIT_EVIDENCE_CHARS]} … (+{len(text) - AUDIT_EVIDENCE_CHARS} characters: see --json)"


@app.command("site", help="Write one static, self-contained site of the arena to --out: the leaderboard per board "
                           "with plots (Overall per budget, 95 % bootstrap bands), per-agent totals, every review "
                           "(linked, with its plot against the board's baselines), the partial drafts and the judge "
                           "calibration reports, filterable by agent, board, flag and text. Open index.html; no "
                           "network needed.")
def site_cmd(
    out: Annotated[Path, typer.Option(help="Folder to write the site into (new, empty, or an earlier site).",
                                      file_okay=False)],
    arena: ArenaOpt = None,
    calibration: Annotated[Optional[list[Path]], typer.Option(
        "--calibration", help="A calibration report (.json) or a folder of them (repeatable; default: the one "
                              "arena.toml names and the calibration suite's reports).")] = None,
) -> None:
    from reviewbench.review import open_arena
    from reviewbench.site import build_site

    result = build_site(open_arena(None, arena), out, calibration)
    console.print(f"wrote {out / 'index.html'} (reviews: {result.reviews}, partial drafts: {result.drafts}, "
                  f"calibration reports: {result.calibration}, pages: {len(result.pages)})", highlight=False,
                  markup=False)
    for note in result.notes:
        err_console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)


@app.command("audit", help="Audit tool-call and network logs for rule violations. PATH: files or folders "
                            "(searched recursively). Exit 0 with or without findings; 2 on unusable input; 1 with "
                            "--strict when part of the input could not be read.")
def audit_cmd(
    paths: Annotated[list[Path], typer.Argument(help="Log files or folders.")],
    arena: ArenaOpt = None,
    agent: Annotated[Optional[str], typer.Option(help="The agent these logs belong to (default: the folder "
                                                 "under the arena's logs/, else the agent whose agent_home holds "
                                                 "the working directory the log records, else unknown).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="auto|claude|codex|jsonl|squid|har|connlog")] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print one reviewbench.audit/1 JSON object.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when a file was skipped, a record could not be "
                                         "read, or a sub-agent's transcript is missing.")] = False,
) -> None:
    from rich.markup import escape

    from reviewbench.logs.arena_audit import audit_paths

    report = audit_paths(paths, arena_dir=arena, agent=agent, fmt=fmt)
    if as_json:
        sys.stdout.write(json.dumps(report.model_dump(mode="json", by_alias=True), indent=2) + "\n")
    else:
        st = report.stats
        console.print(f"{st.files} files, {st.events} tool calls/connections, {st.parse_warnings} parse warnings, "
                      f"{st.bytes / 1e6:.1f} MB in {st.seconds:.2f} s", highlight=False)
        for fo in report.files[:20]:
            who = f"{fo.agent} ({fo.agent_from})" if fo.agent else "agent unknown"
            console.print(f"  {fo.path}: {fo.format}{' ' + fo.client if fo.client else ''}, {fo.events} events, "
                          f"{who}", highlight=False, markup=False)
        if len(report.files) > 20:
            console.print(f"  ... {len(report.files) - 20} more files (see --json)", highlight=False)
        if report.findings:  # the proof (source file:line, evidence) is wrapped, never cut; log text is plain text
            print_rows(console, ("severity", "category", "agent", "source", "evidence", "rule"),
                       [(f.severity, f.category, f.agent or "unknown", f.source, _clip(f.evidence), f.rule)
                        for f in report.findings], heading=3)
        else:
            console.print("[green]no findings[/]")
        for b in report.blind_spots:
            console.print(f"[yellow]not seen[/] {escape(b.message)}", highlight=False)
        for n in report.notes:
            console.print(f"[dim]note: {escape(n)}[/]", highlight=False)
        for w in report.warnings[:10]:
            console.print(f"[yellow]warning[/] {escape(w.source)}: {escape(w.message)}", highlight=False)
        if len(report.warnings) > 10:
            console.print(f"[yellow]... {st.parse_warnings - 10} more parse warnings (see --json)[/]")
    if strict and report.incomplete():
        for why in report.incomplete():
            err_console.print(f"strict: {why}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(1)


from reviewbench.cli_harness import harness_app  # noqa: E402  (the harness subcommands live in their own module)

app.add_typer(harness_app, name="harness", cls=_Group)
from reviewbench.cli_arena import arena_app  # noqa: E402  (review arena run)
app.add_typer(arena_app, name="arena", cls=_Group)


calibrate_app = typer.Typer(
    help="Check a judge panel on the blinded baselines and planted cases (calibration/): novelty <= 1, source named, "
         "inter-judge agreement, family offsets, flag recall, injection canary. `review calibrate build` rebuilds the suite.",
    invoke_without_command=True, no_args_is_help=False)
app.add_typer(calibrate_app, name="calibrate", cls=_Group)
SuiteOpt = Annotated[Optional[Path], typer.Option("--suite", help="The calibration folder (default: ./calibration, "
                                                  "else the one shipped with reviewbench).", file_okay=False)]


@calibrate_app.callback()
def calibrate_cmd(
    ctx: typer.Context,
    panel: Annotated[str, typer.Option(help="A panel of calibration/panels.toml: local (offline), api, vllm, ...")] = "local",
    only: Annotated[Optional[list[str]], typer.Option("--only", help="Run only this case code (repeatable).")] = None,
    as_json: JsonOpt = False,
    fail_under: Annotated[Optional[str], typer.Option(help="Exit 1 when the panel misses a threshold, e.g. "
                                                      "novelty=1.0,source=0.9,recall=1,alpha=0.5.")] = None,
    no_evidence: Annotated[bool, typer.Option("--no-evidence", help="Skip the evidence and claim-ledger stages (faster; "
                                              "no evidence-only row, planted fabrications go unseen).")] = False,
    evidence_to_judges: Annotated[bool, typer.Option(help="Show the judges the machine evidence on the blinded "
                                                     "baselines too (as in a real review).")] = False,
    suite: SuiteOpt = None,
    fmt: Annotated[Optional[str], typer.Option("--format", help="json | csv | parquet: export one row per (case, "
                                               "judge) instead of the table (json: the whole report, as --json); to "
                                               "stdout, or --out (parquet needs --out, pandas and pyarrow).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Write the --format export here.", dir_okay=False)] = None,
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    from reviewbench.calibrate.command import CalibrationProgress, calibrate, default_suite, export
    from reviewbench.calibrate.metrics import parse_fail_under
    from reviewbench.calibrate.report import HEADER_HELP, HEADERS, table_rows

    try:
        thresholds = parse_fail_under(fail_under)
    except ValueError as e:
        raise UserError(None, str(e)) from None
    if fmt is not None and fmt not in ("json", "csv", "parquet"):
        raise UserError(None, f"--format: expected json, csv or parquet, got {fmt!r}")
    if (fmt == "parquet" or out is not None) and (fmt is None or out is None):
        raise UserError(None, "--out goes with --format, and --format parquet needs --out FILE")
    root = suite or default_suite()
    quiet = as_json or (fmt is not None and out is None)  # stdout carries data: progress goes to stderr
    live = CalibrationProgress(err_console if quiet else console)
    live.console.print(f"Calibrating the {panel} panel on {root}", highlight=False, markup=False)
    if no_evidence:
        live.console.print("--no-evidence: the evidence judge gets no code or behaviour evidence, so it cannot score "
                           "novelty (it gives 0, marked 'not scored'): its novelty row measures nothing",
                           highlight=False, markup=False, soft_wrap=True)
    report, paths = calibrate(root, panel, only=only, fail_under=thresholds, with_evidence=not no_evidence,
                              evidence_to_judges=evidence_to_judges, hooks=live.hooks())
    if fmt is not None:
        export(report, fmt, out)
        if out is not None:
            console.print(f"wrote {out}", highlight=False, markup=False)
    if as_json:
        sys.stdout.write(report.model_dump_json(by_alias=True) + "\n")
    elif not quiet:
        table = fold_table(*HEADERS, caption=HEADER_HELP)
        for row in table_rows(report.calibration):
            table.add_row(*(plain(c) for c in row))
        console.print(table)
        alpha = ", ".join(f"{k} {'—' if v is None else v}" for k, v in report.calibration.alpha.items())
        offsets = "; ".join(f"{f}: " + " ".join(f"{k} {v:+.2f}" for k, v in by.items())
                            for f, by in report.calibration.family_offsets.items()) or "none"
        console.print(f"Krippendorff's alpha: {alpha}\nFamily offsets: {offsets}", highlight=False)
        console.print("Wrote " + ", ".join(str(p) for p in paths), highlight=False)
        if report.failed:
            err_console.print("FAILED --fail-under: " + "; ".join(report.failed), highlight=False)
    if report.failed:
        raise typer.Exit(1)


@calibrate_app.command("build", help="Rebuild calibration/blinded, calibration/logs and answer_key.toml from "
                                     "harness/methods and calibration/sources.toml (deterministic).")
def calibrate_build_cmd(suite: SuiteOpt = None) -> None:
    from reviewbench.calibrate.blind import write_suite
    from reviewbench.calibrate.command import default_suite

    root = suite or default_suite()
    key = write_suite(root)
    console.print(f"Wrote {len(key.cases)} cases under {root / 'blinded'} and {root / 'answer_key.toml'}",
                  highlight=False)


@app.command("init", help="Write the skeleton of AGENT's next submission (submit/<agent>-<NNN>/: method.py on the "
                           "harness interface, DESCRIPTION.md with every required section, meta.toml, an empty "
                           "claims.json) that passes the bundle checks as written; fill it in, then review it.")
def init_cmd(
    agent: Annotated[str, typer.Argument(help="The agent id, as declared in arena.toml, e.g. agent1.")],
    arena: ArenaOpt = None,
    board: Annotated[Optional[str], typer.Option(help="The board it is for (default: the arena's first).")] = None,
    short_name: Annotated[Optional[str], typer.Option("--short-name", help="The method's short name (default: "
                                                      "<agent>_<NNN>).")] = None,
) -> None:
    from reviewbench.review import open_arena
    from reviewbench.scaffold import init_submission

    folder = init_submission(open_arena(None, arena), agent, board=board, short_name=short_name)
    console.print(f"wrote {folder}/ (method.py, DESCRIPTION.md, meta.toml, claims.json); when it is ready: "
                  f"`review {folder}`", highlight=False, markup=False, soft_wrap=True)


@app.command("schema", help="Print (or write) the JSON Schema of review.json.")
def schema_cmd(out: Annotated[Optional[Path], typer.Option(help="Write to this file instead of stdout.")] = None) -> None:
    from reviewbench.report import review_json_schema

    text = json.dumps(review_json_schema(), indent=2, sort_keys=True) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text, encoding="utf-8")


def _version(value: bool) -> None:
    if value:
        console.print(f"reviewbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version.")] = False) -> None:
    """Review KV-cache eviction submissions."""


def _say(text: str) -> None:
    err_console.print(text, highlight=False, markup=False, soft_wrap=True)


def _command_path(argv: list[str]) -> str:
    """``review calibrate`` for ``calibrate --panel`` (click gives no context for some option errors)."""
    cmd: Any = typer.main.get_command(app)
    path = ["review"]
    for word in argv:
        sub = getattr(cmd, "commands", {}).get(word)
        if sub is not None:
            cmd = sub
            path.append(word)
    return " ".join(path)


def main(argv: list[str] | None = None) -> int:
    """The ``review`` entry point: every user mistake is one line on stderr and exit 2 (a bare group prints its
    help and exits 2, as click >= 8.2 does: a missing command is a usage error); no traceback for a mistake."""
    try:
        rc = app(args=argv, prog_name="review", standalone_mode=False)  # an Exit comes back as its code here
        if rc == 130:  # typer turns Ctrl-C inside a command into a silent Exit(130): say what happened
            _say(interrupted_line(sys.argv[1:] if argv is None else argv))
    except UserError as e:
        _say(f"error: {e.one_line()}")
        return e.exit_code
    except typer.Exit as e:
        return int(e.exit_code or 0)
    except typer.Abort:
        _say("aborted")
        return 130
    except click_exceptions.NoArgsIsHelpError as e:  # `review`, `review harness`: the help, then exit 2
        sys.stdout.write(e.format_message().rstrip() + "\n")
        return 2
    except click_exceptions.UsageError as e:  # wrong option, missing argument, bad value: one line, exit 2
        path = e.ctx.command_path if e.ctx is not None else _command_path(sys.argv[1:] if argv is None else argv)
        _say(f"error: {path}: {' '.join(e.format_message().split())} (see `{path} -h`)")
        return 2
    except click_exceptions.ClickException as e:
        _say(f"error: {' '.join(e.format_message().split())}")
        return int(e.exit_code)
    except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError) as e:
        if not e.filename:  # not about a path the user gave: a bug, keep the traceback
            raise
        _say(f"error: {e.filename}: {e.strerror or e}")
        return 2
    except BrokenPipeError:  # `review board | head`: the reader left; say nothing more
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        _say(interrupted_line(sys.argv[1:] if argv is None else argv))
        return 130
    return rc if isinstance(rc, int) else 0


#: the commands whose work is stored as it finishes (stage results, judge calls, harness runs): a rerun resumes
RESUMABLE = ("run", "arena", "calibrate", "harness")


def interrupted_line(argv: list[str]) -> str:
    """What Ctrl-C prints: one line, and for a command that stores its work as it goes, how to resume."""
    import shlex

    words = [w for w in argv if not w.startswith("-")]
    first = words[0] if words else ""
    if first in RESUMABLE or (first and first not in typer.main.get_command(app).commands  # type: ignore[attr-defined]
                              and Path(first).exists()):
        return (f"interrupted: what finished is stored; resume with `{shlex.join(['review', *argv])}` "
                "(stored stages and judge calls replay)")
    return "interrupted"


if __name__ == "__main__":
    sys.exit(main())
