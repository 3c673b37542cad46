"""MISSTATED_METHOD offline: the mechanism the description says the method uses, against what the code computes.

The description's own sections that state the method (Idea, Method summary) are read sentence by sentence for
mechanism words — learned weights, entropy, clustering, a query window, recency, norms, variance, accumulation,
pooling, random choice, redundancy, budgets per layer or head — each mapped to the operations
``evidence.computation`` extracts from code. A mechanism stated affirmatively (not negated, not set against
another work, not a limitation) whose operations appear nowhere in the code's data flow is a candidate, with both
quotes: the description's sentence, and what the code computes instead.

Strength (the rubric's MISSTATED_METHOD rule): a **proof** when the code shows the mechanism neither in its data
flow nor in any operation it calls (a loose reading: ``log`` for entropy, ``Linear`` or a table of fitted numbers for
learned weights...), or when the method keeps the same tokens as a baseline (``behaviour_same``) whose rule lacks
the mechanism too — the description then states a method the code does not implement. When only the data flow
misses it but some call could compute it, an indication for a judge.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reviewbench.description import parse_description
from reviewbench.evidence.behaviour import BehaviourMatch
from reviewbench.evidence.computation import called_names, computation
from reviewbench.priorart import load_index
from reviewbench.rubric import EvidenceRules
from reviewbench.verdict import FlagClaim


@dataclass(frozen=True)
class Mechanism:
    label: str
    words: re.Pattern[str]
    features: frozenset[str]  # any of these in the data flow shows it
    calls: frozenset[str]  # any of these called (loosely) could show it


def _m(label: str, words: str, features: str, calls: str) -> Mechanism:
    return Mechanism(label, re.compile(words, re.I), frozenset(features.split()), frozenset(calls.split()))


MECHANISMS = [
    _m("learned weights", r"\b(?:(?:learn(?:ed|t|able)|trained|fitted|fine-?tuned)\s+(?:[\w-]+\s+){0,2}"
                          r"(?:scorers?|weights?|gates?|predictors?|polic(?:y|ies)|importances?|coefficients?|probes?"
                          r"|networks?|mlps?|tables?|models?)|mlp|neural (?:scorer|network|gate))\b",
       "learned_weights learned_gate key_projection",
       "Linear Parameter Conv1d load load_state_dict from_pretrained load_file Embedding"),
    _m("entropy", r"\bentrop(?:y|ies|ic)\b", "entropy", "log log2 log1p entr xlogy special_entr"),
    _m("clustering", r"\b(clustering|k-?means|centroids?|cluster(?:s|ed)? (?:the |its )?(?:keys|tokens))\b", "key_similarity mean_key merge",
       "kmeans cdist cosine_similarity normalize argmin"),
    _m("a query window", r"\b(observation window|query window|last \d+ queries|window of (?:the )?(?:last|recent) "
                         r"queries|recent queries)\b", "window_queries last_query question_queries", ""),
    _m("recency", r"\b(recency|most recent tokens|recent tokens|sliding window|recent window|local window)\b",
       "recent", ""),
    _m("key norms", r"\b(key (?:l2[- ])?norms?|(?:l2[- ])?norms? of (?:the |each )?keys?|k-?norm)\b", "key_norm", "norm vector_norm"),
    _m("value norms", r"\b(value (?:l[12][- ])?norms?|(?:l[12][- ])?norms? of (?:the |each )?values?)\b", "value_norm", "norm vector_norm"),
    _m("variance", r"\bvariances?\b", "attention_variance query_statistics key_variance", "var std var_mean std_mean"),
    _m("accumulated attention", r"\b(accumulat(?:ed|es|ing|ion)|cumulative|heavy[- ]hitters?|running sum)\b",
       "accumulate", "cumsum sum remember recall"),
    _m("random selection", r"\b(random (?:selection|eviction|subset|sampling|share|choice)|randomly (?:chosen|selected|evicted|kept)"
                           r"|gumbel|stochastic)\b", "random",
       "rand randn randint randperm rand_like randn_like bernoulli multinomial"),
    _m("redundancy", r"\b(redundan(?:t|cy)|cosine similarit(?:y|ies)|duplicate)\b", "key_similarity mean_key",
       "cosine_similarity normalize norm"),
    # importance propagated over the token graph: attention composed with attention (A @ A), an eigenvector
    _m("graph propagation", r"\b(page-?rank|power (?:method|iteration)|random walks?|eigenvector centrality"
                            r"|propagat\w* (?:\w+ ){0,3}(?:graph|attention))\b", "attention_propagation",
       "matrix_power eig eigh eigvals svd"),
    _m("per-layer budgets", r"\b(per-layer budgets|layer-?wise budgets|budgets? (?:that )?(?:vary|varies|differ|falls?"
                            r"|shrinks?|grows?) (?:by|across|with) (?:layers?|depth)|fewer tokens in deeper layers)\b",
       "layer_budget pyramid", ""),
    _m("per-head budgets", r"\b(head-?wise budgets|budgets? (?:that )?(?:vary|varies|differ) (?:by|across) heads"
                           r"|(?:adaptive|allocat\w+) (?:\w+ ){0,3}(?:per|across|over) (?:kv )?heads)\b",
       "head_budget", ""),
]
NOT_STATED = re.compile(r"\b(no|not|never|without|nor|neither|instead of|rather than|unlike|avoid(?:s|ing)?|free of"
                        r"|does not|doesn't|no need|uniform|equal|same|fixed)\b", re.I)
STATE_SECTIONS = ("idea", "method_summary")


@dataclass(frozen=True)
class Misstatement:
    mechanism: str
    sentence: str
    line: int  # in DESCRIPTION.md
    strict: bool  # absent from the data flow and from every operation called


def _line_of(text: str, sentence: str) -> int:
    head = sentence[:40]
    for n, line in enumerate(text.splitlines(), 1):
        if head and head in line:
            return n
    return 1


def misstatements(description: str, method_src: str) -> list[Misstatement]:
    """Mechanisms the description states for its own method that the code does not compute (one per mechanism)."""
    from reviewbench.evidence.priorart_evidence import _sentences

    desc, _ = parse_description(description)
    features = set(computation(method_src).features)
    calls = called_names(method_src)
    names = {p.short_name.lower() for p in load_index().papers}
    out: list[Misstatement] = []
    seen: set[str] = set()
    for key in STATE_SECTIONS:
        sec = desc.sections.get(key)
        if sec is None:
            continue
        for sent in _sentences(sec.text):
            for mech in MECHANISMS:
                if mech.label in seen:
                    continue
                m = mech.words.search(sent)
                if m is None:
                    continue
                before = sent[:m.start()]
                clause = re.split(r"[;:,]|\bbut\b|\bwhile\b|\bwhereas\b", before)[-1]
                if NOT_STATED.search(clause) or any(n in clause.lower() for n in names if len(n) > 3):
                    continue  # negated, contrasted, or another work's mechanism
                if mech.features & features:
                    seen.add(mech.label)
                    continue
                seen.add(mech.label)
                strict = bool(mech.calls) and not (mech.calls & calls)  # words alone cannot show a slice pattern
                out.append(Misstatement(mech.label, sent.strip(), _line_of(description, sent.strip()), strict))
    return out


def _computes(method_src: str) -> tuple[str, str]:
    """What the code computes, in words, and the line of its last scoring operation (the second quote)."""
    feats = computation(method_src).features
    lines = method_src.splitlines()
    at = max((n for n in feats.values() if 0 < n <= len(lines)), default=0)
    quote = f"method.py:{at} `{lines[at - 1].strip()}`" if at else "method.py"
    return (", ".join(sorted(feats)) or "no scoring operation it can name"), quote


def _same_baseline_lacking(mechanism: str, behaviour: Sequence[BehaviourMatch], rules: EvidenceRules) -> str | None:
    """A baseline the method keeps the same tokens as (``behaviour_same``) whose own code lacks the mechanism too:
    then the method is that baseline, and the mechanism is not in it."""
    from reviewbench.evidence.similarity import baseline_sources

    mech = next(m for m in MECHANISMS if m.label == mechanism)
    sources = baseline_sources()
    for b in behaviour:
        if b.jaccard < rules.behaviour_same or not b.reference.startswith("baseline:"):
            continue
        name = b.reference.split(":", 1)[1].split("?")[0]
        src = sources.get(f"baseline:{name}")
        if src is not None and not (mech.features & set(computation(src).features)):
            return name
    return None


def misstated_flags(description: str, method_src: str, behaviour: Sequence[BehaviourMatch] = (),
                    rules: EvidenceRules | None = None) -> list[FlagClaim]:
    """One MISSTATED_METHOD candidate for the first stated mechanism the code lacks (a proof when strict or when the
    method behaves as a baseline whose rule lacks the mechanism too)."""
    found = misstatements(description, method_src)
    if not found:
        return []
    rules = rules or EvidenceRules()
    computes, code_quote = _computes(method_src)
    first = sorted(found, key=lambda m: not m.strict)[0]
    base = _same_baseline_lacking(first.mechanism, behaviour, rules)
    same = [b for b in behaviour if base and b.reference.split(":", 1)[-1].split("?")[0] == base]
    proof = first.strict or base is not None
    why = (f"the description states {first.mechanism} (DESCRIPTION.md:{first.line}), which the code does not compute: "
           f"it computes {computes} ({code_quote})")
    if base:
        why += f"; and it keeps the same tokens as the baseline {base} (Jaccard {same[0].jaccard:.2f})"
    if not first.strict:
        why += "; some operation it calls could compute it, so a judge must confirm"
    return [FlagClaim(flag="MISSTATED_METHOD", quote=first.sentence[:300], location=f"DESCRIPTION.md:{first.line}",
                      raised_by="evidence:description", strength="proof" if proof else "indication",
                      explanation=why)]
