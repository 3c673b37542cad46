"""Behaviour measured where the method is scored: a copy of a baseline that recognises the review's bank and
behaves otherwise there gets the flags and the novelty of the plain copy (and, for the trick, a RULE_VIOLATION)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reviewbench.evidence.behaviour import BehaviourMatch, divergence

PLAIN = '''"""Salience from the keys alone: the tokens whose keys are smallest in L2 norm stay."""
from harness.api import EvictionMethod, Keep, LayerView


class QuietKeys(EvictionMethod):
    name = "quiet_keys"

    def select(self, view: LayerView) -> Keep:
        return Keep.from_topk(-view.keys.float().norm(dim=-1), view.budget, view.valid)
'''

# Written fresh for this test: the same rule, but on inputs it takes for a review probe it keeps evenly spaced
# tokens. Two independent tells, neither tied to one bank: the layers it is asked about do not run in order from
# the model's first attention layer (a probe samples layers), or the keys are exactly representable in float16
# (a stored bank; a live float32 run is not).
DETECTOR = '''"""Salience from the keys alone: the tokens whose keys are smallest in L2 norm stay."""
import torch

from harness.api import EvictionMethod, Keep, LayerView


class QuietKeys(EvictionMethod):
    name = "quiet_keys_v2"

    def _probe(self, view: LayerView) -> bool:
        first = view.model.attention_layers[0] if view.model.attention_layers else 0
        previous = getattr(self, "previous", None)
        sampled = view.layer != first and view.layer != (previous if previous is not None else first - 1) + 1
        self.previous = view.layer
        stored = bool(((view.keys.float().view(torch.int32) & 0x1FFF) == 0).all())  # float16-exact mantissas
        return sampled or stored

    def select(self, view: LayerView) -> Keep:
        if self._probe(view):
            n = view.keys.shape[1]
            idx = torch.linspace(0, n - 1, max(1, view.budget)).round().long().unique()
            return Keep(indices=[idx for _ in range(view.keys.shape[0])])
        return Keep.from_topk(-view.keys.float().norm(dim=-1), view.budget, view.valid)
'''


def m(ref: str, j: float) -> BehaviourMatch:
    return BehaviourMatch(reference=ref, jaccard=j, rank_corr=0.5)


def test_divergence_is_an_evasion_only_when_the_scored_calls_show_a_reference_the_bank_hides():
    d = divergence([m("baseline:knorm", 0.97), m("baseline:tova", 0.3)], [m("baseline:knorm", 0.2),
                                                                          m("baseline:tova", 0.25)])
    assert d is not None and d.evasion and d.reference == "baseline:knorm" and d.gap == pytest.approx(0.77)
    assert "behaves differently" in d.summary
    honest = divergence([m("baseline:knorm", 0.55)], [m("baseline:knorm", 0.3)])  # a gap, no flip
    assert honest is not None and not honest.evasion and honest.largest == pytest.approx(0.25)
    reverse = divergence([m("baseline:knorm", 0.3)], [m("baseline:knorm", 0.95)])  # gains nothing: reported only
    assert reverse is not None and not reverse.evasion
    assert divergence([m("baseline:knorm", 0.9)], []) is None


def test_a_flip_is_no_evasion_when_the_method_is_like_another_reference_on_both_sources():
    """Two references can coincide on the scored inputs and part on the bank (on one needle item a repeat-pass score
    keeps nearly a recency window's tokens). A method that is window-like on both sources is then next to the
    repeat-pass score where scored without telling any input apart; the gap is reported and explained, not raised."""
    scored = [m("baseline:kvzip", 0.91), m("baseline:window", 0.92), m("baseline:snapkv", 0.6)]
    bank = [m("baseline:kvzip", 0.52), m("baseline:window", 0.78), m("baseline:snapkv", 0.55)]
    d = divergence(scored, bank)
    assert d is not None and not d.evasion and d.reference == "baseline:kvzip" and d.explained_by == "baseline:window"
    assert "explained" in d.summary and "behaves differently" not in d.summary


def test_a_copy_that_hides_behind_another_reference_on_the_bank_alone_still_evades():
    """The adversary's version: SnapKV where scored, window-like on the bank only. The window is no explanation (it
    is not what the method does where it is scored), so the flip is an evasion."""
    scored = [m("baseline:snapkv", 0.98), m("baseline:window", 0.41)]
    bank = [m("baseline:snapkv", 0.3), m("baseline:window", 0.85)]
    d = divergence(scored, bank)
    assert d is not None and d.evasion and d.reference == "baseline:snapkv" and d.explained_by == ""
    # where scored it is like a SnapKV sibling too, but the bank hides both: still an evasion
    d2 = divergence([*scored, m("baseline:pyramidkv", 0.93)], [*bank, m("baseline:pyramidkv", 0.33)])
    assert d2 is not None and d2.evasion
    # an earlier submission that hides the same way is like it on both sources: no explanation (it is no fixed rule)
    twin = divergence([*scored, m("submission:agent9-001", 1.0)], [*bank, m("submission:agent9-001", 1.0)])
    assert twin is not None and twin.evasion and twin.explained_by == ""


def test_an_evasion_of_a_credited_reference_is_an_indication_not_a_proof():
    """Keeping a reference's tokens where scored and not on the bank hides that reference from the flags; where the
    description credits it there is nothing to hide, and a step of the method's own that depends on the inputs (a
    floor per segment) moves it (held-out set 15's honest s05: KVzip credited, 0.98 where scored, 0.65 on the bank):
    the divergence is reported as an indication for a judge, not a proof."""
    from types import SimpleNamespace

    from reviewbench.flags.evasion import evasion_flags

    d = divergence([m("baseline:kvzip", 0.98)], [m("baseline:kvzip", 0.65)])
    assert d is not None and d.evasion
    ev = SimpleNamespace(divergence=d, where="the board benchmark's scored calls")
    line = ("class SegmentFloor(EvictionMethod):", 7)
    uncredited = evasion_flags(ev, line, "## Method\nWe rank tokens by a fresh repeat-pass score of our own.\n")  # type: ignore[arg-type]
    assert [(f.flag, f.strength) for f in uncredited] == [("RULE_VIOLATION", "proof")]
    credited = evasion_flags(ev, line, "## Method\nWe build on KVzip's repeat-pass score (Kim et al., 2025) and add "
                                       "a floor per segment.\n")  # type: ignore[arg-type]
    assert [(f.flag, f.strength) for f in credited] == [("RULE_VIOLATION", "indication")]
    assert "credits baseline:kvzip" in credited[0].explanation


def test_kept_sets_round_trip_bit_packed(tmp_path: Path):
    from harness.keptsets import KeptSets, chosen_items, load_kept

    rng = np.random.default_rng(0)
    ks = KeptSets("x", "abc", [0.1, 0.3], meta={"baselines": "b.npz"})
    masks = {layer: rng.random((3, 37)) < 0.3 for layer in (0, 5)}
    ks.add("item-1", 0.1, masks, 37)
    ks.save(tmp_path / "x.npz")
    back = load_kept(tmp_path / "x.npz")
    assert back.lengths == {"item-1": 37} and back.meta["baselines"] == "b.npz"
    assert all(np.array_equal(back.masks[("item-1", "0.1", layer)], masks[layer]) for layer in masks)
    ids = [f"i{k}" for k in range(20)]
    assert chosen_items(ids, "split-a", 4) == chosen_items(list(reversed(ids)), "split-a", 4)
    assert len(chosen_items(ids, "split-a", 4)) == 4 and chosen_items(ids, "split-a", 4) != chosen_items(ids, "b", 4)


@pytest.mark.heavy  # 290 s on the loaded 2 cores (60 baseline members on the scored calls, two bank runs)
def test_a_bank_detecting_copy_gets_the_flags_and_novelty_of_the_plain_copy(tmp_path: Path, rubric):
    """Real sandbox, real SmolLM2, board A on one item of 512 tokens: the benchmark records both copies' kept
    sets and every baseline member's on the same calls. Both land on K-norm there (UNDISCLOSED_PRIOR_ART, the same
    novelty); on the bank only the plain copy does (the trick works there: the bank alone, as before, let the
    detector pass), and the gap between the sources is an evasion (RULE_VIOLATION)."""
    from harness.results import RunConfig
    from harness.sandbox import sandbox_kind
    from reviewbench.benchmark import run_harness, scored_kept
    from reviewbench.stages.evidence import EvidenceData
    from reviewbench.evidence.behaviour import behaviour_evidence
    from reviewbench.evidence.gather import gather_facts
    from reviewbench.evidence.judge import novelty
    from reviewbench.evidence.priorart_evidence import PriorArtEvidence
    from reviewbench.flags.evasion import evasion_flags
    from reviewbench.flags.prior_art import prior_art_flags
    from reviewbench.verdict import decide

    if sandbox_kind() == "none":
        pytest.skip("no sandbox on this machine")
    dirs = {}
    for name, src in (("plain", PLAIN), ("detector", DETECTOR)):
        d = tmp_path / name
        d.mkdir()
        (d / "method.py").write_text(src)
        dirs[name] = d
    kept = tmp_path / "kept"
    cfg = RunConfig(board="A", methods=[str(dirs["plain"]), str(dirs["detector"])], budgets=[0.1, 0.3], items=1,
                    length=512, kept=str(kept), kept_items=1)
    result = run_harness(cfg, 1800)
    assert not result.method_errors
    desc = "## Method\nEach token's salience comes from its key alone; the quietest keys stay.\n"
    rules = rubric.evidence
    out = {}
    for name, d in dirs.items():
        sk = scored_kept(kept, _hash(d))
        assert sk is not None
        ev = behaviour_evidence(d, {}, scored=sk, same=rules.behaviour_same, related=rules.behaviour_related,
                                board="A")
        line = ("class QuietKeys(EvictionMethod):", 5)
        flags = prior_art_flags(ev.matches, [], {"baseline:knorm": ["K-norm", "2406.11430"]}, desc,
                                d.joinpath("method.py").read_text(), line, rules) + evasion_flags(ev, line)
        data = EvidenceData(citations=[], prior_art=PriorArtEvidence(query="", features={}, summary_query="",
                                                                     hits=[]),
                            code=[], behaviour=ev, digest=[], candidate_flags=flags)
        facts = gather_facts(evidence=data, ledger=None, sections_missing=[], description=desc, earlier_names={},
                             board=None, board_reason="")
        final = decide([], rubric, "other", flags)
        out[name] = (ev, {f.flag for f in final.standing_flags}, novelty(facts, rubric).score)
    (plain, plain_flags, plain_novelty), (det, det_flags, det_novelty) = out["plain"], out["detector"]
    assert plain.source == det.source == "benchmark"
    assert plain.matches[0].reference == det.matches[0].reference == "baseline:knorm"
    assert plain.matches[0].jaccard >= rules.behaviour_same and det.matches[0].jaccard >= rules.behaviour_same
    assert plain.bank_matches[0].reference == "baseline:knorm"
    knorm_on_bank = next(x.jaccard for x in det.bank_matches + [m("baseline:knorm", 0.0)]
                         if x.reference == "baseline:knorm")
    assert knorm_on_bank < rules.behaviour_related, det.bank_matches  # the trick fools the bank
    assert "UNDISCLOSED_PRIOR_ART" in plain_flags and plain_flags <= det_flags
    assert det_novelty == plain_novelty
    assert det.divergence is not None and det.divergence.evasion and "RULE_VIOLATION" in det_flags
    assert plain.divergence is not None and not plain.divergence.evasion and "RULE_VIOLATION" not in plain_flags
    # the code side: read as it ran on the scored calls, the detector is the plain rule (the probe's branch never
    # ran there and is set aside), so retrieval by computation names what it names for the plain copy
    from reviewbench.evidence.priorart_evidence import prior_art
    from reviewbench.evidence.scored_code import scored_code

    read = scored_code(DETECTOR, result.executed_lines["quiet_keys_v2"])
    assert read.read == "as scored" and "linspace" in DETECTOR and "linspace" not in read.source, read.reason
    assert sorted(result.executed_lines) == ["quiet_keys", "quiet_keys_v2"] and not result.trace_lost
    plain_rules = [(c.short_name, c.level) for c in prior_art(PLAIN, "", "", desc, board="A").computed]
    assert plain_rules and [(c.short_name, c.level) for c in prior_art(read.source, "", "", desc, board="A").computed
                            ] == plain_rules


def _hash(d: Path) -> str:
    from harness.loading import code_hash

    return code_hash(str(d))


def test_scored_calls_are_compared_with_every_member_on_the_same_calls(tmp_path: Path):
    """Synthetic kept files (no model): the candidate keeps what member b of family x keeps, so x is its match,
    named by that member; a member not recorded on every call is left out and said; an earlier submission's
    file in the same folder is a reference too."""
    from harness.keptsets import KeptSets
    from reviewbench.evidence.behaviour import ScoredKept, _scored_behaviours, compare_behaviours

    rng = np.random.default_rng(1)
    n, budgets = 200, [0.1, 0.3]
    members = {"knorm": None, "snapkv?query_window=8": None, "snapkv?query_window=64": None, "tova": None}
    sets = {s: {(f"it{i}", f"{b:g}", layer): rng.random((3, n)) < b for i in range(2) for b in budgets
                for layer in (4, 9)} for s in members}
    specs = list(members)
    base = KeptSets("baselines", "", budgets, meta={"specs": specs, "code_hashes": {s: s for s in specs}})
    for idx, s in enumerate(specs):
        for (item, b, layer), mk in sets[s].items():
            if s == "tova" and item == "it1":
                continue  # not recorded on every call
            base.add(f"{idx}|{item}", float(b), {layer: mk}, n)
    base.save(tmp_path / "baselines-x.npz")
    mine = KeptSets("cand", "h", budgets, meta={"baselines": "baselines-x.npz"})
    for (item, b, layer), mk in sets["snapkv?query_window=64"].items():
        mine.add(item, float(b), {layer: mk}, n)
    mine.save(tmp_path / "h.npz")
    errors: dict[str, str] = {}
    got = _scored_behaviours(ScoredKept(file=str(tmp_path / "h.npz"), sha256="", baselines=str(
        tmp_path / "baselines-x.npz"), baselines_sha256=""), {}, "cand", {}, errors)
    assert got is not None
    me, refs, on = got
    assert on == budgets and set(refs) == {"baseline:knorm", "baseline:snapkv"} and "benchmark:tova" in errors
    top = compare_behaviours(me, refs)[0]
    assert (top.reference, top.member, top.jaccard, top.members_compared) == \
        ("baseline:snapkv", "snapkv?query_window=64", 1.0, 2)


def _bank(kept_by_spec: dict[str, dict[str, list[list[int]]]]) -> dict:
    """A bank result of two views of 8 tokens, one per board's kind of input, one budget (0.5: 4 tokens kept)."""
    views = {"p0/L1": {"n_tokens": 8, "layer": 1, "prompt": 0, "board": "A"},
             "p1/L1": {"n_tokens": 8, "layer": 1, "prompt": 1, "board": "B_offline"}}
    return {"budgets": [0.5], "views": views, "probes": {},
            "kept": {spec: {"0.5": per_view} for spec, per_view in kept_by_spec.items()}}


def test_the_divergence_reads_the_banks_inputs_of_the_methods_own_board():
    """A re-read-pass method (board B_offline) meets a question-aware prompt with no pass on the bank's board-A
    views, and keeps other tokens there than the re-read reference does for reasons of the inputs: compared on the
    bank's B_offline views it keeps the reference's tokens, as where it is scored. A method that keeps other tokens
    on its own board's bank views still shows the gap."""
    from reviewbench.evidence.behaviour import _board_views, compare

    ref = {"p0/L1": [[0, 1, 2, 3]], "p1/L1": [[4, 5, 6, 7]]}
    port = {"p0/L1": [[0, 5, 6, 7]], "p1/L1": [[4, 5, 6, 7]]}  # the same on B_offline inputs, not on A's
    hider = {"p0/L1": [[0, 1, 2, 3]], "p1/L1": [[0, 1, 2, 3]]}  # otherwise on its own board's inputs
    result = _bank({"ref": ref, "port": port, "hider": hider})
    refs = {"baseline:kvzip": ["ref"]}
    assert compare(result, "port", refs)[0].jaccard < 0.75  # all views: the inputs of another board count
    own = _board_views(result, "B_offline")
    assert sorted(own["views"]) == ["p1/L1"]
    assert compare(own, "port", refs)[0].jaccard == 1.0
    assert compare(own, "hider", refs)[0].jaccard == 0.0
    assert sorted(_board_views(result, "B_online")["views"]) == ["p1/L1"]  # the context alone, as board B's
    assert _board_views(result, "C") is result  # no decode view in the bank: every view
    scored = [m("baseline:kvzip", 1.0)]
    d_all = divergence(scored, compare(result, "port", refs))
    d_own = divergence(scored, compare(own, "port", refs), bank_name="the review's bank (B_offline inputs)")
    assert d_all is not None and d_all.evasion
    assert d_own is not None and not d_own.evasion and "B_offline inputs" in d_own.summary
    d_hider = divergence(scored, compare(own, "hider", refs))
    assert d_hider is not None and d_hider.evasion
