"""Harness overhead against kvpress 0.5.5 on the same model and input (run by hand, not in CI).

    .venv/bin/python bench/harness_overhead.py [--tokens 2048] [--ratio 0.75]

kvpress needs transformers < 5.3, so the script makes its own virtualenv (bench/.venv-kvpress: torch
2.13.0 from the local wheel, kvpress 0.5.5) on first use and runs the kvpress side there. Both sides load
the embedded model's cached checkpoint and the same random token ids, and report:
  1. SnapKV compression time per layer (median over the 30 layers), kvpress SnapKVPress vs our SnapKV with
     kvpress's defaults (window 64, kernel 5, average pooling, mean over the GQA group);
  2. KV bytes held after a head-wise (Ada-KV) compression: kvpress AdaKVPress(SnapKVPress) masks evicted
     entries and keeps the tensors; our ragged store keeps only the kept entries.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KV_VENV = ROOT / "bench" / ".venv-kvpress"
sys.path.insert(0, str(ROOT))

KVPRESS_SIDE = r"""
import json, statistics, sys, time, torch
from transformers import AutoModelForCausalLM, DynamicCache
from kvpress import AdaKVPress, SnapKVPress
path, n, ratio = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
torch.manual_seed(0)
model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
ids = torch.randint(100, 40000, (1, n))

def run(press):
    times = []
    orig = press.compress
    def timed(*a, **k):
        t = time.perf_counter(); out = orig(*a, **k); times.append(time.perf_counter() - t); return out
    press.compress = timed
    cache = DynamicCache(config=model.config)
    with torch.no_grad(), press(model):
        model(ids, past_key_values=cache, use_cache=True)
    kv = sum(l.keys.numel() * l.keys.element_size() + l.values.numel() * l.values.element_size() for l in cache.layers)
    masked = sum(1 for layer in model.model.layers if getattr(layer.self_attn, "masked_key_indices", None) is not None)
    return times, kv, masked

snap = SnapKVPress(compression_ratio=ratio)  # window 64, kernel 5: kvpress defaults
t_snap, kv_snap, _ = run(snap)
t_snap, kv_snap, _ = run(SnapKVPress(compression_ratio=ratio))  # second run: warm
ada = AdaKVPress(SnapKVPress(compression_ratio=ratio))
t_ada, kv_ada, masked = run(ada)
import kvpress, transformers
print(json.dumps({"snapkv_layer_ms": [t * 1000 for t in t_snap], "snapkv_kv_bytes": kv_snap,
                  "adakv_layer_ms": [t * 1000 for t in t_ada], "adakv_kv_bytes": kv_ada, "adakv_masked_layers": masked,
                  "kvpress": kvpress.__version__ if hasattr(kvpress, "__version__") else "0.5.5",
                  "transformers": transformers.__version__}))
"""


def ensure_kvpress_venv() -> Path:
    py = KV_VENV / "bin" / "python"
    if py.exists() and subprocess.run([str(py), "-c", "import kvpress"], capture_output=True).returncode == 0:
        return py
    print(f"creating {KV_VENV} (torch 2.13.0 local wheel + kvpress 0.5.5; transformers < 5.3) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(KV_VENV)], check=True)
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "torch==2.13.0"], check=True)
    subprocess.run([*pip, "-c", str(ROOT / "requirements" / "cpu.txt"), "kvpress==0.5.5"], check=True)
    return py


def ours(path: Path, n: int, ratio: float) -> dict:
    import torch

    from harness.api import EvictionMethod, Keep, LayerView
    from harness.kv import KVRuntime
    from harness.methods.snapkv import SnapKV
    from harness.model import load_model
    from harness.runner import Engine, MethodRun, _queries_for

    class SnapKVPressDefaults(SnapKV):
        query_window, kernel, pooling = 64, 5, "avg"

    class AdaSnap(EvictionMethod):
        """Ada-KV allocation over SnapKV scores: flattened top-k across the layer's heads, 20 % floor per head."""

        query_window = 64
        alpha = 0.2

        def select(self, view: LayerView) -> Keep:
            import torch.nn.functional as F

            scores = view.group(view.attention().sum(dim=1), "mean")
            scores = F.avg_pool1d(scores[:, None], 5, stride=1, padding=2)[:, 0]
            scores = scores.masked_fill(view.positions >= view.query_positions.min(), float("inf"))
            h, t = scores.shape
            floor = int(self.alpha * view.budget)
            forced = scores.topk(floor, dim=-1).indices
            s = scores.clone()
            s.scatter_(1, forced, float("inf"))
            flat = s.flatten().topk(view.budget * h).indices
            return Keep(tuple(torch.sort(flat[flat // t == i] % t).values for i in range(h)))

    torch.manual_seed(0)
    eng = Engine(load_model(str(path)))
    ids = torch.randint(100, 40000, (1, n))[0].tolist()
    rt0 = KVRuntime(eng.info.n_layers, eng.info.group_size)
    rt0.queries.prefill_positions = torch.arange(n - 64, n)
    eng.forward(rt0, ids, 0)
    full = rt0.live_bytes()
    budget = int(round((1 - ratio) * n))
    out = {"full_kv_bytes": full}
    for label, method in (("snapkv", SnapKVPressDefaults()), ("snapkv", SnapKVPressDefaults()), ("adakv", AdaSnap())):
        run = MethodRun(label, method)
        rt = rt0.copy()
        queries = _queries_for(rt0, run, n, None, "A")
        times = []
        for layer in range(eng.info.n_layers):
            t = time.perf_counter()
            eng.compress(rt, run, [budget] * eng.info.n_layers, "A", "prefill", queries, [layer])
            times.append((time.perf_counter() - t) * 1000)
        out[f"{label}_layer_ms"] = times
        out[f"{label}_kv_bytes"] = rt.live_bytes()
        if label == "adakv":
            out["adakv_lengths_layer0"] = rt.layers[0].lengths()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--ratio", type=float, default=0.75, help="compression ratio (fraction removed, kvpress convention)")
    args = ap.parse_args()
    from harness.model import embedded_checkpoint

    path = embedded_checkpoint()
    py = ensure_kvpress_venv()
    res = subprocess.run([str(py), "-c", KVPRESS_SIDE, str(path), str(args.tokens), str(args.ratio)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"kvpress side failed:\n{res.stderr[-2000:]}")
    kv = json.loads(res.stdout.strip().splitlines()[-1])
    me = ours(path, args.tokens, args.ratio)
    med = statistics.median
    print(f"SmolLM2-135M, {args.tokens} random tokens, compression ratio {args.ratio} (keep {1 - args.ratio:.0%}), "
          f"kvpress {kv['kvpress']} on transformers {kv['transformers']}")
    print(f"SnapKV compression per layer, median of 30: kvpress {med(kv['snapkv_layer_ms']):.2f} ms, "
          f"ours {med(me['snapkv_layer_ms']):.2f} ms (ratio ours/kvpress {med(me['snapkv_layer_ms']) / med(kv['snapkv_layer_ms']):.2f}x); "
          f"all layers {sum(kv['snapkv_layer_ms']):.0f} vs {sum(me['snapkv_layer_ms']):.0f} ms")
    print(f"KV bytes after SnapKV: kvpress {kv['snapkv_kv_bytes'] / 2**20:.1f} MiB, ours {me['snapkv_kv_bytes'] / 2**20:.1f} MiB "
          f"(full {me['full_kv_bytes'] / 2**20:.1f} MiB)")
    print(f"KV bytes after head-wise Ada-KV: kvpress {kv['adakv_kv_bytes'] / 2**20:.1f} MiB "
          f"({kv['adakv_masked_layers']}/30 layers masked, nothing freed), ours {me['adakv_kv_bytes'] / 2**20:.1f} MiB "
          f"(ragged; layer 0 head lengths {me['adakv_lengths_layer0']})")


if __name__ == "__main__":
    main()
