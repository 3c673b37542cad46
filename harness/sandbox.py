"""Runs untrusted methods in a sandboxed worker process.

bubblewrap gives the worker no network, a file-system view of only what it needs (Python, the virtualenv,
the harness, the model cache, the method folder read-only; a private /tmp; one writable output folder) and
a clean environment without the parent's secrets. Inside, it drops to an unprivileged user and runs under
process, memory and CPU-time limits. Without bubblewrap, ``unshare -n`` still cuts the network, but the
file system is not isolated, and the result says so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

HARNESS_DIR = Path(__file__).resolve().parent
NOBODY = 65534


@dataclass
class Limits:
    wall_s: float = 3600.0
    cpu_s: int = 7200
    memory_bytes: int = 12 * 1024**3
    max_procs: int = 512
    threads: int = max(1, (os.cpu_count() or 1))


class SandboxError(Exception):
    """The worker could not produce a result (killed, timed out, crashed before writing it)."""


def sandbox_kind() -> str:
    if shutil.which("bwrap"):
        return "bubblewrap"
    if shutil.which("unshare"):
        return "unshare-net"
    return "none"


def _dirs_for(path: Path) -> list[str]:
    """bwrap creates a bind target's parent folders 0700; make them traversable for the unprivileged user."""
    out = []
    for parent in reversed(path.parents):
        if str(parent) != "/":
            out += ["--perms", "0755", "--dir", str(parent)]
    return out


def build_command(argv: list[str], ro: list[Path], rw: list[Path], env: dict[str, str], limits: Limits,
                  kind: str | None = None) -> list[str]:
    kind = kind or sandbox_kind()
    inner = ["prlimit", f"--nproc={limits.max_procs}", f"--as={limits.memory_bytes}", f"--cpu={limits.cpu_s}", "--",
             *argv]
    if os.geteuid() == 0 and shutil.which("setpriv"):
        inner = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *inner]
    if kind == "bubblewrap":
        cmd = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
               "--new-session", "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp", "--clearenv"]
        for sysdir in ("/usr", "/bin", "/lib", "/lib64", "/sbin"):
            if Path(sysdir).exists():
                cmd += ["--ro-bind", sysdir, sysdir]
        for etc in ("/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group"):
            if Path(etc).exists():
                cmd += ["--ro-bind", etc, etc]
        seen: set[str] = set()
        for p in [*ro, *rw]:
            dirs = _dirs_for(p)
            for i in range(0, len(dirs), 4):
                if dirs[i + 3] not in seen:
                    seen.add(dirs[i + 3])
                    cmd += dirs[i : i + 4]
        for p in ro:
            cmd += ["--ro-bind", str(p), str(p)]
        for p in rw:
            cmd += ["--bind", str(p), str(p)]
        for k, v in env.items():
            cmd += ["--setenv", k, v]
        return [*cmd, "--chdir", "/tmp", "--", *inner]
    clean = ["env", "-i", *(f"{k}={v}" for k, v in env.items())]
    if kind == "unshare-net":
        return ["unshare", "--net", "--", *clean, *inner]
    return [*clean, *inner]


def _python_roots() -> list[Path]:
    roots = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    exe = Path(sys.executable)
    roots.add(exe.parent.parent.resolve() if not exe.is_symlink() else exe.resolve().parent.parent)
    return sorted(roots)


def run_worker(config: dict, method_dirs: list[Path], model_dirs: list[Path], limits: Limits = Limits(),
               progress: Callable[[dict], None] | None = None, kind: str | None = None,
               module: str = "harness.evaluate") -> dict:
    """Run ``python -m <module> config.json result.json`` in the sandbox and return the parsed result."""
    kind = kind or sandbox_kind()
    with tempfile.TemporaryDirectory(prefix="rb-sandbox-") as tmp:
        out = Path(tmp)
        os.chmod(out, 0o777)  # the unprivileged worker writes its result here
        (out / "config.json").write_text(json.dumps(config))
        pypath = HARNESS_DIR.parent
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": str(pypath), "HF_HUB_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1", "REVIEWBENCH_SANDBOX": kind,
               "OMP_NUM_THREADS": str(limits.threads), "MKL_NUM_THREADS": str(limits.threads),
               "TOKENIZERS_PARALLELISM": "false"}
        if os.environ.get("REVIEWBENCH_CACHE"):
            env["REVIEWBENCH_CACHE"] = os.environ["REVIEWBENCH_CACHE"]
        else:
            env["XDG_CACHE_HOME"] = str(Path.home() / ".cache")
        ro = [*_python_roots(), HARNESS_DIR, *[d.resolve() for d in method_dirs], *[d.resolve() for d in model_dirs]]
        argv = [sys.executable, "-m", module, str(out / "config.json"), str(out / "result.json")]
        cmd = build_command(argv, ro, [out], env, limits, kind)
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        tail: list[str] = []
        try:
            assert proc.stderr is not None
            for line in proc.stderr:
                if time.monotonic() - t0 > limits.wall_s:
                    raise subprocess.TimeoutExpired(cmd, limits.wall_s)
                line = line.rstrip("\n")
                if line.startswith("{") and '"progress"' in line and progress:
                    try:
                        progress(json.loads(line))
                        continue
                    except json.JSONDecodeError:
                        pass
                tail = (tail + [line])[-20:]
            proc.wait(timeout=max(1.0, limits.wall_s - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            raise SandboxError(f"the worker ran past its {limits.wall_s:.0f} s wall-clock limit and was killed") from None
        result = out / "result.json"
        if proc.returncode != 0 or not result.is_file():
            why = next((t for t in reversed(tail) if t.strip() and not t.startswith(" ")), "no output")
            sig = f" (signal {-proc.returncode})" if proc.returncode < 0 else f" (exit {proc.returncode})"
            raise SandboxError(f"the worker failed{sig}: {why}")
        data = json.loads(result.read_text())
        data.setdefault("environment", {})["sandbox"] = kind
        data["environment"]["limits"] = asdict(limits)
        return data
