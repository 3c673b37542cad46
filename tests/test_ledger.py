"""The claim ledger: claims found, bound to sandboxed harness re-runs, decided with a stated tolerance."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewbench.bundle import Claim
from reviewbench.evidence.claims import LedgerClaim, decide, from_claims_json, from_description, unverifiable
from reviewbench.flags.fabricated_evidence import contradicted_claim_flags

DATA = Path(__file__).parent / "data"
BOARDS = {"A", "B_online", "B_offline", "C"}


def claim(**kw) -> LedgerClaim:
    base = dict(source="claims.json", text="t", metric="normalized_accuracy", value=0.8, board="A", budget=0.1)
    return LedgerClaim(**(base | kw))


def test_numbers_are_found_in_description_sentences():
    text = ("## Evidence\nOn board A at 10 % keep, normalised accuracy is 0.85 and KL 0.07 (dev split, SmolLM2-135M).\n"
            "With Llama-3.1-8B we reach 95% accuracy at a 5% budget.\n"
            "On the test split, accuracy 0.9 at 2% keep. We evaluate 20 items; accuracy improves a lot.")
    got = [(c.source, c.metric, c.value, c.budget, c.split, c.model) for c in from_description(text, "A")]
    assert got == [("DESCRIPTION.md:2", "normalized_accuracy", 0.85, 0.1, "dev", "SmolLM2-135M"),
                   ("DESCRIPTION.md:2", "kl", 0.07, 0.1, "dev", "SmolLM2-135M"),
                   ("DESCRIPTION.md:3", "normalized_accuracy", 0.95, 0.05, "dev", "Llama-3.1-8B"),
                   ("DESCRIPTION.md:4", "normalized_accuracy", 0.9, 0.02, "test", None)]
    assert from_description("No numbers are claimed here; the harness re-run is the evidence.", "C") == []


def test_unverifiable_claims_say_why():
    assert "test split" in unverifiable(claim(split="test"), BOARDS)
    assert "not available here" in unverifiable(claim(model="Llama-3.1-8B"), BOARDS)
    assert "no such board" in unverifiable(claim(board="D"), BOARDS)
    assert "no budget" in unverifiable(claim(budget=None), BOARDS)
    assert unverifiable(claim(model="SmolLM2-135M"), BOARDS) is None
    c = from_claims_json([Claim(metric="accuracy", value=0.5, budget=0.1, items=4)], "A")[0]
    assert (c.metric, c.board, c.items) == ("normalized_accuracy", "A", 4)


def test_the_decision_and_its_tolerance():
    ok = decide(claim(value=0.8), [0.75, 0.85], items=10)
    assert ok.status == "reproduced" and ok.tolerance == pytest.approx(0.1)  # 2 x std 0.05 = floor 0.1
    bad = decide(claim(value=1.0), [0.2, 0.3], items=10)
    assert bad.status == "contradicted" and bad.reproducible and bad.measured == 0.25
    assert "outside ±0.100" in bad.reason
    noisy = decide(claim(value=0.6), [0.2, 0.9], items=10)  # wide spread: 2 x 0.35 = 0.7 tolerance
    assert noisy.status == "reproduced" and noisy.tolerance == pytest.approx(0.7)
    split = decide(claim(value=0.5, metric="kl"), [0.3, 0.7], items=10)
    assert split.status == "reproduced"
    three = decide(claim(value=0.5), [0.38, 0.62, 0.75], items=20)  # std 0.153: tolerance 0.306
    assert three.status == "reproduced" and three.tolerance == pytest.approx(0.3063, abs=1e-3)
    assert [f.flag for f in contradicted_claim_flags([bad, ok])] == ["FABRICATED_EVIDENCE"]
    assert contradicted_claim_flags([decide(claim(value=0.5), [0.3, 0.55, 0.1], items=20)]) == []


@pytest.mark.heavy  # 4 items x 2 seeds of 1,024 tokens, twice (~75 s): `make test-all`; in `make test` the ledger's
# contradiction stands in test_a_method_failing_only_at_its_claimed_budget_is_fabricated_evidence
def test_an_honest_claim_is_reproduced_and_an_impossible_one_contradicted():
    """SnapKV (rewritten) at 10 % on 4 items x 2 seeds of 1,024 tokens measures KL 0.83 and accuracy 0.25 here;
    random eviction cannot reach an accuracy of 1.0 at 10 %."""
    from harness.sandbox import sandbox_kind
    from reviewbench.evidence.ledger import run_claims

    if sandbox_kind() == "none":
        pytest.skip("no sandbox on this machine")
    honest = [claim(metric="kl", value=0.83, items=4, length=1024), claim(value=0.25, items=4, length=1024),
              claim(value=0.9, split="test")]
    from reviewbench.arena import load_arena
    from tests.conftest import EXAMPLE_ARENA

    ex = load_arena(EXAMPLE_ARENA)
    arena = ex.model_copy(update={"config": ex.config.model_copy(update={
        "harness": ex.config.harness.model_copy(update={"claim_items": 4, "claim_seeds": 2})})})
    got = run_claims(honest, DATA / "snapkv_rewrite", arena)
    assert [e.status for e in got] == ["reproduced", "reproduced", "unverifiable"]
    assert all(e.tolerance and len(e.per_seed) == 2 for e in got[:2])
    lie = run_claims([claim(value=1.0, items=4, length=1024)], DATA / "claims_random", arena)[0]
    assert lie.status == "contradicted" and lie.reproducible and lie.measured == 0.0 and lie.tolerance == 0.25
    assert "measured 0.000" in lie.reason and contradicted_claim_flags([lie])[0].flag == "FABRICATED_EVIDENCE"


FAILS_AT_TEN = '''"""Keeps the highest-norm keys, and raises when asked for more than 7.5 % of the context."""
import torch

from harness.api import EvictionMethod, Keep, LayerView


class Brittle(EvictionMethod):
    name = "brittle"

    def select(self, view: LayerView) -> Keep:
        if view.budget > 0.075 * view.keys.shape[1]:
            raise RuntimeError("index buffer too small for this budget")
        return Keep.from_topk(view.keys.float().norm(dim=-1), view.budget, view.valid)
'''


def test_a_failure_at_the_claimed_setting_is_no_reproduction():
    """Every re-run failed: contradicted with the error (a proof); some failed: contradicted, not a proof; a run
    that produced no value for the metric stays unverifiable; a method that never loaded failed everywhere."""
    from reviewbench.evidence.claims import decide_outcomes

    every = decide_outcomes(claim(value=0.9), ["MethodError: boom", "MethodError: boom"], items=4)
    assert every.status == "contradicted" and every.reproducible and "boom" in every.reason
    assert "none of the 2 re-runs" in every.reason and every.measured is None
    assert [f.flag for f in contradicted_claim_flags([every])] == ["FABRICATED_EVIDENCE"]
    some = decide_outcomes(claim(value=0.9), ["MethodError: boom", 0.88], items=4)
    assert some.status == "contradicted" and not some.reproducible and contradicted_claim_flags([some]) == []
    assert "1 of 2 re-runs" in some.reason
    assert decide_outcomes(claim(value=0.9), [0.88, 0.9], items=4).status == "reproduced"


@pytest.mark.slow
def test_a_method_failing_only_at_its_claimed_budget_is_fabricated_evidence(tmp_path: Path, rubric):
    """Real sandbox, real SmolLM2 (1 item x 2 seeds of 256 tokens): the method raises only above 7.5 % keep. Its
    claim at 10 % is contradicted in every re-run with the error as proof, and FABRICATED_EVIDENCE stands in the
    verdict without a judge; its claim at 5 % (where it runs) is decided on the numbers; a test-split claim stays
    unverifiable and says why. On the old ledger the 10 % claim was "unverifiable": no flag."""
    from harness.sandbox import sandbox_kind
    from reviewbench.arena import load_arena
    from reviewbench.evidence.ledger import run_claims
    from reviewbench.verdict import decide as verdict
    from tests.conftest import EXAMPLE_ARENA

    if sandbox_kind() == "none":
        pytest.skip("no sandbox on this machine")
    method = tmp_path / "brittle"
    method.mkdir()
    (method / "method.py").write_text(FAILS_AT_TEN)
    ex = load_arena(EXAMPLE_ARENA)
    arena = ex.model_copy(update={"config": ex.config.model_copy(update={
        "harness": ex.config.harness.model_copy(update={"claim_items": 1, "claim_seeds": 2})})})
    claims = [claim(text="0.95 at 10 %", value=0.95, budget=0.1, length=256, task="niah_single"),
              claim(text="0.95 at 5 %", value=0.95, budget=0.05, length=256, task="niah_single"),
              claim(value=0.95, budget=0.1, split="test")]
    got = run_claims(claims, method, arena)
    ten, five, test = got
    assert ten.status == "contradicted" and ten.reproducible, ten.reason
    assert "index buffer too small" in ten.reason and "none of the 2 re-runs" in ten.reason
    assert "failed" not in five.reason and five.status in ("reproduced", "contradicted") and len(five.per_seed) == 2
    assert test.status == "unverifiable" and "test split" in test.reason
    flags = contradicted_claim_flags(got)
    assert ("FABRICATED_EVIDENCE", "0.95 at 10 %") in {(f.flag, f.quote) for f in flags}
    assert "index buffer too small" in next(f.explanation for f in flags if f.quote == "0.95 at 10 %")
    final = verdict([], rubric, "other", flags)
    assert "FABRICATED_EVIDENCE" in {f.flag for f in final.standing_flags}
