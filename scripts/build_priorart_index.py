"""Build the packaged prior-art index (reviewbench/data/priorart.json) from the team's reference notes.

    .venv/bin/python scripts/build_priorart_index.py ../shared/reference/priorart.md

The twelve baselines are written here by hand (facts plus a one-line summary of our own); the other papers
come from the table of priorart.md (short name, title, first author, year, venue, arXiv id, family, the
key idea as paraphrased for that index, keywords). The output is committed: the package never needs the
reference folder at run time.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "reviewbench" / "data" / "priorart.json"

BASELINES = [
    # (short, title, first author, year, venue, arxiv, family, key idea, keywords, harness method)
    ("SnapKV", "SnapKV: LLM Knows What You are Looking for Before Generation", "Yuhong Li", 2024, "NeurIPS 2024",
     "2404.14469", "eviction-score",
     "Attention from the last prompt positions (an observation window holding the question) is summed, smoothed by "
     "1-D pooling and used to keep the top prefix tokens per head, plus the window itself.",
     "observation window; pooled attention; max-pool kernel; prefill one-shot; query-aware; per-head top-k", "snapkv"),
    ("PyramidKV", "PyramidKV: Dynamic KV Cache Compression based on Pyramidal Information Funneling", "Zefan Cai",
     2024, "COLM 2025", "2406.02069", "budget-allocation",
     "SnapKV scoring with a per-layer budget that falls linearly with depth (a pyramid), lower layers keeping more.",
     "pyramidal funneling; layer budget schedule; linear decrease with depth; beta; SnapKV scores", "pyramidkv"),
    ("Ada-KV", "Ada-KV: Optimizing KV Cache Eviction by Adaptive Budget Allocation for Efficient LLM Inference",
     "Yuan Feng", 2024, "NeurIPS 2025", "2407.11550", "budget-allocation",
     "Head-wise budgets: one top-k over the flattened (head, token) scores of a layer, so concentrated heads give "
     "slots to diffuse ones, with a safeguard floor per head.",
     "head-wise budget; flattened top-k across heads; alpha safeguard; adaptive allocation; ragged cache", "adakv"),
    ("TOVA", "Transformers are Multi-State RNNs", "Matanel Oren", 2024, "EMNLP 2024", "2401.06104", "eviction-score",
     "Keep the tokens that the current (last) query attends to most, averaged over all heads of the layer, one "
     "token set per layer, at prefill and at every decoding step.",
     "last query attention; head-averaged; layer-wise policy; multi-state RNN; fixed cache size", "tova"),
    ("StreamingLLM", "Efficient Streaming Language Models with Attention Sinks", "Guangxuan Xiao", 2023, "ICLR 2024",
     "2309.17453", "eviction-score",
     "Keep a few initial 'sink' tokens plus a sliding window of the most recent tokens; no scoring.",
     "attention sinks; sliding window; recent tokens; start tokens; streaming", "window"),
    ("K-norm", "A Simple and Effective L2 Norm-Based Strategy for KV Cache Compression", "Alessio Devoto", 2024,
     "EMNLP 2024", "2406.11430", "eviction-score",
     "Keys with a low L2 norm tend to receive high attention: keep the lowest-norm keys, no attention needed.",
     "key L2 norm; lowest norm kept; attention-free; query-agnostic", "knorm"),
    ("Expected Attention", "Expected Attention: KV Cache Compression by Estimating Attention from Future Queries "
     "Distribution", "Alessio Devoto", 2025, "preprint", "2510.00636", "eviction-score",
     "Model future queries as a Gaussian fitted to the context's pre-RoPE queries, rotated by the average RoPE of "
     "upcoming positions; score keys by expected attention times the value norm.",
     "future queries; Gaussian query statistics; mean and covariance; averaged RoPE; value norm; query-agnostic",
     "expected_attention"),
    ("KVzip", "KVzip: Query-Agnostic KV Cache Compression with Context Reconstruction", "Jang-Hyun Kim", 2025,
     "NeurIPS 2025", "2505.23416", "eviction-score",
     "Make the model repeat the context and score each cached pair by the maximum attention it receives during "
     "that reconstruction; one global threshold over layers and heads; reusable across queries.",
     "context reconstruction; repeat prompt; max attention; query-agnostic; global threshold; offline", "kvzip"),
    ("Query-agnostic SnapKV", "KVzip: Query-Agnostic KV Cache Compression with Context Reconstruction (evaluation "
     "protocol)", "Jang-Hyun Kim", 2025, "NeurIPS 2025", "2505.23416", "eviction-score",
     "SnapKV run before the question is known: the observation window is the end of the document.",
     "SnapKV without question; context-only window; query-agnostic protocol", "snapkv_qa"),
    ("H2O", "H2O: Heavy-Hitter Oracle for Efficient Generative Inference of Large Language Models", "Zhenyu Zhang",
     2023, "NeurIPS 2023", "2306.14048", "decode-time",
     "Accumulate the attention each token receives over all queries so far (heavy hitters) and keep them plus a "
     "window of recent tokens, evicting one token per decoding step.",
     "heavy hitters; cumulative attention; recent window; decode-time eviction; greedy", "h2o"),
    ("R-KV", "R-KV: Redundancy-aware KV Cache Compression for Reasoning Models", "Zefan Cai", 2025, "NeurIPS 2025",
     "2505.24133", "decode-time",
     "During long reasoning traces, score tokens by attention importance minus redundancy (cosine similarity to "
     "other keys), keeping the newest copy of repeated content.",
     "redundancy; key cosine similarity; reasoning models; decode buffer; importance minus redundancy", "rkv"),
    ("Random", "Random eviction (control baseline)", "", 0, "", None, "control",
     "Keep a uniformly random subset of tokens per head.",
     "random scores; uniform; control; seed", "random"),
]

ROW = re.compile(r"^\| *(\d+) *\|")


def parse_priorart(path: Path) -> list[dict]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not ROW.match(line):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 11:
            continue
        _, short, title, author, year, venue, arxiv, _verif, family, idea, keywords = cells[:11]
        m = re.search(r"\d{4}\.\d{4,5}", arxiv)
        out.append({"short_name": short, "title": title, "first_author": author,
                    "year": int(year) if year.isdigit() else None, "venue": venue, "arxiv": m.group(0) if m else None,
                    "family": family, "key_idea": idea, "keywords": [k.strip() for k in keywords.split(";") if k.strip()],
                    "baseline": None})
    return out


def main() -> None:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/reference/priorart.md")
    papers = [{"short_name": s, "title": t, "first_author": a, "year": y or None, "venue": v, "arxiv": x,
               "family": f, "key_idea": i, "keywords": [k.strip() for k in kw.split(";")], "baseline": m}
              for s, t, a, y, v, x, f, i, kw, m in BASELINES]
    seen = {p["arxiv"] for p in papers if p["arxiv"]}
    for p in parse_priorart(src):
        if p["arxiv"] and p["arxiv"] in seen:
            continue
        seen.add(p["arxiv"])
        papers.append(p)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"schema": "reviewbench.priorart/1", "papers": papers}, indent=1, ensure_ascii=False)
                   + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(papers)} papers ({len(BASELINES)} baselines)")


if __name__ == "__main__":
    main()
