"""UNDISCLOSED_PRIOR_ART and MISSING_ATTRIBUTION candidates from behaviour and code similarity.

Behaviour: the candidate keeps nearly the same tokens as a baseline or an earlier submission (mean Jaccard
>= ``BEHAVIOUR_SAME``) that DESCRIPTION.md does not credit. Code: a large share of the candidate's code stands
in an uncredited reference — the project's baselines, an earlier submission, or the public reference code of
a baseline (kvpress, the papers' repositories) — (token containment weighted by rarity >= ``CODE_SHARED``: each
fingerprint weighs by how few reference families have it, so what every method on the harness writes decides
nothing; or the similarity score, which also counts what the code computes, >= ``CODE_SCORE``), with the spans as
proof.

"Credited" means attributed, not named: see ``priorart_evidence.credit`` (a citation in "Builds on", or a
sentence stating use; a contrast, a negation, a common phrase or a bare common surname is no credit).

Strength (the rubric's ``[evidence]`` thresholds decide, and its flag rules say what a "proof" may do alone):
an uncredited behavioural match at ``behaviour_same`` is a proof of UNDISCLOSED_PRIOR_ART, and so is copied code
(``code_shared`` containment or ``code_same_score``) whose reference also behaves alike (``behaviour_related``);
copied code alone proves MISSING_ATTRIBUTION. Anything weaker is an indication for a judge to weigh. A reference
that matches no more (score and containment) than a credited one is explained by it: PyramidKV's and Ada-KV's
code hold SnapKV's, so a method that credits SnapKV is not flagged for them (found on the held-out set).

Computation: the code computes a published paper's scoring rule in operations (the prior-art index's ``ops``,
matched against ``evidence.computation``'s data-flow features, blind to names and layout) and nothing of its own
beside it, and the description does not credit that paper: UNDISCLOSED_PRIOR_ART with the operations and their
lines as proof (``computation_flags``). This is how a port of a paper whose code the project never fingerprinted
is found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from reviewbench.evidence.behaviour import BehaviourMatch, HeadRoles, told_apart
from reviewbench.evidence.priorart_evidence import (COSMETIC, PHASE, PROTECTIVE, ComputationMatch, Credit, credit,
                                                    credit_for, credited_papers, owed_to, papers_for, rule_alternatives,
                                                    within_credited, source_order)
from reviewbench.evidence.similarity import CodeMatch, Span
from reviewbench.rubric import EvidenceRules
from reviewbench.verdict import FlagClaim

# the defaults of rubrics/default.toml [evidence] (measured: disguised public ports vs another baseline <= 0.47 code
# score; honest example submissions <= 0.50)
DEFAULT_RULES = EvidenceRules()

if TYPE_CHECKING:
    from reviewbench.priorart import Paper


def _first_line(source: str, spans: Sequence[Span]) -> tuple[str, int]:
    lines = source.splitlines()
    for s in spans:
        for n in range(s.start, s.end + 1):
            if 0 < n <= len(lines) and lines[n - 1].strip():
                return lines[n - 1].strip(), n
    return (lines[0].strip(), 1) if lines else ("", 1)


def _credit(reference: str, implements: str | None, names: dict[str, list[str]], description: str) -> Credit:
    """A public reference is credited when the baseline it implements is."""
    label = f"baseline:{implements}" if reference.startswith("public:") and implements else reference
    return credit_for(label, description, names.get(label, []) or names.get(reference, []))


def _describe(c: CodeMatch) -> str:
    if c.source is None:
        return c.reference
    s = c.source
    return (f"{c.reference} ({s.repo} {s.path} at {s.commit[:7]}, {s.licence}; an implementation of "
            f"{c.implements})")


def _base(reference: str, implements: str | None) -> str:
    """What a reference stands for: a public implementation and a baseline's family member both mean the baseline."""
    if implements:
        return f"baseline:{implements}"
    return reference.split("?")[0]


def _behaviour_ref(m: BehaviourMatch) -> str:
    """A behavioural reference in words: a published rule's reference names its paper and the member matched."""
    if not m.reference.startswith("priorart:"):
        return m.reference
    papers = papers_for(m.reference)
    paper = papers[0] if papers else None
    what = f"{paper.title} (arXiv {paper.arxiv})" if paper and paper.arxiv else paper.title if paper else m.reference
    return f"the published rule of {what}, as its reference implementation {m.member or m.reference} computes it"


def prior_art_flags(behaviour: list[BehaviourMatch], code: list[CodeMatch], names: dict[str, list[str]],
                    description: str, method_src: str, class_line: tuple[str, int],
                    rules: EvidenceRules = DEFAULT_RULES,
                    computed: Sequence[ComputationMatch] = (), features: Mapping[str, int] | None = None
                    ) -> list[FlagClaim]:
    """``names``: for each reference label, other names by which a description would credit it (earlier
    submissions: their id and short name); baselines and public references are credited through their papers.

    ``computed``: retrieval by computation. Where a credited paper's rule explains the code (up to cosmetics) and
    the code computes no rule of the baseline it behaves like without a mechanism of its own beside it, behaving
    like that baseline is what the credited rule does (TidalDecode's one-shot selection keeps TOVA's tokens; its
    layer reuse is no part of TOVA's rule): no flag from behaviour. A baseline's rule the code computes outright
    (a TOVA port crediting TidalDecode, which it does not compute) still is one."""
    out: list[FlagClaim] = []
    alike = {_base(m.reference, getattr(m, "implements", None)): m.jaccard for m in behaviour}
    explained_by = [c for c in source_order(list(computed)) if c.credited]
    close = {c.short_name for c in source_order(list(computed))}
    covered = {c.short_name for c in explained_by}
    for m in behaviour:
        if m.jaccard < rules.behaviour_same or not told_apart(m, behaviour, rules.behaviour_margin,
                                                                 rules.behaviour_identical):
            continue
        cr = _credit(m.reference, None, names, description)
        papers = {p.short_name for p in papers_for(m.reference)}
        if not cr.credited and explained_by and papers and not papers & close:
            continue  # the credited rule explains the code; the baseline's rule does not (an own mechanism beside)
        if not cr.credited and papers & covered:
            continue  # the code computes the reference's rule, and a credit covers it there (FINCH's question
            # attention is SnapKV's rule on board A): behaving like it is what the credited rule does
        if not cr.credited and features is not None and owed_to(
                m.reference, [c.short_name for c in computed if c.credited], features):
            continue  # the reference is a credited rule plus what the code does not compute
        if not cr.credited and features is not None and within_credited(m.reference, description, features):
            continue  # the reference's rule is part of a credited rule the code computes
        if not cr.credited:
            out.append(FlagClaim(flag="UNDISCLOSED_PRIOR_ART", quote=class_line[0], location=f"method.py:{class_line[1]}",
                                 raised_by="evidence:behaviour", strength="proof",
                                 explanation=f"keeps the same tokens as {_behaviour_ref(m)} (Jaccard {m.jaccard:.2f} >= "
                                             f"{rules.behaviour_same:g}, rank correlation {m.rank_corr:.2f} on the "
                                             f"behaviour evidence's source); the description does not credit it ({cr.reason})"))
            break
    explained = (-1.0, -1.0)  # the best (score, containment) of a credited reference: the shared code it explains
    for c in code:
        if c.weighted_containment < rules.code_shared and c.score < rules.code_same_score:
            continue
        cr = _credit(c.reference, c.implements, names, description)
        if cr.credited:
            explained = (max(explained[0], c.score), max(explained[1], c.weighted_containment))
            continue
        if c.score <= explained[0] + 1e-9 and c.weighted_containment <= explained[1] + 1e-9:
            continue  # PyramidKV's code holds SnapKV's: a credited SnapKV port matches it no more than SnapKV
        if _subsumed_by_credit(c, description):
            continue  # SAGE-KV's rule holds TOVA's: a credited SAGE-KV port shares TOVA's code by design
        quote, line = _first_line(method_src, c.candidate_spans)
        spans = ", ".join(f"{s.start}-{s.end}" for s in c.candidate_spans[:6])
        what = (f"the code matches {_describe(c)}: token containment {c.weighted_containment:.0%} weighted by rarity "
                f"({c.containment:.0%} unweighted), operation containment "
                f"{c.op_containment:.0%}, score {c.score:.2f} (lines {spans}); the description does not credit it "
                f"({cr.reason})")
        out.append(FlagClaim(flag="MISSING_ATTRIBUTION", quote=quote, location=f"method.py:{line}",
                             raised_by="evidence:code", strength="proof", explanation=what))
        same = alike.get(_base(c.reference, c.implements), 0.0)
        if not any(f.flag == "UNDISCLOSED_PRIOR_ART" for f in out):
            out.append(FlagClaim(
                flag="UNDISCLOSED_PRIOR_ART", quote=quote, location=f"method.py:{line}", raised_by="evidence:code",
                strength="proof" if same >= rules.behaviour_related else "indication",
                explanation=what + (f"; it also keeps the tokens its reference keeps (Jaccard {same:.2f})" if same
                                    else "; its behaviour was not measured against that reference")))
        break
    return out


# the share of a view's heads that keep a pure position set at every budget, where the method is scored, above which
# no rule that ranks tokens by their content can be what chose them (``HeadRoles.streaming_heads``)
POSITIONS_ONLY = 0.95


def computation_flags(computed: Sequence[ComputationMatch], behaviour: list[BehaviourMatch], method_src: str,
                      rules: EvidenceRules = DEFAULT_RULES,
                      bank: Sequence[BehaviourMatch] = (), roles: Sequence[HeadRoles] = ()) -> list[FlagClaim]:
    """UNDISCLOSED_PRIOR_ART from retrieval by computation: the code computes a published rule, operation for
    operation, and nothing of its own beside it ("same"), and the description does not credit that paper. A proof
    (the operations and their lines are the evidence, whatever the names), unless the arena's behaviour measurement
    of that very paper's baseline *where the method is scored* (the benchmark's calls) says otherwise (the
    candidate keeps few of its tokens: an indication then). Behaviour on the bank alone never weakens it: a method
    can tell the bank from the inputs it is scored on and behave otherwise there (it is said, not counted).
    ``bank``: the bank's matches when ``behaviour`` is the benchmark's (the family rule asks both). ``roles``: where
    the scored calls show every head keeping only a position set at every budget (``POSITIONS_ONLY``), a rule that
    ranks by content did not choose what is kept (its operations size a window at most): an indication."""
    same = [m for m in computed if m.level == "same" and not m.credited]
    if not same:
        return _agreeing_family(computed, behaviour, method_src, rules, bank)
    if any(m.level == "same" and m.credited and len(m.matched) >= len(same[0].matched) and _explains(m, same[0])
           for m in computed):
        return []  # a credited rule explains it: on its own path, or holding every operation of the other's
    added = set(same[0].matched) - COSMETIC - PROTECTIVE - PHASE  # what the rule adds to a choice of queries
    if added and any(m.credited and not m.credit.via and m.short_name != same[0].short_name and
                     added <= _rule_ops(m.short_name) for m in computed):
        return []  # what the uncredited rule adds to a choice of queries is a credited paper's own operation (a
        # window rule reusing another layer's selection, where TidalDecode's reuse is credited): that credit covers it
    # the most specific of the rules the code computes exactly names it (rarest operations first: a maximum over
    # blocks names CritiPrefill before the chunk sums every block method shares)
    m = source_order(same)[0]
    quote, line, ops = _where(m, method_src)
    same_ref = [b for b in behaviour if m.baseline and _base(b.reference, getattr(b, "implements", None))
                == f"baseline:{m.baseline}"]
    measured = [b.jaccard for b in same_ref if getattr(b, "source", "bank") == "benchmark"]
    far = bool(measured) and max(measured) < rules.novelty_family[0]
    by_position = next((r for r in roles if r.source == "benchmark" and r.views
                        and r.streaming_heads >= POSITIONS_ONLY), None)
    if rule_alternatives(m.required) <= _POSITION_OPS:
        by_position = None  # a rule of positions is what such sets are
    contradicted = far or by_position is not None or m.declared is not None
    on_bank = [b.jaccard for b in same_ref if getattr(b, "source", "bank") != "benchmark"]
    but = (f"; on the behaviour bank alone it keeps few of that baseline's tokens (Jaccard {max(on_bank):.2f}), "
           f"which does not clear the code: the bank can be told apart from the scored inputs"
           if not measured and on_bank and max(on_bank) < rules.novelty_family[0] else "")
    if by_position is not None:
        but = (f"; but where it is scored every head keeps only the opening tokens and the newest run "
               f"({by_position.summary}): no ranking by content chose them")
    if far:
        but = f"; but it keeps few of that baseline's tokens where it is scored (Jaccard {max(measured):.2f})"
    if m.declared is not None:
        but += (f"; but the description declares the method a port of {m.declared}, a work the index does not hold: "
                f"whether that work states this rule (an earlier or a parallel source of it) a judge can tell, the "
                f"offline review cannot")
    return [FlagClaim(
        flag="UNDISCLOSED_PRIOR_ART", quote=quote, location=f"method.py:{line}", raised_by="evidence:computation",
        strength="indication" if contradicted else "proof",
        explanation=(f"the code computes {_which(m)} of {m.short_name} ({m.title}"
                     + (f", arXiv {m.arxiv}" if m.arxiv else "") + f"): {m.rule}; found: {ops}; nothing of its own "
                     + (f"beside it and the rule of {m.beside}, which the description credits" if m.beside
                        else "beside it")
                     + (f" on the path that returns at line {m.branch} (another branch of the code computes "
                        f"something else)" if m.branch is not None else "")
                     + f"; the description does not credit it ({m.credit.reason})"
                     + _twins(m, same)
                     + but))]


def _twins(m: ComputationMatch, same: Sequence[ComputationMatch]) -> str:
    """Other uncredited papers whose rule is the very same operations (InfLLM's and MoBA's block keys), or which the
    code met through the very same operations (TokenSelect's and RefreshKV's query reuse): named too, since the code
    is a port of either."""
    twins = [o for o in source_order(list(same)) if o.short_name != m.short_name
             and (sorted(o.required) == sorted(m.required) or set(o.matched) == set(m.matched))]
    if not twins:
        return ""
    names = ", ".join(f"{o.short_name}" + (f" (arXiv {o.arxiv})" if o.arxiv else "") for o in twins)
    return f"; the same rule is also {names}'s"


_POSITION_OPS = PROTECTIVE | PHASE


def _which(m: ComputationMatch) -> str:
    """The rule a match met, in words: the paper's scoring rule, or its training-free port."""
    if m.which == "rule":
        return "the scoring rule"
    return "the training-free port (what its trained part learns to approximate, computed directly)"


def _paper(short_name: str) -> Paper | None:
    from reviewbench.priorart import load_index

    return load_index().by_name(short_name)


def _subsumed_by_credit(c: CodeMatch, description: str) -> str | None:
    """The credited paper one of whose rules holds a rule of the baseline a code match stands for, adding at most one
    required operation of its own: code like that baseline's is what the credited rule computes (SAGE-KV's rule is
    TOVA's last-token attention with a head-level top-k). None for a reference that is no published rule, and for a
    credited paper that is the reference itself (the caller's own test). One added operation at most, so that a
    paper whose rule merely contains the signal among much else (a quantiser that ranks by attention) explains
    nothing; operations that only size the budget (``_ALLOCATION``), protect positions (sinks, a recent window) or
    name the phase (decode time) are not counted: they change no score (a credited SCOPE port's decode-time heavy
    hitters are H2O's accumulation, its sinks and phase SCOPE's setting around it)."""
    papers = papers_for(_base(c.reference, c.implements))
    theirs = [alts for p in papers for _, req, _o, _ in p.rules() if (alts := rule_alternatives(req))]
    if not theirs:
        return None
    names = {p.short_name for p in papers}
    for paper, _ in credited_papers(description):
        if paper.short_name in names:
            continue
        for _, req, opt, _ in paper.rules():
            mine, extra = rule_alternatives(req), rule_alternatives(opt)
            # (how many tokens each layer or head keeps is no part of the score the shared code computes: a credited
            # LazyLLM port's last-token attention is TOVA's whatever its budget schedule)
            if any(t <= mine | extra and len(mine - t - _ALLOCATION - PROTECTIVE - PHASE) <= 1 for t in theirs):
                return paper.short_name
    return None


# operations that size the budget (per layer, by a schedule, per head) rather than score the tokens
_ALLOCATION = frozenset({"layer_budget", "pyramid", "head_budget"})


def _explains(credited: ComputationMatch, other: ComputationMatch) -> bool:
    """Whether a credited exact rule explains another exact rule the code computes: on the same return path, or
    holding every operation of it. A rule credited only through another paper's credit (``Credit.via``: SnapKV
    credited covers FINCH's question attention on board A) explains no more than that paper's own rule holds (not
    FINCH's chunk-by-chunk reading, InfiniPot's rule)."""
    if credited.credit.via:
        return set(other.matched) <= _rule_ops(credited.credit.via)
    return credited.branch == other.branch or set(other.matched) <= _rule_ops(credited.short_name)


def _rule_ops(short_name: str) -> set[str]:
    """Every operation a paper's rules (its rule, its training-free port) name, required or optional."""
    p = _paper(short_name)
    return {a for _, req, opt, _ in p.rules() for r in [*req, *opt] for a in r.split("|")} if p else set()


def _where(m: ComputationMatch, method_src: str) -> tuple[str, int, str]:
    """Where a matched rule stands in method.py: the line that completes it (the scoring line, usually), quoted, and
    each operation with its line."""
    lines = method_src.splitlines()
    line = (sorted(n for n in m.matched.values() if 0 < n <= len(lines)) or [1])[-1]
    ops = ", ".join(f"{op} (line {n})" if n else f"{op} (class attribute)" for op, n in m.matched.items())
    return (lines[line - 1].strip() if lines else ""), line, ops


def _label_of(m: ComputationMatch) -> str:
    return f"baseline:{m.baseline}" if m.baseline else f"priorart:{m.short_name}"


def _told_apart(behaviour: Sequence[BehaviourMatch], rules: EvidenceRules) -> BehaviourMatch | None:
    """The reference a measurement shows the method substantially the same as (``behaviour_related``) and nearer to
    than to every other reference by ``behaviour_margin``, if one."""
    near = [b for b in behaviour if not b.reference.startswith("submission:")]
    if not near:
        return None
    top = max(near, key=lambda b: b.jaccard)
    if top.jaccard < rules.behaviour_related or any(
            top.jaccard - b.jaccard < rules.behaviour_margin for b in near if b.reference != top.reference):
        return None
    return top


def _agreeing_family(computed: Sequence[ComputationMatch], behaviour: Sequence[BehaviourMatch], method_src: str,
                     rules: EvidenceRules, bank: Sequence[BehaviourMatch] = ()) -> list[FlagClaim]:
    """Two independent measurements naming one uncredited paper: the code computes its rule plus something of its own
    ("family"), and the method's behaviour is nearest that paper's reference of all, substantially the same
    (``behaviour_related``) and told apart from every other reference (``behaviour_margin``). What the code adds
    does not move what it keeps away from the rule it builds on, and the description credits neither it nor a paper
    whose rule holds its operations or what it adds (a credited TidalDecode port computes TOVA's selection and keeps
    TOVA's tokens, its layer reuse TidalDecode's own; crediting StreamingLLM for the sinks covers no attention
    rule). When the scored calls decide and the bank was measured too (``bank``), the bank may clear it only by
    showing the method near that rule as well (``behaviour_related``) but not told apart from its neighbours: a
    variant among close rules (on a few scored calls at small budgets attention rules share most of their top
    tokens, and a variant's margin there may be noise). A bank that shows the method far from the rule clears
    nothing: a method that behaves otherwise on the bank cannot dodge the flag that way."""
    top = _told_apart(behaviour, rules)
    if top is None:
        return []
    label = _base(top.reference, getattr(top, "implements", None))
    if bank:
        second = _told_apart(bank, rules)
        agrees = second is not None and _base(second.reference, getattr(second, "implements", None)) == label
        on_bank = max((b.jaccard for b in bank if _base(b.reference, getattr(b, "implements", None)) == label),
                      default=0.0)
        if not agrees and on_bank >= rules.behaviour_related:
            return []  # near the rule on the bank too, among neighbours: a variant
    hit = next((m for m in computed if m.level == "family" and _label_of(m) == label), None)
    if hit is None or hit.credited or any(c.credited and (_label_of(c) == label or set(c.matched) >= set(hit.matched)
                                                          or set(hit.extra) & set(c.matched)) for c in computed):
        return []  # credited, or what it adds is a credited paper's (TidalDecode's reuse around TOVA's selection)
    quote, line, ops = _where(hit, method_src)
    return [FlagClaim(
        flag="UNDISCLOSED_PRIOR_ART", quote=quote, location=f"method.py:{line}",
        raised_by="evidence:computation", strength="proof",
        explanation=(f"the code computes {_which(hit)} of {hit.short_name} ({hit.title}"
                     + (f", arXiv {hit.arxiv}" if hit.arxiv else "") + f"): {hit.rule}; found: {ops}; plus "
                     f"{', '.join(hit.extra) or 'an operation of its own'}; and it keeps that rule's tokens "
                     f"(Jaccard {top.jaccard:.2f} to {top.reference} on the {top.source}, the nearest of every "
                     f"reference by at least {rules.behaviour_margin:g}): what it adds changes little of what the rule "
                     f"keeps; the description does not credit it ({hit.credit.reason})"))]


# What a head-role method may compute beside its role split and still be nothing but the published idea: which
# queries score, how they pool, protection, a per-head budget and accumulated attention (H2O's or SnapKV's
# ranking inside the retrieval heads is the filler every such method needs, not a mechanism of its own).
_ROLE_FILLER = COSMETIC | PROTECTIVE | {"head_budget", "learned_gate", "learned_weights", "accumulate"}


def split_roles(roles: Sequence[HeadRoles], rules: EvidenceRules = DEFAULT_RULES) -> list[HeadRoles]:
    """The sources whose kept sets split the heads into streaming and content heads (``head_roles_split``)."""
    return [r for r in roles if r.views and r.split_share >= rules.head_roles_split]


def role_extras(features: Mapping[str, int]) -> list[str]:
    """What the code computes beside a split of its heads into roles that is a mechanism of its own."""
    return sorted(set(features) - _ROLE_FILLER)


def head_role_papers() -> list[Paper]:
    """The index's papers whose rule is a split of the heads into streaming heads (the opening tokens and the newest)
    and full or content-chosen ones: a gate plus sinks and a recent window (DuoAttention, RazorAttention, ...)."""
    from reviewbench.priorart import load_index

    out = []
    for p in load_index().papers:
        for _, req, _, _ in p.rules():
            if {"sinks", "recent", "learned_gate"} <= rule_alternatives(req):
                out.append(p)
                break
    return sorted(out, key=lambda p: p.arxiv or "")


def head_role_flags(roles: Sequence[HeadRoles], features: Mapping[str, int], description: str,
                    class_line: tuple[str, int], rules: EvidenceRules = DEFAULT_RULES) -> list[FlagClaim]:
    """UNDISCLOSED_PRIOR_ART from how the method keeps, not how it is written: in at least ``head_roles_split`` of the
    views of a source (the scored calls or the bank: either is a measurement of the method; a method can hide on
    one, not make the other unsaid), some heads keep only the opening tokens and the newest run at every budget and
    others choose by content — the published split into streaming and retrieval heads. No paper of that family is
    credited. A proof when the code computes nothing of its own beside the split (``_ROLE_FILLER``); an indication
    for a judge to weigh when it does (the split is then a part of a method of its own, uncredited)."""
    seen = split_roles(roles, rules)
    if not seen:
        return []
    papers = head_role_papers()
    if not papers or any(credit(description, p).credited for p in papers):
        return []
    r = max(seen, key=lambda r: r.split_share)
    own = role_extras(features)
    names = ", ".join(f"{p.short_name} (arXiv {p.arxiv})" if p.arxiv else p.short_name for p in papers)
    quote, line = class_line
    return [FlagClaim(
        flag="UNDISCLOSED_PRIOR_ART", quote=quote or "method.py", location=f"method.py:{line}",
        raised_by="evidence:behaviour", strength="indication" if own else "proof",
        explanation=(f"it splits each layer's heads into streaming heads and heads that choose by content, measured on "
                     f"its kept sets ({r.source}: {r.summary}; at or above {rules.head_roles_split:g}): the published "
                     f"idea of {names}; "
                     + (f"the code computes {', '.join(own)} of its own beside it" if own else
                        "the code computes nothing of its own beside it (which queries score, pooling, protection)")
                     + "; the description credits none of them"))]
