"""The tools a judge may call, defined once and translated by each provider into its wire format.

- ``web_search``: the arXiv API (and DuckDuckGo with ``ddgs``), client-side; Anthropic judges use the
  provider's own server-side search instead when ``web_search`` is on.
- ``prior_art_search``: the packaged prior-art index (offline).
- ``read_author_related_work``: the author's "Relation to prior work" and "Builds on", only after the judge
  has searched for prior work itself (commit-first: the author's framing cannot anchor the search).
- ``read_prior_submission``: an earlier submission of the arena (method.py and DESCRIPTION.md, sanitised).
- ``search_log``: lines of the submitting agent's logs that contain a string.
- ``submit_verdict``: the structured output (see :mod:`reviewbench.judges.schema`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviewbench.judges.base import ToolCallRecord, ToolSpec
from reviewbench.judges.inputs import JudgeInputs, sanitise_bundle
from reviewbench.judges.sanitize import defang, safe_label
from reviewbench.judges.schema import SUBMIT_TOOL, verdict_schema
from reviewbench.judges.websearch import SearchUnavailable, WebSearch
from reviewbench.priorart import load_index
from reviewbench.rubric import Rubric

SEARCH_TOOLS = ("web_search", "prior_art_search")
MAX_RESULT_CHARS = 6000
MAX_ARGUMENT_CHARS = 2000


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def tool_specs(rubric: Rubric, client_web_search: bool, submit: bool = True) -> list[ToolSpec]:
    specs = [
        ToolSpec("prior_art_search", "Search the packaged index of published KV-cache compression methods (the "
                 "arena's twelve baselines and ~130 papers) by what a method does. Returns title, year, arXiv id, "
                 "key idea.", _obj({"query": {"type": "string"}, "k": {"type": "integer", "minimum": 1,
                                                                       "maximum": 10}}, ["query"])),
        ToolSpec("read_author_related_work", "The author's own 'Relation to prior work' and 'Builds on' sections. "
                 "Available only after you have searched for prior work yourself.", _obj({}, [])),
        ToolSpec("read_prior_submission", "Read an earlier arena submission (method.py and DESCRIPTION.md) by id.",
                 _obj({"submission_id": {"type": "string"}}, ["submission_id"])),
        ToolSpec("search_log", "Lines of the submitting agent's tool-call logs that contain a string "
                 "(case-insensitive), with file:line.", _obj({"text": {"type": "string"}}, ["text"])),
    ]
    if submit:
        specs.append(ToolSpec(SUBMIT_TOOL, "Submit your final verdict. Call exactly once, at the end.",
                              verdict_schema(rubric)))
    if client_web_search:
        specs.insert(0, ToolSpec("web_search", "Search the web and arXiv for papers and code.",
                                 _obj({"query": {"type": "string"}}, ["query"])))
    return specs


@dataclass
class ToolBox:
    """Executes tool calls for one judge run and records each (name, arguments, result)."""

    inputs: JudgeInputs
    web: WebSearch | None = None
    calls: list[ToolCallRecord] = field(default_factory=list)
    searched: bool = False

    def note_server_search(self, query: str, result: str) -> None:
        self.searched = True
        self.calls.append(ToolCallRecord(name="web_search", arguments=json.dumps({"query": query}, ensure_ascii=False),
                                         result=result[:MAX_RESULT_CHARS], server_side=True))

    async def call(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        """(result text, is_error). Never raises for a bad call: the model gets the error and may try again."""
        try:
            result, error = await self._dispatch(name, args)
        except Exception as e:  # a tool bug must not end the judge run
            result, error = f"tool {name} failed: {type(e).__name__}: {e}", True
        result = result if len(result) <= MAX_RESULT_CHARS else result[:MAX_RESULT_CHARS] + "\n[truncated]"
        self.calls.append(ToolCallRecord(name=safe_label(name)[:80],
                                         arguments=json.dumps(args, ensure_ascii=False)[:MAX_ARGUMENT_CHARS],
                                         result=result, error=error))
        return result, error

    async def _dispatch(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        if name == "web_search":
            self.searched = True
            if self.web is None:
                return "web search is not enabled for this judge", True
            try:
                hits = await self.web.search(str(args.get("query", "")))
            except SearchUnavailable as e:
                return f"web search unreachable: {e}", True
            # web pages are anyone's text: fenced like the submission's
            return self.inputs.show("web_results", json.dumps([h.model_dump(exclude_none=True) for h in hits],
                                                              ensure_ascii=False)), False
        if name == "prior_art_search":
            self.searched = True
            k = args.get("k", 5)
            k = k if isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= 10 else 5
            found = load_index().search(str(args.get("query", ""))[:500], k)
            rows = [{"short_name": h.paper.short_name, "title": h.paper.title, "year": h.paper.year,
                     "first_author": h.paper.first_author, "arxiv": h.paper.arxiv, "key_idea": h.paper.key_idea,
                     "bm25": h.score, "cosine": h.cosine} for h in found]
            return self.inputs.show("prior_art_hits", json.dumps(rows, ensure_ascii=False)), False
        if name == "read_author_related_work":
            if not self.searched:
                return "search for prior work first (web_search or prior_art_search), then read the author's account", True
            return self.inputs.fenced_related(), False
        if name == "read_prior_submission":
            return self._prior(str(args.get("submission_id", "")))
        if name == "search_log":
            return self._search_log(str(args.get("text", "")))
        return f"unknown tool {safe_label(name)[:80]!r}", True

    def _prior(self, sub_id: str) -> tuple[str, bool]:
        ref = next((e for e in self.inputs.earlier if e.id == sub_id), None)
        if ref is None:
            known = self.inputs.field("earlier")  # their ids are their authors' folder names: fenced
            return f"no earlier submission {safe_label(sub_id)[:80]!r}; the earlier submissions:\n{known}", True
        folder = Path(ref.path)
        try:
            method = (folder / "method.py").read_text(encoding="utf-8")
            desc = (folder / "DESCRIPTION.md").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            return f"cannot read {safe_label(sub_id)}: {type(e).__name__}", True
        m, sections, related, title, _ = sanitise_bundle(method, desc)
        body = "\n\n".join(f"## {k}\n{v}" for k, v in {**sections, **related}.items())
        if title:
            body = f"# {title}\n\n{body}"
        return (self.inputs.show("prior_submission", m, f"{ref.id}/method.py") + "\n"
                + self.inputs.show("prior_submission", body, f"{ref.id}/DESCRIPTION.md")), False

    def _search_log(self, text: str, limit: int = 20) -> tuple[str, bool]:
        if not self.inputs.log_dir or not Path(self.inputs.log_dir).is_dir():
            return "no logs for this agent", True
        if len(text) < 3:
            return "search for at least 3 characters", True
        needle, hits = text.lower(), []
        root = Path(self.inputs.log_dir)
        inside = root.resolve()
        # only the agent's own files: a link that leads out of its logs folder is not followed
        for path in sorted(p for p in root.rglob("*") if p.is_file() and p.resolve().is_relative_to(inside)):
            with open(path, encoding="utf-8", errors="replace") as fh:
                for i, line in enumerate(fh, 1):
                    pos = line.lower().find(needle)
                    if pos >= 0:
                        lo = max(0, pos - 150)
                        hits.append(f"{path.relative_to(root)}:{i}: {line[lo:pos + 150].strip()}")
                        if len(hits) >= limit:
                            return self._log_lines(hits) + "\n[more hits not shown]", False
        return self._log_lines(hits) if hits else "no line contains it", False

    def _log_lines(self, hits: list[str]) -> str:
        """Log lines are the agent's text too: hidden instructions are removed and said to be, the rest fenced."""
        clean = defang("\n".join(hits), "log")
        note = "".join(f"\n[{f.location.replace('log:', 'hit ')}: a hidden instruction to the reviewer ({f.kind}) was removed]"
                       for f in clean.findings)
        return self.inputs.show("log_lines", clean.text) + note
