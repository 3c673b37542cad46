"""The bundle stage: what the submission is (files, description sections, the method class, claims), checked
against the arena (its board and its agent declared)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from reviewbench.bundle import BundleFile, Claim, SubmissionMeta
from reviewbench.description import SECTION_TITLES
from reviewbench.findings import Finding
from reviewbench.methodsrc import MethodClass
from reviewbench.pipeline import Stage, StageContext, StageKey, StageOutput, config_tables


class BundleData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    agent: str
    board: str | None
    content_hash: str
    files: list[BundleFile]
    meta: SubmissionMeta
    sections_present: list[str]
    sections_missing: list[str]
    method_class: MethodClass | None
    imports: list[str]
    claims: list[Claim]
    board_known: bool


BUNDLE = StageKey("bundle", BundleData)


def bundle_stage(ctx: StageContext) -> StageOutput[BundleData]:
    b = ctx.bundle
    cls = b.method.candidate
    present = [SECTION_TITLES[k] for k in SECTION_TITLES if k in b.description.sections]
    data = BundleData(
        id=b.id, agent=b.agent, board=b.board, content_hash=b.content_hash, files=b.files, meta=b.meta,
        sections_present=present,
        sections_missing=[t for k, t in SECTION_TITLES.items() if k not in b.description.sections],
        method_class=cls, imports=b.method.imports, claims=b.claims,
        board_known=b.board is None or ctx.arena.config.board(b.board) is not None)
    findings = list(b.findings)
    if b.board is not None and ctx.arena.config.board(b.board) is None:
        findings.append(Finding(code="bundle.unknown_board", severity="error",
                                message=f"board {b.board!r} is not declared in arena.toml"))
    if ctx.arena.config.agent(b.agent) is None:
        findings.append(Finding(code="bundle.unknown_agent", severity="warning",
                                message=f"agent {b.agent!r} is not declared in arena.toml; family unknown"))
    summary = (f"{len(b.files)} files, class {cls.name if cls else '(none)'}, "
               f"{len(present)}/{len(SECTION_TITLES)} description sections, {len(b.claims)} machine-readable claims")
    return StageOutput(status="ok", summary=summary, findings=findings, data=data)


STAGE = Stage(BUNDLE, "Bundle checks", (), bundle_stage, config_inputs=config_tables("boards", "agents", "bundle"),
              code=("reviewbench.bundle", "reviewbench.description", "reviewbench.methodsrc"))
