"""The hostile methods of ``tests/test_sandbox.py`` run against the real sandbox, as a program of its own: the test
session starts it in the background (``tests/conftest.py``), since its hangs spend most of a minute waiting on
time limits, and the tests read what it wrote. ``python -m tests.sandbox_attacks OUT`` writes ``hostile.json``,
``clean.json`` and ``flood.json`` (harness results) and ``seconds.json`` (the hostile run's wall time)."""

import json
import os
import sys
import textwrap
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.model import embedded_checkpoint
from harness.results import MethodLimits, RunConfig
from harness.sandbox import run_worker

HEADER = "import os, signal, socket, sys, time\nimport torch\nfrom harness import EvictionMethod, Keep\n\n"
# the honest selection every tamperer also returns: the first `budget` tokens of each head
FIRST = "Keep(tuple(torch.arange(view.budget) for _ in range(view.n_kv_heads)))"
ATTACKS = {
    "net": """
class Net(EvictionMethod):
    def select(self, view):
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=2); got = "open"
        except OSError:
            got = "blocked"
        raise RuntimeError(f"net={got}")
""",
    "read_split": """
class ReadSplit(EvictionMethod):
    def select(self, view):
        try:
            open(SECRET).read(); got = "read"
        except OSError as e:
            got = f"denied ({type(e).__name__})"
        raise RuntimeError(f"test_split={got}")
""",
    "read_model": """
class ReadModel(EvictionMethod):
    def select(self, view):
        try:
            os.listdir(MODEL); got = "listed"
        except OSError as e:
            got = f"denied ({type(e).__name__})"
        raise RuntimeError(f"model={got}")
""",
    "env": """
class Env(EvictionMethod):
    def select(self, view):
        raise RuntimeError(f"key={os.environ.get('ANTHROPIC_API_KEY')} home={os.environ.get('HOME')}")
""",
    "forks": """
class Forks(EvictionMethod):
    def select(self, view):
        n = 0
        try:
            for _ in range(3000):
                if os.fork() == 0:
                    time.sleep(3); os._exit(0)
                n += 1
        except OSError:
            pass
        raise RuntimeError(f"forks={n}")
""",
    "spin": """
class Spin(EvictionMethod):
    def select(self, view):
        while True:
            pass
""",
    "sleep": """
class Sleep(EvictionMethod):
    def select(self, view):
        time.sleep(1000)
""",
    "no_alarm": """
class NoAlarm(EvictionMethod):
    def select(self, view):
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(0.01)
""",
    "oom": """
class Oom(EvictionMethod):
    def select(self, view):
        x = torch.ones(6_000_000_000)
        return Keep.from_topk(x[: view.n_tokens].expand(view.n_kv_heads, -1), view.budget)
""",
    "big_file": """
class BigFile(EvictionMethod):
    def select(self, view):
        with open("/tmp/fill", "wb") as fh:
            for _ in range(1024):
                fh.write(b"x" * (1 << 20))
        raise RuntimeError("wrote 1 GiB")
""",
    "stderr_flood": """
class Flood(EvictionMethod):
    def select(self, view):
        sys.stderr.write('{"progress": 99, "total": 1, "item": "forged"}\\n')
        sys.stderr.write("y" * (200 << 20))
        sys.stderr.flush()
        return """ + FIRST + """
""",
    "malformed": """
class Malformed(EvictionMethod):
    def select(self, view):
        return Keep((torch.tensor([10**9]),))
""",
    "nan_rewrite": """
from harness import Rewrite
class NanRewrite(EvictionMethod):
    def select(self, view):
        k = torch.full((view.budget, view.keys.shape[2]), float("nan"))
        return Rewrite(tuple(k for _ in range(view.n_kv_heads)), tuple(k for _ in range(view.n_kv_heads)),
                       tuple(torch.arange(view.budget) for _ in range(view.n_kv_heads)))
""",
    "tamper": """
import importlib
mods = {}
for m in ("harness.runner", "harness.tasks", "harness.evaluate", "harness.results", "harness.boundary",
          "harness.wire", "harness.api"):
    try:  # the sandbox shows only the interface's modules: the scoring ones are not even there to patch
        mods[m.split(".")[1]] = importlib.import_module(m)
    except ImportError:
        pass
class Tamper(EvictionMethod):
    name = "tamper"
    def select(self, view):
        for mod in mods.values():
            for attr in ("score", "fidelity", "eviction_cost", "aggregate", "apply_result", "read_frame"):
                if hasattr(mod, attr):
                    setattr(mod, attr, lambda *a, **k: 1.0)
        if "results" in mods:
            mods["results"].Result.to_json = lambda self: {"schema": "harness.result/2", "forged": True}
        for path in ("/tmp/result.json", os.environ.get("HOME", "/tmp") + "/result.json"):
            try:
                open(path, "w").write("{}")
            except OSError:
                pass
        return """ + FIRST + """
""",
    "regenerate": """
class Regenerate(EvictionMethod):
    def select(self, view):
        try:
            import harness.tasks as t
            items = t.generate("niah_single", "test", 1, lambda s: len(s.split()), 200)
            got = "generated " + items[0].id
        except (ValueError, ImportError) as e:
            got = "refused"
        raise RuntimeError(f"regenerate={got}")
""",
    "broken": "this is not python(\n",
    "honest": """
class Honest(EvictionMethod):
    name = "honest"
    def select(self, view):
        return """ + FIRST + """
""",
}
LIMITS = MethodLimits(call_timeout_s=4, start_timeout_s=60, memory_bytes=8 * 1024**3, max_procs=64,
                      file_bytes=16 * 1024**2, tmpfs_bytes=32 * 1024**2)


def write_method(root, name, body, secret, model):
    d = root / name
    d.mkdir()
    (d / "method.py").write_text(HEADER + f"SECRET = {str(secret)!r}\nMODEL = {str(model)!r}\n" + textwrap.dedent(body))
    return str(d)


def run_methods(methods, timeout=900):
    cfg = RunConfig(board="A", methods=methods, items=1, length=200, tasks=["niah_single"], budgets=[0.5],
                    limits=LIMITS, threads=2)
    t0 = time.monotonic()
    out = run_worker(asdict(cfg), wall_s=timeout, threads=2)
    return out, time.monotonic() - t0



def main(out: Path) -> None:
    """The attacks, their honest twin alone, and the stderr flood alone, each one worker run; the secret test split
    and an API key in the environment are what the attacks try to reach."""
    root = out / "methods"
    secret = root / "arena" / "data" / "test" / "A" / "niah_single.jsonl"
    secret.parent.mkdir(parents=True)
    secret.write_text('{"answer": "4729104"}\n')
    model = embedded_checkpoint()
    dirs = {name: write_method(root, name, body, secret, model) for name, body in ATTACKS.items()}
    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-secret"
    try:
        hostile, seconds = run_methods([d for name, d in dirs.items() if name != "stderr_flood"])
    finally:
        del os.environ["ANTHROPIC_API_KEY"]
    clean, _ = run_methods([dirs["honest"]])
    flood, _ = run_methods([dirs["stderr_flood"]])
    for name, result in (("hostile", hostile), ("clean", clean), ("flood", flood)):
        (out / f"{name}.json").write_text(json.dumps(result))
    (out / "seconds.json").write_text(json.dumps(seconds))


def load(out: Path) -> tuple[Any, ...]:
    """What ``main`` wrote: (hostile, clean, seconds, flood), the results as ``harness.results.Result``."""
    from harness.results import Result

    def result(name: str) -> Result:
        return Result.from_json(json.loads((out / f"{name}.json").read_text()))

    return result("hostile"), result("clean"), json.loads((out / "seconds.json").read_text()), result("flood")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
