#!/usr/bin/env bash
# The harness's GPU check, for a maintainer on a lent GPU machine (prepared, short: a few minutes).
#
#   scripts/gpu_check.sh [OUT_DIR]          # PYTHON=/path/to/python (a CUDA build of torch) to override
#
# 1. the tests marked `gpu` (tiny hybrid/sliding/partial-RoPE models on CUDA: exactness against the
#    unmodified model, board A end to end with an in-process and a sandboxed method scoring on the GPU);
# 2. bench/gpu_check.py: a trained checkpoint (--model) against kvpress, and a mid-size random-initialised model of each family at 32K context: prefill and
#    decode throughput, peak GPU memory, per-layer eviction overhead against kvpress-style masking, and the
#    trust boundary's cost per layer on the GPU. Results in OUT_DIR (default: gpu_check_out/).
# Without CUDA it fails: one line, exit 1. GPU_CHECK_ARGS="--model /path/to/checkpoint" adds a trained model
# measured against kvpress itself (see bench/gpu_check.py for how to bring one).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
OUT="${1:-gpu_check_out}"
if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  "$PY" -c 'import torch; print(f"error: gpu_check needs a CUDA build of torch and a visible GPU; torch {torch.__version__} (CUDA build: {torch.version.cuda}) sees none")' >&2 2>/dev/null \
    || echo "error: gpu_check: $PY cannot import torch" >&2
  exit 1
fi
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONWARNINGS=ignore
status=0
echo "== tests marked gpu"
"$PY" -m pytest -m gpu tests/test_harness_longctx.py tests/test_harness_hybrid.py -q -p no:cacheprovider \
  2>&1 | tee "$OUT/gpu_tests.txt" || status=1
echo "== long-context check (bench/gpu_check.py)"
"$PY" bench/gpu_check.py --out "$OUT" ${GPU_CHECK_ARGS:-} || status=1   # e.g. GPU_CHECK_ARGS="--families llama qwen3_5"
exit $status
