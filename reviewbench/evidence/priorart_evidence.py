"""Prior art retrieved from what the code computes, and whether the description genuinely credits it.

Retrieval: the query comes from ``computation.computation`` — the operations the code performs and what they
act on (softmax over query·key, accumulated attention, key norms, sink/recent slices, pooling, query
statistics, key-key cosine similarity, per-layer or per-head budgets...), mapped to the field's words — so
renaming every identifier changes nothing. It is searched with BM25 (the code words are keywords, where the
embedding half of the hybrid search only blurs them); the method summary and idea are searched apart
(hybrid) and their hits come after. The author's related work is never part of any query.

Credit: a paper is credited only when the description *attributes* the idea to it — a mention in "Builds
on", or a sentence elsewhere that states use ("builds on", "extends", "is", "follows", "as in"...) — and the
mention is not a contrast ("unlike TOVA", "rather than H2O", "outperforms SnapKV") or a negation. A mention
is the arXiv id, the title, the paper's name (generic names such as "Expected Attention" or "Random" only
with a citation marker beside them, so the phrase "expected attention" is not a name), or "Surname et al."
with the year, when that pair names one paper of the index and the surname is not a common one.

Credit coverage: a paper whose rule the code computes is also credited when the description credits another
paper that covers that computation (``covers``): a ruled paper whose rule holds the matched one, or a paper with no
rule in the index whose own entry (title, key idea, keywords) states every feature the code matched — a credited
LazyLLM port is not an uncredited PyramidInfer port. The index entry decides, never the description's words, so
crediting an unrelated paper covers nothing.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from reviewbench.description import parse_description
from reviewbench.evidence.computation import computation
from reviewbench.evidence.computation.features import MEAN_QUERY_ONLY
from reviewbench.priorart import Paper, load_index
from reviewbench.priorart import generic_name as _generic
from reviewbench.priorart import name_pattern as _name_pattern

CODE_HITS = 4  # hits from the code query before the summary's hits
M = TypeVar("M")


class Credit(BaseModel):
    credited: bool
    reason: str  # why (e.g. "attributed in Builds on", "named only as a contrast", "not named")
    quote: str | None = None  # the sentence that attributes (or that only contrasts)
    section: str | None = None  # the section it stands in
    via: str | None = None  # credited through another paper's credit (``covers``): that paper, by short name


class PriorArtHit(BaseModel):
    short_name: str
    title: str
    arxiv: str | None
    year: int | None
    score: float  # BM25
    cosine: float | None  # embedding similarity (None without the sentence model, and for code hits)
    credited: bool  # the description attributes it (see ``Credit``)
    via: Literal["computation", "code", "summary"] = "code"  # which query found it (computation: its rule matched)
    credit: Credit | None = None


class ComputationMatch(BaseModel):
    """A paper whose scoring rule, in operations, the code computes: the retrieval's own evidence."""

    short_name: str
    title: str
    arxiv: str | None
    baseline: str | None = None
    rule: str  # the paper's rule in operations (the one it met: ``which``)
    # which of the paper's rules the code computes: its own scoring rule, or its training-free port (what a learned
    # method's trained part is trained to approximate, computed directly: ``Paper.ops_untrained``)
    which: Literal["rule", "training-free port"] = "rule"
    required: list[str] = []  # the operations that rule requires ("a|b": either); empty: the paper's ``ops``
    matched: dict[str, int]  # each of the paper's operations -> the line of method.py that computes it (0: a class attribute)
    extra: list[str]  # what the code computes beyond the rule (what any method adds around a score excluded)
    # "same": nothing beyond the rule (at most one paper's worth of cosmetics); "family": the rule plus at most one
    # operation of its own (and cosmetic ones: which queries, pooling, aggregation)
    level: Literal["same", "family"]
    credited: bool
    credit: Credit
    # the line of the return whose path computes the rule, where only one return path of the code does (a fallback
    # or probe-detecting branch computes something else): None when the code as a whole does
    branch: int | None = None
    # a "same" match whose extras are all operations of a paper the description credits: that paper's short name
    # (the code is this rule beside the credited one, nothing of its own: ``_beside_credited``)
    beside: str | None = None
    # the work outside the index that the description declares the whole method a port of (``declared_port``): what
    # that work computes the index cannot say, so a rule the code meets may be that work's own (a judge decides)
    declared: str | None = None


class PriorArtEvidence(BaseModel):
    query: str  # the code query (the field's words for what the code computes)
    features: dict[str, int]  # computation feature -> first line in method.py (0: a class attribute)
    summary_query: str
    hits: list[PriorArtHit]
    computed: list[ComputationMatch] = []  # papers whose rule the code computes, most specific first


def code_query(source: str) -> str:
    return computation(source).words()


# --- credit -----------------------------------------------------------------------------------------------

_ABBREV = re.compile(r"\b(et al|e\.g|i\.e|cf|vs|Fig|Sec|Eq|approx)\.", re.I)
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[\"'])|\n\s*[-*+]\s+|\n{2,}")
# "while" that opens a time, not a contrast: "while decoding", "while in the window"
_WHILE_TEMPORAL = r"\s+(?:\w+ing|in|inside|within|during|still)\b"
CONTRAST = re.compile(r"\b(unlike|in contrast (?:to|with)|contrary to|as opposed to|rather than|instead of"
                      r"|differ(?:s|ent)? from|compared (?:to|with)|versus|vs\.?|outperform(?:s|ing)?|beat(?:s|ing)?"
                      r"|better than|worse than|improv(?:e|es|ing) (?:on|over|upon)|than|whereas|while(?!" + _WHILE_TEMPORAL + r")|but not"
                      r"|beyond)\b", re.I)
# the queries board A hands over as a rule's window: the question and the closing rows beside it
QUERY_WINDOWS = frozenset({"question_queries", "window_queries"})
_GLOSS = re.compile(r"\([^()]*\)")
SUBSTITUTION = re.compile(r"\b(?:instead of|rather than|in place of)\b", re.I)
NEGATION = re.compile(r"\b(not|never|no|nothing|without|neither|nor)\b|n't\b", re.I)
CITATION_MARK = re.compile(r"\bet al\b|\(\s*(?:19|20)\d{2}\s*\)|,\s*(?:19|20)\d{2}\b|arxiv|\b\d{4}\.\d{4,5}\b"
                           r"|https?://|\[\d+\]", re.I)
# Surnames too common to identify a paper on their own (the most frequent family names among ML authors).
COMMON_SURNAMES = frozenset("""zhang wang li liu chen yang huang zhao wu zhou xu sun ma zhu hu guo he lin gao luo
    zheng liang song tang xie han feng deng cao peng yu kim lee park choi jung kang smith johnson brown jones
    nguyen tran singh kumar sharma""".split())
ALIASES = {"Random": ["random eviction", "random selection", "random baseline"]}


def _sentences(text: str) -> list[str]:
    protected = _ABBREV.sub(lambda m: m.group(0).replace(".", "\x00"), text)
    return [s.replace("\x00", ".").strip() for s in _SENT.split(protected) if s and s.strip()]


@lru_cache(maxsize=1)
def _index_pairs() -> dict[tuple[str, int], int]:
    """(first author's surname, year) -> how many index papers have it."""
    pairs: dict[tuple[str, int], int] = {}
    for p in load_index().papers:
        if p.first_author and p.year:
            key = (p.first_author.split()[-1].lower(), p.year)
            pairs[key] = pairs.get(key, 0) + 1
    return pairs


def _mentions(sentence: str, paper: Paper, names: list[str], identified: bool = False) -> list[int]:
    """Offsets where ``sentence`` names ``paper`` (or one of ``names``), by the rules of the module doc.
    ``identified``: the description cites the paper unmistakably elsewhere (its arXiv id or its title), so its name
    in its own capitals names it even where it is an ordinary word ("Quest's page bound")."""
    at: list[int] = []
    if paper.arxiv:
        at += [m.start() for m in re.finditer(re.escape(paper.arxiv), sentence)]
    if paper.title and len(paper.title) >= 20:
        i = sentence.lower().find(paper.title.lower()[:40])
        if i >= 0:
            at.append(i)
    marked = identified or bool(CITATION_MARK.search(sentence))
    for n in [paper.short_name, *names]:
        if not n:
            continue
        pat = _name_pattern(n)
        if _generic(n) and not marked:
            continue
        at += [m.start() for m in pat.finditer(sentence)]
    for alias in ALIASES.get(paper.short_name, []):
        at += [m.start() for m in re.finditer(re.escape(alias), sentence, re.I)]
    if paper.first_author and paper.year:
        surname = paper.first_author.split()[-1]
        for m in re.finditer(rf"\b{re.escape(surname)}\s+et\s+al\.?,?\s*\(?((?:19|20)\d{{2}})", sentence):
            year = int(m.group(1))
            unique = _index_pairs().get((surname.lower(), paper.year), 0) == 1
            # the year one off (a preprint's year against the venue's), unless another paper by that surname has
            # the year given: "Shi et al., 2024" names Shi's 2024 paper, not Shi's 2025 one
            nearer = year != paper.year and _index_pairs().get((surname.lower(), year), 0) > 0
            if abs(year - paper.year) <= 1 and unique and not nearer and surname.lower() not in COMMON_SURNAMES:
                at.append(m.start())
    return sorted(set(at))


@lru_cache(maxsize=1)
def _titles() -> re.Pattern[str]:
    """Every index title of at least 20 characters, longest first."""
    titles = sorted({p.title for p in load_index().papers if len(p.title) >= 20}, key=len, reverse=True)
    return re.compile("|".join(re.escape(t) for t in titles), re.I)


def _without_titles(sentence: str) -> str:
    """``sentence`` with each quoted index title blanked out (same length, so offsets hold): a title's own words
    ("Beyond Attention or Similarity", "Not All Heads Matter") are the paper's, never the author's contrast or
    negation."""
    return _titles().sub(lambda m: "x" * len(m.group(0)), sentence)


def _contrasted(sentence: str, at: int) -> bool:
    """A contrast or negation before the mention, in the same clause of the sentence."""
    before = sentence[:at]
    clause = re.split(r"[;:]|\bbut\b|\band we\b", before)[-1]
    words = clause.split()
    near = " ".join(words[-8:])
    return bool(CONTRAST.search(near) or NEGATION.search(" ".join(words[-5:])))


# What states use or derivation by itself, wherever the mention stands in its clause.
STRONG_USE = re.compile(r"\b(build(?:s|ing)? (?:up)?on|built (?:up)?on|based on|extend(?:s|ed|ing)?|adapt(?:s|ed|ing)?"
                        r"|borrow(?:s|ed|ing)?|re-?use[sd]?|re-?using|taken from|takes? from|inspired by|derived? from"
                        r"|derives?|port(?:s|ed|ing)?|re-?implement(?:s|ed|ation)?|implement(?:s|ed)?"
                        r"|follow(?:s|ed|ing)?|as in|same as|identical to|reproduc(?:e|es|ed)|variant of"
                        r"|modif(?:y|ies|ied)|on top of|credit(?:s|ed)?|due to|we (?:use|apply|take|keep|combine)"
                        r"|combin(?:e|es|ed|ing)|this is|unchanged)\b", re.I)
# A verb that states use only when the mention comes after it ("the allocation is PyramidKV"); with the mention
# before it ("TOVA is per layer", "X profiles heads"), the sentence describes the other work.
WEAK_USE = re.compile(r"\b(is|are|was|equals|comes? from|from|after|use[sd]?|using|appl(?:y|ies|ied))\b", re.I)
# A sentence that only mentions: the work exists, is related, is one example among others.
MENTION_ONLY = re.compile(r"\b(exists?|existed|has been|have been|is known|are known|related|see also|such as"
                          r"|includes?|including|e\.g|for example|for instance|among|other (?:methods|approaches|work)"
                          r"|surveys?|alternatives?|cf)\b", re.I)
# The author's own method set against the other work in another clause ("X profiles heads offline; ours is per prompt").
OURS = re.compile(r"\b(ours|our (?:method|rule|approach|score|scorer|selection|version|budget|allocation)"
                  r"|we instead|instead,? we|here,? instead|this method|this work|our own)\b", re.I)
# The author's own part stated as an addition to what the section names ("Voting across windows is our small
# addition", "we add a vote"): the works named beside it, without a contrast, are what it is added to. (A change,
# a replacement or "the contribution" sets the work aside rather than building on it.)
ADDITION = re.compile(r"\b(?:(?:is|are) (?:our|the) (?:only |small |one |main |sole |own )*additions?|our (?:only |"
                      r"small |one |main |sole |own )*additions? (?:is|are)|we (?:only )?add)\b", re.I)
_CLAUSE = re.compile(r"[;:\u2014]|\s-\s|\bbut\b|\bwhereas\b|\bwhile\b(?!" + _WHILE_TEMPORAL + r")|\balthough\b", re.I)


def _clause_at(sentence: str, at: int) -> tuple[str, int]:
    """The clause holding offset ``at``, and the offset within it."""
    start = 0
    for m in _CLAUSE.finditer(sentence):
        if m.start() > at:
            return sentence[start:m.start()], at - start
        start = m.end()
    return sentence[start:], at - start


# "Source: X (...)", "**Original method:** X", "Port of: X": a label that says where the method comes from; a title
# "# X port (board A)" or "# Port of X": the whole description says it is that work's method
_SOURCE_LABEL = re.compile(r"^\W*(?:sources?|original(?: method| paper| work)?|ported from|port of|based on|reference"
                           r"(?: paper)?|paper|method)\W{0,3}:\W*", re.I)
_PORT_TITLE = re.compile(r"^\s*#+\s*(?:(?:a|an|the)\s+)?(?:port|reimplementation|reproduction|re-implementation)s?\s+of\s+",
                         re.I)


# a heading of its own over the citation ("## Source", "## Original method"): the section says where the method comes from
_SOURCE_HEADING = re.compile(r"^\s*#+\s*(?:sources?|original(?: method| paper| work)?|ported from|port of|reference"
                             r"(?: paper)?|the paper|based on)\s*:?\s*$", re.I)


def _labelled_source(sentence: str, names: Sequence[str]) -> bool:
    """A labelled source ("Source: GemFilter (Shi et al., 2024)") or a title that names the method a port of the
    work ("# GemFilter port (board A)", "# Port of GemFilter"): attribution, not a mention."""
    for name in [n for n in names if n]:
        label = _SOURCE_LABEL.match(sentence)
        if label and sentence[label.end():].lower().startswith(name.lower()):
            return True
        title = _PORT_TITLE.match(sentence)
        if title and sentence[title.end():].lower().startswith(name.lower()):
            return True
        if re.match(r"^\s*#+\s*" + re.escape(name) + r"\s+(?:port|reimplementation|reproduction|re-implementation)\b",
                    sentence, re.I):
            return True
    return False


def _states_use(sentence: str, at: int, in_builds_on: bool) -> tuple[bool, str]:
    """Whether the sentence attributes the thing mentioned at ``at``: (credited, why not)."""
    clause, rel = _clause_at(sentence, at)
    if STRONG_USE.search(clause):
        return True, ""
    if in_builds_on and re.match(r"\s*(?:for|:|\u2014|-{1,2})\s+\S", _after_mention(sentence, at, sentence[at:].split(" ")[0])):
        return True, ""  # a Builds-on entry "X (Li et al., 2024) for the question-attention mass": what it gives
    possessive = re.match(r"[A-Za-z0-9.\- ]{0,40}?['\u2019]s\s+(?:\([^()]{0,80}\)\s*)?\w", clause[rel:])
    # a substitution after the mention ("X's score, with the max instead of the mean") changes the part taken; it
    # sets no other work against this one
    taken = bool(possessive or WEAK_USE.search(clause[:rel]))
    # (in "Builds on" a substitution after the mention says how a part is applied, "top-p applied to attention rows
    # instead of next-token distributions": no work set against this one; a work named after it is, by
    # ``_contrasted``)
    after = SUBSTITUTION.sub(" ", sentence[at:]) if taken or in_builds_on else sentence[at:]
    # "our score is X's ...": the author's own part named as the other work's, in the mention's clause, is no contrast
    ours = OURS.search(sentence[:at - rel] + " " + sentence[at:]) if taken else OURS.search(sentence)
    # (a gloss in brackets says what a named work does: "ChunkKV (spans rather than single tokens)" sets spans against
    # tokens, not this method against ChunkKV)
    contrast_elsewhere = bool(ours or CONTRAST.search(_GLOSS.sub(" ", sentence[:at] + after)))
    if possessive and not contrast_elsewhere and not MENTION_ONLY.search(sentence):
        return True, ""  # "X's scoring with a smaller window": the other work's part, taken
    if MENTION_ONLY.search(sentence):
        return False, "mentioned only (it exists, is related or is an example), no use stated"
    if contrast_elsewhere:
        return False, "named only as a contrast with this method"
    if WEAK_USE.search(clause[:rel]):
        return True, ""  # "the allocation is PyramidKV", "our rule is the one of Oren et al."
    if in_builds_on:
        return True, ""  # a bare entry of "Builds on" ("SnapKV (window attention scoring)")
    return False, "mentioned without a statement of use"


def credit(description: str, paper: Paper | None, names: list[str] = []) -> Credit:  # noqa: B006 - read only
    """Whether ``description`` attributes ``paper`` (or a thing known by ``names``, e.g. an earlier submission):
    a sentence that states use or derivation ("we build on X", "adapted from X", "X's scoring with ..."), or a
    bare entry of "Builds on". A contrast ("X profiles heads offline; ours is per prompt", "unlike X"), a negation,
    a mention ("related methods include X") or an "exists" sentence ("redundancy-aware selection exists: X") is
    not credit, in any section."""
    desc, _ = parse_description(description)
    target = paper or Paper(short_name=names[0] if names else "", title="")
    contrast_quote: str | None = None
    passing: tuple[str, str] | None = None
    unstated: list[tuple[str, str, str]] = []  # (section, its text, the sentence): a mention with no use stated
    # a text without the arena's sections is read as one body, where a mention must state use
    bodies = [(key, s.heading, s.text) for key in ("builds_on", "relation_to_prior_work", "idea", "method_summary",
                                                    "evidence", "limitations") if (s := desc.sections.get(key))]
    rest = description  # the opening paragraph and sections of the author's own headings are read too
    for _, _, text in bodies:
        rest = rest.replace(text, "\n")
    if rest.strip():
        bodies.append(("text", "the description", rest))
    low = description.lower()
    identified = bool(target.arxiv and target.arxiv in description
                      or len(target.title) >= 20 and target.title.lower()[:40] in low)
    for key, heading, text in bodies:
        previous = ""
        for sent in _sentences(text):
            heading_before, previous = previous, sent
            hits = _mentions(sent, target, [n for n in names if n != target.short_name], identified)
            if not hits:
                continue
            quoted, sent = sent, _without_titles(sent)
            if _labelled_source(quoted, [target.short_name, *names]) or _SOURCE_HEADING.match(heading_before):
                return Credit(credited=True, reason="named as the source (a label or the title says the method is its "
                                                    "port)", quote=quoted[:300], section=key)
            clean = [h for h in hits if not _contrasted(sent, h)]
            if not clean:
                contrast_quote = contrast_quote or quoted
                continue
            for h in clean:
                ok, why = _states_use(sent, h, key == "builds_on")
                if ok:
                    where = "Builds on" if key == "builds_on" else heading
                    return Credit(credited=True, reason=f"attributed in {where}", quote=quoted[:300], section=key)
                if "contrast" in why:
                    contrast_quote = contrast_quote or quoted
                else:
                    passing = passing or (quoted, why)
                    if why.startswith("mentioned without"):
                        unstated.append((key, text, quoted))
    for key, text, quoted in unstated:
        if any(ADDITION.search(x) for x in _sentences(text) if x.strip() != quoted.strip()):
            return Credit(credited=True, reason="named as what the section's stated addition is added to",
                          quote=quoted[:300], section=key)
    if contrast_quote:
        return Credit(credited=False, reason="named only as a contrast or in a negation", quote=contrast_quote[:300])
    if passing:
        return Credit(credited=False, reason=passing[1], quote=passing[0][:300])
    return Credit(credited=False, reason="not attributed (no mention that states use)")


def owed_to(reference: str, credited: Iterable[str], features: Collection[str]) -> str | None:
    """The credited paper a likeness to ``reference`` is owed to: the reference's rule is that credited rule (which the
    code computes: ``credited`` are the credited papers whose rule it computes) plus operations the code does not
    compute (PyramidKV is SnapKV's rule plus a per-layer budget ladder). None when the code computes the reference's
    own addition too (then it is that reference) or no credited rule is part of the reference's."""
    for paper in papers_for(reference):
        for _, req, _opt, _ in paper.rules():
            own = [set(r.split("|")) for r in req]
            for name in credited:
                inner_paper = load_index().by_name(name)
                if inner_paper is None or name == paper.short_name:
                    continue
                for _, inner_req, _o, _ in inner_paper.rules():
                    inner = [set(r.split("|")) for r in inner_req]
                    if not inner or not all(any(alts <= o for o in own) for alts in inner):
                        continue  # the credited rule is not part of the reference's
                    added = [o for o in own if not any(alts <= o for alts in inner)]
                    if added and not any(o & set(features) for o in added):
                        return name
    return None


def within_credited(reference: str, description: str, features: Collection[str]) -> str | None:
    """The credited paper whose rule holds the whole of ``reference``'s rule and which the code computes: behaving
    like the smaller rule is what the credited rule does (window attention pooled, SnapKV credited, keeps FINCH's
    window-attention tokens). A reference read off the question counts as read off the window: on boards without a
    question, a question rule's reference reads the closing rows. None when no credited rule both holds the
    reference's and is computed by the code, or the reference is no published rule of the index."""
    papers = papers_for(reference)
    theirs = [req for paper in papers for _, req, _o, _ in paper.rules()]
    if not theirs:
        return None
    have = set(features)
    for paper, _ in credited_papers(description):
        if any(paper.short_name == p.short_name for p in papers):
            continue  # the reference itself credited: the caller's own test
        for _, req, _o, _ in paper.rules():
            if not all(set(r.split("|")) & have for r in req):
                continue  # the code does not compute this credited rule
            mine = rule_alternatives(req)
            if mine & QUERY_WINDOWS:
                mine = mine | QUERY_WINDOWS
            if any(all(set(r.split("|")) & mine for r in ref) for ref in theirs):
                return paper.short_name
    return None


def papers_for(reference: str) -> list[Paper]:
    """The papers a reference label stands for: ``baseline:snapkv``, ``public:...`` (through what it implements),
    ``priorart:CapKV`` (a published rule's reference), ``snapkv_qa`` also answers to SnapKV itself."""
    if reference.startswith("priorart:"):  # a published rule's behavioural reference: its paper
        paper = load_index().by_name(reference.split(":", 1)[1])
        return [paper] if paper is not None else []
    base = reference.split(":", 1)[1] if reference.startswith("baseline:") else reference
    known = load_index().baselines()
    out = [known[base]] if base in known else []
    if base == "snapkv_qa" and "snapkv" in known:
        out.append(known["snapkv"])
    return out


def credit_for(reference: str, description: str, names: list[str] = []) -> Credit:  # noqa: B006 - read only
    """Credit of a code/behaviour reference: any of its papers attributed, or (earlier submissions) its names."""
    papers = papers_for(reference)
    results = [credit(description, p) for p in papers] or [credit(description, None, names)]
    return next((r for r in results if r.credited), results[0])


# --- credit coverage ---------------------------------------------------------------------------------------

def credited_papers(description: str) -> list[tuple[Paper, Credit]]:
    """The index papers the description credits (``credit``: a statement of use or derivation), in index order."""
    low = description.lower()
    out: list[tuple[Paper, Credit]] = []
    for p in load_index().papers:
        keys = [p.short_name.lower(), p.arxiv or "", (p.first_author.split()[-1].lower() if p.first_author else "")]
        if not any(k and k in low for k in keys):
            continue  # not named at all: no credit (the cheap test before the sentence-by-sentence one)
        c = credit(description, p)
        if c.credited:
            out.append((p, c))
    return out


@lru_cache(maxsize=None)
def _rules_naming(op: str) -> int:
    """How many papers of the index name ``op`` among their rules' operations (required or optional)."""
    return sum(any(op in rule_alternatives([*req, *opt]) for _, req, opt, _ in p.rules()) for p in load_index().papers)


def rule_alternatives(reqs: Sequence[str]) -> set[str]:
    """Every operation a rule's requirements name ("a|b" is either)."""
    return {a for r in reqs for a in r.split("|")}


def covers(credited: Paper, ruled: Paper, matched: dict[str, int], required: list[str] | None = None,
           board: str | None = None, features: Mapping[str, int] | None = None) -> str | None:
    """Whether crediting ``credited`` credits the computation the code shares with ``ruled`` (whose rule it matched
    through the features ``matched``; ``required``: the operations of the rule it met, ``ruled.ops`` by default, its
    training-free port's where that matched): why, or None. A credited paper's training-free port counts as its rule.
    On board A the question is what the board hands over as the closing query window, so there a rule read off the
    question's queries is the credited rule read off its window (SnapKV credited covers FINCH's question attention).

    - ``credited`` has a rule of its own: ``ruled``'s rule is part of it (every operation ``ruled`` requires is
      one ``credited`` requires): the code does a subset of what the credited paper does. Or, given the code's
      ``features``: the code computes the credited rule whole (each operation it requires; on board C the decode
      phase is the board's) and every operation ``ruled`` requires is one of that rule's, required or optional
      (SCOPE's decode-time heavy hitters are H2O's accumulation inside SCOPE's rule): what the code shares with
      ``ruled`` is the credited paper's own rule as ported.
    - ``credited`` has no rule in the index: its own entry (title, key idea, keywords) states every feature by
      which the code matched ``ruled`` (``stated.implied_features``): the credited paper describes the same
      computation. What the description says of it plays no part, so crediting an unrelated paper covers nothing.
    """
    from reviewbench.evidence.stated import implied_features

    if credited.short_name == ruled.short_name or not matched:
        return None
    req = required or ruled.ops
    computed = set(features or ()) | ({"decode"} if board == "C" else set())  # (board C runs at decode time)
    if credited.rules():
        for which, ops, optional, _ in credited.rules():
            mine = rule_alternatives(ops)
            if board == "A" and mine & QUERY_WINDOWS:
                mine = mine | QUERY_WINDOWS
            if all(set(r.split("|")) & mine for r in req):
                own = "" if which == "rule" else f" {which}"
                return f"{ruled.short_name}'s rule ({', '.join(req)}) is part of {credited.short_name}'s{own}"
            if features is not None and all(set(r.split("|")) & computed for r in ops) and \
                    all(set(r.split("|")) & (mine | rule_alternatives(optional)) for r in req):
                own = "" if which == "rule" else f" {which}"
                return (f"{ruled.short_name}'s rule ({', '.join(req)}) lies inside {credited.short_name}'s{own} "
                        f"({', '.join(ops)}; optional {', '.join(optional)}), which the code computes whole")
        return None
    text = ". ".join([credited.title, credited.key_idea, "; ".join(credited.keywords)])
    need = set(matched)
    if need <= implied_features(text):
        return (f"{credited.short_name}'s own entry in the index states the same computation "
                f"({', '.join(sorted(need))}: \"{credited.key_idea[:160]}\")")
    return None


# General techniques from outside the KV-cache literature, and the one operation each is: a description that
# credits one by name (a statement of use, ``credit``) discloses where that operation comes from. Only operations a
# textbook algorithm is; a technique never stands for attention, a window or a budget.
# A technique defined over a similarity of the items (MMR's penalty, a DPP's kernel, farthest-point sampling's
# distances) is that similarity too: crediting it discloses both.
CLASSIC_TECHNIQUES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("maximal marginal relevance", "MMR"), ("similarity_suppression", "key_similarity")),
    (("determinantal point process", "DPP"), ("similarity_suppression", "key_similarity")),
    (("farthest point sampling", "farthest-point sampling", "k-center greedy", "max-min diversity"),
     ("similarity_suppression", "key_similarity")),
    (("k-means", "Lloyd's algorithm", "k-medoids"), ("key_clustering",)),
    (("PageRank",), ("attention_propagation",)),
    (("leverage score", "CUR decomposition"), ("leverage",)),
)


@lru_cache(maxsize=64)
def credited_techniques(description: str) -> Mapping[str, tuple[str, Credit]]:
    """Operation -> (the technique, its credit) for each ``CLASSIC_TECHNIQUES`` entry the description credits (asked
    once per uncredited match: kept per description)."""
    low = description.lower()
    out: dict[str, tuple[str, Credit]] = {}
    for names, ops in CLASSIC_TECHNIQUES:
        if all(op in out for op in ops) or not any(n.lower() in low for n in names):
            continue
        c = credit(description, None, list(names))
        if c.credited:
            for op in ops:
                out.setdefault(op, (names[0], c))
    return out


def covered_credit(ruled: Paper, matched: dict[str, int], description: str,
                   required: list[str] | None = None, board: str | None = None,
                   features: Mapping[str, int] | None = None) -> Credit | None:
    """A credit of another paper that covers ``ruled``'s matched computation (``covers``), as a Credit; else the
    credits together (``covered_jointly``); else one credited paper's rule with the operations a credited general
    technique is (``_covered_with_technique``)."""
    credited = credited_papers(description)
    for p, c in credited:
        why = covers(p, ruled, matched, required, board, features)
        if why:
            return Credit(credited=True, reason=f"covered by the credit of {p.short_name}"
                                                + (f" (arXiv {p.arxiv})" if p.arxiv else "") + f": {why}",
                          quote=c.quote, section=c.section, via=p.short_name)
    with_technique = _covered_with_technique(ruled, credited, description, required, board)
    if with_technique is not None:
        return with_technique
    joint = covered_jointly([p for p, _ in credited], ruled, required)
    if joint:
        names = ", ".join(p.short_name for p in joint)
        return Credit(credited=True, reason=f"covered by the credits of {names} together: {joint[0].short_name}'s rule "
                                            f"holds the scoring operations of {ruled.short_name}'s ({', '.join(required or ruled.ops)}), "
                                            f"{joint[1].short_name}'s the phase it runs in",
                      quote=next(c.quote for p, c in credited if p is joint[0]),
                      section=next(c.section for p, c in credited if p is joint[0]), via=joint[0].short_name)
    return None


def _covered_with_technique(ruled: Paper, credited: Sequence[tuple[Paper, Credit]], description: str,
                            required: list[str] | None = None, board: str | None = None) -> Credit | None:
    """``ruled``'s rule as one credited paper's rule plus operations that credited general techniques are (MMR's
    greedy suppression of look-alikes beside R-KV's attention and key similarity): every operation disclosed with
    its source. Only one index paper may take part (scoring operations spread over several papers' credits clear
    nothing: ``covered_jointly``), and the technique must leave that paper something to cover. On board A the
    question's queries are how the board hands an attention rule its window."""
    techniques = credited_techniques(description)
    req = [set(r.split("|")) for r in (required or ruled.ops) if not set(r.split("|")) <= PROTECTIVE]
    if not techniques or not req:
        return None
    by_technique = [r for r in req if r & techniques.keys()]
    left = [r for r in req if not r & techniques.keys()]
    if not by_technique or not left:
        return None
    for p, c in credited:
        if p.short_name == ruled.short_name or not p.ops:
            continue
        mine = rule_alternatives(p.rules()[0][1]) | (rule_alternatives(p.rules()[0][2]) & {"attention"})
        # (a credited rule that reads attention only as an option of its own, KVzip's max over the pass, is read
        # with it: its credit discloses the attention the other rule starts from)
        if board == "A" and "attention" in mine:
            mine = mine | QUERY_CHOICE  # on board A the question's queries are the window the board hands over
        if all(r & mine for r in left):
            named = sorted({techniques[op][0] for r in by_technique for op in r if op in techniques})
            return Credit(credited=True, reason=f"covered by the credit of {p.short_name}"
                                                + (f" (arXiv {p.arxiv})" if p.arxiv else "")
                                                + f" and of {', '.join(named)}: {ruled.short_name}'s rule is "
                                                + f"{p.short_name}'s operations with what {', '.join(named)} is",
                          quote=c.quote, section=c.section, via=p.short_name)
    return None


def covered_jointly(credited: Sequence[Paper], ruled: Paper, required: list[str] | None = None) -> list[Paper]:
    """Two credited papers that together hold ``ruled``'s rule: one whose rule requires every scoring operation of
    it, and another whose rule requires the phase it runs in (decode time): a port of DMS's decode-time decision
    that credits DMS and H2O (the attention it tallies) computes nothing SCOPE adds. Only the phase may come from a
    second paper: scoring operations spread over several credits (SnapKV's attention, Expected Attention's value
    norms, Ada-KV's head budgets) do not make LAVa's rule credited, or crediting every baseline would clear every
    combination of them. Protection around a score (sinks, a recent window) needs no credit; a rule of positions
    only is never covered this way. Empty when not covered so, or when ``ruled`` needs no phase."""
    req = required or ruled.ops
    if rule_alternatives(req) <= PROTECTIVE:
        return []
    ruled_by = [p for p in credited if p.ops and p.short_name != ruled.short_name]
    need = [set(r.split("|")) for r in req if not set(r.split("|")) <= PROTECTIVE]
    core = [alts for alts in need if not alts <= PHASE]
    phase = [alts for alts in need if alts <= PHASE]
    if not phase:
        return []
    scorer = next((p for p in ruled_by if all(alts & rule_alternatives(p.ops) for alts in core)), None)
    if scorer is None:
        return []
    timed = next((p for p in ruled_by if p is not scorer and all(alts & rule_alternatives(p.ops) for alts in phase)), None)
    return [scorer, timed] if timed is not None else []


# --- retrieval by computation --------------------------------------------------------------------------

# What many methods add around their score (sink and recent protection, the kept window, a protected span that moves
# with the layer index): not a mechanism of its own.
# The phase a rule runs in (decode time): where a score is applied, not how it scores.
PHASE = frozenset({"decode"})
PROTECTIVE = frozenset({"sinks", "recent", "window_kept", "uniform_positions", "layer_span"})
# Cosmetic differences (anchor 1's "pooling, window"): which queries score, how they are aggregated.
COSMETIC = frozenset({"max_attention", "head_average", "all_queries", "question_queries", "window_queries",
                      "last_query", "decode", "pooling", "attention"})
# Which queries a score's attention is read off: where a rule may read attention but does not require it (the
# raters of a merge, the fill of a positional rule), whichever queries it reads it off are part of that option.
QUERY_CHOICE = frozenset({"window_queries", "question_queries", "last_query", "all_queries"})
# Operations that decide, per head or per layer, which rule applies (a fitted table tested per head). A rule built on
# one is that paper's method whatever scoring the heads it lets through use: the cosmetic operations beside it are
# the gated-in heads' filler (a full-cache head under a budget must rank its tokens somehow), not a mechanism of
# the author's own. An operation of its own (a norm, a similarity, a decay...) still makes it a family member.
GATES = frozenset({"learned_gate"})


@lru_cache(maxsize=1)
def _required_df() -> tuple[int, dict[str, int]]:
    """(how many papers have a rule, operation -> how many of those papers' rules require it: a paper counts once
    for an operation its own rule or its training-free port requires)."""
    ruled = [p for p in load_index().papers if p.rules()]
    df: dict[str, int] = {}
    for p in ruled:
        for a in p.rule_ops():
            df[a] = df.get(a, 0) + 1
    return len(ruled), df


def specificity(m: "ComputationMatch | Any") -> float:
    """How specific a matched rule is: the rarity (inverse document frequency over the index's rules) of the
    operations it requires that the code computes. A rule made of operations few papers require (a maximum over the
    queries, a last-attended step) names its source better than one every attention method shares."""
    import math

    n, df = _required_df()
    matched = m.matched if isinstance(m, ComputationMatch) else m.ops  # a ComputedFact: ops are the matched features
    return sum(math.log((n + 1) / (df.get(f, 0) + 1)) for f in matched)


def own_extra(m: "ComputationMatch | Any") -> list[str]:
    """What the code computes beyond the matched rule that is a mechanism (not cosmetic; an accumulation beside
    every query scoring is that choice of queries)."""
    if getattr(m, "beside", None):
        return []  # every extra is the credited paper's (``_beside_credited``)
    extra = list(getattr(m, "extra", []))
    if getattr(m, "level", None) == "same" and "attention" not in extra and \
            _rare_rule(getattr(m, "required", None) or _rule_of(m.short_name)):
        extra = [e for e in extra if e not in OVER_CALLS]  # a rare rule carried over the calls is that rule
    return [e for e in extra if e not in COSMETIC and not (e == "accumulate" and "all_queries" in extra)]


def source_order(computed: list[M]) -> list[M]:
    """The matched rules that explain the code up to cosmetics (which queries, pooling, aggregation), most specific
    first: the papers the code is a port of, in the order a verdict should name them."""
    close = [m for m in computed if not own_extra(m)]
    return sorted(close, key=lambda m: (-round(specificity(m), 6), getattr(m, "level", "") != "same",
                                        len(getattr(m, "extra", []))))


def computation_matches(features: dict[str, int], description: str,
                        paths: list[tuple[int, dict[str, int]]] | None = None,
                        board: str | None = None) -> list[ComputationMatch]:
    """Papers of the index whose every operation the code computes: "same" when the code computes nothing else
    that is a mechanism (or only a credited paper's: ``_beside_credited``), "family" when it adds one operation of
    its own; most specific (most operations) first. Where the description declares the whole method a port of a work
    the index does not hold, each uncredited match carries that work (``declared``: a judge decides whether it is
    an earlier source of the rule).

    ``paths`` (``Computation.paths``): the features of each return path. Where the code as a whole computes no
    rule exactly (the union of its branches reads as "a rule plus pooling"), a rule that one return path computes
    exactly is a "same" match of that path (``branch``: the line of its return): a method that ports a rule behind
    a fallback or probe-detecting branch is that port wherever that path runs. Two rules mixed in one path stay
    what the whole reads ("family"). ``board``: the submission's board (board C runs at decode time)."""
    out = _matches(features, description, board)
    if paths and not any(m.level == "same" for m in out):
        for line, feats in paths:
            for m in _matches(feats, description, board):
                if m.level != "same":
                    continue
                known = next((i for i, o in enumerate(out) if o.short_name == m.short_name), None)
                if known is not None and out[known].branch is not None:
                    continue  # a path before this one computes it already
                m.branch = line
                if known is None:
                    out.append(m)
                else:
                    out[known] = m
        out.sort(key=lambda m: (m.level != "same", len(m.extra), -len(m.matched), m.baseline is None))
    if out and not all(m.credited for m in out):
        port = declared_port(description)
        if port is not None and load_index().by_name(port.short_name) is None:
            name = f"{port.short_name} (arXiv {port.arxiv})" if port.arxiv else port.short_name
            out = [m if m.credited else m.model_copy(update={"declared": name}) for m in out]
    return out


def _matches(features: dict[str, int], description: str, board: str | None = None) -> list[ComputationMatch]:
    """Every paper one of whose rules (``Paper.rules``: its scoring rule, its training-free port) the code computes;
    where both do, the closer match (nothing beside it first, then fewer extras, then more operations)."""
    out: list[ComputationMatch] = []
    for p in load_index().papers:
        best: ComputationMatch | None = None
        for which, ops, optional, sentence in p.rules():
            m = _match_rule(p, which, ops, optional, sentence, features, description, board)
            if m is not None and (best is None or _closeness(m) < _closeness(best)):
                best = m
        if best is not None:
            out.append(best)
    if any(m.level == "family" and not m.credited for m in out):
        _beside_credited(out, description, features, board)
    out.sort(key=lambda m: (m.level != "same", len(m.extra), -len(m.matched), m.baseline is None))
    return out


# How a rule's scores are aggregated (over heads, over queries by a maximum): anchor 1's
# cosmetic change. Which queries score is not among them (a question's queries on board A are how an honest method
# and a port both read the board).
AGGREGATION = frozenset({"head_average", "max_attention"})
# Operations a method adds to a score as one more term (a redundancy, a norm, a bar, an output change): an honest
# method that credits the question's attention and adds one of them is no port of the paper that names the term.
SCORE_TERMS = frozenset({"key_similarity", "mean_key", "key_norm", "value_norm", "count_normalised", "count_damped",
                         "attention_output", "attention_threshold", "attention_variance", "entropy", "exp_logit",
                         "accumulate", "decay", "pooling", "recent", "sinks"})


# score terms read off the values (what each token would hand over): beside attention over any choice of queries they
# are a rule's own operation (VATP's value-weighted attention), unlike a bar or a norm of the keys
VALUE_TERMS = frozenset({"value_norm", "attention_output"})


def _aggregation_only(extra: list[str], ops: list[str], features: Mapping[str, int] | None = None,
                      board: str | None = None, optional: list[str] | None = None) -> bool:
    """The code computes the rule and only aggregates its scores otherwise: the same rule, where the rule has an
    operation of its own (beyond attention, a choice of queries, protection) that names it. Where the code reads
    every prompt query (``all_queries``), the question's queries are among them: handing them over too is no other
    choice of queries. Where the rule reads the question's queries, the closing rows beside them are how board A
    hands a query window over (``question_queries`` with ``query_window``), no other choice either; where it reads
    the last query, board A's last query is the question's last row, read among the question's."""
    own = rule_alternatives(ops) - COSMETIC - PROTECTIVE - PHASE
    allowed = AGGREGATION | ({"question_queries"} if features is not None and "all_queries" in features else set())
    if "question_queries" in rule_alternatives(ops):
        allowed |= {"window_queries"}  # the question with the closing rows beside it: how board A hands both over
    if "last_query" in rule_alternatives(ops):
        allowed |= {"question_queries"}  # on board A the prompt's last query is the question's last row
    if board == "A" and ("window_queries" in rule_alternatives(ops) or own and (
            not own & SCORE_TERMS or "attention" in rule_alternatives(ops) and own - SCORE_TERMS) and (
            {"window_queries", "last_query"} & set(optional or ()))):
        allowed |= {"question_queries"}  # on board A the closing rows are the question's: a window rule read off the
        # question (with the closing rows beside it) is that rule where the board hands the question over (also
        # where the rule's window attention feeds an operation of its own beyond a score term: GraphKV's decay over
        # the similarity graph; an honest method crediting the question's attention and adding one score term is
        # no port of the paper naming that term)
    # an optional operation of the rule's own that the code computes and that few published rules name (CAOTE's
    # renormalisation of the other weights once a token is gone, a / (1 - a)): the score term is that rule's, not one
    # an honest method adds to attention (a coverage cut, which many rules name, is no such sign)
    distinct = {o for o in (set(optional or ()) & set(features or {})) - COSMETIC - PROTECTIVE - PHASE - SCORE_TERMS
                - WEAK if _rules_naming(o) <= 2}
    if board == "A" and own and distinct and {"window_queries", "last_query"} & set(optional or ()):
        allowed |= {"question_queries"}
    if _rare_rule(ops) and "attention" not in extra:
        allowed |= OVER_CALLS  # a rule whose own operations are rare and none a score term (LSH codes
        # against the query): its scores carried over the calls (a running tally, a fading one) are the rule
        # aggregated over time, not a new rule (a disguise is free to add that). Not a rule of attention or a tally
        # (SnapKV, H2O): a fading attention tally is A2SF's, and many an honest method's; nor where the code reads
        # attention the rule does not (the rare operation is then a part of an attention score)
    if board == "B_offline" and ("window_queries" in rule_alternatives(ops) or own and (
            not own & SCORE_TERMS or distinct) and ({"window_queries", "last_query"} & set(optional or ()))):
        allowed |= {"reconstruction"}  # the same on board B_offline, whose queries are the reconstruction pass's:
        # how a query-agnostic port reads the rule's window there
    if board == "C" and own == {"accumulate"}:
        allowed |= {"window_queries"}  # at decode time each call hands the newest queries: summed over the calls,
        # every query once, the cumulative attention itself (board A's or B's single call reads one window: no running
        # sum over the queries). Only where the running sum is the rule's one operation: a rule that also decays or
        # weighs it (A2SF) is met by many a decode-time average of its own (allowing A2SF's decay flagged five honest
        # or credited decode methods of sets 8, 10, 15, 18 and 19 again, self-play round 21)
    return bool(own) and set(extra) <= allowed


# At most this many papers of the index name an operation that is "rare": computing it uncredited points at them.
RARE_OPERATION = 4
# How a score is carried from one call to the next: summed, or summed with a fade.
OVER_CALLS = frozenset({"accumulate", "decay"})


def _rule_of(short_name: str) -> list[str]:
    """The required operations of a paper's rarest rule (a fact carries the paper's name, not the rule it met)."""
    p = load_index().by_name(short_name)
    rules = [req for _, req, _, _ in p.rules()] if p is not None else []
    return next((req for req in rules if _rare_rule(req)), rules[0] if rules else [])


def _rare_rule(ops: Sequence[str]) -> bool:
    """A rule whose own operations (beyond a choice of queries, protection, the phase) are each named by few papers
    and which reads no attention, tally or other score term: its scores carried over the calls (``OVER_CALLS``) are
    still that rule (carried attention is how many an honest method extends a rule of attention: a peak of
    attention held with a release beside RaaS's last-attended step)."""
    own = rule_alternatives(ops) - COSMETIC - PROTECTIVE - PHASE
    return bool(own) and not rule_alternatives(ops) & (SCORE_TERMS | {"attention", "reconstruction", "merge"}) and \
        all(_rules_naming(o) <= RARE_OPERATION for o in own)


# Operations the reader finds in many a method that is no port (any comparison of attention with a bar: a relative
# cut-off, a coverage test, a dominance test): beside a credited rule they do not name a paper of their own.
WEAK = frozenset({"attention_threshold"})


def _beside_credited(matches: list[ComputationMatch], description: str, features: Mapping[str, int],
                     board: str | None) -> None:
    """An uncredited rule computed beside a credited paper's rule, and nothing else, is that rule ("same"): what the
    code adds to it is the credited paper's (its required or optional operations), so none of it is the author's own
    (a CapKV port crediting KVzip for the reconstruction queries computes CapKV's leverage score, uncredited, and
    KVzip's credited pass; an InfiniPot port crediting KVzip computes InfiniPot's chunked refill, uncredited).
    Only a rule with an operation of its own (beyond attention, a choice of queries, protection, a comparison with a
    bar: ``WEAK``) that the code computes is named so, only where the code adds a mechanism (not only a choice of
    queries, pooling or aggregation: those keep it a family member), and not where the credited paper's own rule
    holds every operation of it (its credit covers it then: ``covers``)."""
    credited = [p for p, _ in credited_papers(description) if p.rules()]
    if not credited:
        return
    # each credited paper's operations, its rules' required and optional ones together
    stated = {p.short_name: {a for _, req, opt, _ in p.rules() for a in rule_alternatives([*req, *opt])}
              for p in credited}
    for i, m in enumerate(matches):
        if m.level != "family" or m.credited:
            continue
        own = set(m.matched) - COSMETIC - PROTECTIVE - PHASE  # the rule's own operations the code computes
        if not own - WEAK:
            continue  # too common to name it beside another's rule
        rest = {e for e in m.extra if not _aggregation_only([e], m.required, features, board)}
        if not set(own_extra(m)):
            continue  # only a choice of queries, pooling or aggregation beside the rule: a family member as before
        others = {name: theirs for name, theirs in stated.items() if name != m.short_name}
        if any(own <= theirs for theirs in others.values()):
            continue  # a credited paper's rule (with its options) holds the whole of it: no rule beside that one
        beside = next((name for name, theirs in others.items() if rest <= theirs), None)
        if beside is not None:
            matches[i] = m.model_copy(update={"level": "same", "beside": beside})


def _credits_the_pass(description: str) -> bool:
    """Whether the description credits a paper whose rule requires the reconstruction pass (KVzip)."""
    return any("reconstruction" in rule_alternatives(req) for p, _ in credited_papers(description)
               for _, req, _, _ in p.rules())


def _closeness(m: ComputationMatch) -> tuple[bool, int, int]:
    return m.level != "same", len(m.extra), -len(m.matched)


def _match_rule(p: Paper, which: str, ops: list[str], optional: list[str], sentence: str, features: dict[str, int],
                description: str, board: str | None = None) -> ComputationMatch | None:
    """The match of one rule of ``p`` (required ``ops``, ``optional``), or None."""
    matched: dict[str, int] = {}
    explained = set(optional) | PROTECTIVE
    if "attention" in rule_alternatives(optional) and not rule_alternatives(ops) & (QUERY_CHOICE | {"attention",
                                                                                                  "reconstruction"}):
        explained |= QUERY_CHOICE  # attention the rule may read (a merge's raters) is read off some queries; not
        # where the rule names its queries itself (KVzip's repeat pass)
        if board == "B_offline":
            explained.add("reconstruction")  # (board B_offline hands the queries over as the reconstruction pass)
        if "merge" in rule_alternatives(ops):
            explained |= {"pooling", "head_average", "max_attention"}  # a merge's raters, aggregated somehow
    if "attention" not in features and not rule_alternatives(ops) <= PROTECTIVE:
        explained |= {"window_queries", "last_query", "all_queries"}  # queries asked for but no attention computed
        # from them: which queries a score would read decides nothing where no score reads attention (a rule of
        # positions alone is not met so: a path that keeps the first and the newest tokens is no port of StreamingLLM)
    if "merge" in rule_alternatives(ops):
        explained |= {"attention_output"}  # evicted values summed with attention weights: the merge itself
    if "attention_coverage" in rule_alternatives(ops):
        explained.add("head_budget")  # the fewest tokens covering a share, cut head by head: each head's own count
    if features.get("query_statistics", -1) == MEAN_QUERY_ONLY and "attention" in rule_alternatives(ops) and \
            "query_statistics" not in rule_alternatives(ops):
        explained.add("query_statistics")  # the queries' mean alone, scored against the keys (or centroids): their
        # logits averaged, a choice of queries and an aggregation of them, no statistic of their distribution
    if "attention" in rule_alternatives(ops) and not (rule_alternatives(ops) | rule_alternatives(optional)) & (
            QUERY_CHOICE | {"reconstruction"}):
        explained |= QUERY_CHOICE  # a rule of attention that names no queries: whichever the code reads are its own
    if rule_alternatives(ops) <= PROTECTIVE:
        # a rule of positions only (sinks, a window): a span moving with the layer index is no protection around
        # its score, it is a rule of its own (a ladder)
        explained -= {"layer_span"} - set(optional)
    for req in ops:
        alts = req.split("|")
        explained.update(alts)
        hit = next((a for a in alts if a in features), None)
        if hit is None and board == "C" and alts == ["decode"] and rule_alternatives(ops) - COSMETIC - PROTECTIVE - PHASE:
            # board C calls ``select`` at decode time: a decode-time rule runs there. Only a rule with an operation of
            # its own beyond the phase (a block bound, a learned scorer): on board C every method runs at decode time,
            # so a rule whose one distinctive part is the phase (attention and sinks, a window's attention) names no
            # method there
            matched["decode"] = 0
            continue
        if hit is None and board == "B_offline" and "reconstruction" in features and len(alts) > 1 and \
                set(alts) <= QUERY_CHOICE | {"accumulate"} and rule_alternatives(ops) - \
                COSMETIC - PROTECTIVE - PHASE - (SCORE_TERMS - VALUE_TERMS) - WEAK - QUERY_CHOICE - {"attention",
                                                                                                   "accumulate"}:
            # board B_offline hands its queries over as the reconstruction pass: a rule that lets any of several
            # choices of queries stand (Keyformer's window, every query or a running sum) reads these there, where
            # the rule has an operation of its own beyond attention and a bar (Keyformer's noise). Not a rule naming
            # one choice: a window's attention pooled (SnapKV) or summed over every step (H2O) is what many an
            # honest method reads off the pass, nor a bar on attention alone (Scissorhands)
            matched["reconstruction"] = features["reconstruction"]
            continue
        if hit is None and board == "A" and "question_queries" in features and len(alts) > 1 and \
                set(alts) <= QUERY_CHOICE and rule_alternatives(ops) - COSMETIC - PROTECTIVE - PHASE - \
                (SCORE_TERMS - VALUE_TERMS) - WEAK - QUERY_CHOICE - {"attention", "accumulate"}:
            # board A hands its queries over as the question's (its last rows are the prompt's newest): a rule that
            # lets the newest queries stand in several ways (a window or the last one) reads these there, where it
            # has an operation of its own beyond attention and a bar (PyramidInfer's budgets over depth), as board
            # B_offline's pass stands for them below. Not a rule naming one choice of queries
            matched["question_queries"] = features["question_queries"]
            explained.add("question_queries")
            continue
        if hit is None:
            return None
        matched[hit] = features[hit]
    if GATES & set(matched):
        explained |= COSMETIC
    if {"attention_threshold", "sinks", "recent"} <= rule_alternatives(ops) and "head_average" in rule_alternatives(ops):
        # a bar on the attention the sinks and the window hold, averaged over heads, sends layers to the positions
        # alone; the other layers' ranking smoothed is that part's filler (pooling only: which queries, a coverage or
        # anything else beside the bar stays an operation of its own)
        explained |= {"pooling"}
    derived = "accumulate" in features and features.get("accumulate") == features.get("all_queries")
    if "all_queries" in explained and derived:
        explained.add("accumulate")  # read off the query window alone: every query's attention, summed
    extra = sorted(set(features) - explained)
    if board == "B_offline" and _credits_the_pass(description):
        board = None  # the pass is a credited paper's own operation (KVzip's), not the board's way to ask for queries:
        # what the code adds beside that credited rule is judged as it would be anywhere
    if board == "B_offline" and "reconstruction" in extra and _aggregation_only(["reconstruction"], ops, features, board,
                                                                                optional):
        extra.remove("reconstruction")  # the board's queries, as the question's are on board A (``_aggregation_only``)
    # the accumulation read off the query window is that (cosmetic) choice of queries, not a mechanism
    own = [e for e in extra if e not in COSMETIC and not (e == "accumulate" and derived)]
    if len(own) > 1:
        return None
    c = credit(description, p)
    if not c.credited:
        c = covered_credit(p, matched, description, ops, board, features) or c
    return ComputationMatch(short_name=p.short_name, title=p.title, arxiv=p.arxiv, baseline=p.baseline,
                            rule=sentence, which="rule" if which == "rule" else "training-free port",
                            required=list(ops), matched=matched, extra=extra,
                            level="same" if not extra or _aggregation_only(extra, ops, features, board, optional) else "family",
                            credited=c.credited, credit=c)


# --- retrieval --------------------------------------------------------------------------------------------

def prior_art(method_src: str, method_summary: str, idea: str, description: str, k: int = 6,
              board: str | None = None) -> PriorArtEvidence:
    comp = computation(method_src)
    query = comp.words()
    index = load_index()
    found: list[PriorArtHit] = []
    seen: set[str] = set()

    def add(paper: Paper, score: float, cosine: float | None, via: Literal["computation", "code", "summary"],
            known: Credit | None = None) -> None:
        if paper.short_name in seen:
            return
        seen.add(paper.short_name)
        c = known or credit(description, paper)
        found.append(PriorArtHit(short_name=paper.short_name, title=paper.title, arxiv=paper.arxiv,
                                 year=paper.year, score=score, cosine=cosine, credited=c.credited, via=via,
                                 credit=c))

    computed = computation_matches(comp.features, description, comp.paths, board)
    by_name = {p.short_name: p for p in index.papers}
    for m in computed[:CODE_HITS]:  # the papers whose rule the code computes come first
        add(by_name[m.short_name], 0.0, None, "computation", m.credit)
    for h in index.bm25(query)[:CODE_HITS] if query else []:
        add(h.paper, h.score, None, "code")
    summary_query = " ".join([method_summary, idea]).strip()
    if summary_query:
        for h in index.search(summary_query, k):
            if len(found) >= k:
                break
            add(h.paper, h.score, h.cosine, "summary")
    return PriorArtEvidence(query=query, features=comp.features, summary_query=summary_query, hits=found[:k],
                            computed=computed)


def prior_art_hits(method_src: str, method_summary: str, idea: str, description: str,
                   k: int = 6) -> tuple[str, list[PriorArtHit]]:
    """(code query, hits): ``prior_art`` in the shape the evidence stage reads."""
    ev = prior_art(method_src, method_summary, idea, description, k)
    return ev.query, ev.hits


# --- a declared port: the description says the whole method is a published one ----------------------------------

class DeclaredPort(BaseModel):
    """The description's own statement that the method *as a whole* is a port, implementation, reproduction or
    adaptation of a published paper (not of a part of it): the method exists, whatever its code reads as."""

    short_name: str
    arxiv: str | None = None
    quote: str  # the sentence that says so
    section: str  # where it stands ("title", "idea", "builds_on"...)


# nouns that make "X's <noun>" the whole method (a part of it otherwise: its window, pooling, sinks, allocation...)
_WHOLE_NOUN = (r"(?:method|algorithm|approach|technique|scheme|policy|system|pipeline|rule|selection|eviction|"
               r"compression|selector|design|strategy|strategie|framework|procedure)s?")
_WHOLE = re.compile(rf"{_WHOLE_NOUN}$", re.I)
_PORT_NOUN = (r"(?:port|re-?implementation|implementation|reproduction|replication|adaptation|transcription|"
              r"translation|re-?creation)")
_PORT_VERB = (r"(?:port|re-?implement|implement|reproduce|replicate|adapt|transcribe|translate|transplant|"
              r"re-?create)(?:s|ed|d)?")
# the method itself as the subject: "this is", "our method is", "we present", or nothing (the sentence opens with it)
_SUBJECT = (r"(?:(?:this|it|here|the method|our method|this method|the submission|this submission|the code|our code|"
            r"the rule|our rule|the selector|our selector|the eviction|our eviction)\s+(?:is|was)\s+"
            r"|we\s+(?:present|give|provide|submit|offer|contribute|describe)\s+|here\s+is\s+)?")
_ADJ = r"(?:[\w-]+\s+){0,3}?"
# "a port of X", or of X's whole method named first: "a port of the dynamic page selection of X"
_BEFORE_NOUN = re.compile(rf"^\W*{_SUBJECT}(?:an?\s+|the\s+|our\s+)?{_ADJ}{_PORT_NOUN}\s+of\s+(?:the\s+)?"
                          rf"(?:{_ADJ}{_WHOLE_NOUN}\s+(?:of|from|in)\s+(?:the\s+)?)?[\s*_\"'\u201c]*$", re.I)
# the method itself as the one that ports: "we", "this bundle", "our code", "the submission"...
_PORTER = (r"(?:we|it|here,?\s+we|(?:this|the|our)\s+(?:method|submission|bundle|work|code|entry|class|press|module|"
           r"implementation|selector|rule|eviction))")
_BEFORE_VERB = re.compile(rf"^\W*{_PORTER}\s+(?:[\w-]+ly\s+|simply\s+|just\s+)?{_PORT_VERB}\s+(?:the\s+)?"
                          rf"(?:{_ADJ}{_WHOLE_NOUN}\s+(?:of|from|in)\s+(?:the\s+)?)?[\s*_\"'\u201c]*$", re.I)
_BEFORE_FROM = re.compile(rf"^\W*(?:this|it|the method|our method|this method|the submission|this submission|the code|"
                          rf"our code|the rule|our rule)\s+(?:is|was)\s+(?:an?\s+)?{_ADJ}(?:ported|re-?implemented|"
                          rf"implemented|reproduced|replicated|adapted|transcribed|translated|taken|derived|"
                          rf"port|adaptation|reimplementation)\s+(?:directly\s+|unchanged\s+)?(?:from|of)\s+"
                          rf"(?:the\s+)?[\s*_\"'\u201c]*$", re.I)
_BEFORE_IS = re.compile(r"^\W*(?:this|it|the method|our method|this method|the submission|this submission|"
                        r"the rule|our rule|the selector|our selector)\s+(?:is|was)\s+(?:exactly\s+|simply\s+|just\s+|"
                        r"precisely\s+|essentially\s+)?$", re.I)
_AFTER_PARTICIPLE = re.compile(r"^\s*,?\s*(?:is\s+|was\s+)?(?:faithfully\s+|directly\s+|simply\s+)?(?:ported|"
                               r"re-?implemented|reproduced|replicated|adapted|transcribed|transplanted)\b"
                               r"(?:\s+(?:to|for|as|on|onto|in|into)\b|\s*[,(.]|\s*$)", re.I)
_BUILDS_WHOLE = re.compile(r"\b(?:the\s+)?(?:whole|entire|full|complete)\s+(?:method|algorithm|scoring rule|rule|"
                           r"selection rule|selection|score|scoring|approach|policy)\b|\bthe method(?:,)?\s+(?:being\s+|that\s+is\s+|we\s+)?"
                           r"(?:ported|port|reimplemented|reimplement|reproduced|reproduce|implemented)\b|^\W*(?:ported|reimplemented|reproduced)\b", re.I)
# what makes a port sentence not a whole-method port: an addition of the author's own, a hypothetical, another
# work's port, a negation
_ADDED = re.compile(r"\b(?:plus|adds?|added|adding|extend(?:s|ed|ing)?|extension|combined|combines?|on top of|new|"
                    r"novel|our own|augment(?:s|ed|ing)?|additional|beyond|together with|instead)\b", re.I)
_HYPO = re.compile(r"\b(?:could|would|might|may|should|if|whether|future|plan(?:s|ned)? to|cannot|can't)\b", re.I)
_OTHERS_PORT = re.compile(r"\b(?:has been|have been|exists?|existing|include[sd]?|including|such as|e\.g|"
                          r"for example|for instance|see also)\b", re.I)


def _after_mention(sentence: str, at: int, name: str) -> str:
    """The text after a mention at ``at``: the name, a parenthesised citation and an arXiv id skipped."""
    rest = sentence[at:]
    m = re.match(rf"(?:{re.escape(name)}|\d{{4}}\.\d{{4,5}})", rest, re.I)
    rest = rest[m.end():] if m else re.sub(r"^\S+", "", rest, count=1)
    while True:
        p = re.match(r"\s*(?:\([^()]*\)|\[[^\]]*\]|,\s*arxiv\s*:?\s*\d{4}\.\d{4,5}|\s*\*\*?)", rest, re.I)
        if not p or not p.group(0).strip():
            return rest
        rest = rest[p.end():]


def _whole_object(after: str) -> bool:
    """After "port of X": the object is X itself (followed by "to", a comma, the end...) or X's whole method
    ("X's selection rule"), not a part of it ("X's pooling", "X's observation window")."""
    poss = re.match(r"\s*(?:['\u2019]s?|s['\u2019])\s+([\w\s-]{1,60}?)(?=\s+(?:to|for|as|on|onto|in|into|with|from|"
                    r"unchanged|,)\b|[,.;:()]|$)", after)
    if poss:
        return bool(_WHOLE.search(poss.group(1).strip()))
    return not re.match(r"\s*['\u2019]", after)


def _port_mention(sentence: str, at: int, name: str, section: str, stop: int | None = None) -> bool:
    """``stop``: where the next paper's mention starts (a Builds-on line may list several)."""
    before = sentence[:at]
    after = _after_mention(sentence, at, name)
    if _contrasted(sentence, at) or _HYPO.search(sentence) or _OTHERS_PORT.search(before):
        return False
    if _ADDED.search(sentence):
        return False
    if section == "builds_on":  # the entry's own words after the name (a parenthesis included)
        return bool(_BUILDS_WHOLE.search(sentence[at:stop]))
    if _BEFORE_NOUN.search(before) or _BEFORE_VERB.search(before) or _BEFORE_FROM.search(before):
        return _whole_object(after)
    if _BEFORE_IS.search(before):  # "this is X", "this is X's selection rule, unchanged"
        if re.match(r"\s*(?:with|plus|and|but|except|where|whose|that|which)\b", after, re.I):
            return False  # "this is X with Y": a variant of X, which the measurement places
        return _whole_object(after)
    if not before.strip(" #*-_\t") and _AFTER_PARTICIPLE.match(after):  # "X, ported as one-shot eviction"
        return True
    return False


# the author's own statement that nothing in the method is new: said of the method itself (the sentence opens with
# it), never with an exception ("nothing here is new except the budget rule", "not a new method on its own")
_NOT_NEW = re.compile(
    r"^\W*(?:(?:this|it|here|the method|our method|this method|the submission|this submission|this bundle|the bundle|"
    r"the code|our code)\s+(?:is|was)\b[^;]*?\bnot\s+(?:a\s+)?(?:new|novel)\s+(?:method|idea|rule|algorithm|"
    r"approach|contribution|technique)\b"
    # "Not a new method: the scoring rule is the paper's" (the subject left out, the sentence opening with it)
    r"|not\s+(?:a\s+)?(?:new|novel)\s+(?:method|idea|rule|algorithm|approach|contribution|technique)\b"
    r"|nothing\s+(?:here|in\s+(?:this|the|our)\s+(?:bundle|submission|method|code|work))\s+(?:is|was)\s+"
    r"(?:claimed\s+(?:as|to\s+be)\s+)?(?:new|novel|original)\b"
    r"|(?:we|this\s+(?:bundle|submission|work))\s+(?:claims?|makes?)\s+no\s+(?:novelty|new\s+(?:method|idea|"
    r"contribution))\b(?!\s+(?:for|in|of|on|about)\b)"
    r"|no\s+novelty\s+is\s+claimed\b"
    # "This bundle is a port, submitted as a reference point": a port, its paper named around it
    r"|(?:this|it|the|our)(?:\s+(?:bundle|submission|method|code|work))?\s+is\s+an?\s+(?:straight\s+|faithful\s+|"
    r"plain\s+|direct\s+)?(?:port|re-?implementation|reproduction|replication)\b(?!\s+of\b)"
    # "Everything here is X's": every part of it another's
    r"|(?:everything|all\s+of\s+it)\s+(?:here\s+|in\s+(?:this|the|our)\s+(?:bundle|submission|method|code)\s+)?"
    r"(?:is|comes\s+from)\s+(?:from\s+)?(?:[\w.-]+['\u2019]s?\b|borrowed|published|prior\s+work|taken\s+from))", re.I)
# said anywhere in the sentence: "submitted as a reference point rather than as new work"
_NOT_NEW_WORK = re.compile(r"\b(?:rather\s+than|not)\s+(?:as\s+)?(?:new|novel|original)\s+(?:work|research)\b", re.I)
_EXCEPT = re.compile(r"\b(?:except|but|apart from|other than|beyond|besides|save for|aside from|alone|on its own|"
                     r"in isolation|individually|by itself|per se|however|although|though|whereas|yet|until|unless|"
                     r"if|would|could|might|ours|our own|we add|adds?|added|our contribution|we (?:propose|introduce)|"
                     r"what is new|new here is)\b", re.I)


def _not_new(sentence: str) -> bool:
    """The sentence says, of this method, that nothing in it is new (no exception, no hypothetical, nothing of the
    author's own anywhere in the sentence)."""
    return not _EXCEPT.search(sentence) and any(_NOT_NEW.search(c) or _NOT_NEW_WORK.search(c)
                                                 for c in re.split(r";\s*", sentence))


def _opening(description: str, first_section_line: int) -> str:
    """The text before the first section the arena asks for, less the title and the headings."""
    lines = description.splitlines()[:first_section_line - 1]
    return "\n".join(ln for ln in lines if not ln.lstrip().startswith("#"))


def declared_port(description: str) -> DeclaredPort | None:
    """The paper the description says this method is a port of, as a whole (``DeclaredPort``), or None.

    A sentence of the title, Idea, Method summary, Relation to prior work or Builds on states that the method is a
    port, (re)implementation, reproduction or adaptation of an index paper, or of a work outside the index that the
    description cites by arXiv id (``external_works``; looked for only when no index paper is declared): "This is a
    port of X to ...", "A faithful reimplementation of X", "We port X to board C", "X, ported as one-shot eviction", "This is X's selection rule,
    unchanged", "Our method is adapted from X", "This bundle ports the eviction strategy of X", a Builds-on entry
    "X: the whole scoring rule" / "(the method ported)"; or a statement that nothing in the method is new
    (``_declared_not_new``: "This is X's rule, not a new method", "nothing here is claimed as new"). Not one: a part of X ("a port of X's pooling", "the window is adapted from X"), an addition of the
    author's own in the same sentence ("a port of X plus a new redundancy term"), a negation or contrast ("not a
    port of X", "unlike a port of X"), a hypothetical ("a port of X would need ..."), another work's port ("X has
    been ported to vLLM", "methods include a port of X")."""
    desc, _ = parse_description(description)
    parts: list[tuple[str, str]] = []
    if desc.title:
        parts.append(("title", desc.title))
    for key in ("idea", "method_summary", "relation_to_prior_work", "builds_on"):
        s = desc.sections.get(key)
        if s is not None:
            parts += [(key, sent) for sent in _sentences(s.text)]
    if desc.sections:  # the opening text under headings of the author's own ("What this is"), read as its idea
        parts += [("idea", sent) for sent in _sentences(_opening(description, min(s.line for s in desc.sections.values())))]
    if not desc.sections:  # no section the arena asks for: every sentence under the title is the author's account
        parts += [("text", sent) for sent in _sentences("\n".join(
            ln for ln in description.splitlines() if not ln.lstrip().startswith("#")))]
    low = description.lower()
    papers = [p for p in load_index().papers
              if any(k and k in low for k in (p.short_name.lower(), p.arxiv or ""))]
    # then works outside the index that the description cites by arXiv id (the method exists all the same)
    external = external_works(description)
    for group in (papers, external):
        for key, sent in parts:
            for p in group:
                for at in _mentions(sent, p, []):
                    name = p.short_name if sent[at:at + len(p.short_name)].lower() == p.short_name.lower() else \
                        (p.arxiv or p.short_name)
                    later = [o for q in papers + external if q is not p for o in _mentions(sent, q, []) if o > at]
                    if _port_mention(sent, at, name, key, min(later, default=None)):
                        return DeclaredPort(short_name=p.short_name, arxiv=p.arxiv, quote=sent.strip()[:300],
                                            section=key)
    return _declared_not_new(parts, papers + external) or _port_headings(description)


# a heading of the author's own that names the port or what it changes from its source ("## The port", "## What is
# ported", "## Deviations from the paper"): the description is a port's account
_PORT_HEADING = re.compile(r"^\s*#{1,6}\s+(?:(?:the|this|our|what\s+is)\s+)?(?:port(?:ed)?\b|deviations?\b)", re.I | re.M)


def _port_headings(description: str) -> DeclaredPort | None:
    """A description organised as a port's account (``_PORT_HEADING``) whose credits name exactly one index paper:
    a port of that paper (the sentences may say "this bundle ports them" with no name in them)."""
    m = _PORT_HEADING.search(description)
    if m is None:
        return None
    credited = credited_papers(description)
    if len(credited) != 1:
        return None
    p, c = credited[0]
    return DeclaredPort(short_name=p.short_name, arxiv=p.arxiv, quote=m.group(0).strip()[:300],
                        section=c.section or "text")


_ARXIV_ID = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(?:v\d+)?(?!\d)")
_NAME_WORD = re.compile(r"^[A-Z0-9][\w-]*$|^[\w-]*[A-Z][\w-]*$")  # a word of a name: capitalised or holding a capital


def external_works(description: str) -> list[Paper]:
    """Works the description cites by an arXiv id that no index paper has, each under the name written before its
    citation ("the Compressive Transformer's memory compression (Rae et al., arXiv 1911.05507)": Compressive
    Transformer): the capitalised words nearest before the parenthesis (or the "arXiv") that holds the id, a few
    lower-case words of what it names skipped. Read only to know what a description says it ports."""
    known = {p.arxiv for p in load_index().papers if p.arxiv}
    out: list[Paper] = []
    seen: set[str] = set()
    for m in _ARXIV_ID.finditer(description):
        arxiv = m.group(1)
        if arxiv in known or arxiv in seen:
            continue
        start = description.rfind("\n\n", 0, m.start()) + 1  # the paragraph, its lines joined
        before = " ".join(description[start:m.start()].split())
        cut = before.rfind("(")
        if cut < 0 or ")" in before[cut:]:
            cut = before.lower().rfind("arxiv")
        if cut <= 0:
            continue
        quoted = re.search(r"[\"\u201c]([^\"\u201d]{20,200})[\"\u201d]", before[cut:])  # the title, when quoted
        name = _cited_name(re.split(r"\s+", re.sub(r"[,;:]", " ", before[:cut]).strip()))
        if name:
            seen.add(arxiv)
            out.append(Paper(short_name=name, title=quoted.group(1) if quoted else name, arxiv=arxiv))
    return out


_AUTHOR_LINK = frozenset({"and", "by", "of", "from", "et", "al", "al.", "&"})


def _cited_name(words: list[str]) -> str:
    """The name a citation follows: the capitalised run nearest before it, a few lower-case words skipped; a run
    that names its authors ("the Ripple Cache of Ovando and Iwu") gives way to the run before the link word."""
    runs: list[tuple[list[str], str]] = []  # (a run of name words, the word before it), nearest first
    run: list[str] = []
    skipped = 0
    for i in range(len(words) - 1, -1, -1):
        w = re.sub(r"['\u2019]s$", "", words[i]).strip("\"'`*_")
        if _NAME_WORD.match(w) and (run or len(w) > 1):
            run.insert(0, w)
            continue
        if run:
            runs.append((run, w.lower()))
            run, skipped = [], 0
            if len(runs) >= 4:
                break
        if w.lower() not in _AUTHOR_LINK:
            skipped += 1
            if skipped > 3:
                break
    if run:
        runs.append((run, ""))
    k = 0
    while k + 1 < len(runs) and runs[k][1] in _AUTHOR_LINK:
        k += 1
    if not runs or len(runs[k][0]) == 1 and runs[k][0][0].lower() in ("the", "a", "an", "our", "this"):
        return ""
    return " ".join(runs[k][0])


def _declared_not_new(parts: list[tuple[str, str]], papers: list[Paper]) -> DeclaredPort | None:
    """A description that says nothing in the method is new ("This is X's halting rule, not a new method", "nothing
    here is claimed as new") declares the method a port of the paper it names first, uncontrasted: in that
    sentence, else in that section, else in Builds on. The statement can only lower novelty (see ``declared_port``)."""
    for key, sent in parts:
        if key == "builds_on" or not _not_new(sent):
            continue
        for scope in ([sent], [t for k, t in parts if k == key], [t for k, t in parts if k == "builds_on"]):
            first: tuple[int, int, Paper] | None = None
            for i, text in enumerate(scope):
                for p in papers:
                    for at in _mentions(text, p, []):
                        if not _contrasted(text, at) and (first is None or (i, at) < first[:2]):
                            first = (i, at, p)
            if first is not None:
                p = first[2]
                return DeclaredPort(short_name=p.short_name, arxiv=p.arxiv, quote=sent.strip()[:300], section=key)
    return None
