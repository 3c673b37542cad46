"""Untrusted method.py in the sandbox: every escape attempt ends as an error in the result, never a crash."""

import json
import textwrap
from dataclasses import asdict

import pytest

from harness.evaluate import RunConfig
from harness.model import embedded_checkpoint
from harness.sandbox import Limits, SandboxError, run_worker, sandbox_kind
from tests.conftest import run_review

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sandbox_kind() != "bubblewrap", reason="bubblewrap not installed (make installs it)")]

HEADER = "import os, socket, time\nimport torch\nfrom harness import EvictionMethod, Keep\n\n"
ATTEMPTS = {
    "net": """
class Net(EvictionMethod):
    name = "net"
    def select(self, view):
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=2); got = "open"
        except OSError as e:
            got = "blocked"
        raise RuntimeError(f"net={got}")
""",
    "read": """
class Read(EvictionMethod):
    name = "read"
    def select(self, view):
        try:
            open(SECRET).read(); got = "read"
        except OSError as e:
            got = f"denied ({type(e).__name__})"
        raise RuntimeError(f"test_split={got}")
""",
    "env": """
class Env(EvictionMethod):
    name = "env"
    def select(self, view):
        raise RuntimeError(f"key={os.environ.get('ANTHROPIC_API_KEY')} home={os.environ.get('HOME')}")
""",
    "forks": """
class Forks(EvictionMethod):
    name = "forks"
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
    "hang": """
class Hang(EvictionMethod):
    name = "hang"
    def select(self, view):
        while True:
            pass
""",
    "oom": """
class Oom(EvictionMethod):
    name = "oom"
    def select(self, view):
        x = torch.ones(6_000_000_000)
        return Keep.from_topk(x[: view.n_tokens].expand(view.n_kv_heads, -1), view.budget)
""",
    "malformed": """
class Malformed(EvictionMethod):
    name = "malformed"
    def select(self, view):
        return Keep((torch.tensor([10**9]),))
""",
    "broken": "this is not python(\n",
}


@pytest.fixture(scope="module")
def escape_result(tmp_path_factory):
    root = tmp_path_factory.mktemp("escapes")
    secret = root / "arena" / "data" / "test" / "niah.jsonl"
    secret.parent.mkdir(parents=True)
    secret.write_text('{"answer": "4729104"}\n')
    dirs = []
    for name, body in ATTEMPTS.items():
        d = root / name
        d.mkdir()
        (d / "method.py").write_text(HEADER + f"SECRET = {str(secret)!r}\n" + textwrap.dedent(body))
        dirs.append(d)
    cfg = RunConfig(board="A", methods=[str(d) for d in dirs] + ["window"], items=1, length=200,
                    tasks=["niah_single"], budgets=[0.5], call_timeout_s=3)
    import os

    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-secret"
    try:
        return run_worker(asdict(cfg), dirs, [embedded_checkpoint()],
                          Limits(memory_bytes=10 * 1024**3, max_procs=64, wall_s=600))
    finally:
        del os.environ["ANTHROPIC_API_KEY"]


@pytest.mark.parametrize("method, expected", [
    ("net", "net=blocked"),
    ("read", "test_split=denied"),
    ("env", "key=None home=/tmp"),
    ("hang", "exceeded its time limit"),
    ("malformed", "index sets for 3 KV heads"),
])
def test_escape_attempts_end_as_errors(escape_result, method, expected):
    assert expected in escape_result["method_errors"][method]


def test_fork_bomb_hits_the_process_limit(escape_result):
    err = escape_result["method_errors"]["forks"]
    assert err.startswith("RuntimeError: forks=") and int(err.split("=")[1]) < 64


def test_oom_is_a_clear_error(escape_result):
    err = escape_result["method_errors"]["oom"]
    assert "alloc" in err.lower() or "memory" in err.lower()


def test_unloadable_method_is_reported_and_the_rest_still_runs(escape_result):
    broken = next(v for k, v in escape_result["method_errors"].items() if k.endswith("broken"))
    assert "SyntaxError" in broken
    ok = [a for a in escape_result["aggregates"] if a["method"] == "window" and a["task"] == "*"]
    assert ok and ok[0]["error"] is None and ok[0]["n"] == 1
    assert escape_result["environment"]["sandbox"] == "bubblewrap"


def test_wall_clock_limit_kills_the_worker():
    cfg = RunConfig(board="A", methods=["window"], items=1, length=200, tasks=["niah_single"])
    with pytest.raises(SandboxError, match="wall-clock limit"):
        run_worker(asdict(cfg), [], [embedded_checkpoint()], Limits(wall_s=1))


def test_cli_check_and_run(tmp_path, arena):
    ok = run_review("harness", "check", str(arena / "submit" / "agent1-003"), "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["ok"]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "method.py").write_text(HEADER + textwrap.dedent(ATTEMPTS["malformed"]))
    r = run_review("harness", "check", str(bad))
    assert r.returncode == 1 and "FAIL" in r.stdout
    r = run_review("harness", "run", "snapkv", "--items", "1", "--length", "200", "--budgets", "0.5", "--json",
                   timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["schema"] == "harness.result/1" and {a["method"] for a in res["aggregates"]} == {"full", "snapkv"}
    assert run_review("harness", "run", "snapkv", "--board", "Z").returncode == 2
    assert run_review("harness", "run", "snapkv", "--split", "test").returncode == 2
