"""Credit stated as a port (issue 23, after held-out set 30's key; written fresh): "we port X", "X, ported to ...",
a "Source" heading over the citation, and a paper whose short name is an ordinary word ("Quest") named by that
name once the description cites it unmistakably (its arXiv id or its title). Each with its neighbour that is no
credit."""

from __future__ import annotations

from reviewbench.evidence.priorart_evidence import credited_papers


def _names(text: str) -> set[str]:
    return {p.short_name for p, _ in credited_papers(text)}


def test_a_port_stated_with_the_verb_is_credit() -> None:
    assert "SnapKV" in _names("We port SnapKV to board B and keep its pooling.")
    assert "TOVA" in _names("# TOVA, ported to decode-time eviction\n\nThe rule is unchanged.")
    assert "H2O" in _names("## Method summary\nThe heavy-hitter rule of H2O is ported here with a smaller window.\n")
    # a contrast or a mention is still none
    assert "SnapKV" not in _names("Unlike SnapKV, which was ported to many engines, we rank by value norms.")
    assert "SnapKV" not in _names("Related methods such as SnapKV exist.")


def test_an_ordinary_word_name_counts_once_the_paper_is_cited_unmistakably() -> None:
    cited = ("# Page bounds\n\nThis adapts the page bound of Quest to one-shot eviction.\n\n"
             "Tang et al., Query-Aware Sparsity for Efficient Long-Context LLM Inference, arXiv 2406.10774.\n")
    assert "Quest" in _names(cited)
    # without the citation, the capitalised word alone names nothing
    assert "Quest" not in _names("# Page bounds\n\nThis adapts the page bound of Quest to one-shot eviction.\n")
    # the lower-case word never names it
    assert "Quest" not in _names("Our quest for speed adapts nothing (arXiv 2406.10774 is unrelated).")


def test_a_source_heading_over_the_citation_is_the_source() -> None:
    text = ("# Pages, one shot\n\n## Original paper\n\nJiaming Tang et al., Quest, ICML 2024, arXiv 2406.10774.\n\n"
            "## Changes\n\nPages are evicted once.\n")
    assert "Quest" in _names(text)
    other = text.replace("## Original paper", "## Further reading")
    assert "Quest" not in _names(other)
