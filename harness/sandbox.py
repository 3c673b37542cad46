"""Processes the harness starts: trusted workers, and the sandbox an untrusted method runs in.

A **trusted worker** (``python -m harness.evaluate`` and friends) runs only the harness's own code: it owns the
model, the items (the hidden test split included), the cache, decoding and scoring, and writes the result. It
runs as a plain child process with a clean environment, a wall-clock watchdog that does not depend on its
output, and bounded reads of its stderr.

An **untrusted method** never runs in a trusted worker: each one gets its own process (``harness.methodhost``,
started by ``harness.boundary``) inside bubblewrap — no network, no other processes, a file-system view of only
Python, the harness's interface code and a staged copy of its ``method.py`` (no model, no items, no results),
a private size-capped /tmp, a clean environment — as an unprivileged user, under kernel limits on CPU time,
address space, processes and file size. Without bubblewrap, ``unshare -n`` still cuts the network but the file
system is not isolated; callers that handle hidden data refuse to run then (see ``sandbox_kind``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.results import MethodLimits

HARNESS_DIR = Path(__file__).resolve().parent
NOBODY = 65534
MAX_PROGRESS_LINE = 4096


class SandboxError(Exception):
    """A worker could not produce a result (killed, timed out, crashed before writing it)."""


def sandbox_kind() -> str:
    """``bubblewrap`` (full isolation), ``unshare-net`` (network only) or ``none``."""
    if shutil.which("bwrap"):
        return "bubblewrap"
    if shutil.which("unshare"):
        return "unshare-net"
    return "none"


def isolates_files(kind: str) -> bool:
    return kind == "bubblewrap"


def _dirs_for(path: Path) -> list[str]:
    """bwrap creates a bind target's parent folders 0700; make them traversable for the unprivileged user."""
    out = []
    for parent in reversed(path.parents):
        if str(parent) != "/":
            out += ["--perms", "0755", "--dir", str(parent)]
    return out


def python_roots() -> list[Path]:
    roots = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    exe = Path(sys.executable)
    roots.add(exe.parent.parent.resolve() if not exe.is_symlink() else exe.resolve().parent.parent)
    return sorted(roots)


def gpu_devices() -> list[str]:
    """The NVIDIA device nodes a method's sandbox needs to use a GPU (none on a machine without one)."""
    import glob

    return sorted(glob.glob("/dev/nvidia*"))


def method_sandbox_command(argv: list[str], ro: list[Path], env: dict[str, str], limits: MethodLimits,
                           kind: str, file_bytes: int | None = None, devices: list[str] | None = None) -> list[str]:
    """The command line that runs ``argv`` as an untrusted method's process (inherited fds stay open).
    ``devices`` (GPU nodes) are bound in; CUDA reserves far more address space than it uses, so the memory
    limit is then on data (RLIMIT_DATA) rather than on address space."""
    memory = f"--data={limits.memory_bytes}" if devices else f"--as={limits.memory_bytes}"
    inner = ["prlimit", f"--nproc={limits.max_procs}", memory, f"--cpu={limits.cpu_s}",
             f"--fsize={file_bytes or limits.file_bytes}", "--core=0", "--", *argv]
    if os.geteuid() == 0 and shutil.which("setpriv"):
        inner = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--no-new-privs", *inner]
    if kind == "bubblewrap":
        cmd = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
               "--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev",
               "--size", str(limits.tmpfs_bytes), "--perms", "1777", "--tmpfs", "/tmp", "--clearenv"]
        for sysdir in ("/usr", "/bin", "/lib", "/lib64", "/sbin"):
            if Path(sysdir).exists():
                cmd += ["--ro-bind", sysdir, sysdir]
        for etc in ("/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group"):
            if Path(etc).exists():
                cmd += ["--ro-bind", etc, etc]
        seen: set[str] = set()
        for p in ro:
            dirs = _dirs_for(p)
            for i in range(0, len(dirs), 4):
                if dirs[i + 3] not in seen:
                    seen.add(dirs[i + 3])
                    cmd += dirs[i: i + 4]
        for p in ro:
            cmd += ["--ro-bind", str(p), str(p)]
        for dev in devices or []:
            cmd += ["--dev-bind", dev, dev]
        if devices and Path("/sys").exists():  # the CUDA driver reads the PCI topology
            cmd += ["--ro-bind", "/sys", "/sys"]
        for k, v in env.items():
            cmd += ["--setenv", k, v]
        return [*cmd, "--chdir", "/tmp", "--", *inner]
    clean = ["env", "-i", *(f"{k}={v}" for k, v in env.items())]
    if kind == "unshare-net":
        return ["unshare", "--net", "--", *clean, *inner]
    return [*clean, *inner]


def _progress(line: str) -> dict[str, Any] | None:
    """A progress line of the worker's exact shape, or None (anything else is ordinary stderr)."""
    if len(line) > MAX_PROGRESS_LINE or not line.startswith("{"):
        return None
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if (isinstance(obj, dict) and set(obj) == {"progress", "total", "item"} and type(obj["progress"]) is int
            and type(obj["total"]) is int and isinstance(obj["item"], str)):
        return obj
    return None


def _drain(stream: Any, tail: deque[str], progress: Callable[[dict[str, Any]], None] | None) -> None:
    """Read stderr in bounded chunks; whole lines longer than the cap are cut, never accumulated."""
    pending = b""
    while True:
        chunk = stream.read1(1 << 15) if hasattr(stream, "read1") else stream.read(1 << 15)
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        if len(pending) > MAX_PROGRESS_LINE:
            lines.append(pending[:MAX_PROGRESS_LINE])
            pending = b""
        for raw in lines:
            line = raw[:MAX_PROGRESS_LINE].decode("utf-8", "replace")
            p = _progress(line)
            if p is not None and progress is not None:
                try:
                    progress(p)
                except Exception:  # noqa: BLE001 - a display problem must not lose the run
                    pass
                continue
            if line.strip():
                tail.append(line[:500])


def run_worker(config: dict[str, Any], module: str = "harness.evaluate", wall_s: float = 3600.0,
               progress: Callable[[dict[str, Any]], None] | None = None, threads: int | None = None) -> dict[str, Any]:
    """``python -m <module> config.json result.json`` as a trusted worker; the parsed result.

    Killed after ``wall_s`` by a watchdog (whether it writes anything or not). Untrusted methods it loads run
    in their own sandboxes, started by the worker itself.
    """
    with tempfile.TemporaryDirectory(prefix="rb-worker-") as tmp:
        out = Path(tmp)
        (out / "config.json").write_text(json.dumps(config))
        n = str(threads or max(1, os.cpu_count() or 1))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(Path.home()),
               "PYTHONPATH": str(HARNESS_DIR.parent), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n,
               "TOKENIZERS_PARALLELISM": "false"}
        for key in ("REVIEWBENCH_CACHE", "XDG_CACHE_HOME", "CUDA_VISIBLE_DEVICES"):
            if os.environ.get(key):
                env[key] = os.environ[key]
        argv = [sys.executable, "-m", module, str(out / "config.json"), str(out / "result.json")]
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, start_new_session=True)
        tail: deque[str] = deque(maxlen=20)
        reader = threading.Thread(target=_drain, args=(proc.stderr, tail, progress), daemon=True)
        reader.start()
        timed_out = False
        try:
            proc.wait(timeout=wall_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        except BaseException:
            _kill_group(proc)
            raise
        if timed_out:
            _kill_group(proc)
            raise SandboxError(f"the worker ran past its {wall_s:.0f} s wall-clock limit and was killed")
        reader.join(timeout=5)
        result = out / "result.json"
        if proc.returncode != 0 or not result.is_file():
            why = next((t for t in reversed(tail) if t.strip() and not t.startswith(" ")), "no output")
            sig = f" (signal {-proc.returncode})" if proc.returncode < 0 else f" (exit {proc.returncode})"
            raise SandboxError(f"the worker failed{sig}: {why}")
        data: dict[str, Any] = json.loads(result.read_text())
        return data


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, 9)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()

