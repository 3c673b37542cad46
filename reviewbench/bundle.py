"""A submission bundle: loaded, validated and hashed before anything else looks at it.

Refusals (``BundleError``, exit 2) are for bundles that cannot be reviewed at all; everything a reviewer
should merely know about (a missing section, a suspicious import) is a ``Finding``.

Identity comes from the arena, never from the bundle: the agent is the prefix of the submission folder's name
(``<agent>-<NNN>``, lower case), which must be one of arena.toml's agents when the arena declares any. The
bundle's own files may repeat that name, never change it: a meta ``agent`` naming anyone else is refused.
"""

from __future__ import annotations

import hashlib
import tomllib
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.io import loads_bounded
from collections.abc import Collection

from reviewbench.arena import Arena, BundleLimits, parse_submission_id
from reviewbench.description import Description, parse_description
from reviewbench.errors import BundleError
from reviewbench.findings import Finding
from reviewbench.judges.sanitize import safe_label
from reviewbench.methodsrc import MethodInfo, analyse_method
from reviewbench.tomlio import describe_validation_error

REQUIRED_FILES = ("method.py", "DESCRIPTION.md")
IGNORED_DIRS = {"__pycache__", ".git", ".ipynb_checkpoints"}


class SubmissionMeta(BaseModel):
    """``meta.toml`` / ``meta.json``: all optional. ``agent``, when given, must be the folder name's prefix (it
    may only repeat the identity the arena gives the bundle)."""

    model_config = ConfigDict(extra="forbid")

    board: str | None = None
    submitted_at: datetime | None = None
    short_name: str | None = None
    agent: str | None = None


class Claim(BaseModel):
    """One machine-readable claimed number (``claims.json``). Numbers must be finite and plausible: a claim is
    re-run at its budget, on its items, at its length, so each is bounded here."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Field(max_length=64)
    value: float = Field(allow_inf_nan=False, ge=-1e6, le=1e6)
    board: str | None = Field(default=None, max_length=64)
    budget: float | None = Field(default=None, allow_inf_nan=False, gt=0, le=1_048_576)
    split: str | None = Field(default=None, max_length=16)
    model: str | None = Field(default=None, max_length=200)
    task: str | None = Field(default=None, max_length=64)
    items: int | None = Field(default=None, ge=1, le=10_000)  # the run the number came from, when the author says
    length: int | None = Field(default=None, ge=16, le=131_072)

    @field_validator("budget")
    @classmethod
    def _fraction_or_tokens(cls, v: float | None) -> float | None:
        if v is not None and v > 1 and v != int(v):
            raise ValueError("a budget is a fraction in (0, 1] or a whole number of tokens")
        return v


class BundleFile(BaseModel):
    path: str  # relative, POSIX
    bytes: int
    sha256: str


class Bundle(BaseModel):
    id: str
    agent: str
    seq: int | None
    path: Path
    files: list[BundleFile]
    meta: SubmissionMeta
    description: Description
    method: MethodInfo
    claims: list[Claim] = Field(default_factory=list)
    content_hash: str
    findings: list[Finding] = Field(default_factory=list)

    @property
    def board(self) -> str | None:
        return self.meta.board

    @property
    def submitted_at(self) -> datetime | None:
        return self.meta.submitted_at


def _normalise(text: str) -> bytes:
    """Line endings and trailing blank lines do not change what was submitted."""
    return (text.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n") + "\n").encode("utf-8")


def _read_text(path: Path, rel: str, limits: BundleLimits) -> str:
    size = path.stat().st_size
    if size > limits.max_file_bytes:
        raise BundleError(path, f"file is {size} bytes, over the {limits.max_file_bytes}-byte limit")
    raw = path.read_bytes()
    if b"\x00" in raw:
        raise BundleError(path, "binary file (NUL bytes); bundles hold text only")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BundleError(path, f"not valid UTF-8 (byte {e.start})") from None


def _walk(root: Path) -> list[tuple[str, Path]]:
    """All files under root, following links only while they stay inside the bundle."""
    root_real = root.resolve()
    out: list[tuple[str, Path]] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        for entry in sorted(folder.iterdir()):
            if entry.name in IGNORED_DIRS:
                continue
            if entry.is_symlink():
                target = entry.resolve()
                if not target.is_relative_to(root_real):
                    raise BundleError(entry, f"symlink leaves the bundle (points to {target})")
                if not target.exists():
                    raise BundleError(entry, "broken symlink")
            if entry.is_dir():
                stack.append(entry)
            elif entry.is_file():
                out.append((entry.relative_to(root).as_posix(), entry))
            else:
                raise BundleError(entry, "not a regular file")
    return sorted(out)


def _load_meta(texts: dict[str, str], root: Path, agent: str) -> SubmissionMeta:
    present = [n for n in ("meta.toml", "meta.json") if n in texts]
    if len(present) == 2:
        raise BundleError(root / "meta.json", "both meta.toml and meta.json present; keep one")
    if not present:
        return SubmissionMeta()
    name = present[0]
    try:
        data = tomllib.loads(texts[name]) if name.endswith(".toml") else loads_bounded(texts[name])
    except (tomllib.TOMLDecodeError, ValueError) as e:
        raise BundleError(root / name, f"cannot be parsed: {e}") from None
    except RecursionError:
        raise BundleError(root / name, "nested too deeply to be metadata") from None
    if not isinstance(data, dict):
        raise BundleError(root / name, "must be a table/object")
    try:
        meta = SubmissionMeta.model_validate(data)
    except ValidationError as e:
        raise BundleError(root / name, describe_validation_error(e)) from None
    if meta.agent is not None and meta.agent != agent:
        raise BundleError(root / name, f"agent {safe_label(meta.agent)[:60]!r} is not this submission's agent "
                                       f"{agent!r} (the folder name's prefix); leave agent out or repeat it")
    if meta.submitted_at is not None and meta.submitted_at.tzinfo is None:
        meta = meta.model_copy(update={"submitted_at": meta.submitted_at.replace(tzinfo=timezone.utc)})
    return meta


def _load_claims(texts: dict[str, str], root: Path) -> list[Claim]:
    if "claims.json" not in texts:
        return []
    path = root / "claims.json"
    try:
        data = loads_bounded(texts["claims.json"], max_depth=8)
    except ValueError as e:
        raise BundleError(path, f"not valid claims JSON: {e}") from None
    items = data.get("claims") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise BundleError(path, "expected a list of claims or {\"claims\": [...]}")
    if len(items) > 200:
        raise BundleError(path, f"{len(items)} claims; at most 200 are re-run")
    try:
        return [Claim.model_validate(c) for c in items]
    except ValidationError as e:
        raise BundleError(path, describe_validation_error(e)) from None


def load_bundle(path: Path, limits: BundleLimits = BundleLimits(), agents: Collection[str] = ()) -> Bundle:
    """The bundle at ``path``; ``agents``: the arena's declared agent ids (empty: any well-formed id)."""
    if not path.exists():
        raise BundleError(path, "no such folder")
    if not path.is_dir():
        raise BundleError(path, "not a folder (a bundle is a folder with method.py and DESCRIPTION.md)")
    sub_id = path.name
    parsed = parse_submission_id(sub_id)
    if parsed is None:
        raise BundleError(path, f"folder name {safe_label(sub_id)!r} is not <agent>-<NNN> (lower-case letters, "
                                f"digits or _, then - and three digits, e.g. agent1-003)")
    agent, seq = parsed
    if agents and agent not in agents:
        raise BundleError(path, f"agent {agent!r} (the folder name's prefix) is not one of arena.toml's agents "
                                f"({', '.join(sorted(agents))})")
    for name in REQUIRED_FILES:
        if not (path / name).is_file():
            raise BundleError(path / name, "required file is missing")

    texts: dict[str, str] = {}
    files: list[BundleFile] = []
    total = 0
    digest = hashlib.sha256()
    for rel, file in _walk(path):
        text = _read_text(file, rel, limits)
        total += len(text.encode("utf-8"))
        if total > limits.max_total_bytes:
            raise BundleError(path, f"bundle is over the {limits.max_total_bytes}-byte total limit")
        norm = _normalise(text)
        texts[rel] = text
        files.append(BundleFile(path=rel, bytes=len(norm), sha256=hashlib.sha256(norm).hexdigest()))
        digest.update(rel.encode() + b"\0" + norm + b"\0")

    meta = _load_meta(texts, path, agent)
    claims = _load_claims(texts, path)
    description, d_findings = parse_description(texts["DESCRIPTION.md"])
    method, m_findings = analyse_method(texts["method.py"])

    findings = [*d_findings, *m_findings]
    if meta.board is None:
        findings.append(Finding(code="bundle.no_board", severity="warning", message="meta does not name a board"))
    return Bundle(id=sub_id, agent=agent, seq=seq, path=path.resolve(), files=files,
                  meta=meta, description=description, method=method, claims=claims,
                  content_hash=digest.hexdigest(), findings=findings)


def load_submission(arena: Arena, path: Path) -> Bundle:
    """A bundle of ``arena``: its limits, its declared agents, and its agent's logs folder inside ``logs/``."""
    bundle = load_bundle(path, arena.config.bundle, [a.id for a in arena.config.agents])
    arena.agent_logs(bundle.agent)  # a logs/<agent> that leaves logs/ is refused before anything reads it
    return bundle
