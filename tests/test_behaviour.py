"""The behavioural fingerprint: configured baseline families, the probes that recognise content-independent and
random methods, the keep-probability comparison, and (slow) held-out ports landing on their baseline."""

from __future__ import annotations

import textwrap
import tomllib
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.api import Keep, LayerView, ModelInfo
from harness.boundary import MethodError
from harness.fingerprint import (BANK_VERSION, PROBE_LAYERS, BankView, _kept, configured, is_configured_reference,
                                 run, tunables)
from harness.fingerprint_grid import BASELINES, FAMILIES
from harness.methods import REFERENCE_METHODS
from reviewbench.evidence.behaviour import (Behaviour, BehaviourEvidence, _pair_jaccard, candidate_probes, compare)

ROOT = Path(__file__).resolve().parent.parent
PORTS = ROOT / "calibration" / "ports"
INFO = ModelInfo(name="synthetic", n_layers=30, n_heads=6, n_kv_heads=2, head_dim=16, rope_theta=10000.0)
HEADER = "import torch\nfrom harness.api import EvictionMethod, Keep, LayerView\n"


# --- configured reference specs ------------------------------------------------------------------------------------
def test_every_family_member_configures_a_trusted_instance_and_leaves_the_class_alone():
    for name, specs in FAMILIES.items():
        assert len(set(specs)) == len(specs), name
        cls = REFERENCE_METHODS[name]
        before = tunables(cls)
        for spec in specs:
            method = configured(spec)
            assert type(method) is cls
            for key, raw in (kv.split("=") for kv in spec.partition("?")[2].split("&") if kv):
                value = getattr(method, key)
                assert value == (raw == "true") if isinstance(value, bool) else \
                    value == float(raw) if isinstance(value, (int, float)) else value == raw, (spec, key)
        assert tunables(cls) == before  # set on the instance, never on the class
        # the harness's own configuration comes first
        first = configured(specs[0])
        assert {k: getattr(first, k) for k in before} == before, name


def test_a_spec_sets_only_known_plain_attributes_of_reference_classes():
    with pytest.raises(ValueError, match="no tunable"):
        configured("snapkv?select=1")
    with pytest.raises(ValueError, match="no tunable"):
        configured("snapkv?name=other")
    with pytest.raises(ValueError):
        configured("snapkv?kernel=seven")
    with pytest.raises(ValueError, match="true or false"):
        configured("h2o?normalise=maybe")
    with pytest.raises(ValueError, match="not a reference"):
        configured("/tmp/x/snapkv?kernel=5")
    assert is_configured_reference("snapkv?kernel=5") and not is_configured_reference("/bundles/snapkv")
    assert getattr(configured("snapkv?kernel=5"), "kernel") == 5 and getattr(REFERENCE_METHODS["snapkv"], "kernel") == 7


# --- the comparison ------------------------------------------------------------------------------------------------
def test_weighted_jaccard_is_jaccard_on_sets_and_chance_against_a_random_law():
    a = np.zeros((1, 100), dtype=bool)
    b = np.zeros((1, 100), dtype=bool)
    a[0, :30], b[0, 20:50] = True, True
    assert _pair_jaccard(a, b, False, False)[0] == pytest.approx(10 / 50)
    assert _pair_jaccard(a, b, True, True)[0] == pytest.approx(1.0)  # two uniform laws of the same size
    f = 0.3
    assert _pair_jaccard(a, b, True, False)[0] == pytest.approx(f / (2 - f))  # what two random draws share
    c = b.copy()
    c[0, 50:60] = True
    assert _pair_jaccard(a, c, True, True)[0] == pytest.approx(30 / 40)


def _result(kept_by_spec: dict[str, list[np.ndarray]], n: int = 400, budgets=(0.1, 0.3), probes=None) -> dict:
    """A worker-shaped result: one view, one head per mask; masks[i] is the kept set at budgets[i]."""
    views = {"p0/L8": {"n_tokens": n, "layer": 8, "prompt": 0, "board": "A"}}
    kept = {s: {f"{b:g}": {"p0/L8": [sorted(int(i) for i in np.flatnonzero(m))]} for b, m in zip(budgets, masks)}
            for s, masks in kept_by_spec.items()}
    return {"budgets": list(budgets), "views": views, "kept": kept, "probes": probes or {}}


def _first(n: int, k: int) -> np.ndarray:
    m = np.zeros(n, dtype=bool)
    m[:k] = True
    return m


def _last(n: int, k: int) -> np.ndarray:
    m = np.zeros(n, dtype=bool)
    m[n - k:] = True
    return m


def _draw(n: int, k: int, seed: int) -> np.ndarray:
    m = np.zeros(n, dtype=bool)
    m[np.random.default_rng(seed).choice(n, k, replace=False)] = True
    return m


def test_the_best_member_of_a_family_is_named():
    n = 400
    res = _result({"cand": [_last(n, 40), _last(n, 120)], "fam?a=1": [_first(n, 40), _first(n, 120)],
                   "fam?a=2": [_last(n, 40), _last(n, 120)], "other": [_draw(n, 40, 1), _draw(n, 120, 2)]})
    probes = {s: {"repeat": 1.0, "permuted": 0.2, "perturbed": 1.0} for s in res["kept"]}
    res["probes"] = probes
    got = compare(res, "cand", {"baseline:fam": ["fam?a=1", "fam?a=2"], "submission:x": "other"})
    assert got[0].reference == "baseline:fam" and got[0].member == "fam?a=2" and got[0].jaccard == 1.0
    assert got[0].members_compared == 2 and got[0].basis == "kept sets" and got[0].rank_corr == 1.0
    assert got[1].reference == "submission:x" and got[1].member == "" and got[1].jaccard < 0.3


def test_random_draws_with_different_seeds_are_one_law_and_not_a_window():
    n = 400
    res = _result({"cand": [_draw(n, 40, 7), _draw(n, 120, 8)], "random": [_draw(n, 40, 0), _draw(n, 120, 1)],
                   "window": [_last(n, 40), _last(n, 120)]})
    res["probes"] = {"cand": {"repeat": 0.1, "permuted": 0.1, "perturbed": 0.1},  # unseeded RNG
                     "random": {"repeat": 1.0, "permuted": 1.0, "perturbed": 1.0},  # seeded by layer and length
                     "window": {"repeat": 1.0, "permuted": 1.0, "perturbed": 1.0}}
    assert 0.05 < _pair_jaccard(res_mask(res, "cand"), res_mask(res, "random"), False, False)[0] < 0.2
    got = compare(res, "cand", {"baseline:random": ["random"], "baseline:window": ["window"]})
    assert got[0].reference == "baseline:random" and got[0].jaccard == 1.0 and got[0].basis == "keep probability"
    assert got[1].reference == "baseline:window" and got[1].jaccard < 0.2 and got[1].rank_corr == 0.0
    pr = candidate_probes(res, "cand")
    assert pr is not None and pr.uniform_random and pr.deterministic is False
    window = candidate_probes(res, "window")
    assert window is not None and not window.uniform_random and "position rule" in window.summary


def res_mask(res: dict, spec: str) -> np.ndarray:
    b = Behaviour(res["kept"][spec], res["views"], res["budgets"])
    return b.masks[(f"{res['budgets'][0]:g}", "p0/L8")]


@pytest.mark.parametrize("probes,uniform", [
    ({"repeat": 1.0, "permuted": 0.1, "perturbed": 0.99}, False),  # a content score spread over positions
    ({"repeat": 1.0, "permuted": 0.1, "perturbed": 0.08}, True),  # seeded by a hash of the content
    ({"repeat": 1.0, "permuted": 1.0, "perturbed": 1.0}, True),  # seeded by layer/length
    ({"repeat": 0.1, "permuted": 0.1, "perturbed": 0.1}, True),  # unseeded
])
def test_the_random_law_needs_a_content_free_choice_and_uniform_positions(probes, uniform):
    n = 1000
    spread = {"m": [_draw(n, 100, 3), _draw(n, 300, 4)]}
    res = _result(spread, n=n, probes={"m": probes})
    assert candidate_probes(res, "m").uniform_random is uniform  # type: ignore[union-attr]


def test_a_strided_position_rule_is_not_random():
    n = 1000
    strided = [np.arange(n) % 10 == 0, np.arange(n) % 3 == 0]
    res = _result({"m": strided}, n=n, budgets=(0.1, 0.34), probes={"m": {"repeat": 1.0, "permuted": 1.0,
                                                                         "perturbed": 1.0}})
    pr = candidate_probes(res, "m")
    assert pr is not None and pr.gap_cv < 0.1 and not pr.uniform_random and "position rule" in pr.summary


# --- the worker on a small synthetic bank ---------------------------------------------------------------------------
def synthetic_bank(path: Path) -> Path:
    """Random tensors in the bank's format: two prompts (one query-aware, one context-only) at the probe layers."""
    g = torch.Generator().manual_seed(0)
    views = []
    for i, (t, board) in enumerate(((320, "A"), (240, "B_offline"))):
        for layer in PROBE_LAYERS:
            def r(*shape: int) -> torch.Tensor:
                return torch.randn(*shape, generator=g).half()

            views.append({"prompt": i, "layer": layer, "board": board, "keys": r(2, t, 16), "values": r(2, t, 16),
                          "queries": r(6, t, 16), "question": [t - 24, t] if board == "A" else None,
                          "recon": r(6, t + 6, 16) if board != "A" else None,
                          "recon_start": t if board != "A" else None})
    torch.save({"version": BANK_VERSION, "model": asdict(INFO), "prompts": [], "views": views}, path)
    return path


def test_the_worker_probes_tell_position_rules_and_random_from_content_scores(tmp_path):
    bank = synthetic_bank(tmp_path / "bank.pt")
    specs = ["window", "window?n_sink=0", "knorm", "random", "snapkv?query_window=16&kernel=5&pooling=avg",
             "h2o?recent_share=0&normalise=true", "kvzip"]
    res = run(specs, bank, [0.1, 0.3])
    assert not res["errors"] and set(res["kept"]) == set(specs)
    p = res["probes"]
    for s in specs:
        assert p[s]["repeat"] == 1.0 and p[s]["perturbed"] > 0.9, s
    assert p["window"]["permuted"] == 1.0 and p["random"]["permuted"] == 1.0
    assert p["knorm"]["permuted"] < 0.5 and p["snapkv?query_window=16&kernel=5&pooling=avg"]["permuted"] < 0.7
    for b, views in res["kept"]["snapkv?query_window=16&kernel=5&pooling=avg"].items():
        for key, heads in views.items():
            t = res["views"][key]["n_tokens"]
            for h in heads:
                assert set(range(t - 16, t)) <= set(h) and len(h) == max(1, round(float(b) * t))
    # KVzip scores with the reconstruction pass on the context-only prompt, keeps its sinks there
    assert all(set(range(4)) <= set(h) for h in res["kept"]["kvzip"]["0.3"]["p1/L8"])
    assert candidate_probes(res, "random").uniform_random  # type: ignore[union-attr]
    assert not candidate_probes(res, "window").uniform_random  # type: ignore[union-attr]
    assert not candidate_probes(res, "knorm").uniform_random  # type: ignore[union-attr]


def test_the_memo_gives_each_method_its_own_copy(tmp_path):
    from harness.fingerprint import load_bank

    info, views = load_bank(synthetic_bank(tmp_path / "bank.pt"))
    v = views[0]
    method = configured("h2o")
    plain = v.layer_view(10, method, info, memo=False).attention()
    memo = v.layer_view(10, method, info, memo=True)
    first = memo.attention()
    assert torch.equal(first, plain)
    first.fill_(0.0)  # a method scribbling on its result
    assert torch.equal(v.layer_view(20, method, info, memo=True).attention(), plain) and len(v.memo) == 1
    other = v.layer_view(10, configured("tova"), info, memo=True)
    q = other.queries
    assert q is not None and torch.equal(other.attention(q * 2), LayerView.attention(other, q * 2))  # not a slice


def test_the_benchmarks_memo_leaves_every_reference_members_answer_as_it_was():
    """The recorded calls' reference side (harness.keptsets) shares attention between members and budgets through
    a memo keyed by the content of each member's query window: every member must keep what it keeps without it."""
    import hashlib

    from harness.fingerprint_grid import all_reference_specs
    from harness.memo import MemoView

    g = torch.Generator().manual_seed(3)
    t = 200
    keys, values = torch.randn(2, t, 16, generator=g), torch.randn(2, t, 16, generator=g)
    every = torch.randn(6, t, 16, generator=g)  # the item's recorded prefill queries
    memo: dict = {}
    for spec in all_reference_specs():
        m = configured(spec)
        m.setup(INFO)
        w = min(int(m.query_window), t)
        pos = torch.arange(t - w, t) if w else None
        q = every[:, t - w:].clone() if w else None  # gathered afresh for each member, as the runner does
        for budget in (10, 40):
            args = dict(layer=2, keys=keys, values=values, positions=torch.arange(t).repeat(2, 1), queries=q,
                        budget=budget, board="A", phase="prefill", model=INFO, query_positions=pos)
            plain = m.select(LayerView(**args))  # type: ignore[arg-type]
            source = None if pos is None else hashlib.sha256(pos.numpy().tobytes()).hexdigest()
            shared = m.select(MemoView(**args, memo=memo, source=source))  # type: ignore[arg-type]
            assert type(plain) is type(shared), spec
            for a, b in zip(plain.indices if isinstance(plain, Keep) else plain.keys,
                            shared.indices if isinstance(shared, Keep) else shared.keys):
                assert torch.equal(a, b), (spec, budget)
    assert memo  # the members did share


def test_answers_are_checked_as_the_runner_checks_them_but_overspending_is_measured(tmp_path):
    from harness.fingerprint import load_bank

    _, views = load_bank(synthetic_bank(tmp_path / "bank.pt"))
    v = views[0]
    ok = Keep((torch.tensor([0, 5]), torch.tensor([1])))
    assert _kept(v, ok, 2) == ([[0, 5], [1]], 0.75)
    # over the budget: measured and its share reported (the benchmark refuses it; the fingerprint only observes)
    assert _kept(v, Keep((torch.tensor([0, 1, 2]), torch.tensor([1, 2]))), 2) == ([[0, 1, 2], [1, 2]], 1.25)
    bad = [Keep((torch.tensor([0, 0]), torch.tensor([1]))), Keep((torch.tensor([0, 999]), torch.tensor([1]))),
           Keep((torch.tensor([0.5]), torch.tensor([1]))), Keep((torch.tensor([0]),)), "keep everything"]
    for answer in bad:
        with pytest.raises(MethodError):
            _kept(v, answer, 2)


def test_h2o_normalised_is_kvpress_observed_attention():
    torch.manual_seed(1)
    t, g = 64, 3
    keys, queries = torch.randn(2, t, 16), torch.randn(2 * g, t, 16)
    view = LayerView(layer=0, keys=keys, values=torch.randn(2, t, 16), positions=torch.arange(t).repeat(2, 1),
                     queries=queries, budget=20, board="A", phase="prefill", query_positions=torch.arange(t),
                     model=ModelInfo(name="x", n_layers=1, n_heads=2 * g, n_kv_heads=2, head_dim=16))
    got = configured("h2o?recent_share=0&normalise=true").select(view)
    assert isinstance(got, Keep)
    # kvpress ObservedAttentionPress: causal attention of every query, summed, / the queries that see each key
    k = keys.repeat_interleave(g, dim=0)
    att = (queries @ k.transpose(1, 2) / 4.0 + torch.triu(torch.full((t, t), float("-inf")), 1)).softmax(-1)
    s = (att.sum(1) / torch.arange(t, 0, -1)).view(2, g, t).mean(1)
    want = Keep.from_topk(s, 20)
    assert all(torch.equal(a, b) for a, b in zip(got.indices, want.indices))


@pytest.mark.slow
def test_seeded_and_unseeded_random_ports_land_on_random_in_the_sandbox(tmp_path):
    """Untrusted candidates in their own sandbox: RandomPress with another seed and with none, and a window port."""
    from harness.sandbox import sandbox_kind

    if sandbox_kind() == "none":
        pytest.skip("no sandbox on this machine")
    bank = synthetic_bank(tmp_path / "bank.pt")
    unseeded = tmp_path / "unseeded"
    unseeded.mkdir()
    (unseeded / "method.py").write_text(HEADER + textwrap.dedent("""
        class Dice(EvictionMethod):
            def select(self, view):
                return Keep.from_topk(torch.rand(view.keys.shape[:2]), view.budget, view.valid)
        """))
    seeded, window = str(PORTS / "random_kvpress.py"), str(PORTS / "streaming_official.py")
    refs = {"baseline:random": list(FAMILIES["random"]), "baseline:window": list(FAMILIES["window"]),
            "baseline:knorm": list(FAMILIES["knorm"])}
    specs = [s for f in refs.values() for s in f]
    res = run([*specs, str(unseeded), seeded, window], bank, [0.05, 0.15, 0.3, 0.5])
    assert not res["errors"]
    assert res["probes"][str(unseeded)]["repeat"] < 0.5 and res["probes"][seeded]["permuted"] == 1.0
    for cand in (str(unseeded), seeded):
        top = compare(res, cand, refs)[0]
        assert top.reference == "baseline:random" and top.jaccard > 0.95 and top.basis == "keep probability", cand
    top = compare(res, window, refs)[0]
    assert top.reference == "baseline:window" and top.member == "window" and top.jaccard == 1.0


# --- held-out methods on the real bank (slow: the embedded model's bank, every family member) ---------------------
def _ports() -> list[dict]:
    return tomllib.loads((PORTS / "ports.toml").read_text())["ports"]


@pytest.mark.heavy  # 18 ports fingerprinted (2 min on a cold cache): `make test-all`; `review calibrate` runs them too
def test_every_public_port_lands_on_its_baseline_family():
    from reviewbench.evidence.behaviour import all_members, fingerprints

    specs = [str(PORTS / p["file"]) for p in _ports()]
    res = fingerprints([*all_members(), *specs])
    assert not res["errors"]
    refs = {f"baseline:{b}": list(FAMILIES[b]) for b in BASELINES}
    for p, spec in zip(_ports(), specs):
        top = compare(res, spec, refs)[0]
        assert top.reference == f"baseline:{p['baseline']}", (p["file"], top)


@pytest.mark.heavy  # the eight examples fingerprinted: `make test-all`; make test's reviews check five of them
def test_honest_examples_are_not_a_baseline_family_member():
    from reviewbench.evidence.behaviour import all_members, fingerprints

    examples = sorted(d for d in (ROOT / "examples" / "arena" / "submit").iterdir() if (d / "method.py").is_file())
    specs = [str(d) for d in examples]
    res = fingerprints([*all_members(), *specs])
    refs = {f"baseline:{b}": list(FAMILIES[b]) for b in BASELINES}
    for spec in specs:
        assert compare(res, spec, refs)[0].jaccard < 0.9, spec


@pytest.mark.slow
def test_behaviour_evidence_is_closed_and_names_the_member():
    from reviewbench.evidence.behaviour import behaviour_evidence

    ev = behaviour_evidence(ROOT / "tests" / "data" / "snapkv_rewrite", {})
    assert ev.matches[0].reference == "baseline:snapkv" and ev.matches[0].member.startswith("snapkv?")
    assert ev.probes is not None and ev.probes.deterministic and not ev.probes.uniform_random
    again = BehaviourEvidence.model_validate_json(ev.model_dump_json())
    assert again == ev
    with pytest.raises(ValueError):
        BehaviourEvidence.model_validate({**ev.model_dump(), "extra": {}})


def test_an_overspending_schedule_is_measured_and_noted():
    from harness.fingerprint import _Budgets

    class Greedy:  # KVCache-Factory's PyramidKV rounds its steps down: a few per cent over the total
        def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int]:
            return [mean_budget + (1 if i % 10 == 0 else 0) for i in range(model.n_layers)]

    b = _Budgets(Greedy(), INFO)  # type: ignore[arg-type]
    assert b(0.1, 300)[0] == 31 and b(0.1, 300)[1] == 30
    assert b.overspend == pytest.approx(903 / 900)

    class Short:
        def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int]:
            return [mean_budget] * 3

    with pytest.raises(MethodError, match="expected 30"):
        _Budgets(Short(), INFO)(0.1, 300)  # type: ignore[arg-type]
