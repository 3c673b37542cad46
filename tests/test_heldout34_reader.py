"""Readings corrected after held-out set 34's key (not held out; every snippet written fresh for these tests, none a
bundle of the set), each with a neighbour that must read otherwise:

- the unreduced attention cut along its query axis (``attn.chunk(4, dim=1)``) is the window's queries in parts, no
  blocks of tokens;
- the harness's fallback (``if view.budget >= view.n_tokens or view.queries is None: return ...positions...``) is no
  rule of the method's: what it returns adds no operation;
- names bound together (``lo, hi = 4, n - w``) are each read as their own expression (a recent window from ``hi``);
- a credited port whose code computes the credited paper's rule whole explains a smaller rule inside it (SCOPE's
  decode-time heavy hitters are H2O's accumulation); crediting an unrelated rule does not.
"""

from __future__ import annotations

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import computation_matches

HEAD = "import torch\n\nfrom harness.api import EvictionMethod, Keep, LayerView\n\n\n"
BARE = "# Method\n\n## Idea\nSomething.\n\n## Method summary\nA score.\n\n## Relation to prior work\nNone.\n"


def _matches(src: str, board: str, description: str = BARE) -> dict[str, tuple[str, bool]]:
    c = computation(src)
    return {m.short_name: (m.level, m.credited) for m in computation_matches(c.features, description, c.paths, board)}


PARTS = HEAD + '''class Thirds(EvictionMethod):
    query_window = 48

    def select(self, view: LayerView) -> Keep:
        a = view.attention()                                     # (H_q, W, T)
        pieces = [p.sum(dim=1) for p in a.chunk(3, dim=AXIS)]
        s = torch.stack(pieces).amin(dim=0) if len(pieces) == 3 else pieces[0]
        return Keep.from_topk(view.group(s, "mean"), view.budget, view.valid)
'''


def test_the_attention_cut_along_its_queries_is_no_blocks_of_tokens() -> None:
    assert "block_scores" not in computation(PARTS.replace("AXIS", "1")).features
    assert "block_scores" not in computation(PARTS.replace("AXIS", "-2")).features


GUARDED = HEAD + '''class Plain(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        if view.budget >= view.n_tokens or view.queries is None:
            return Keep.from_topk(view.positions.float(), view.budget, view.valid)
        s = view.group(view.attention(reduce="sum"), "mean")
        return Keep.from_topk(s, view.budget, view.valid)
'''


def test_the_harness_fallback_adds_no_operation() -> None:
    assert "recent" not in computation(GUARDED).features
    layered = GUARDED.replace("if view.budget >= view.n_tokens or view.queries is None:", "if view.layer % 2:")
    assert layered != GUARDED
    assert "recent" in computation(layered).features  # a branch chosen by the layer is the method's own rule


BOUND = HEAD + '''class Ends(EvictionMethod):
    query_window = 16

    def select(self, view: LayerView) -> Keep:
        n = view.n_tokens
        s = view.group(view.attention(reduce="sum"), "mean")
        lo, hi = 4, n - view.budget // 4
        keep = torch.zeros_like(s, dtype=torch.bool)
        keep[:, torch.arange(hi, n)] = True
        return Keep.from_topk(s.masked_fill(keep, float("inf")), view.budget, view.valid)
'''


def test_names_bound_together_are_each_read_as_their_own_expression() -> None:
    assert "recent" in computation(BOUND).features


DECODE = HEAD + '''class Tail(EvictionMethod):
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention(reduce="sum"), "mean")
        total = view.recall("total")
        total = a if total is None else total + a
        view.remember("total", total)
        total = total.clone()
        total[:, :4] = float("inf")
        return Keep.from_topk(total, view.budget, view.valid)
'''


def test_a_credited_scope_port_explains_h2os_accumulation_inside_it() -> None:
    port = ("# Split Cache\n\n## Idea\nA port of SCOPE (arXiv 2412.13649) to board C: we port its decode-time heavy "
            "hitters.\n\n## Method summary\nDecode attention accumulated per token; sinks kept.\n\n"
            "## Relation to prior work\nSCOPE (arXiv 2412.13649), ported.\n")
    assert _matches(DECODE, "C", port).get("H2O") == ("same", True)
    other = port.replace("SCOPE (arXiv 2412.13649)", "StreamingLLM (arXiv 2309.17453)").replace("SCOPE", "StreamingLLM")
    assert _matches(DECODE, "C", other).get("H2O") == ("same", False)
