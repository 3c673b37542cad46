"""The evidence stage: citations, prior art, code similarity and behaviour, before any judge reads.

Behaviour is measured where the method is scored: the board benchmark (which runs first) records what it kept on
its scored calls, and the baselines' kept sets on the same calls; the bank of dev prompts is the second source,
and a method that behaves differently on the two is reported (and, past the rubric's thresholds, flagged).

Each kind is computed here from the bundle and the arena, stored with the stage (its input hash covers the
bundle and the earlier submissions, so a rerun reuses it), rendered in the report, summarised for the judges
(``digest``) and turned into candidate flags by ``reviewbench/flags/``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from harness.fingerprint_grid import grid_revision

from reviewbench.evidence.behaviour import BehaviourEvidence, behaviour_evidence
from reviewbench.evidence.citations import CitationCheck, check_citations
from reviewbench.evidence.priorart_evidence import PriorArtEvidence, prior_art
from reviewbench.evidence.scored_code import SetAside, scored_code
from reviewbench.evidence.similarity import CodeMatch, baseline_sources, compare, public_references
from reviewbench.findings import Finding
from reviewbench.flags.fabricated_evidence import fabricated_citation_flags
from reviewbench.flags.evasion import evasion_flags
from reviewbench.flags.misstated import misstated_flags
from reviewbench.flags.prior_art import computation_flags, head_role_flags, prior_art_flags
from reviewbench.judges.websearch import WebSearch
from reviewbench.pipeline import EarlierSubmission, Stage, StageContext, StageKey, StageOutput, config_tables
from reviewbench.priorart import load_index
from reviewbench.stages.benchmark import BENCHMARK
from reviewbench.stages.bundle import BUNDLE
from reviewbench.verdict import FlagClaim


class EvidenceData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    citations: list[CitationCheck]
    prior_art: PriorArtEvidence
    code: list[CodeMatch]
    behaviour: BehaviourEvidence | None
    behaviour_error: str | None = None
    digest: list[str]
    candidate_flags: list[FlagClaim]
    code_read: str = "whole"  # "as scored": the code readers read method.py as it ran on the benchmark's calls
    code_read_reason: str = ""
    set_aside: list[SetAside] = []


EVIDENCE = StageKey("evidence", EvidenceData)


def credit_names(ctx: StageContext) -> dict[str, list[str]]:
    """How a description would credit each reference: paper short name, arXiv id, first author, or the id."""
    return reference_names(ctx.earlier)


def reference_names(earlier: Sequence[EarlierSubmission] = ()) -> dict[str, list[str]]:
    """``credit_names`` for the earlier submissions given (none: the baselines' names alone)."""
    names: dict[str, list[str]] = {}
    for p in load_index().papers:
        if p.baseline:
            surname = p.first_author.split()[-1] if p.first_author else ""
            names.setdefault(f"baseline:{p.baseline}", []).extend(
                [n for n in (p.short_name, p.arxiv, f"{surname} et al" if surname else "") if n])
    names["baseline:random"] = ["random"]
    for e in earlier:
        names[f"submission:{e.id}"] = [e.id] + ([e.short_name] if e.short_name else [])
    return names


async def _citations(text: str):
    if os.environ.get("REVIEWBENCH_OFFLINE"):
        return await check_citations(text, None)
    web = WebSearch(use_ddgs=False, timeout=8.0)
    try:
        return await check_citations(text, web)
    finally:
        await web.aclose()


def evidence_stage(ctx: StageContext) -> StageOutput[EvidenceData]:
    b = ctx.bundle
    desc = b.description.text
    findings: list[Finding] = []
    bench = ctx.get(BENCHMARK)
    # the code readers read what was scored: statements that never ran on the benchmark's calls set aside
    scored = scored_code(b.method.source, bench.executed_lines if bench is not None else None,
                         bench.trace_lost if bench is not None else False)
    src = scored.source
    if bench is not None and bench.trace_lost:
        findings.append(Finding(code="evidence.trace_lost", severity="warning", message="the method stopped or "
                                "replaced the line trace of its scored calls: its code is read whole"))
    citations = asyncio.run(_citations(desc))
    pa = prior_art(src, b.description.section_text("method_summary"), b.description.section_text("idea"),
                   desc, board=b.board)
    prior = pa.hits
    earlier_src = {f"submission:{e.id}": (Path(e.path) / "method.py").read_text(encoding="utf-8")
                   for e in ctx.earlier if (Path(e.path) / "method.py").is_file()}
    code = compare(src, {**baseline_sources(), **earlier_src, **public_references()})
    behaviour_error = None
    try:
        behaviour = behaviour_evidence(b.path, {e.id: Path(e.path) for e in ctx.earlier},
                                       scored=bench.kept if bench is not None else None,
                                       same=ctx.rubric.evidence.behaviour_same,
                                       related=ctx.rubric.evidence.behaviour_related, board=b.board)
        matches = behaviour.matches
        if behaviour.errors:
            findings += [Finding(code="evidence.behaviour_error", severity="warning", message=f"{k}: {v}")
                         for k, v in behaviour.errors.items()]
    except Exception as e:  # no sandbox, no model: the other evidence still stands, and this says why
        behaviour, matches, behaviour_error = None, [], f"{type(e).__name__}: {e}"
        findings.append(Finding(code="evidence.behaviour_not_run", severity="warning", message=behaviour_error))

    cls = b.method.candidate
    class_line = (f"class {cls.name}", cls.line) if cls else ("", 1)
    flags = fabricated_citation_flags(citations) + prior_art_flags(matches, code, credit_names(ctx), desc,
                                                                   src, class_line, ctx.rubric.evidence,
                                                                   pa.computed, pa.features)
    computed = computation_flags(pa.computed, matches, src, ctx.rubric.evidence,
                                 behaviour.bank_matches if behaviour is not None and behaviour.source == "benchmark" else (),
                                 behaviour.head_roles if behaviour is not None else ())
    if computed and not any(f.flag == "UNDISCLOSED_PRIOR_ART" and f.strength == "proof" for f in flags):
        flags = [f for f in flags if f.flag != "UNDISCLOSED_PRIOR_ART"] + computed  # the stronger evidence
    if behaviour is not None and not any(f.flag == "UNDISCLOSED_PRIOR_ART" and f.strength == "proof" for f in flags):
        roles = head_role_flags(behaviour.head_roles, pa.features, desc, class_line, ctx.rubric.evidence)
        if any(f.strength == "proof" for f in roles):  # the stronger evidence replaces an indication
            flags = [f for f in flags if f.flag != "UNDISCLOSED_PRIOR_ART"] + roles
        elif not any(f.flag == "UNDISCLOSED_PRIOR_ART" for f in flags):
            flags += roles
    flags += misstated_flags(desc, b.method.source, matches, ctx.rubric.evidence,
                             behaviour.allocation if behaviour is not None else ())
    flags += evasion_flags(behaviour, class_line, desc)
    for c in citations:
        if c.status in ("not_found", "wrong_metadata"):
            findings.append(Finding(code=f"evidence.citation_{c.status}", location=f"DESCRIPTION.md:{c.citation.line}",
                                    severity="error" if c.status == "not_found" else "warning",
                                    message=f"{c.citation.text}: {c.detail}"))
    uncredited = [h for h in prior if not h.credited]
    counts = {s: sum(c.status == s for c in citations) for s in ("real", "wrong_metadata", "not_found", "unreachable")}
    digest = [f"code read: {scored.reason}"] if scored.set_aside or (bench is not None and bench.trace_lost) else []
    digest += [f"citations: {len(citations)} found; " + ", ".join(f"{v} {k}" for k, v in counts.items() if v)]
    digest += [f"- {c.status}: {c.citation.text} — {c.detail}" for c in citations if c.status != "real"]
    if matches and behaviour is not None:
        digest.append(f"nearest by behaviour (same tokens kept, on {behaviour.where}): " + ", ".join(
            f"{m.reference} Jaccard {m.jaccard:.2f} / rank {m.rank_corr:.2f}" for m in matches[:3]))
        if behaviour.source == "benchmark" and behaviour.bank_matches:
            digest.append("nearest by behaviour on the review's bank (second source): " + ", ".join(
                f"{m.reference} Jaccard {m.jaccard:.2f}" for m in behaviour.bank_matches[:3]))
        digest += [f"head roles ({r.source}): {r.summary}" for r in behaviour.head_roles if r.split_share]
        digest += [f"budget allocation ({a.source}): {a.summary}" for a in behaviour.allocation]
        if behaviour.divergence is not None:
            digest.append(f"bank vs scored calls: {behaviour.divergence.summary}")
    digest.append("nearest by code (token and operation fingerprints, incl. the baselines' public code): " + ", ".join(
        f"{m.reference}" + (f" = {m.implements}" if m.implements and m.reference.startswith("public:") else "")
        + f" score {m.score:.2f} (containment {m.containment:.2f})" for m in code[:3]))
    if pa.computed:
        digest.append("published rules the code computes, operation for operation: " + ", ".join(
            f"{c.short_name} ({c.arxiv or 'no arXiv'}; {c.level}" + (f", plus {', '.join(c.extra)}" if c.extra else "")
            + ("" if c.credited else ", NOT credited") + ")" for c in pa.computed[:3]))
    digest.append("prior art retrieved from the code and method summary: " + ", ".join(
        f"{h.short_name} ({h.arxiv or 'no arXiv'}{'' if h.credited else ', NOT credited'})" for h in prior[:5]))
    summary = (f"{len(citations)} citations ({', '.join(f'{v} {k}' for k, v in counts.items() if v) or 'none'}); "
               f"nearest by behaviour {matches[0].reference} ({matches[0].jaccard:.2f})" if matches else
               f"{len(citations)} citations; behaviour not measured")
    summary += f"; nearest by code {code[0].reference} ({code[0].jaccard:.2f}); {len(uncredited)} uncredited prior-art hits"
    data = EvidenceData(citations=citations, prior_art=pa, code=code, behaviour=behaviour,
                        behaviour_error=behaviour_error, digest=digest, candidate_flags=flags, code_read=scored.read,
                        code_read_reason=scored.reason, set_aside=scored.set_aside)
    return StageOutput(status="ok", summary=summary, findings=findings, data=data)


STAGE = Stage(EVIDENCE, "Evidence", (BUNDLE, BENCHMARK), evidence_stage, config_inputs=config_tables(),
              code=("reviewbench.evidence.behaviour", "reviewbench.evidence.citations", "reviewbench.evidence.computation",
                    "reviewbench.evidence.priorart_evidence", "reviewbench.evidence.scored_code",
                    "reviewbench.evidence.similarity", "reviewbench.flags",
                    "reviewbench.priorart", "reviewbench.judges.websearch", "reviewbench/data/*.json", "harness"),
              revision=grid_revision())
