"""The harness on a GPU at a long context: a trained checkpoint against kvpress itself, and one mid-size
random-initialised model per family (run by ``scripts/gpu_check.sh`` on a lent GPU machine).

    python bench/gpu_check.py [--model PATH] [--context 32768] [--families llama gemma3 qwen3_5 bamba falcon_h1] [--out DIR]

Without a CUDA build of torch and a visible GPU it fails at once: one line, exit 1 (``--device cpu --size tiny``
is the smoke run of the script itself). Bringing a trained checkpoint: any local transformers folder
(config.json + safetensors + tokenizer), e.g. made on a machine with network access by
``huggingface-cli download HuggingFaceTB/SmolLM2-1.7B-Instruct --local-dir smollm2-1.7b`` (or Qwen/Qwen3-8B)
and copied over; ``--model embedded`` uses the embedded SmolLM2-135M (the dequantized GGUF, trained weights).
With ``--model`` the check also runs kvpress 0.5.5 in its own venv (``bench/_kvpress.py``: a CUDA build of torch
from the registry there) on the same checkpoint and token ids: ``SnapKVPress`` and ``AdaKVPress(SnapKVPress)`` per
layer against the harness's ``snapkv.py`` / ``adakv.py`` at kvpress's settings, alternating A B B A, and the KV
bytes each leaves (kvpress masks head-wise evictions and frees nothing); ``--no-kvpress`` skips that side.

Per family (``harness/families.py`` "mid": 16 layers, hidden 1024, 16 query / 4 KV heads of 128; the hybrids
with attention every 4th layer; Qwen 3.5 with 256-wide heads rotating 64), bf16, sdpa/flash in the forward:
  prefill      tokens/s of a ``--context`` prompt (chunked), peak GPU memory against weights + KV cache
  decode       tokens/s on the full cache and on the cache after SnapKV kept 10 % (a real, smaller cache)
  eviction     per attention layer: SnapKV's scoring on the GPU and the harness's gather into compact buffers,
               plus the KV bytes left behind
  boundary     (first family) one layer scored by a sandboxed method process on the GPU (host copy both ways)
               against the same method in process
Writes ``gpu_check.json`` and ``gpu_check.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

DEFAULT_FAMILIES = ["llama", "gemma3", "qwen3_5", "bamba", "falcon_h1"]  # Jamba's reference Mamba scan is
# a Python loop over the sequence in transformers (without mamba_ssm): minutes at 32K, so it is opt-in


DEVICE = "cuda"


def sync() -> None:
    import torch

    if DEVICE.startswith("cuda"):
        torch.cuda.synchronize()


def cuda_timer():
    sync()
    t0 = time.perf_counter()

    def stop() -> float:
        sync()
        return time.perf_counter() - t0

    return stop


def reset_peak() -> None:
    import torch

    if DEVICE.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    else:
        Path("/proc/self/clear_refs").write_text("5")


def peak() -> int:
    """Peak GPU memory allocated (on a CPU smoke run: the process's peak RSS)."""
    import re

    import torch

    if DEVICE.startswith("cuda"):
        return int(torch.cuda.max_memory_allocated())
    return int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()).group(1)) * 1024  # type: ignore[union-attr]


def check_family(family: str, context: int, decode_steps: int, keep: float, boundary: bool,
                 size: str = "mid") -> dict:
    import torch

    from harness.api import Keep
    from harness.boundary import InProcessMethod, open_method
    from harness.families import loaded
    from harness.kv import KVRuntime
    from harness.methods import SnapKV
    from harness.results import MethodLimits
    from harness.runner import Engine, MethodRun, _queries_for

    reset_peak()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eng = Engine(loaded(family, size, device=DEVICE, max_positions=2 * context, vocab_size=32768))
    info = eng.info
    attn = info.attention_layers
    weights = eng.param_bytes
    ids = torch.randint(3, 32000, (context,), generator=torch.Generator().manual_seed(0)).tolist()
    out: dict = {"family": family, "layers": info.n_layers, "attention_layers": len(attn),
                 "sliding_layers": len(info.sliding_layers), "recurrent_layers": len(info.recurrent_layers),
                 "rotary_dim": info.rotary_dim, "head_dim": info.head_dim, "weights_bytes": weights}

    rt0 = KVRuntime(info.n_layers, info.group_size)
    rt0.queries.prefill_positions = torch.arange(context - SnapKV.query_window, context)
    reset_peak()
    stop = cuda_timer()
    last = eng.forward(rt0, ids, 0, last_only=True)[-1]
    secs = stop()
    kv = rt0.live_bytes()
    out.update(prefill_tok_s=context / secs, prefill_s=secs, kv_bytes=kv, state_bytes=rt0.state_bytes(),
               prefill_peak_bytes=peak(), peak_over_weights_and_kv=peak() / (weights + kv + rt0.state_bytes()))

    def decode(rt: KVRuntime) -> float:
        tok = int(last.argmax())
        stop = cuda_timer()
        for i in range(decode_steps):
            tok = int(eng.forward(rt, [tok], context + i)[-1].argmax())
        return decode_steps / stop()

    out["decode_full_tok_s"] = decode(rt0.copy())

    method = InProcessMethod(SnapKV(), "snapkv")
    run = MethodRun("snapkv", method)
    budget = max(1, int(keep * context))
    queries = _queries_for(rt0, run, context, None, "A")
    score_s, gather_s = [], []
    rt = rt0.copy()
    for layer in attn:
        view = eng.view(rt, layer, budget, "A", "prefill", queries(layer))
        stop = cuda_timer()
        result = method.select(view)
        score_s.append(stop())
        assert isinstance(result, Keep)
        stop = cuda_timer()  # the harness: gather the kept entries into compact buffers
        rt.layers[layer].keep([i.sort().values for i in result.indices])
        gather_s.append(stop())
        del view
    out.update(evict_score_ms=1000 * statistics.median(score_s), evict_gather_ms=1000 * statistics.median(gather_s),
               kv_bytes_after=rt.live_bytes())
    out["decode_evicted_tok_s"] = decode(rt)

    if boundary:
        sandboxed = open_method("snapkv", MethodLimits(call_timeout_s=120, start_timeout_s=300), isolate=True)
        try:
            layer = attn[-1]
            view = eng.view(rt0, layer, budget, "A", "prefill", queries(layer))
            sandboxed.select(view)  # warm-up: CUDA context in the method's process
            t_in, t_sb = [], []
            for _ in range(5):
                stop = cuda_timer()
                method.select(view)
                t_in.append(stop())
                stop = cuda_timer()
                sandboxed.select(view)
                t_sb.append(stop())
            out.update(boundary_layer_in_process_ms=1000 * statistics.median(t_in),
                       boundary_layer_sandboxed_ms=1000 * statistics.median(t_sb),
                       boundary_method_device=getattr(sandboxed, "device", "cpu"),
                       boundary_layer_bytes=sum(t.numel() * t.element_size() for t in (view.keys, view.values)))
        finally:
            sandboxed.close()
    del rt, rt0, eng
    return out


def check_model(path: Path, context: int, keep: float, pairs: int, kvpress: Path | None) -> list[str]:
    """A trained checkpoint: the harness's SnapKV and Ada-KV (kvpress's settings) against kvpress's own presses on
    the same ids, per layer, alternating A B B A; KV bytes after each (lines of the report)."""
    import torch

    from harness_overhead import KvpressSide, OurSide, summary

    vocab = 30000
    ids = torch.randint(100, vocab, (context,), generator=torch.Generator().manual_seed(0)).tolist()
    kv = KvpressSide(kvpress, path, ids, 1 - keep, 1, DEVICE) if kvpress else None
    try:
        reset_peak()
        stop = cuda_timer()
        ours = OurSide(path, ids, 1 - keep, DEVICE)
        load_prefill_s = stop()
        full = ours.rt0.live_bytes()
        prefill_peak = peak()
        results = {}
        for which in ("snapkv", "adakv"):
            ours.run(which)
            if kv:
                kv.run(which)
            results[which] = []
            for i in range(pairs):
                got: dict = {"kvpress": None}
                for side in (("kvpress", "ours") if i % 2 == 0 else ("ours", "kvpress")):
                    if side == "ours":
                        got["ours"] = ours.run(which)
                    elif kv:
                        got["kvpress"] = kv.run(which)
                results[which].append((got["ours"], got["kvpress"]))
    finally:
        if kv:
            kv.close()
    mib = 2**20
    lines = [f"Trained checkpoint {path} on {DEVICE}: {context:,} tokens, keep {keep:.0%}; load + prefill "
             f"{load_prefill_s:.1f} s, peak {prefill_peak / mib:,.0f} MiB against weights {ours.eng.param_bytes / mib:,.0f} "
             f"+ KV {full / mib:,.0f} MiB" + (f"; kvpress {kv.info['kvpress']} on transformers {kv.info['transformers']}"
                                                if kv else "; kvpress side skipped (--no-kvpress)"), ""]
    for which, label in (("snapkv", "SnapKV"), ("adakv", "Ada-KV")):
        o, k = results[which][-1]
        lines.append(f"- {summary(label + ' compression', results[which])}; KV after: ours {o['kv_bytes'] / mib:,.1f} MiB"
                     + (f", kvpress {k['kv_bytes'] / mib:,.1f} MiB" if k else "") + f" (full {full / mib:,.1f})")
    return lines


def table(rows: list[dict], context: int) -> str:
    gib, mib = 1024**3, 1024**2
    lines = [f"Context {context:,} tokens, {DEVICE}.", "",
             "| family | attn / sliding / recurrent layers | rotary | prefill tok/s | peak GiB (x weights+KV) | "
             "KV MiB full -> 10 % | decode tok/s full -> 10 % | per layer ms: score / gather |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['family']} | error: {r['error']} |||||||")
            continue
        lines.append(
            f"| {r['family']} | {r['attention_layers']} / {r['sliding_layers']} / {r['recurrent_layers']} of "
            f"{r['layers']} | {r['rotary_dim']} of {r['head_dim']} | {r['prefill_tok_s']:,.0f} | "
            f"{r['prefill_peak_bytes'] / gib:.2f} ({r['peak_over_weights_and_kv']:.2f}x) | "
            f"{r['kv_bytes'] / mib:.0f} -> {r['kv_bytes_after'] / mib:.0f} | "
            f"{r['decode_full_tok_s']:.1f} -> {r['decode_evicted_tok_s']:.1f} | "
            f"{r['evict_score_ms']:.2f} / {r['evict_gather_ms']:.2f} |")
    b = next((r for r in rows if "boundary_layer_sandboxed_ms" in r), None)
    if b:
        lines += ["", f"Trust boundary on the GPU ({b['family']}, one layer of {b['boundary_layer_bytes'] / mib:.0f} MiB "
                  f"K+V, method process on {b['boundary_method_device']}): in process "
                  f"{b['boundary_layer_in_process_ms']:.2f} ms, sandboxed {b['boundary_layer_sandboxed_ms']:.2f} ms "
                  "(host copy out, the method's own copy to its GPU, indices back)."]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--context", type=int, default=32768)
    p.add_argument("--families", nargs="*", default=DEFAULT_FAMILIES)
    p.add_argument("--decode-steps", type=int, default=32)
    p.add_argument("--keep", type=float, default=0.1)
    p.add_argument("--out", type=Path, default=Path("."))
    p.add_argument("--device", default="cuda", help="cpu: a smoke run of the script itself (with --size tiny)")
    p.add_argument("--size", default="mid", choices=["tiny", "mid"])
    p.add_argument("--model", help="a trained checkpoint: a local transformers folder, or 'embedded'")
    p.add_argument("--model-context", type=int, help="context for --model (default: --context)")
    p.add_argument("--pairs", type=int, default=4, help="interleaved (kvpress, ours) runs per method with --model")
    p.add_argument("--no-kvpress", action="store_true", help="with --model: the harness's side only")
    p.add_argument("--kvpress-python", type=Path, help="an interpreter with kvpress (default: bench/.venv-kvpress)")
    a = p.parse_args()
    import torch

    global DEVICE
    DEVICE = a.device
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit(f"error: gpu_check needs a CUDA build of torch and a visible GPU; torch {torch.__version__} "
                 f"(CUDA build: {torch.version.cuda}) sees none")
    model_path = None
    if a.model:
        from harness.model import resolve_model_path

        try:
            model_path = resolve_model_path(a.model)
        except FileNotFoundError as e:
            sys.exit(f"error: --model {e}")
    kvpress = None
    if model_path is not None and not a.no_kvpress:
        from _kvpress import ensure_kvpress_venv

        kvpress = ensure_kvpress_venv(a.kvpress_python)
    where = torch.cuda.get_device_name(0) if a.device.startswith("cuda") else a.device
    print(f"gpu_check: {where}, torch {torch.__version__}, context {a.context:,}", flush=True)
    model_lines: list[str] = []
    if model_path is not None:
        t0 = time.perf_counter()
        model_lines = check_model(model_path, a.model_context or a.context, a.keep, a.pairs, kvpress)
        print(f"  {a.model}: {time.perf_counter() - t0:.0f} s", flush=True)
    rows = []
    for i, fam in enumerate(a.families):
        t0 = time.perf_counter()
        try:
            rows.append(check_family(fam, a.context, a.decode_steps, a.keep, boundary=i == 0, size=a.size))
        except Exception as e:  # noqa: BLE001 - one family failing must not hide the others
            rows.append({"family": fam, "error": " ".join(f"{type(e).__name__}: {e}".split())[:300]})
        print(f"  {fam}: {time.perf_counter() - t0:.0f} s", flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "gpu_check.json").write_text(json.dumps(rows, indent=1))
    md = "\n".join(model_lines + ([""] if model_lines else [])) + table(rows, a.context)
    (a.out / "gpu_check.md").write_text(md + "\n")
    print(md)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
