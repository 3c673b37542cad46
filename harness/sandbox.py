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

import ctypes
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.results import MethodLimits

HARNESS_DIR = Path(__file__).resolve().parent
NOBODY = 65534
MAX_PROGRESS_LINE = 4096


def thread_env(threads: int) -> dict[str, str]:
    """The thread settings of a worker or method process. OpenMP's threads wait for each other by sleeping, not
    spinning (``OMP_WAIT_POLICY=PASSIVE``, unless the caller set a policy): with the default spin, two reviews
    sharing 2 cores decoded at 3.8 tok/s each instead of 14.3 (board C's one-token forwards meet a barrier per
    op, and a spinning thread holds the core its partner needs); alone, the spin is worth 21.5 vs 14.7 tok/s."""
    n = str(max(1, threads))
    return {"OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n,
            "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}


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


# --- what the method's sandbox shows ----------------------------------------------------------------------------
SYSTEM_DIRS = ("/usr", "/bin", "/lib", "/lib64", "/sbin")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/passwd", "/etc/group")
# what the method host's interface promises beyond its own imports: tensor.numpy() (the host's answers) needs numpy
INTERFACE_PACKAGES = ("numpy",)
# distributions that exist only on a CUDA build of torch: bound when installed, left out of the rendered list
PLATFORM_SPECIFIC = ("nvidia-", "triton", "cuda-")


@dataclass(frozen=True)
class Bind:
    """One entry of the method sandbox's file system: a host path bound read-only at the same place
    (``ro``), a symbolic link recreated as it is on the host (``link``, ``target`` its text), or a folder
    covered by an empty tmpfs (``hide``)."""

    path: str
    kind: str = "ro"
    target: str = ""
    why: str = ""


def _module_file(name: str) -> Path | None:
    rel = Path(*name.split("."))
    base = HARNESS_DIR.parent
    for cand in (base / rel.with_suffix(".py"), base / rel / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def interface_modules() -> tuple[list[Path], set[str]]:
    """The harness files the method host imports, followed transitively through every ``harness.*`` import
    in them (function-level ones too), and the third-party top-level packages those files import."""
    import ast

    files: list[Path] = []
    third: set[str] = set()
    todo, seen = ["harness.methodhost"], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        for i in range(1, len(parts)):  # a module's packages run their __init__ first
            todo.append(".".join(parts[:i]))
        f = _module_file(name)
        if f is None:
            continue
        files.append(f)
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            mods: list[str] = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                mods = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for m in mods:
                top = m.split(".")[0]
                if top == "harness":
                    if _module_file(m) is not None:
                        todo.append(m)
                elif top not in sys.stdlib_module_names and top != "__future__":
                    third.add(top)
    return sorted(set(files)), third


def _distribution_closure(tops: set[str]) -> list[Any]:
    """The installed distributions that provide ``tops`` and everything they require (extras left out)."""
    import importlib.metadata as md
    import re

    from packaging.markers import default_environment
    from packaging.requirements import InvalidRequirement, Requirement

    env: dict[str, str] = {**{k: str(v) for k, v in default_environment().items()}, "extra": ""}
    todo: list[str] = []
    unknown = []
    for top in sorted(tops):
        try:  # most distributions are named as their package (a full scan of site-packages takes seconds)
            if top in (md.distribution(top).read_text("top_level.txt") or top).split():
                todo.append(top)
                continue
        except md.PackageNotFoundError:
            pass
        unknown.append(top)
    if unknown:
        providers = md.packages_distributions()
        todo += [d for t in unknown for d in providers.get(t, [])]
    found: dict[str, Any] = {}
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in found:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        found[name] = dist
        for req in dist.requires or []:
            try:
                r = Requirement(req)
            except InvalidRequirement:
                continue
            if r.marker is None or r.marker.evaluate(env):
                todo.append(r.name)
    return [found[k] for k in sorted(found)]


def _interpreter_binds() -> list[Bind]:
    """The interpreter as the host runs it: the links from ``sys.executable`` to the binary, the binary, its
    shared libpython, pyvenv.cfg, and the standard library (without the base installation's site-packages)."""
    import sysconfig

    out: list[Bind] = []
    exe = Path(sys.executable).absolute()
    for _ in range(16):
        if not exe.is_symlink():
            break
        target = os.readlink(exe)
        out.append(Bind(str(exe), "link", target, "the interpreter"))
        exe = (exe.parent / target) if not os.path.isabs(target) else Path(target)
    out.append(Bind(str(exe), why="the interpreter"))
    libdir, soname = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME")
    if libdir and soname and (Path(libdir) / soname).is_file():
        out.append(Bind(str(Path(libdir) / soname), why="the interpreter"))
    cfg = Path(sys.prefix) / "pyvenv.cfg"
    if cfg.is_file():
        out.append(Bind(str(cfg), why="the interpreter"))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    out.append(Bind(str(stdlib), why="the standard library"))
    if (stdlib / "site-packages").is_dir():
        out.append(Bind(str(stdlib / "site-packages"), "hide", why="the base installation's packages"))
    return out


def _site_entries(dist: Any) -> set[Path]:
    """The top-level entries a distribution installed into its site-packages (its packages, modules, .libs
    folders and dist-info), never anything outside it (scripts in bin/)."""
    tops = {line.split(",", 1)[0].split("/", 1)[0] for line in (dist.read_text("RECORD") or "").splitlines()}
    out: set[Path] = set()
    for top in tops:
        if not top or top in ("..", "__pycache__") or top.endswith(".pth"):
            continue
        root = Path(str(dist.locate_file(top)))
        if root.exists():
            out.add(root)
    return out


@functools.lru_cache(maxsize=1)
def method_binds() -> tuple[Bind, ...]:
    """Everything the method's sandbox shows beyond the system folders (``SYSTEM_DIRS``, ``SYSTEM_FILES``), built
    from what the method host imports: the interpreter and standard library, the harness files of the interface
    (followed through their imports), and the distributions of the third-party packages they import with their
    requirements. Nothing else of the virtualenv or the project: no model weights, tokenizers, data or caches."""
    files, third = interface_modules()
    binds = _interpreter_binds()
    binds += [Bind(str(f), why="the harness interface") for f in files]
    for dist in _distribution_closure(third | set(INTERFACE_PACKAGES)):
        binds += [Bind(str(p), why=f"package {dist.metadata['Name']}")
                  for p in sorted(_site_entries(dist))]
    return tuple(binds)


def render_binds(binds: tuple[Bind, ...] | None = None) -> str:
    """The sandbox's view as a Markdown list with host-independent names (what the README shows)."""
    import sysconfig

    binds = method_binds() if binds is None else binds
    subst = [(str(HARNESS_DIR), "<harness>"), (sysconfig.get_paths()["purelib"], "<site-packages>"),
             (sysconfig.get_paths()["stdlib"], "<stdlib>"), (sys.prefix, "<venv>"), (sys.base_prefix, "<python>")]

    def name(p: str) -> str:
        for host, tag in subst:
            if p == host or p.startswith(host + "/"):
                return tag + p[len(host):]
        return p

    lines = [f"- system folders and files, read-only: {', '.join(f'`{d}`' for d in (*SYSTEM_DIRS, *SYSTEM_FILES))}",
             "- a private, size-capped tmpfs at `/tmp`, a minimal `/dev`, no `/proc` and no `/sys` (a GPU run mounts "
             "both and binds the NVIDIA device nodes)",
             "- the staged copy of the submission's `method.py`, alone in its folder",
             "- the interpreter: the links from `sys.executable` to its binary, the binary, libpython, "
             "`<venv>/pyvenv.cfg`"]
    groups: dict[str, list[str]] = {}
    for b in binds:
        if b.kind == "link" or b.why == "the interpreter" or any(
                b.why.lower().startswith("package " + p) for p in PLATFORM_SPECIFIC):
            continue
        shown = name(b.path)
        if shown.endswith(".dist-info"):
            continue  # the distribution's metadata, bound with it (its version would date the list)
        groups.setdefault(b.why, []).append(f"`{shown}`" + (" (hidden under an empty tmpfs)" if b.kind == "hide"
                                                            else ""))
    packages = [f"{why[len('package '):]} ({', '.join(paths)})" for why, paths in groups.items()
                if why.startswith("package ")]
    for why, paths in groups.items():
        if not why.startswith("package "):
            lines.append(f"- {why}: " + ", ".join(paths))
    lines.append("- the Python packages the interface imports and everything they require (a CUDA build of torch adds "
                 "its nvidia and triton packages): " + "; ".join(packages))
    return "\n".join(lines) + "\n"


# --- the system calls a method may not make ---------------------------------------------------------------------
DENIED_SYSCALLS = ("ptrace", "mount", "umount2", "pivot_root", "keyctl", "add_key", "request_key", "bpf",
                   "userfaultfd", "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register",
                   "unshare", "setns", "process_vm_readv", "process_vm_writev", "kexec_load", "init_module",
                   "finit_module", "open_by_handle_at")


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


@functools.lru_cache(maxsize=1)
def seccomp_program() -> bytes:
    """The compiled (classic BPF) filter bubblewrap installs before the method's first instruction, built by
    libseccomp: ``DENIED_SYSCALLS`` fail with ENOSYS (as if the kernel lacked them: distinct from an ordinary
    permission error, and what libraries already fall back on) and ``socket()`` of any family but AF_UNIX with
    EAFNOSUPPORT; system calls of another ABI (32-bit) kill the process."""
    import ctypes.util
    import errno
    import socket

    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as e:
        raise SandboxError(f"libseccomp is not installed ({e}); the method sandbox needs it (Debian: libseccomp2)") \
            from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp)]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    allow, deny = 0x7FFF0000, 0x00050000  # SCMP_ACT_ALLOW, SCMP_ACT_ERRNO(0)
    ctx = lib.seccomp_init(allow)
    if not ctx:
        raise SandboxError("libseccomp could not create a filter")
    try:
        for call in DENIED_SYSCALLS:
            nr = lib.seccomp_syscall_resolve_name(call.encode())
            if nr < 0:  # not a system call on this architecture
                continue
            if lib.seccomp_rule_add_array(ctx, deny | errno.ENOSYS, nr, 0, None) != 0:
                raise SandboxError(f"libseccomp refused the rule for {call}")
        nr = lib.seccomp_syscall_resolve_name(b"socket")
        cmp = (_ArgCmp * 1)(_ArgCmp(0, 1, socket.AF_UNIX, 0))  # arg 0 (family) SCMP_CMP_NE AF_UNIX
        if lib.seccomp_rule_add_array(ctx, deny | errno.EAFNOSUPPORT, nr, 1, cmp) != 0:
            raise SandboxError("libseccomp refused the socket rule")
        with tempfile.TemporaryFile() as fh:
            if lib.seccomp_export_bpf(ctx, fh.fileno()) != 0:
                raise SandboxError("libseccomp could not export the filter")
            fh.seek(0)
            return fh.read()
    finally:
        lib.seccomp_release(ctx)


def seccomp_fd() -> int:
    """A fresh descriptor holding the compiled filter, for bubblewrap's ``--seccomp`` (it reads it once)."""
    fd = os.memfd_create("rb-seccomp", os.MFD_CLOEXEC)
    os.write(fd, seccomp_program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def method_sandbox_command(argv: list[str], ro: list[Path], env: dict[str, str], limits: MethodLimits,
                           kind: str, file_bytes: int | None = None, devices: list[str] | None = None,
                           seccomp: int | None = None, binds: tuple[Bind, ...] | None = None) -> list[str]:
    """The command line that runs ``argv`` as an untrusted method's process (inherited fds stay open).
    With bubblewrap it shows the system folders, ``binds`` (default: :func:`method_binds`) and ``ro`` (the
    staged method), installs the ``seccomp`` filter read from that descriptor, and mounts no /proc (nothing of
    the host's mounts or processes to read) unless ``devices`` (GPU nodes) are bound in, which the CUDA driver
    needs with /sys. CUDA reserves far more address space than it uses, so the memory limit is then on data
    (RLIMIT_DATA) rather than on address space."""
    memory = f"--data={limits.memory_bytes}" if devices else f"--as={limits.memory_bytes}"
    inner = ["prlimit", f"--nproc={limits.max_procs}", memory, f"--cpu={limits.cpu_s}",
             f"--fsize={file_bytes or limits.file_bytes}", "--core=0", "--", *argv]
    if os.geteuid() == 0 and shutil.which("setpriv"):
        inner = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--no-new-privs", *inner]
    if kind == "bubblewrap":
        binds = method_binds() if binds is None else binds
        cmd = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
               "--die-with-parent", "--new-session", "--dev", "/dev",
               "--size", str(limits.tmpfs_bytes), "--perms", "1777", "--tmpfs", "/tmp", "--clearenv"]
        if devices:
            cmd += ["--proc", "/proc"]

        for sysdir in SYSTEM_DIRS:
            if Path(sysdir).exists():
                cmd += ["--ro-bind", sysdir, sysdir]
        for etc in SYSTEM_FILES:
            if Path(etc).exists():
                cmd += ["--ro-bind", etc, etc]
        seen: set[str] = set()
        paths = [Path(b.path) for b in binds] + list(ro)
        for p in paths:
            dirs = _dirs_for(p)
            for i in range(0, len(dirs), 4):
                if dirs[i + 3] not in seen and not any(dirs[i + 3] == s or dirs[i + 3].startswith(s + "/")
                                                       for s in SYSTEM_DIRS):
                    seen.add(dirs[i + 3])
                    cmd += dirs[i: i + 4]
        for b in binds:
            if b.kind == "ro" and not any(b.path.startswith(s + "/") for s in SYSTEM_DIRS):
                cmd += ["--ro-bind", b.path, b.path]
        for b in binds:
            if b.kind == "link":
                cmd += ["--symlink", b.target, b.path]
            elif b.kind == "hide":
                cmd += ["--tmpfs", b.path, "--remount-ro", b.path]
        for p in ro:
            cmd += ["--ro-bind", str(p), str(p)]
        for dev in devices or []:
            cmd += ["--dev-bind", dev, dev]
        if devices and Path("/sys").exists():  # the CUDA driver reads the PCI topology
            cmd += ["--ro-bind", "/sys", "/sys"]
        for k, v in env.items():
            cmd += ["--setenv", k, v]
        if seccomp is not None:
            cmd += ["--seccomp", str(seccomp)]
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
    if (isinstance(obj, dict) and set(obj) - {"tokens"} == {"progress", "total", "item"}
            and type(obj["progress"]) is int and type(obj["total"]) is int and isinstance(obj["item"], str)
            and type(obj.get("tokens", 0)) is int):  # tokens: the model's so far (harness.evaluate.Heartbeat)
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
               "PYTHONDONTWRITEBYTECODE": "1", **thread_env(int(n)), "TOKENIZERS_PARALLELISM": "false"}
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

