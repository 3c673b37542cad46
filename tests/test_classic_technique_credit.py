"""A general technique credited by name discloses the operation it is (issue 23): maximal marginal relevance over
window attention is R-KV's attention and key likeness with MMR's greedy suppression of look-alikes, which is also
what the index states of GraphKV and CDPruner. A description that credits R-KV and MMR has disclosed every operation;
one that only contrasts MMR, or credits MMR with nothing for the rest, has not. Written fresh (set 27's honest s05,
an MMR method, was flagged as GraphKV once the reader saw a pick's similarity made on the spot)."""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches, credited_techniques
from reviewbench.flags.prior_art import computation_flags

SRC = '''
import torch
import torch.nn.functional as F
from harness import EvictionMethod, Keep, LayerView


class Diverse(EvictionMethod):
    name = "diverse"
    query_window = 16
    lam = 0.4

    def select(self, view: LayerView) -> Keep:
        rel = view.group(view.attention().sum(dim=1), "mean")
        u = F.normalize(view.keys.float(), dim=-1)
        out = []
        for h in range(view.n_kv_heads):
            first = int(rel[h].argmax())
            kept = [first]
            near = u[h] @ u[h][first]
            for _ in range(view.budget - 1):
                gain = rel[h] - self.lam * near
                gain[kept] = float("-inf")
                pick = int(gain.argmax())
                kept.append(pick)
                near = torch.maximum(near, u[h] @ u[h][pick])
            out.append(torch.tensor(sorted(kept)))
        return Keep(tuple(out))
'''


def _desc(builds_on: str) -> str:
    return ("# Diverse\n\n## Idea\n\nKeep relevant tokens that do not repeat each other.\n\n## Method summary\n\n"
            "Window attention ranks the tokens; each pick lowers the claim of keys like it.\n\n"
            f"## Builds on\n\n{builds_on}\n\n## Limitations\n\nGreedy.\n")


def _flags(desc: str):
    c = computation(SRC)
    return computation_flags(computation_matches(c.features, desc, c.paths, "B_online"), [], SRC)


def test_the_code_reads_as_an_mmr_over_attention() -> None:
    assert {"attention", "key_similarity", "similarity_suppression"} <= set(computation(SRC).features)
    assert _flags(_desc("Nothing."))  # uncredited: GraphKV's rule, flagged


def test_a_credited_technique_and_a_credited_paper_disclose_every_operation() -> None:
    desc = _desc("R-KV (arXiv 2505.24133) for the key-redundancy term; we use maximal marginal relevance "
                 "(Carbonell and Goldstein, 1998) to pick greedily.")
    assert "similarity_suppression" in credited_techniques(desc)
    assert not _flags(desc)


def test_a_contrasted_technique_or_a_technique_alone_discloses_too_little() -> None:
    contrast = _desc("R-KV (arXiv 2505.24133) for the key-redundancy term. Unlike maximal marginal relevance, "
                     "nothing here is greedy.")
    assert not credited_techniques(contrast) and _flags(contrast)
    alone = _desc("We use maximal marginal relevance (Carbonell and Goldstein, 1998) to pick greedily.")
    assert credited_techniques(alone) and _flags(alone)
