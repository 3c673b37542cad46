"""Is this text addressed to the reviewer? A multilingual classifier, so that injection is not a phrase list.

Features: the mean hidden state after the first ``LAYER`` layers of Gemma 3 270M (the local panel's second
model, trained on 140 languages), run truncated to those layers. Classifier: logistic regression, trained on
the labelled set ``reviewbench/data/addressed_to_reviewer.json`` (text addressed to a reviewer, grader,
judge, evaluator or organiser about how to review — "note from the organisers" phrasings included — against
ordinary method text that mentions reviewers, grading or organisers). Its train split has seven languages;
the test split has ten languages it never saw plus held-out English phrasings and code comments. The
weights ship in ``addressed_weights.json``; ``python -m reviewbench.judges.addressed`` retrains and prints
precision and recall on the test split.

Without the model (the Gemma chunk packages not installed) nothing is classified and ``status()`` says why;
the structural and phrase checks of :mod:`reviewbench.judges.sanitize` still run.
"""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

LAYER = 4
THRESHOLD = 0.5
_LOCK = threading.Lock()
_STATUS: dict[str, str] = {}
_seen: dict[str, bool] = {}  # text -> verdict, for this process (the same bundle is sanitised many times)


def _data(name: str) -> Path:
    return Path(str(resources.files("reviewbench") / "data" / name))


@lru_cache(maxsize=1)
def _encoder() -> Any:
    """Gemma 3 270M cut to its first LAYER layers (a separate instance: the local judge's copy stays whole)."""
    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from reviewbench.judges.localmodels import _gemma_checkpoint

    hf_logging.disable_progress_bar()  # a review's output is its own progress table
    path = _gemma_checkpoint()
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path, dtype=torch.float32).eval()
    text = getattr(model, "language_model", model)
    text.layers = text.layers[:LAYER]
    text.config.num_hidden_layers = LAYER
    tok.padding_side = "right"
    return tok, text


def embed(texts: list[str], batch: int = 32) -> Any:
    import torch

    tok, model = _encoder()
    out = []
    with _LOCK, torch.no_grad():
        for i in range(0, len(texts), batch):
            b = tok([t[:600] for t in texts[i:i + batch]], return_tensors="pt", padding=True, truncation=True,
                    max_length=160)
            h = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).last_hidden_state
            mask = b["attention_mask"].unsqueeze(-1).float()
            out.append((h * mask).sum(1) / mask.sum(1))
    return torch.cat(out, 0).double().numpy()


@lru_cache(maxsize=1)
def _weights() -> dict[str, Any]:
    import numpy as np

    raw = json.loads(_data("addressed_weights.json").read_text())
    return {"mu": np.array(raw["mu"]), "sd": np.array(raw["sd"]), "w": np.array(raw["w"]), "b": float(raw["b"])}


def probabilities(texts: list[str]) -> list[float]:
    import numpy as np

    w = _weights()
    z = ((embed(texts) - w["mu"]) / w["sd"]) @ w["w"] + w["b"]
    return [float(p) for p in 1 / (1 + np.exp(-z))]


def status() -> str:
    """How the classifier runs here: the model it uses, or why it does not."""
    return _STATUS.get("status", f"gemma-3-270m, first {LAYER} layers, logistic probe (not yet loaded)")


@lru_cache(maxsize=1)
def _stored_at() -> Path | None:
    """Where this classifier's probabilities are kept across processes (one small file per text, under the Gemma
    checkpoint's cache folder, keyed by the checkpoint, the layer cut and the probe's weights): a review process that
    finds every text there never loads the model (~4 s each review here). None without the checkpoint."""
    import hashlib

    try:
        from reviewbench.judges.localmodels import _gemma_checkpoint

        ck = _gemma_checkpoint()
    except Exception:  # noqa: BLE001 - no checkpoint, no cache: the model path reports why
        return None
    key = hashlib.sha256(f"{ck.name}|{LAYER}|".encode() + _data("addressed_weights.json").read_bytes()).hexdigest()
    return ck.parent / "addressed" / key[:16]


def _stored(texts: list[str]) -> dict[str, float]:
    import hashlib

    folder = _stored_at()
    out: dict[str, float] = {}
    if folder is None:
        return out
    for t in texts:
        try:
            out[t] = float((folder / hashlib.sha256(t.encode()).hexdigest()[:32]).read_text())
        except (OSError, ValueError):
            continue
    return out


def _store(probs: dict[str, float]) -> None:
    import hashlib
    import os
    import tempfile

    folder = _stored_at()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for t, p in probs.items():
            with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, prefix=".tmp-") as fh:
                fh.write(repr(p))
            os.replace(fh.name, folder / hashlib.sha256(t.encode()).hexdigest()[:32])
    except OSError:
        return  # a cache that cannot be written only costs time


def addressed_to_reviewer(texts: list[str]) -> list[bool]:
    """For each text: is it addressed to whoever reviews or grades the submission (in any language)?"""
    if not texts:
        return []
    try:
        todo = [t for t in dict.fromkeys(texts) if t not in _seen]
        if todo:
            if len(_seen) > 50000:
                _seen.clear()
            known = _stored(todo)
            rest = [t for t in todo if t not in known]
            fresh = dict(zip(rest, probabilities(rest))) if rest else {}
            _store(fresh)
            for t in todo:
                _seen[t] = (known[t] if t in known else fresh[t]) > THRESHOLD
        _STATUS["status"] = f"gemma-3-270m, first {LAYER} layers, logistic probe"
        return [_seen[t] for t in texts]
    except (ImportError, OSError, RuntimeError, FileNotFoundError, KeyError, ValueError) as e:
        _STATUS["status"] = f"unavailable: {type(e).__name__}: {e}"[:300]
        return [False] * len(texts)


def labelled() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(_data("addressed_to_reviewer.json").read_text())["rows"]
    return rows


def generated_negatives() -> list[str]:
    """Ordinary text the probe must not flag, from what ships with the package: the prior-art index's titles
    and key ideas, and the comments and docstrings of the harness's reference methods."""
    from reviewbench.priorart import load_index

    out = [p.title for p in load_index().papers] + [s for p in load_index().papers for s in p.key_idea.split(". ")]
    methods = Path(__file__).resolve().parents[2] / "harness" / "methods"
    for f in sorted(methods.glob("*.py")):
        out += list(prose_lines(f.read_text(), ".py").values())
    return [t for t in dict.fromkeys(x.strip() for x in out) if len(t.split()) >= 3]


def prose_lines(text: str, suffix: str) -> dict[int, str]:
    """Line number -> the natural-language part of that line: comments and strings of Python source, the lines
    outside code blocks of Markdown (code itself is not addressed to anyone)."""
    import io
    import tokenize

    out: dict[int, str] = {}
    if suffix == ".py":
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.COMMENT:
                    out[tok.start[0]] = (out.get(tok.start[0], "") + " " + tok.string.lstrip("#")).strip()
                elif tok.type == tokenize.STRING:
                    for k, part in enumerate(tok.string.split("\n")):
                        part = part.strip().strip("\"'rbfRBF").strip()
                        if part:
                            out[tok.start[0] + k] = (out.get(tok.start[0] + k, "") + " " + part).strip()
            return out
        except (tokenize.TokenError, SyntaxError, IndentationError):
            pass  # not Python that tokenizes: every line is text
    in_code = False
    for n, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
            continue
        if not in_code and line.strip():
            out[n] = line.strip()
    return out


def train(l2: float = 1.0, steps: int = 800) -> dict[str, Any]:
    """Fit the logistic probe on the train split plus the generated negatives (gradient descent on standardised
    features, classes weighted to equal mass)."""
    import numpy as np

    rows = [r for r in labelled() if r["split"] == "train"]
    rows += [{"text": t, "label": 0} for t in generated_negatives()]
    x = embed([r["text"] for r in rows])
    y = np.array([r["label"] for r in rows], dtype=float)
    weight = np.where(y == 1, 0.5 / max(1.0, y.sum()), 0.5 / max(1.0, (1 - y).sum())) * len(y)
    mu, sd = x.mean(0), x.std(0) + 1e-6
    z = (x - mu) / sd
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(z @ w + b)))
        g = weight * (p - y)
        w -= 0.5 * (z.T @ g / len(y) + l2 * w / len(y))
        b -= 0.5 * float(g.mean())
    return {"model": "gemma-3-270m", "layer": LAYER, "mu": mu.tolist(), "sd": sd.tolist(), "w": w.tolist(), "b": b}


def evaluate(split: str = "test") -> dict[str, Any]:
    """Precision and recall of the shipped weights on a split of the labelled set, overall and per language."""
    rows = [r for r in labelled() if r["split"] == split]
    probs = probabilities([r["text"] for r in rows])
    tp = sum(1 for r, p in zip(rows, probs) if p > THRESHOLD and r["label"] == 1)
    fp = sum(1 for r, p in zip(rows, probs) if p > THRESHOLD and r["label"] == 0)
    fn = sum(1 for r, p in zip(rows, probs) if p <= THRESHOLD and r["label"] == 1)
    misses = [r["text"] for r, p in zip(rows, probs) if (p > THRESHOLD) != (r["label"] == 1)]
    return {"n": len(rows), "positives": sum(r["label"] for r in rows), "precision": tp / max(1, tp + fp),
            "recall": tp / max(1, tp + fn), "errors": misses,
            "languages": sorted({r["lang"] for r in rows})}


def false_positive_lines(paths: list[Path]) -> tuple[int, list[str]]:
    """Prose lines of real bundles (none addressed to a reviewer) the probe flags: (lines checked, flagged)."""
    texts = [t for p in paths for t in prose_lines(p.read_text(encoding="utf-8"), p.suffix).values()
             if len(t.split()) >= 3]
    flagged = [t for t, p in zip(texts, probabilities(texts)) if p > THRESHOLD]
    return len(texts), flagged


if __name__ == "__main__":
    weights = train()
    _data("addressed_weights.json").write_text(json.dumps(weights))
    _weights.cache_clear()
    report = evaluate()
    root = Path(__file__).resolve().parents[2]
    held_out = sorted([*root.glob("examples/arena/submit/*/*.md"), *root.glob("examples/arena/submit/*/*.py"),
                       *root.glob("calibration/blinded/*/*.md"), *root.glob("calibration/blinded/*/*.py")])
    n, flagged = false_positive_lines(held_out)
    print(json.dumps({**report, "clean_bundle_lines": n, "clean_bundle_flagged": flagged}, ensure_ascii=False,
                     indent=1))
