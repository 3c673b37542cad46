"""``review init AGENT``: a new submission folder that passes the bundle stage as written, for an agent (or a
person) to fill in. It runs as is: its method.py starts from StreamingLLM's rule (sinks and a recent window) and
its DESCRIPTION.md credits that, so an unchanged skeleton is reviewed as what it is, never as a new idea.

Nothing existing is overwritten: the folder is the agent's next free ``<agent>-<NNN>``, written to a temporary
folder and renamed into place whole."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from reviewbench.arena import Arena, parse_submission_id
from reviewbench.errors import UserError

METHOD = '''"""{title}: <one line: what this method keeps, and why>.

Starts from StreamingLLM's rule (keep the first n_sink tokens and the most recent ones; Xiao et al., 2023,
arXiv 2309.17453). Replace ``select`` with your own scoring; say in DESCRIPTION.md what you kept of it.
"""

import torch

from harness import EvictionMethod, Keep, LayerView


class {cls}(EvictionMethod):
    name = "{name}"
    n_sink = 4  # first tokens always kept (attention sinks)

    def select(self, view: LayerView) -> Keep:
        """Per KV head, the indices of the tokens to keep (at most ``view.budget`` of the valid ones)."""
        valid = view.valid_mask()
        out = []
        for h in range(view.n_kv_heads):
            idx = torch.nonzero(valid[h]).flatten()
            b = min(view.budget, idx.numel())
            sinks = idx[: min(self.n_sink, b)]
            recent = idx[idx.numel() - (b - sinks.numel()) :] if b > sinks.numel() else idx[:0]
            out.append(torch.cat([sinks, recent]))
        return Keep(tuple(out))
'''

DESCRIPTION = """# {title}

## Idea

What the method keeps and the observation behind it, in two or three sentences. (As written, this skeleton keeps
attention sinks and a recent window: StreamingLLM's rule, unchanged.)

## Method summary

How `select` scores tokens and picks the ones to keep, step by step, as the code does it.

## Relation to prior work

The published methods this one is closest to, and what differs. This skeleton is StreamingLLM (Xiao et al.,
2023, arXiv 2309.17453) until `select` is changed.

## Evidence

What you measured, where and how (board, budgets, split, items). Machine-readable numbers go in claims.json
(see the README's "claims.json" section): each one is re-run by the arena, and a number the re-run contradicts
is flagged.

## Limitations

Where the method is expected to do badly, and what was not tested.

## Builds on

StreamingLLM (Xiao et al., 2023, arXiv 2309.17453): the sink-and-window rule in `select`.
"""


def next_id(arena: Arena, agent: str) -> str:
    """The agent's next free submission id: one past its highest ``<agent>-<NNN>`` under submit/."""
    seqs = [p[1] for s in arena.submission_ids() if (p := parse_submission_id(s)) is not None and p[0] == agent]
    n = max(seqs, default=0) + 1
    if n > 999:
        raise UserError(arena.submit_dir, f"agent {agent} already has submission {agent}-999: no number is left")
    return f"{agent}-{n:03d}"


def init_submission(arena: Arena, agent: str, board: str | None = None, short_name: str | None = None,
                    now: datetime | None = None) -> Path:
    """Write the skeleton of ``agent``'s next submission; returns its folder."""
    if arena.config.agents and arena.config.agent(agent) is None:
        raise UserError(arena.root / "arena.toml", f"no agent {agent!r} is declared (agents: "
                                                   f"{', '.join(a.id for a in arena.config.agents)})")
    boards = [b.name for b in arena.config.boards]
    if board is None:
        if not boards:
            raise UserError(arena.root / "arena.toml", "no board is declared: nothing to submit to")
        board = boards[0]
    elif board not in boards:
        raise UserError(None, f"--board: no board {board!r} in this arena (boards: {', '.join(boards)})")
    sub_id = next_id(arena, agent)
    if parse_submission_id(sub_id) is None:
        raise UserError(None, f"agent id {agent!r} cannot name a submission folder (lower-case letters, digits "
                              "or _)")
    name = short_name or sub_id.replace("-", "_")
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,39}", name):
        raise UserError(None, f"--short-name {name!r}: lower-case letters, digits and _, starting with a letter")
    title = name.replace("_", " ").title()
    cls = "".join(w.capitalize() for w in name.split("_") if w) or "Method"
    when = (now or datetime.now(timezone.utc)).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    dest = arena.submit_dir / sub_id
    arena.submit_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{sub_id}.", dir=arena.submit_dir))
    try:
        (tmp / "method.py").write_text(METHOD.format(title=title, cls=cls, name=name), encoding="utf-8")
        (tmp / "DESCRIPTION.md").write_text(DESCRIPTION.format(title=title), encoding="utf-8")
        (tmp / "meta.toml").write_text(
            f'board = "{board}"\nshort_name = "{name}"\n'
            f"# when the submission is made (set it again when you submit; the arena orders submissions by it)\n"
            f"submitted_at = {when}\n", encoding="utf-8")
        # the claims the arena re-runs: none yet (see the README's "claims.json" for the fields of one)
        (tmp / "claims.json").write_text(json.dumps({"claims": []}, indent=2) + "\n", encoding="utf-8")
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest
