"""The evidence judge: rubric levels from measured facts only (``EvidenceFacts``), as a pure function.

It reads no prose — not the description, not the code's comments, not anything a submission says to a reviewer —
so no injection can move it, and the same facts always give the same verdict. Each score's rationale is the
evidence it rests on. What it can establish is bounded by what was measured: novelty from the distance to the
nearest reference and from the published rules the code computes (a rule and nothing of its own: at most 1,
credited or not — the method exists; the rule plus one operation: at most 2), capped at the rubric's
``novelty_max`` (measured distance cannot show that an idea is new to the field), and at most 1 where the
description says the method as a whole is a port of a published paper (``EvidenceFacts.declared_port``, found by a
deterministic reader like the credit: the one fact from prose that bears on novelty, and it can only lower it);
effectiveness from the board
measurement against the board's entries ("on par" only with a CI narrow enough over enough items); soundness
from the claim ledger, the citation check, a stated mechanism the code lacks, and the sections the description
has, its rationale naming what was not there. Flags are not its business: the deterministic
stages raise them, and the rubric decides which stand on their own.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from reviewbench.evidence.facts import EvidenceFacts, SimilarityFact
from reviewbench.rubric import EvidenceRules, Rubric
from reviewbench.verdict import CriterionScore, PriorWork


class EvidenceVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scores: dict[str, CriterionScore]
    prior_work: list[PriorWork]
    summary: str


def _nearest(facts: EvidenceFacts) -> tuple[SimilarityFact | None, SimilarityFact | None]:
    code = max(facts.code, key=lambda f: (f.score, f.containment or 0), default=None)
    beh = max(facts.behaviour, key=lambda f: f.score, default=None)
    return code, beh


def _paper_of(f: SimilarityFact) -> str | None:
    """The index paper a code or behaviour reference stands for (``baseline:snapkv`` -> SnapKV)."""
    from reviewbench.evidence.priorart_evidence import papers_for

    label = f"baseline:{f.implements}" if f.implements else f.reference
    papers = papers_for(label.split("?")[0])
    return papers[0].short_name if papers else None


def _credited_derivative(facts: EvidenceFacts, r: EvidenceRules) -> str | None:
    """The credited work(s) a method is near only because it builds on them: every reference close enough to cap
    novelty at 0 or 1 is credited, the code computes that reference's published rule plus one operation of its own
    (retrieval by computation: "family"), and no behaviour says the addition changes nothing (the same tokens as
    the reference). None when any of this fails: then the distance decides, as before."""
    from reviewbench.evidence.priorart_evidence import owed_to

    near = [f for f in facts.code if f.score >= r.novelty_cosmetic[1] or (f.containment or 0.0) >= r.code_shared]
    # code that matches no more than a credited reference is explained by it (PyramidKV's code holds SnapKV's)
    top = max(((f.score, f.containment or 0.0) for f in near if f.credited), default=None)
    if top is not None:
        near = [f for f in near if f.credited or f.score > top[0] + 1e-9 or (f.containment or 0.0) > top[1] + 1e-9]
    near += [f for f in facts.behaviour if f.score >= r.novelty_cosmetic[0]]
    # a behaviour near a reference that is a credited rule plus what the code does not compute: that rule's nearness
    credited = [m.short_name for m in facts.computed if m.credited]
    computed_ops = {o for m in facts.computed for o in [*m.ops, *m.extra]}
    owed = {f.reference: name for f in near if f.via == "behaviour" and not f.credited
            and (name := owed_to(f.reference, credited, computed_ops))}
    if not near or any(not f.credited and f.reference not in owed for f in near):
        return None
    if any(f.via == "behaviour" and f.score >= r.behaviour_same for f in near):
        return None  # (the same tokens as the rule it builds on, credited or owed: the addition changes nothing)
    family = {m.short_name: m for m in facts.computed if m.level == "family" and m.credited}
    names = []
    for f in near:
        paper = owed.get(f.reference) or _paper_of(f)
        if paper is None or paper not in family:
            return None
        names.append(f"{paper} + {', '.join(family[paper].extra)}")
    return "; ".join(dict.fromkeys(names))


def novelty(facts: EvidenceFacts, rubric: Rubric) -> CriterionScore:
    """The measured level (``_measured_novelty``), capped at 1 where the description says the method, as a whole, is a
    port of a published paper (``EvidenceFacts.declared_port``): the method exists, whatever the code reads as (the
    reader may not see its distinctive operation); the credit removes the flag, not the prior art. The statement can
    only lower the score, so no wording can buy novelty with it."""
    s = _measured_novelty(facts, rubric)
    if facts.declared_port and not facts.evidence_missing and s.score > 1:
        return CriterionScore(score=1, rationale=f"anchor 1 at most: the description states that the method is a port "
                                                 f"of {facts.declared_port}, or that nothing in it is new beside it (a published method: the credit removes the "
                                                 f"flag, not the prior art); measured alone it would be {s.score:g} — "
                                                 f"{s.rationale}")
    return s


def _covered_by_credit(beh: SimilarityFact | None, facts: EvidenceFacts) -> str | None:
    """The paper the nearest behaviour reference implements, where the computation reads its rule as credited (by
    name, or covered by another paper's credit: FINCH's question attention is SnapKV's rule on board A)."""
    credited = {m.short_name for m in facts.computed if m.credited}
    if beh is None or not credited:
        return None
    from reviewbench.evidence.priorart_evidence import papers_for

    hit = sorted({p.short_name for p in papers_for(beh.reference)} & credited)
    return hit[0] if hit else None


def _measured_novelty(facts: EvidenceFacts, rubric: Rubric) -> CriterionScore:
    r = rubric.evidence
    if facts.evidence_missing:  # nothing measured is not "distinct from everything measured": never a default 3
        return CriterionScore(score=0, rationale=f"not scored: {facts.evidence_missing}, so no distance to any "
                                                 "reference was measured (0 here is no evidence, not a finding)")
    code, beh = _nearest(facts)
    b = beh.score if beh else 0.0
    c = code.score if code else 0.0
    shared = (code.containment or 0.0) if code else 0.0
    what = []
    if beh:
        what.append(f"behaviour: nearest {beh.reference} (Jaccard {b:.2f}" + (f", {beh.detail})" if beh.detail else ")"))
    else:
        what.append("behaviour: not measured")
    if code:
        what.append(f"code: nearest {code.reference}" + (f" (= {code.implements})" if code.implements and
                                                          code.reference.startswith("public:") else "")
                    + f" (score {c:.2f}, containment {shared:.2f})")
    same = next((m for m in facts.computed if m.level == "same"), None)
    family = next((m for m in facts.computed if m.level == "family"), None)
    if same:
        what.append(f"computation: the scoring rule of {same.short_name}" + (f" (arXiv {same.arxiv})" if same.arxiv
                                                                              else "")
                    + f", operation for operation ({', '.join(same.ops)}), and nothing of its own"
                    + (" — credited, which removes the flag, not the prior art" if same.credited else ", not credited"))
    elif family:
        what.append(f"computation: the rule of {family.short_name} ({', '.join(family.ops)}) plus "
                    f"{', '.join(family.extra)}")
    roles = ", ".join(facts.head_role_papers)
    if facts.head_roles:
        what.append(f"kept sets: streaming heads beside heads that choose by content, the published idea of {roles}"
                    + ("" if facts.head_roles == "same" else ", with something of its own beside it"))
    evidence = "; ".join(what)
    derived = _credited_derivative(facts, r)
    if derived and not same and facts.head_roles != "same":
        return CriterionScore(score=min(2, r.novelty_max),
                              rationale=f"anchor 2: a credited work's rule ({derived}) plus an operation of its own; "
                                        f"its nearness to that work is the credited part, not a copy — {evidence}")
    covered = (_covered_by_credit(beh, facts) or (beh.reference if beh and beh.credited else None)
               if b >= r.behaviour_same else None)  # (the behaviour's reference credited by name: the same)
    if covered and c < r.code_same_score and shared < r.code_shared:
        # keeping what a credited rule keeps: the method exists and is credited (at most 1, as a credited port), not
        # the undisclosed copy anchor 0 stands for
        return CriterionScore(score=min(1, r.novelty_max),
                              rationale=f"anchor 1 at most: it keeps what {covered}'s rule keeps, and the description "
                                        f"credits that rule (the credit removes the flag, not the prior art) — "
                                        f"{evidence}")
    if b >= r.behaviour_same or c >= r.code_same_score or shared >= r.code_shared:
        return CriterionScore(score=0, rationale=f"anchor 0: the same method as a reference — {evidence}")
    if b >= r.novelty_cosmetic[0] or c >= r.novelty_cosmetic[1]:
        return CriterionScore(score=1, rationale=f"anchor 1: a close variant of a reference — {evidence}")
    if same or facts.head_roles == "same":
        return CriterionScore(score=min(1, r.novelty_max), rationale=f"anchor 1 at most: a published method "
                                                                    f"(the method exists) — {evidence}")
    if b >= r.novelty_family[0] or c >= r.novelty_family[1] or family or facts.head_roles:
        return CriterionScore(score=min(2, r.novelty_max),
                              rationale=f"anchor 2: within a known family, measurably changed — {evidence}")
    cap = "" if r.novelty_max > 3 else " (higher levels need a judge who reads the idea; measurement cannot show them)"
    return CriterionScore(score=min(3, r.novelty_max),
                          rationale=f"anchor 3: distinct from every reference measured{cap} — {evidence}")


def effectiveness(facts: EvidenceFacts, rules: EvidenceRules | None = None) -> CriterionScore:
    r = rules or EvidenceRules()
    bf = facts.board
    if bf is None:
        return CriterionScore(score=0, rationale=f"anchor 0: not measured on its board ({facts.board_reason or 'no board'})")
    m = bf.measurement
    head = f"Overall {m.overall:.4f} on the hidden test split"
    if bf.random_overall is not None and m.overall <= bf.random_overall + 1e-9:
        return CriterionScore(score=0, rationale=f"anchor 0: {head}, at or below random eviction ({bf.random_overall:.4f})")
    if bf.best_overall is None:
        return CriterionScore(score=3, rationale=f"anchor 3: {head}; the board has no other measured entry to compare "
                                                 "with, so it is taken as on par")
    if bf.weakest_overall is not None and m.overall < bf.weakest_overall:
        return CriterionScore(score=1, rationale=f"anchor 1: {head}, below every published baseline (the weakest: "
                                                 f"{bf.weakest_overall:.4f})")
    above = [g for g in bf.gains if g.lower > 0]
    par = [g for g in bf.gains if g.lower <= 0 <= g.upper]
    gains = "; ".join(f"{g.budget:g}: {g.gain:+.4f} [{g.lower:+.4f}, {g.upper:+.4f}]" for g in bf.gains)
    vs = f"vs the board's best {bf.best_id} ({bf.best_overall:.4f}); gain per budget (95 % CI): {gains}"
    if bf.gains and all(g.lower >= bf.margin for g in bf.gains):
        return CriterionScore(score=5, rationale=f"anchor 5: {head}, beats the best at every budget by at least "
                                                 f"{bf.margin:g} — {vs}")
    if above:
        return CriterionScore(score=4, rationale=f"anchor 4: {head}, beats the best at {len(above)} budget(s) — {vs}")
    n = m.n_items
    tight = [g for g in par if (g.upper - g.lower) / 2 <= r.par_ci_halfwidth + 1e-12]
    if par and tight and n >= r.par_min_items:
        return CriterionScore(score=3, rationale=f"anchor 3: {head}, on par with the best at {len(tight)} budget(s) "
                                                 f"(CI within ±{r.par_ci_halfwidth:g} of the gain, {n} items) — {vs}")
    if par:
        why = (f"only {n} item(s), fewer than the {r.par_min_items} needed" if n < r.par_min_items else
               f"the CI is wider than ±{r.par_ci_halfwidth:g}")
        return CriterionScore(score=2, rationale=f"anchor 2 (conservative): {head}; the CI of the gain spans 0 at "
                                                 f"{len(par)} budget(s), but there are too few items to tell whether it "
                                                 f"matches the best ({why}) — {vs}")
    return CriterionScore(score=2, rationale=f"anchor 2: {head}, above the weaker baselines but clearly below the "
                                             f"best — {vs}")


def soundness(facts: EvidenceFacts) -> CriterionScore:
    led, cit = facts.ledger, facts.citations
    claims = (f"claims: {led.reproduced} reproduced, {led.contradicted} contradicted ({led.contradicted_every_seed} "
              f"in every seed), {led.unverifiable} unverifiable" if facts.claims or led.reproduced or led.contradicted
              or led.unverifiable else "claims: none in claims.json")
    cites = (f"citations: {cit.real} real, {cit.wrong_metadata} wrong metadata, {cit.not_found} not found, "
             f"{cit.unreachable} unchecked" if facts.citations_found or cit.real or cit.wrong_metadata
             or cit.not_found or cit.unreachable else "citations: none in the description")
    record = f"{claims}; {cites}"
    missing = [s for s in facts.sections_missing if s in ("Evidence", "Limitations", "Method summary")]
    if facts.misstated:
        return CriterionScore(score=0, rationale=f"anchor 0: the description states {', '.join(facts.misstated)}, "
                                                 f"which the code does not compute — {record}")
    if led.contradicted_every_seed or cit.not_found:
        return CriterionScore(score=0, rationale=f"anchor 0: unsupported evidence — {record}")
    if led.contradicted or cit.wrong_metadata:
        return CriterionScore(score=1, rationale=f"anchor 1: a claim the re-run does not support or a citation with "
                                                 f"wrong metadata — {record}")
    if missing:
        return CriterionScore(score=1, rationale=f"anchor 1: the description lacks {', '.join(missing)} — {record}")
    if led.reproduced and not led.unverifiable and not cit.unreachable:
        return CriterionScore(score=3, rationale=f"anchor 3: every checkable claim reproduced, citations real, "
                                                 f"limitations stated — {record}")
    gaps = []
    if not (led.reproduced or led.contradicted or led.unverifiable):
        gaps.append("no claim to re-run" if not facts.claims else "no claim the arena could re-run")
    if led.unverifiable:
        gaps.append(f"{led.unverifiable} claim(s) outside what the arena can re-run")
    if not (facts.citations_found or cit.real):
        gaps.append("no citation")
    if cit.unreachable:
        gaps.append(f"{cit.unreachable} citation(s) not checked (offline or unreachable)")
    return CriterionScore(score=2, rationale=f"anchor 2: nothing contradicted, but {'; '.join(gaps) or 'a gap'} — "
                                             f"{record}")


def prior_work(facts: EvidenceFacts, k: int = 5) -> list[PriorWork]:
    """The papers whose rule the code computes up to cosmetics first (``source_order``: "same", or "family" with
    only cosmetic extras, the rarest required operations first), then the nearest references (by behaviour or
    code, through the papers they implement), then the prior art retrieved from what the code computes."""
    from reviewbench.evidence.priorart_evidence import papers_for, source_order

    out: list[PriorWork] = []
    seen: set[str] = set()
    # a published rule the code computes (up to cosmetics: which queries, pooling, aggregation) names its source
    # before any distance does, the most specific rule first
    for m in source_order(list(facts.computed)):
        if m.short_name not in seen:
            seen.add(m.short_name)
            out.append(PriorWork(title=m.title, arxiv_id=m.arxiv,
                                 url=f"https://arxiv.org/abs/{m.arxiv}" if m.arxiv else None,
                                 relation=f"the code computes its rule ({', '.join(m.ops)})"
                                          + ("" if m.credited else "; not credited")))
    if facts.declared_port and facts.declared_port not in seen:  # the paper it says it ports
        from reviewbench.priorart import load_index

        p = load_index().by_name(facts.declared_port)
        said = "the description states the method is a port of it (or nothing new beside it)"
        if p is not None:
            seen.add(p.short_name)
            out.append(PriorWork(title=p.title, arxiv_id=p.arxiv, url=p.url, relation=said))
        else:  # a work outside the index, as the description cites it
            seen.add(facts.declared_port)
            arxiv = facts.declared_port_arxiv or None
            out.append(PriorWork(title=facts.declared_port, arxiv_id=arxiv,
                                 url=f"https://arxiv.org/abs/{arxiv}" if arxiv else None, relation=said))
    near = sorted([*facts.behaviour, *facts.code], key=lambda f: -(f.score if f.via == "behaviour" else f.score * 1.5))
    for f in near:
        label = f"baseline:{f.implements}" if f.implements else f.reference
        for p in papers_for(label):
            if p.short_name not in seen:
                seen.add(p.short_name)
                out.append(PriorWork(title=p.title, arxiv_id=p.arxiv, url=p.url,
                                     relation=f"nearest by {f.via}: {f.reference} ({f.score:.2f})"))
        if label.startswith("submission:") and label not in seen:
            seen.add(label)
            out.append(PriorWork(title=label, relation=f"an earlier arena submission, nearest by {f.via} ({f.score:.2f})"))
    for h in facts.prior_art:
        if h.short_name not in seen:
            seen.add(h.short_name)
            out.append(PriorWork(title=h.title, arxiv_id=h.arxiv, relation=f"retrieved from the code ({h.via})"
                                 + ("" if h.credited else "; not credited")))
    return out[:k]


def judge(facts: EvidenceFacts, rubric: Rubric) -> EvidenceVerdict:
    scores = {"novelty": novelty(facts, rubric), "effectiveness": effectiveness(facts, rubric.evidence),
              "soundness": soundness(facts)}
    known = {c.id for c in rubric.criteria}
    scores = {k: v for k, v in scores.items() if k in known}
    for c in rubric.criteria:
        if c.id not in scores:  # a rubric criterion this judge has no evidence for
            scores[c.id] = CriterionScore(score=0, rationale="no measured evidence bears on this criterion")
        scores[c.id] = CriterionScore(score=min(scores[c.id].score, c.max), rationale=scores[c.id].rationale)
    pw = prior_work(facts)
    summary = ("Evidence judge: scores from measured facts only (similarity, board measurement, claim ledger, "
               "citations); " + ", ".join(f"{k} {v.score:g}" for k, v in scores.items())
               + (f"; nearest prior work: {pw[0].title}" if pw else ""))
    return EvidenceVerdict(scores=scores, prior_work=pw, summary=summary)
