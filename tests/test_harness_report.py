import csv

from harness.report import BOARD_BASELINES, markdown, write_all
from harness.methods import REFERENCE_METHODS
from harness.results import RESULT_SCHEMA, Result


def fake_result() -> Result:
    """A typed harness result with four aggregates and a method that failed."""
    aggs = []
    for m, b, acc in [("full", 1.0, 1.0), ("snapkv", 0.1, 0.85), ("snapkv", 0.05, 0.15), ("random", 0.1, 0.0)]:
        aggs.append({"method": m, "budget": b, "task": "*", "n": 20, "errors": 0, "error": None, "accuracy": acc,
                     "full_accuracy": 1.0, "normalized_accuracy": acc, "normalized_ci95": [acc - 0.1, acc],
                     "kl": 1 - acc, "top1": acc, "eviction_cost": 0.1, "eviction_cost_oracle": 0.05,
                     "kept_tokens": 2048 * b, "kv_bytes": 1e6 * b, "kv_bytes_ratio": b, "kv_bytes_peak": 1e6 * b,
                     "kv_tokens_layer_max": int(2048 * b), "compress_s": 0.1, "offline_s": None,
                     "decode_tok_s": 12.0, "decode_speed_ratio": 1.0, "generated_tokens": 8.0})
    aggs.append({**aggs[1], "method": "broken", "error": "RuntimeError: boom", "errors": 1})
    return Result.from_json({
        "schema": RESULT_SCHEMA, "config": {"board": "A", "tasks": ["niah_single"], "items": 20, "length": 2048},
        "model": {"name": "embedded", "n_layers": 30, "n_heads": 9, "n_kv_heads": 3, "head_dim": 64},
        "code_hashes": {}, "method_errors": {"broken": "RuntimeError: boom"}, "rows": [], "aggregates": aggs,
        "seed_spread": None,
        "environment": {"python": "3.11", "torch": "2", "transformers": "5", "device": "cpu", "dtype": "float32",
                        "threads": 2, "platform": "linux", "sandbox": "bubblewrap", "seconds": 300.0}})


def test_every_board_baseline_is_a_shipped_method():
    assert all(m in REFERENCE_METHODS for ms in BOARD_BASELINES.values() for m in ms)


def test_report_files(tmp_path):
    r = fake_result()
    md = markdown(r)
    assert "| snapkv | 0.1 | 0.85 [0.75, 0.85] |" in md and "error: RuntimeError: boom" in md
    paths = write_all(r, tmp_path / "out")
    assert [p.name for p in paths] == ["result.json", "table.md", "table.csv", "accuracy.png"]
    rows = list(csv.DictReader(open(paths[2])))
    assert len(rows) == 5 and rows[1]["method"] == "snapkv" and float(rows[1]["normalized_accuracy"]) == 0.85
    assert paths[3].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths[3].stat().st_size > 20_000  # lines, bands and a legend, not an empty frame
