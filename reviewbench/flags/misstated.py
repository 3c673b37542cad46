"""MISSTATED_METHOD offline: the mechanism the description says the method uses, against what the code computes.

The description's own sections that state the method (Method summary, Idea) are read sentence by sentence for the
mechanism concepts of ``evidence.stated`` — learned weights, entropy, mutual information, clustering, a codebook, a
sketch or hash, a low-rank approximation, a Kalman filter, a decay, accumulation, optimal transport, submodular
selection, curvature, a Fourier transform, a bandit, merging, norms, variance, random choice, redundancy, a query
window, recency, budgets per layer or head — each known by many phrasings (stems, any hyphenation) and mapped to
the operations ``evidence.computation`` extracts from code. A mechanism stated as what this method does (not
negated, not another work's, not future work, not a goal or an interpretation: ``stated``) none of whose
operations appears in the code's data flow is a candidate, with both quotes: the description's sentence, and what
the code computes instead, and the operation the mechanism needs.

Strength (the rubric's MISSTATED_METHOD rule): a **proof** when the Method summary states it and the code shows it
neither in its data flow nor in any operation it calls nor in a shape that could compute it (a loose reading:
``log`` for entropy, ``Linear`` or fitted numbers for learned weights, ``randn``/``sign`` for a sketch, ``svd`` for
a low-rank basis, a value carried across calls for a filter...), or when the method keeps the same tokens as a
baseline (``behaviour_same``) whose rule lacks the mechanism too. Stated in the Idea alone (motivation: "keys are
nearly low-rank" is no claim about the code), or only the data flow misses it: an indication for a judge.
"""

from __future__ import annotations

import ast

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from reviewbench.description import own_and_sibling_text, parse_description
from reviewbench.evidence.behaviour import Allocation, BehaviourMatch
from reviewbench.evidence.computation import called_names, computation, scored_features
from reviewbench.evidence.priorart_evidence import PROTECTIVE
from reviewbench.evidence.stated import (BY_LABEL, DATA_TRANSFORMS, QUERY_CHOICE, denials, denied, mentions, stated,
                                         states_variation,
                                         structures)
from reviewbench.rubric import EvidenceRules
from reviewbench.verdict import FlagClaim


STATE_SECTIONS = ("method_summary", "idea")


@dataclass(frozen=True)
class Misstatement:
    mechanism: str
    sentence: str
    line: int  # in DESCRIPTION.md
    strict: bool  # absent from the data flow and from every operation called (and stated in the Method summary)
    needs: str = ""  # the operation the mechanism requires, in words
    phrase: str = ""  # the words that state it
    absent: bool = True  # no operation called and no shape of the code could compute it (strict but for the section)
    summary: bool = False  # stated in the Method summary (not the Idea alone)
    shown: bool = False  # the code computes it (a budget hook): only what the method keeps can contradict the words


def _line_of(text: str, sentence: str) -> int:
    """The line of DESCRIPTION.md a sentence starts on (a sentence may run over several lines)."""
    at = text.find(sentence) if sentence else -1
    if at >= 0:
        return text.count("\n", 0, at) + 1
    head = sentence.split("\n", 1)[0][:40]
    for n, line in enumerate(text.splitlines(), 1):
        if head and head in line:
            return n
    return 1


def _own_sentences(description: str) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    """(section key, sentence, the method's own name words) of each sentence of the sections that state what the
    method does (``STATE_SECTIONS``); the title's capitalised words name the method itself, not another work."""
    from reviewbench.evidence.priorart_evidence import _sentences

    from reviewbench.priorart import load_index

    desc, _ = parse_description(description)
    papers = {p.short_name.lower() for p in load_index().papers}
    # (a paper of the index named in the title is the work it ports or builds on, "a port of MoBA's gate": another
    # work's name in the sentences, never the method's own)
    own = tuple(w for w in re.findall(r"[A-Za-z][A-Za-z0-9-]{3,}", desc.title or "")
                if not w.islower() and w.lower() not in papers)
    for key in STATE_SECTIONS:
        sec = desc.sections.get(key)
        if sec is None:
            continue
        # the author's own headings after the section ("## Why it should work", "## What it does not do") are read,
        # but not as this section
        own_text, sibling_text = own_and_sibling_text(sec, description)
        for sent in _sentences(own_text):
            yield key, sent, own
        for sent in _sentences(sibling_text):
            yield "other", sent, own


# what a selection by position alone computes (the protected spans prior art reads as protection, budgets, which
# phase, a pick's neighbours)
POSITIONAL = PROTECTIVE | {"layer_budget", "pyramid", "decode", "pick_neighbours"}


def misstatements(description: str, method_src: str) -> list[Misstatement]:
    """Mechanisms the description states for its own method that the code does not compute (one per mechanism).

    Each sentence of the Method summary and the Idea is read for the concepts of ``evidence.stated`` (many
    phrasings each); a mention counts only where it states the concept as what this method does
    (``stated``: not negated, not another work's, not future work, not a goal or an interpretation). A concept
    none of whose features the data flow shows is a candidate; strict (a proof) when no operation the code calls
    and no shape of the code could compute it either, and it is stated in the Method summary (the Idea alone
    motivates: an observation there, "keys are nearly low-rank", is no claim about the code)."""
    calls = called_names(method_src, DATA_TRANSFORMS)
    comp = computation(method_src)
    shapes = structures(method_src) | ({"values"} if "V" in comp.reads else set()) | (
        {"queries"} if "Q" in comp.reads else set())  # the values, the queries read at all
    # what the method computes where it is scored: what only a design guard's early return computes (the newest
    # tokens kept when there are no queries) is not the method the description states
    features = set(scored_features(method_src)) | (shapes & {"centred", "staged", "gram"})  # a shape computes it
    if not features - POSITIONAL - QUERY_CHOICE:
        shapes.add("positional")  # places chosen by position alone: the same places for every head, whatever it reads
    found: dict[str, Misstatement] = {}
    for key, sent, own in _own_sentences(description):
        for m in mentions(sent):
            c = m.concept
            # a concept that only a value carried between calls can compute (a memory across evictions, another
            # layer's selection) is shown by that state, not by a feature a single call's sum or fade also shows
            held = c.structure != frozenset({"state"}) or "state" in shapes
            if c.shows & features and not c.budget and held:
                continue
            ok, _why = stated(sent, m, own)
            if not ok:
                continue
            if c.shows & features and held:
                # budgets said to vary where the code has a budget hook: a candidate only the measured allocation
                # can prove (a hook that hands every layer the same budget computes no variation)
                if c.label not in found and key == "method_summary":
                    found[c.label] = Misstatement(c.label, sent.strip(), _line_of(description, sent.strip()), False,
                                                  c.needs, m.text, False, True, shown=True)
                continue
            absent = bool(c.reads - comp.reads) or (not (c.could & calls) and not (c.structure & shapes))
            strict = (not c.words_only and absent or states_variation(sent) and
                      _one_budget_for_all_layers(c.label, method_src, features)) and key == "method_summary"
            prev = found.get(c.label)
            if prev is None or prev.shown or (strict and not prev.strict):
                found[c.label] = Misstatement(c.label, sent.strip(), _line_of(description, sent.strip()), strict,
                                              c.needs, m.text, absent, key == "method_summary")
    # a mechanism the data flow shows for any concept stated alongside is not contradicted by its siblings
    return list(found.values())


_LAYER_READ = re.compile(r"\.layer\b|\blayer_idx\b|\blayer_index\b")


def _one_budget_for_all_layers(mechanism: str, method_src: str, features: set[str]) -> bool:
    """Budgets said to differ by layer, in code that cannot make them differ: the harness hands every layer the same
    budget unless the method defines ``layer_budgets``, and this code neither defines it, nor reads which layer it is
    in, nor computes how many tokens to keep from the data (a count per layer or head): every layer keeps the same
    number, whatever it reads."""
    if _ALLOCATED.get(mechanism) != "layers" or features & {"layer_budget", "pyramid", "head_budget", "group_budget"}:
        return False
    try:
        tree = ast.parse(method_src)
    except (SyntaxError, ValueError):
        return False
    hooks = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return "layer_budgets" not in hooks and not _LAYER_READ.search(method_src)


_QUERY_TEST = re.compile(r"\bqueries\s+is\s+(?:not\s+)?None\b|\bif\s+(?:not\s+)?(?:view\.)?queries\b")
# a denial that opens its sentence as a circumstance: "Without queries, ...", "With no queries the method ..."
_OPENING_CONDITION = re.compile(r"^\W*(?:on\s+board\s+\w+,?\s+)?(?:without|with\s+no|lacking)\b", re.I)


@dataclass(frozen=True)
class Denial:
    """The description says the method reads no queries (or computes no attention); the code's score does."""

    what: str  # "no queries" / "no attention"
    sentence: str
    line: int  # in DESCRIPTION.md
    strict: bool  # stated in the Method summary
    phrase: str
    feature: str  # what the code computes with the queries
    code_line: int  # where (method.py)


def _names_itself(sentence: str, own: tuple[str, ...]) -> bool:
    """The sentence opens with the method's own name (its title's words, in order): it says what this method does,
    in whichever section ("Axis Gate finds that axis from the keys alone, with no queries")."""
    words = re.findall(r"[A-Za-z][A-Za-z0-9-]*", sentence)
    return bool(own) and [w.lower() for w in words[:len(own)]] == [w.lower() for w in own]


def contradicted_denials(description: str, method_src: str) -> list[Denial]:
    """Denials (``evidence.stated.denials``: "query-free", "no queries", "attention-free", "without attention")
    stated for this method in the Method summary or Idea (``denied``: not negated, not another work's, not a
    hypothetical) while the code's data flow shows its score reading the queries: attention, partial logits of
    selected channels, what is read off attention, query statistics (``QUERY_FEATURES``), or a choice of queries it
    computes with on a line of its own. The opposite of a missing mechanism: the code computes what the description
    says it does not, so the data flow is the proof (strict when stated in the Method summary, or in the Idea by a
    sentence that opens with the method's own name: a statement of what it does, not of a motivation)."""
    feats = computation(method_src).features
    # the code tests whether it was handed queries at all: "Without queries, ..." opening a sentence is that branch
    tests_queries = bool(_QUERY_TEST.search(method_src))
    found: dict[str, Denial] = {}
    for key, sent, own in _own_sentences(description):
        for m in denials(sent):
            if tests_queries and m.concept.label == "no queries" and _OPENING_CONDITION.match(sent[:m.end]):
                continue  # a case the code handles ("without queries it keeps the newest"), not what the score reads
            shown = sorted(((f, n) for f, n in feats.items()
                            if f in m.concept.shows or (m.concept.label == "no queries" and f in QUERY_CHOICE
                                                        and n > 0)), key=lambda x: (x[1] <= 0, x[1]))
            if not shown:
                continue
            ok, _why = denied(sent, m, own)
            if not ok:
                continue
            strict = key == "method_summary" or key == "idea" and _names_itself(sent, own)
            prev = found.get(m.concept.label)
            if any(d.sentence == sent.strip() for d in found.values()):
                continue  # "no queries and no attention": one contradiction, one flag
            if prev is None or (strict and not prev.strict):
                found[m.concept.label] = Denial(m.concept.label, sent.strip(), _line_of(description, sent.strip()),
                                                strict, m.text, shown[0][0], shown[0][1])
    return list(found.values())


def _computes(method_src: str) -> tuple[str, str]:
    """What the code computes, in words, and the line of its last scoring operation (the second quote)."""
    feats = computation(method_src).features
    lines = method_src.splitlines()
    at = max((n for n in feats.values() if 0 < n <= len(lines)), default=0)
    quote = f"method.py:{at} `{lines[at - 1].strip()}`" if at else "method.py"
    return (", ".join(sorted(feats)) or "no scoring operation it can name"), quote


def _same_baseline_lacking(mechanism: str, behaviour: Sequence[BehaviourMatch], rules: EvidenceRules,
                           bar: float | None = None) -> str | None:
    """A baseline the method keeps the same tokens as (at ``bar``, ``behaviour_same`` by default) whose own code
    lacks the mechanism too: then the method is that baseline, and the mechanism is not in it. A baseline that calls an
    operation that could compute the mechanism (``Concept.could``: Expected Attention's ``view.rotate`` of the queries
    is the un-rotation its description states) lacks nothing a loose reading can tell: its behaviour proves nothing."""
    from reviewbench.evidence.computation import called_names
    from reviewbench.evidence.similarity import baseline_sources

    mech = BY_LABEL[mechanism]
    sources = baseline_sources()
    for b in behaviour:
        if b.jaccard < (rules.behaviour_same if bar is None else bar) or not b.reference.startswith("baseline:"):
            continue
        name = b.reference.split(":", 1)[1].split("?")[0]
        src = sources.get(f"baseline:{name}")
        if src is not None and not (mech.shows & set(computation(src).features)) and \
                not (mech.could and mech.could & called_names(src)):
            return name
    return None


# the fewest measured calls (or prompt groups) with one allocation that may contradict a stated variation: fixed from
# what a measurement is (one call can be a coincidence of one prompt), not from any case
ALLOCATION_MIN_CALLS = 4
_ALLOCATED = {"per-head budgets": "heads", "per-layer budgets": "layers"}


def _uniform_allocation(m: Misstatement, allocation: Sequence[Allocation]) -> str | None:
    """Where the Method summary says budgets vary across heads (or layers) and every measured source shows the
    method's heads (layers) keeping the same number of tokens in every call (prompt) it measured, at least
    ``ALLOCATION_MIN_CALLS`` of them: what it keeps contradicts the words, in any idiom. The measurement, in words."""
    axis = _ALLOCATED.get(m.mechanism)
    if axis is None or not m.summary or not states_variation(m.sentence):
        return None
    seen = [(a.source, a.head_views if axis == "heads" else a.layer_groups,
             a.head_uneven if axis == "heads" else a.layer_uneven) for a in allocation]
    seen = [x for x in seen if x[1] >= ALLOCATION_MIN_CALLS]
    if not seen or any(uneven for _, _, uneven in seen):
        return None
    where = " and ".join(f"{n} {'calls' if axis == 'heads' else '(budget, prompt) groups'} on the "
                         f"{'scored calls' if src == 'benchmark' else 'behaviour bank'}" for src, n, _ in seen)
    return f"its {axis} keep the same number of tokens in every one of {where}"


def misstated_flags(description: str, method_src: str, behaviour: Sequence[BehaviourMatch] = (),
                    rules: EvidenceRules | None = None, allocation: Sequence[Allocation] = ()) -> list[FlagClaim]:
    """One MISSTATED_METHOD candidate per stated mechanism the code lacks, proofs first (a proof when strict, when
    the method behaves as a baseline whose rule lacks the mechanism too, or when budgets said to vary across heads
    or layers are the same in every measured call); each quotes its sentence and names the operation the mechanism
    needs."""
    found = misstatements(description, method_src)
    denied_ = contradicted_denials(description, method_src)
    if not found and not denied_:
        return []
    rules = rules or EvidenceRules()
    computes, code_quote = _computes(method_src)
    out: list[FlagClaim] = []
    lines = method_src.splitlines()
    for d in denied_:
        where = (f"method.py:{d.code_line} `{lines[d.code_line - 1].strip()}`" if 0 < d.code_line <= len(lines)
                 else "method.py (a class attribute)")
        what = "a score that reads no query" if d.what == "no queries" else "a score that computes no attention"
        on = "the queries" if d.what == "no queries" else "attention"
        why = (f"the description states {what} (DESCRIPTION.md:{d.line}: \"{d.phrase}\"), but the code's score "
               f"depends on {on}: it computes {d.feature} ({where}); it computes {computes}")
        if not d.strict:
            why += "; stated in the Idea only, so a judge must confirm"
        out.append(FlagClaim(flag="MISSTATED_METHOD", quote=d.sentence[:300], location=f"DESCRIPTION.md:{d.line}",
                             raised_by="evidence:description", strength="proof" if d.strict else "indication",
                             explanation=why))
    for m in found:
        # behaving as a baseline whose rule lacks the mechanism proves it absent at the rubric's "same" bar where the
        # code has no operation or shape that could compute it, and only at its "identical" bar where it has one (a
        # value-weighted SnapKV keeps 0.95 of SnapKV's tokens and does weigh by its values; a log of a constant
        # beside a window changes nothing it keeps)
        base = _same_baseline_lacking(m.mechanism, behaviour, rules,
                                      rules.behaviour_same if m.absent else rules.behaviour_identical)
        same = [b for b in behaviour if base and b.reference.split(":", 1)[-1].split("?")[0] == base]
        uniform = _uniform_allocation(m, allocation)
        if m.shown and uniform is None:
            continue  # the code computes budgets and nothing measured says they never vary
        # (a measured allocation whose layers keep different numbers overrides the code's reading: it varies somehow)
        varies = _ALLOCATED.get(m.mechanism) == "layers" and any(a.layer_uneven > 0 for a in allocation)
        proof = m.strict and not varies or base is not None or uniform is not None
        why = (f"the description states {m.mechanism} (DESCRIPTION.md:{m.line}: \"{m.phrase}\"), which the code does "
               f"not compute: it requires {m.needs}, and no such operation is in method.py; it computes {computes} "
               f"({code_quote})") if not m.shown else (
            f"the description states {m.mechanism} (DESCRIPTION.md:{m.line}: \"{m.phrase}\"); the code has a budget "
            "hook, but what it keeps shows no variation")
        if m.strict and not varies and _ALLOCATED.get(m.mechanism) == "layers":
            why += ("; it defines no layer_budgets hook, never reads which layer it is in and computes no count from "
                    "the data, so the harness's one budget holds in every layer")
        if base:
            why += f"; and it keeps the same tokens as the baseline {base} (Jaccard {same[0].jaccard:.2f})"
        if uniform:
            why += f"; and what it keeps shows none: {uniform}"
        elif not m.strict:
            why += ("; stated in the Idea only, or some operation it calls could compute it, or words alone cannot "
                    "show it in code, so a judge must confirm")
        out.append(FlagClaim(flag="MISSTATED_METHOD", quote=m.sentence[:300], location=f"DESCRIPTION.md:{m.line}",
                             raised_by="evidence:description", strength="proof" if proof else "indication",
                             explanation=why))
    out.sort(key=lambda f: f.strength != "proof")
    return out
