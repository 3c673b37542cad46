"""Harness overhead against kvpress 0.5.5 on the same model and input (run by hand; ``--smoke`` in make test).

    .venv/bin/python bench/harness_overhead.py [--tokens 2048] [--ratio 0.75] [--pairs 6] [--threads 1]
    .venv/bin/python bench/harness_overhead.py --ours-only     # the harness's side alone, kvpress skipped

kvpress needs transformers < 5.3, so its side runs in its own venv (``bench/_kvpress.py``: bench/.venv-kvpress,
built on first use; no kvpress there and no way to install it: one line, exit 1). Both sides load the same
checkpoint (the embedded model's cached one, or ``--model PATH``) and the same token ids, and compress every
layer once at prefill, timed per layer:
  1. SnapKV: kvpress ``SnapKVPress`` vs the harness's ``harness/methods/snapkv.py`` set to kvpress's defaults
     (window 64, kernel 5, average pooling);
  2. Ada-KV: kvpress ``AdaKVPress(SnapKVPress)`` vs the harness's ``harness/methods/adakv.py`` with kvpress's
     safeguard (``floor_includes_window``) and the same SnapKV settings (``bench/kvpress_parity.py`` checks that
     both pairs keep the same index sets);
  3. KV bytes held afterwards: kvpress masks a head-wise eviction and keeps the tensors; the harness keeps only
     the kept entries (ragged heads).
The kvpress side is a long-lived process in its venv, so runs alternate A B B A ... between the two
implementations under the same machine load; each run is one full compression (the kvpress side's forward pass
is not timed, only its ``compress`` per layer, as the harness's per-layer ``Engine.compress``). Printed: the
median per-layer time of each side, and the ours / kvpress ratio of each pair (median and range over pairs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _kvpress import ensure_kvpress_venv  # noqa: E402

# The kvpress side: loads the model once, then answers one JSON line per requested compression.
KVPRESS_SIDE = r"""
import json, sys, time, torch
from transformers import AutoModelForCausalLM, DynamicCache
from kvpress import AdaKVPress, SnapKVPress
path, ids_file, ratio, threads = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
device = sys.argv[5] if len(sys.argv) > 5 else "cpu"
torch.set_num_threads(threads)
dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(device).eval()
ids = torch.tensor([json.load(open(ids_file))], device=device)
sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

def run(which):
    press = SnapKVPress(compression_ratio=ratio) if which == "snapkv" else AdaKVPress(SnapKVPress(compression_ratio=ratio))
    times = []
    orig = press.compress
    def timed(*a, **k):
        sync(); t = time.perf_counter(); out = orig(*a, **k); sync(); times.append(time.perf_counter() - t); return out
    press.compress = timed
    cache = DynamicCache(config=model.config)
    with torch.no_grad(), press(model):
        model(ids, past_key_values=cache, use_cache=True)
    kv = sum(l.keys.numel() * l.keys.element_size() + l.values.numel() * l.values.element_size() for l in cache.layers)
    masked = 0
    for layer in model.model.layers:
        if getattr(layer.self_attn, "masked_key_indices", None) is not None:
            masked += 1
            layer.self_attn.masked_key_indices = None  # the next run starts unmasked
    return {"layer_ms": [t * 1000 for t in times], "kv_bytes": kv, "masked_layers": masked}

import kvpress, transformers
print(json.dumps({"ready": True, "kvpress": getattr(kvpress, "__version__", "0.5.5"),
                  "transformers": transformers.__version__}), flush=True)
for line in sys.stdin:
    print(json.dumps(run(line.strip())), flush=True)
"""


class KvpressSide:
    """The kvpress process: one request line in, one JSON line out."""

    def __init__(self, py: Path, model: Path, ids: list[int], ratio: float, threads: int, device: str = "cpu") -> None:
        self.ids_file = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(ids, self.ids_file)
        self.ids_file.close()
        self.err = tempfile.TemporaryFile("w+")  # kvpress warns per layer: a pipe would fill and block it
        self.proc = subprocess.Popen([str(py), "-c", KVPRESS_SIDE, str(model), self.ids_file.name, str(ratio),
                                      str(threads), device], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True)
        self.info = self._read()

    def _read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.err.seek(0)
            err = self.err.read()
            last = (err.strip().splitlines() or ["no output"])[-1]
            self.close()
            sys.exit(f"error: the kvpress side failed: {last}")
        return json.loads(line)

    def run(self, which: str) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write(which + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        Path(self.ids_file.name).unlink(missing_ok=True)
        self.err.close()


class OurSide:
    """The harness: one prefill, then each run compresses a copy of it, layer by layer, with the real methods."""

    def __init__(self, model: Path, ids: list[int], ratio: float, device: str = "cpu") -> None:
        import torch

        from harness.boundary import InProcessMethod
        from harness.kv import KVRuntime
        from harness.methods import AdaKV, SnapKV
        from harness.model import load_model
        from harness.runner import Engine, MethodRun

        self.eng = Engine(load_model(str(model), device=device))
        self.sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
        n = len(ids)
        self.rt0 = KVRuntime(self.eng.info.n_layers, self.eng.info.group_size)
        self.rt0.queries.prefill_positions = torch.arange(max(0, n - 64), n)
        self.eng.forward(self.rt0, ids, 0, last_only=True)
        self.n = n
        self.budget = max(1, int(round((1 - ratio) * n)))
        snap, ada = SnapKV(), AdaKV()
        for m in (snap, ada):  # kvpress's SnapKV defaults (ours are the paper's: 32 / 7 / max)
            m.query_window, m.kernel, m.pooling = 64, 5, "avg"
        ada.floor_includes_window = True  # kvpress's safeguard: max(window, alpha x budget) per head
        self.runs = {"snapkv": MethodRun("snapkv", InProcessMethod(snap, "snapkv")),
                     "adakv": MethodRun("adakv", InProcessMethod(ada, "adakv"))}

    def run(self, which: str) -> dict:
        from harness.runner import _queries_for

        eng, run = self.eng, self.runs[which]
        rt = self.rt0.copy()
        run.method.reset()
        queries = _queries_for(self.rt0, run, self.n, None, "A")
        budgets = eng.layer_budgets(run, self.budget, self.n)
        times = []
        for layer in eng.info.attention_layers:
            self.sync()
            t = time.perf_counter()
            eng.compress(rt, run, budgets, "A", "prefill", queries, [layer])
            self.sync()
            times.append((time.perf_counter() - t) * 1000)
        return {"layer_ms": times, "kv_bytes": rt.live_bytes(), "lengths_layer0": rt.layers[0].lengths()}


def summary(label: str, pairs: list[tuple[dict, dict | None]]) -> str:
    med = statistics.median
    ours = [med(o["layer_ms"]) for o, _ in pairs]
    line = f"{label}: ours {med(ours):.2f} ms per layer (median over {len(pairs)} runs of the per-layer median)"
    if pairs[0][1] is None:
        return line
    theirs = [med(k["layer_ms"]) for _, k in pairs if k is not None]
    ratios = [med(o["layer_ms"]) / med(k["layer_ms"]) for o, k in pairs if k is not None]
    return (f"{line}, kvpress {med(theirs):.2f} ms; ours / kvpress {med(ratios):.2f}x "
            f"(range {min(ratios):.2f}-{max(ratios):.2f}x over {len(ratios)} interleaved pairs)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--ratio", type=float, default=0.75, help="compression ratio (fraction removed, kvpress convention)")
    ap.add_argument("--pairs", type=int, default=6, help="interleaved (kvpress, ours) runs per method, A B B A ...")
    ap.add_argument("--threads", type=int, default=1, help="torch threads on both sides")
    ap.add_argument("--model", help="a local transformers model folder (default: the embedded SmolLM2-135M)")
    ap.add_argument("--kvpress-python", type=Path, help="an interpreter with kvpress (default: bench/.venv-kvpress)")
    ap.add_argument("--ours-only", action="store_true", help="run only the harness's side (no kvpress comparison)")
    ap.add_argument("--smoke", action="store_true", help="a tiny run of the script itself (96 tokens, 2 pairs)")
    a = ap.parse_args()
    if a.smoke:
        a.tokens, a.pairs = 96, 2
    if not 0 < a.ratio < 1 or a.tokens < 80 or a.pairs < 1:
        sys.exit("error: --ratio must be in (0, 1), --tokens >= 80 (the window is 64), --pairs >= 1")
    import torch

    from harness.model import resolve_model_path

    torch.set_num_threads(a.threads)
    try:
        path = resolve_model_path(a.model or "embedded")
    except FileNotFoundError as e:
        sys.exit(f"error: {e}")
    ids = torch.randint(100, 40000, (a.tokens,), generator=torch.Generator().manual_seed(0)).tolist()
    kv = None
    if a.ours_only:
        print("kvpress side skipped (--ours-only): only the harness's own timings below")
    else:
        kv = KvpressSide(ensure_kvpress_venv(a.kvpress_python), path, ids, a.ratio, a.threads)
    try:
        ours = OurSide(path, ids, a.ratio)
        results: dict[str, list[tuple[dict, dict | None]]] = {}
        for which in ("snapkv", "adakv"):
            ours.run(which)  # warm-up on both sides (first allocations, lazy imports)
            if kv:
                kv.run(which)
            results[which] = []
            for i in range(a.pairs):
                order = ("kvpress", "ours") if i % 2 == 0 else ("ours", "kvpress")  # A B B A ...
                got: dict[str, dict | None] = {"kvpress": None}
                for side in order:
                    if side == "ours":
                        got["ours"] = ours.run(which)
                    elif kv:
                        got["kvpress"] = kv.run(which)
                results[which].append((got["ours"], got["kvpress"]))  # type: ignore[arg-type]
    finally:
        if kv:
            kv.close()
    mib = 2**20
    full = ours.rt0.live_bytes()
    head = (f"{a.model or 'SmolLM2-135M (embedded)'}, {a.tokens} random tokens, compression ratio {a.ratio} (keep {1 - a.ratio:.0%}), "
            f"{a.threads} thread(s)")
    print(head + (f", kvpress {kv.info['kvpress']} on transformers {kv.info['transformers']}" if kv else ""))
    print(summary("SnapKV compression", results["snapkv"]))
    print(summary("Ada-KV compression", results["adakv"]))
    snap_o, snap_k = results["snapkv"][-1]
    ada_o, ada_k = results["adakv"][-1]
    print(f"KV bytes after SnapKV: ours {snap_o['kv_bytes'] / mib:.1f} MiB"
          + (f", kvpress {snap_k['kv_bytes'] / mib:.1f} MiB" if snap_k else "") + f" (full {full / mib:.1f} MiB)")
    print(f"KV bytes after head-wise Ada-KV: ours {ada_o['kv_bytes'] / mib:.1f} MiB (ragged; layer 0 head lengths "
          f"{ada_o['lengths_layer0']})" + (f", kvpress {ada_k['kv_bytes'] / mib:.1f} MiB ({ada_k['masked_layers']}/"
                                           f"{len(ada_k['layer_ms'])} layers masked, nothing freed)" if ada_k else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
