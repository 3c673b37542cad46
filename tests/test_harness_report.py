import csv

from harness.report import BOARD_BASELINES, markdown, write_all
from harness.methods import REFERENCE_METHODS


def fake_result():
    aggs = []
    for m, b, acc in [("full", 1.0, 1.0), ("snapkv", 0.1, 0.85), ("snapkv", 0.05, 0.15), ("random", 0.1, 0.0)]:
        aggs.append({"method": m, "budget": b, "task": "*", "n": 20, "errors": 0, "error": None,
                     "normalized_accuracy": acc, "normalized_ci95": [acc - 0.1, acc], "kl": 1 - acc, "top1": acc,
                     "eviction_cost": 0.1, "eviction_cost_oracle": 0.05, "kv_bytes_ratio": b, "compress_s": 0.1,
                     "offline_s": None, "decode_tok_s": 12.0})
    aggs.append({**aggs[1], "method": "broken", "error": "RuntimeError: boom", "errors": 1})
    return {"config": {"board": "A", "tasks": ["niah_single"], "items": 20, "length": 2048, "c_caps": None},
            "environment": {"sandbox": "bubblewrap", "seconds": 300.0}, "aggregates": aggs}


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
