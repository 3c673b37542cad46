"""Audit throughput and memory on a large, realistic Claude Code transcript (run by hand, not in CI).

    .venv/bin/python bench/audit_throughput.py            # 1 GB (default)
    .venv/bin/python bench/audit_throughput.py --gb 0.2 --keep /tmp/big.jsonl

Generates a session log in the real format (tool calls with long Read/Bash outputs, assistant text, thinking,
attachments and progress lines, sub-agent lines, a few planted violations), then measures, each in a fresh
process: (1) the reference, bare ``orjson.loads`` of every line; (2) ``review audit`` on the same file.
Prints the time ratio audit / reference (target <= 2x) and both peak RSS values (target <= 300 MB, flat).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reviewbench.logs.synth import ClaudeSession, Step  # noqa: E402

def _compact(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"))


WORDS = ("the cache keeps heavy hitters while the recent window protects the last tokens of the trace and "
         "attention sinks absorb mass from every query head so eviction must keep them").split()


def _prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _code(rng: random.Random, lines: int) -> str:
    return "\n".join(f"{i:>5}\t    score = attn[:, :, {rng.randint(0, 64)}:].mean(dim={rng.randint(0, 2)})  # {_prose(rng, 6)}"
                     for i in range(lines))


def session_template(steps: int, seed: int = 0) -> str:
    """One session's JSONL, with ``@@S@@`` in every id so copies are unique without re-serialising."""
    rng = random.Random(seed)
    t = datetime(2026, 11, 1, tzinfo=timezone.utc)
    s = ClaudeSession(session="@@S@@", cwd="/arena/agents/agent1", start=t)
    s.prompt("Improve on board C. " + _prose(rng, 60), t)
    extra: list[str] = []
    for i in range(steps):
        t += timedelta(seconds=40)
        r = rng.random()
        if r < 0.35:
            step = Step("Read", {"file_path": f"/arena/agents/agent1/src/mod{i % 40}.py"}, _code(rng, rng.randint(60, 400)),
                        text=_prose(rng, 40))
        elif r < 0.7:
            cmd = rng.choice(["python run_dev.py --board C --split dev", "git diff --stat", "ls -la src",
                              "grep -rn 'def select' src", "python -m pytest -q tests/test_method.py",
                              "cat /arena/data/dev/niah_single.jsonl | head -50"])
            step = Step("Bash", {"command": cmd, "description": _prose(rng, 5)}, _code(rng, rng.randint(10, 120)))
        elif r < 0.85:
            step = Step("Edit", {"file_path": f"/arena/agents/agent1/src/mod{i % 40}.py", "old_string": _code(rng, 6),
                                 "new_string": _code(rng, 8)}, "The file has been updated.")
        elif r < 0.95:
            step = Step("Grep", {"pattern": "huggingface|select", "path": "/arena/agents/agent1"}, _code(rng, 30))
        else:
            step = Step("WebFetch", {"url": "https://arxiv.org/abs/2306.14048", "prompt": _prose(rng, 10)}, _prose(rng, 400))
        s.step(step, t)
        if rng.random() < 0.3:  # thinking, progress and attachment lines: parsed by nobody, skipped cheaply
            extra.append(_compact({"type": "progress", "toolUseID": f"toolu_@@S@@{i}", "data": {
                "type": "bash_progress", "output": _code(rng, 20)}, "uuid": f"p-@@S@@-{i}", "sessionId": "@@S@@"}))
            extra.append(_compact({"type": "assistant", "uuid": f"th-@@S@@-{i}", "sessionId": "@@S@@",
                                     "message": {"role": "assistant", "content": [
                                         {"type": "thinking", "thinking": _prose(rng, 300), "signature": "x" * 200}]}}))
    t += timedelta(minutes=1)
    s.step(Step("WebFetch", {"url": "https://huggingface.co/datasets/simonjegou/ruler", "prompt": "needles?"}, "..."), t)
    s.step(Step("Bash", {"command": "python - <<'EOF'\nimport os\nprint(open(os.path.join('/arena/data', 'te'+'st', 'a.jsonl')).read())\nEOF"}, "..."), t)
    text = "\n".join(s.lines + extra) + "\n"
    # every line and tool id unique per copy, as in a real multi-session log (the audit dedups by uuid)
    text = re.sub(r'"(uuid|parentUuid)":"', r'"\1":"@@S@@-', text)
    return text.replace("toolu_", "toolu_@@S@@").replace("msg_", "msg_@@S@@")


def generate(path: Path, target_bytes: int) -> tuple[int, int]:
    template = session_template(steps=400)
    copies = 0
    with open(path, "w") as fh:
        written = 0
        while written < target_bytes:
            chunk = template.replace("@@S@@", f"{copies:08x}-5b1e-4c38-9d7e-2f1c0de0a001")
            fh.write(chunk)
            written += len(chunk)
            copies += 1
    return written, copies


REFERENCE = """
import orjson, sys, time, resource
t = time.perf_counter(); n = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        if line.strip():
            orjson.loads(line); n += 1
print(time.perf_counter() - t, n, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
AUDIT = """
import sys, time, resource
from pathlib import Path
from reviewbench.arena import Rules
from reviewbench.logs.audit import run_audit
t = time.perf_counter()
r = run_audit([Path(sys.argv[1])], Rules(), agent="agent1")
cats = sorted({f.category for f in r.findings})
print(time.perf_counter() - t, r.stats.events, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, len(r.findings), ",".join(cats))
"""


def run(script: str, path: Path) -> list[str]:
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    return out.stdout.split()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0, help="size of the generated log (default 1.0)")
    ap.add_argument("--keep", type=Path, help="write the log here and keep it (reused if it exists)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each measurement; the best is kept")
    args = ap.parse_args()
    path = args.keep or Path(tempfile.mkdtemp()) / "session.jsonl"
    if not path.exists():
        t = time.perf_counter()
        size, copies = generate(path, int(args.gb * 1e9))
        print(f"generated {size / 1e9:.2f} GB ({copies} sessions) in {time.perf_counter() - t:.0f} s: {path}")
    size = path.stat().st_size
    ref = min((run(REFERENCE, path) for _ in range(args.repeat)), key=lambda r: float(r[0]))
    aud = min((run(AUDIT, path) for _ in range(args.repeat)), key=lambda r: float(r[0]))
    ref_s, aud_s = float(ref[0]), float(aud[0])
    print(f"file: {size / 1e9:.2f} GB, {int(ref[1])} lines")
    print(f"reference orjson.loads per line: {ref_s:6.1f} s  {size / 1e6 / ref_s:7.0f} MB/s  peak RSS {int(ref[2]) / 1024:5.0f} MB")
    print(f"review audit:                    {aud_s:6.1f} s  {size / 1e6 / aud_s:7.0f} MB/s  peak RSS {int(aud[2]) / 1024:5.0f} MB"
          f"  ({aud[1]} events, {aud[3]} findings: {aud[4] if len(aud) > 4 else '-'})")
    ratio = aud_s / ref_s
    print(f"ratio audit / orjson: {ratio:.2f}x (target <= 2x) {'OK' if ratio <= 2 else 'OVER'}; "
          f"audit peak RSS {'OK' if int(aud[2]) / 1024 <= 300 else 'OVER'} (target <= 300 MB)")
    if not args.keep:
        path.unlink()


if __name__ == "__main__":
    main()
