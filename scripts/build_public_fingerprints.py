"""Build reviewbench/data/public_fingerprints.json: code fingerprints of the public reference implementations.

    .venv/bin/python scripts/build_public_fingerprints.py --mirrors DIR [--table]

DIR holds one git snapshot per repository, as ``DIR/<owner>+<name>/repo`` (a bare or non-bare git directory;
that is how the project's snapshot tool lays them out). Any clone works too: ``git clone
https://github.com/<owner>/<name> DIR/<owner>+<name>/repo``. Each repository is read at the commit pinned
below (``git show <commit>:<path>``); a snapshot without that commit is an error, so a rebuild gives the same
file. Only the chosen classes/functions of each file are fingerprinted (not the model code around them),
with the same normaliser the review uses (``reviewbench.evidence.similarity``), and only the fingerprints
(64-bit hashes of normalised token and operation k-grams), their line numbers and the provenance are written:
no code is shipped. ``--table`` prints the provenance/licence table for the README.

Repositories without a licence file are left out (alessiodevoto/l2compress, K-norm's code: kvpress and
KVCache-Factory carry K-norm under Apache-2.0/MIT instead).
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reviewbench.evidence.similarity import K, OP_K, PUBLIC_DATA, W, canary, fingerprint, op_fingerprint  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "reviewbench" / PUBLIC_DATA
SCHEMA = "reviewbench.public-fingerprints/1"

# short name -> (GitHub repo, pinned commit, commit date, SPDX licence, where the licence is stated)
REPOS = {
    "kvpress": ("NVIDIA/kvpress", "8bb29b9c3078452a86d692f29123fa6c793e2b05", "2026-08-06", "Apache-2.0", "LICENSE"),
    "SnapKV": ("FasterDecoding/SnapKV", "e216ddc84c5bd210378cbdbbba12ba02102aa640", "2025-07-10", "Apache-2.0",
               "LICENSE"),
    "KVCache-Factory": ("Zefan-Cai/KVCache-Factory", "c97f9d706d63d1b56e980f8b81b2a924c21162b3", "2026-07-02", "MIT",
                        "LICENSE"),
    "AdaKV": ("FFY0/AdaKV", "efe4e2eea0099bf497f0c175ac5440a915d89f83", "2025-09-25", "MIT", "LICENSE"),
    "TOVA": ("schwartz-lab-NLP/TOVA", "9c7d09bfff64cfc92cfb5f9d7e138cb04866e5a7", "2024-10-13", "Apache-2.0", "LICENSE"),
    "streaming-llm": ("mit-han-lab/streaming-llm", "2e5042606d69933d88fbf909bd77907456b9b4dd", "2024-07-11", "MIT",
                      "LICENSE"),
    "H2O": ("FMInference/H2O", "ac75c2a8a9e76832b2a4139b9363373b56336bfb", "2024-06-17", "MIT",
            "README.md (licence badge; no LICENSE file at the root)"),
    "KVzip": ("snu-mllab/KVzip", "5d8472975d286e3da6b52178af39d18904330c0d", "2026-02-11", "MIT", "LICENSE"),
    "R-KV": ("Zefan-Cai/R-KV", "d15c9767e67c2bd9807128fecc35223fa2484a69", "2025-06-13", "Apache-2.0", "LICENSE"),
}

_SCORER = [("kvpress/presses/scorer_press.py", ["ScorerPress.compress"])]  # what every ScorerPress runs its score in
_KVCF_SNAP = ["repeat_kv", "_gqa_groups", "_reduce_group_scores", "_grouped_window_attn_cache", "_select_topk_kv"]
# (repo short name, path, symbols, baseline it implements, extra (path, symbols) it builds on)
UNITS: list[tuple[str, str, list[str], str, list[tuple[str, list[str]]]]] = [
    ("kvpress", "kvpress/presses/snapkv_press.py", ["SnapKVPress"], "snapkv", _SCORER),
    ("kvpress", "kvpress/presses/pyramidkv_press.py", ["PyramidKVPress"], "pyramidkv",
     [("kvpress/presses/snapkv_press.py", ["SnapKVPress"])]),
    ("kvpress", "kvpress/presses/tova_press.py", ["TOVAPress"], "tova",
     [("kvpress/presses/snapkv_press.py", ["SnapKVPress.compute_window_attention"]), *_SCORER]),
    ("kvpress", "kvpress/presses/streaming_llm_press.py", ["StreamingLLMPress"], "window", _SCORER),
    ("kvpress", "kvpress/presses/knorm_press.py", ["KnormPress"], "knorm", _SCORER),
    ("kvpress", "kvpress/presses/observed_attention_press.py", ["ObservedAttentionPress"], "h2o", _SCORER),
    ("kvpress", "kvpress/presses/expected_attention_press.py", ["ExpectedAttentionPress"], "expected_attention", _SCORER),
    ("kvpress", "kvpress/presses/adakv_press.py", ["AdaKVPress"], "adakv",
     [("kvpress/presses/snapkv_press.py", ["SnapKVPress"])]),
    ("kvpress", "kvpress/presses/kvzip_press.py",
     ["KVzipPress.score_kvzip", "KVzipPress.compress_post", "KVzipPress._make_mask", "KVzipPress._mask_causal"],
     "kvzip", []),
    ("kvpress", "kvpress/presses/random_press.py", ["RandomPress"], "random", _SCORER),
    ("SnapKV", "snapkv/monkeypatch/snapkv_utils.py", ["SnapKVCluster"], "snapkv", []),
    ("KVCache-Factory", "pyramidkv/pyramidkv_utils.py", ["PyramidKVCluster", *_KVCF_SNAP], "pyramidkv", []),
    ("KVCache-Factory", "pyramidkv/pyramidkv_utils.py", ["SnapKVCluster", *_KVCF_SNAP], "snapkv", []),
    ("KVCache-Factory", "pyramidkv/pyramidkv_utils.py", ["H2OKVCluster", *_KVCF_SNAP], "h2o", []),
    ("KVCache-Factory", "pyramidkv/pyramidkv_utils.py", ["StreamingLLMKVCluster", "_gqa_groups"], "window", []),
    ("KVCache-Factory", "pyramidkv/pyramidkv_utils.py", ["L2NormCluster", "_gqa_groups"], "knorm", []),
    ("KVCache-Factory", "pyramidkv/pyramidkv_utils.py", ["AdaKVCluster", "repeat_kv"], "adakv", []),
    ("AdaKV", "adaptive_snapkv/monkeypatch/snapkv_utils.py", ["AdaptiveSnapKVCluster", "repeat_kv"], "adakv", []),
    ("TOVA", "src/tova_cache.py", ["TOVACache"], "tova", []),
    ("streaming-llm", "streaming_llm/kv_cache.py",
     ["StartRecentKVCache", "slice1d", "slice2d", "slice3d", "DIM_TO_SLICE"], "window", []),
    ("H2O", "h2o_hf/utils_real_drop/modify_llama.py", ["H2OKVCache_LayerWise"], "h2o", []),
    ("KVzip", "attention/score.py", ["KVScore"], "kvzip", []),
    ("R-KV", "rkv/compression/r1_kv.py", ["R1KV"], "rkv",
     [("rkv/utils.py", ["compute_attention_scores", "cal_similarity"])]),
]

LINE_BASE = 1_000_000  # line numbers of the i-th file of a unit are offset by i * LINE_BASE


def git_show(git_dir: Path, commit: str, path: str) -> str:
    res = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], capture_output=True,
                         text=True)
    if res.returncode != 0:
        raise SystemExit(f"{git_dir}: cannot read {path} at {commit}: {res.stderr.strip()}")
    return res.stdout


def git_dir(mirrors: Path, repo: str) -> Path:
    base = mirrors / repo.replace("/", "+") / "repo"
    for cand in (base / ".git", base):
        if (cand / "HEAD").is_file():
            return cand
    raise SystemExit(f"no git snapshot of {repo} under {base}")


def extract(text: str, symbols: list[str]) -> list[tuple[int, str]]:
    """(first line, dedented source) of each symbol: a top-level class/function/assignment or ``Class.method``."""
    tree = ast.parse(text)
    lines = text.splitlines()
    out = []
    for sym in symbols:
        owner, _, member = sym.partition(".")
        node: ast.stmt | None = None
        for top in tree.body:
            names = [top.name] if isinstance(top, (ast.ClassDef, ast.FunctionDef)) else \
                [t.id for t in top.targets if isinstance(t, ast.Name)] if isinstance(top, ast.Assign) else []
            if owner in names:
                node = top
                if member and isinstance(top, ast.ClassDef):
                    node = next((b for b in top.body if isinstance(b, ast.FunctionDef) and b.name == member), None)
                break
        if node is None:
            raise SystemExit(f"symbol {sym} not found")
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        end = node.end_lineno or start
        out.append((start, textwrap.dedent("\n".join(lines[start - 1:end]))))
    return out


def unit_source(segments: list[tuple[int, int, str]]) -> tuple[str, dict[int, int]]:
    """Segments (file index, first line, code) joined into one module, and virtual line -> encoded real line."""
    text: list[str] = []
    mapping: dict[int, int] = {}
    for file_idx, first, code in segments:
        for i, line in enumerate(code.splitlines()):
            text.append(line)
            mapping[len(text)] = file_idx * LINE_BASE + first + i
        text.append("")
    return "\n".join(text) + "\n", mapping


def remap(hashes: dict[int, list[int]], mapping: dict[int, int]) -> dict[str, list[int]]:
    return {f"{h:016x}": sorted({mapping[n] for n in lines if n in mapping}) for h, lines in sorted(hashes.items())}


def build(mirrors: Path) -> dict:
    units = []
    for short, path, symbols, baseline, extra in UNITS:
        repo, commit, _, licence, _ = REPOS[short]
        gd = git_dir(mirrors, repo)
        files = [(path, symbols), *extra]
        segments = []
        for idx, (p, syms) in enumerate(files):
            for first, code in extract(git_show(gd, commit, p), syms):
                segments.append((idx, first, code))
        source, mapping = unit_source(segments)
        head = symbols[0].split(".")[0] if "." not in symbols[0] else symbols[0].split(".")[0]
        label = f"public:{short}/{Path(path).name}:{head}@{commit[:7]}"
        units.append({
            "label": label, "implements": baseline,
            "source": {"repo": repo, "commit": commit, "path": path,
                       "symbols": [f"{p}:{s}" if p != path else s for p, syms in files for s in syms],
                       "licence": licence, "url": f"https://github.com/{repo}/blob/{commit}/{path}"},
            "paths": [p for p, _ in files],
            "tokens": remap(fingerprint(source).hashes, mapping),
            "ops": remap(op_fingerprint(source).hashes, mapping),
        })
    return {
        "schema": SCHEMA, "k": K, "w": W, "op_k": OP_K, "canary": canary(),
        "built_by": "scripts/build_public_fingerprints.py",
        "note": "Fingerprints (64-bit hashes of normalised token and operation k-grams) and line numbers only; "
                "no source code. Line numbers >= 1000000 * i belong to the unit's paths[i].",
        "repositories": [{"name": s, "repo": r, "commit": c, "date": d, "licence": lic, "licence_stated_in": where}
                         for s, (r, c, d, lic, where) in REPOS.items()],
        "units": units,
    }


def table(data: dict) -> str:
    rows = ["| repository | commit | licence | units (baseline) |", "|---|---|---|---|"]
    for r in data["repositories"]:
        us = [f"`{Path(u['source']['path']).name}:{u['label'].split(':')[2].split('@')[0]}` ({u['implements']})"
              for u in data["units"] if u["source"]["repo"] == r["repo"]]
        rows.append(f"| {r['repo']} | `{r['commit'][:7]}` ({r['date']}) | {r['licence']} | {', '.join(us)} |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirrors", type=Path, required=True, help="folder of <owner>+<name>/repo git snapshots")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--table", action="store_true", help="print the README's provenance table")
    args = ap.parse_args()
    data = build(args.mirrors)
    args.out.write_text(json.dumps(data, indent=None, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {len(data['units'])} units from {len(data['repositories'])} repositories")
    if args.table:
        print(table(data))


if __name__ == "__main__":
    main()
