"""The trust boundary: how the trusted harness calls a method without sharing a process with it.

:class:`SandboxedMethod` starts ``harness.methodhost`` in its own sandbox (bubblewrap: no network, no model,
no items, no results; only Python, the harness's interface code and a staged copy of ``method.py``), hands it
each layer's tensors through shared memory and takes back only Keep/Rewrite, checked here before the caller
applies it. Every limit is enforced from this side: a per-call watchdog that does not depend on the method's
output (a hung method is killed, not waited for), CPU time, memory, processes and file size set by the kernel
before the method's first instruction, and bounded reads of everything it sends. The CPU time it spends is
read from the kernel (``/proc``), not reported by it.

:class:`InProcessMethod` runs a trusted reference method in this process (fingerprints, unit tests).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol

import torch

from harness.api import EvictionMethod, Keep, LayerView, ModelInfo, Rewrite
from harness.loading import code_hash, is_reference, load_method, method_file
from harness.results import MethodLimits
from harness.wire import (DTYPE_NAMES, DTYPES, SealedRegion, WireError, WireTimeout, aligned, nbytes, read_frame,
                          send_fd, write_frame)

MAX_QUERY_WINDOW = 1 << 20
MAX_NAME = 80


class MethodError(Exception):
    """The method crashed, hung, overspent its budget or returned something malformed."""


class MethodTimeout(MethodError):
    pass


@dataclass(frozen=True)
class MethodAttrs:
    """What a method declares about itself (class attributes), as checked on the trusted side."""

    query_window: int = 0
    question_queries: bool = False
    reconstruction_queries: bool = False
    keeps_everything: bool = False


class MethodHandle(Protocol):
    name: str
    attrs: MethodAttrs
    code_hash: str
    isolation: str

    def setup(self, model: ModelInfo) -> None: ...
    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None: ...
    def select(self, view: LayerView) -> Keep | Rewrite: ...
    def on_decode(self, view: LayerView) -> Keep | Rewrite: ...
    def call_layers(self, op: str, views: list[LayerView]) -> list[Keep | Rewrite]: ...
    def reset(self) -> None: ...
    def cpu_seconds(self) -> float: ...
    def executed_lines(self) -> list[int] | None: ...
    def close(self) -> None: ...


MAX_LINES = 200_000  # the most lines a method.py's trace may report (a file is capped far below)
MAX_TEXT = 400  # the most of a method's own text (its error, its stderr) that enters a result
REDACTED = "[redacted]"
MIN_SHARED = 12  # a run of this many characters shared with the current item's text is taken from it


def _one_line(text: object, limit: int = MAX_TEXT) -> str:
    """A method's text as data: one line of printable characters (controls, bidi overrides and other
    non-printables become '?'), at most ``limit`` characters (cut with an ellipsis)."""
    flat = " ".join(str(text).split())
    clean = "".join(c if c.isprintable() else "?" for c in flat)
    return clean if len(clean) <= limit else clean[: max(0, limit - 1)] + "…"


_PROTECTED: list[str] = []  # the texts of the items this process runs: no method's text may carry them out


def protect(texts: Iterable[str]) -> None:
    """Registers item texts (contexts, questions, answers) that every later error a sandboxed method causes in
    this process is redacted against (:func:`redact`). The trusted worker calls it with the items it loads."""
    _PROTECTED.extend(t for t in texts if isinstance(t, str) and t.strip())


def item_texts(items: Iterable[Any]) -> list[str]:
    """What :func:`protect` needs of ``harness.tasks.Item`` objects: contexts, questions and answers."""
    out: list[str] = []
    for it in items:
        out.append(str(getattr(it, "context", "")))
        for q in getattr(it, "questions", []) or []:
            out += [str(getattr(q, "text", "")), *map(str, getattr(q, "answers", []) or [])]
    return out


def redact(text: str, secrets: Iterable[str], min_shared: int = MIN_SHARED) -> str:
    """``text`` without what it shares with ``secrets`` (the current item's context, questions and answers):
    every run of ``min_shared`` or more characters that also occurs in a secret (case and whitespace
    ignored), and every whole secret shorter than that (an answer, a needle) wherever it occurs, become
    ``[redacted]``. A method never sees an item's text, but what it reports must not carry any of it out
    should it find a way to reconstruct it."""
    secrets = [" ".join(t.split()).lower() for t in secrets if t and t.strip()]
    if not text or not secrets:
        return text
    low = text.lower()
    hit = [False] * len(text)
    for i in range(len(low) - min_shared + 1):
        window = low[i: i + min_shared]
        if window.strip() and any(window in sec for sec in secrets):
            hit[i: i + min_shared] = [True] * min_shared
    for sec in (t for t in secrets if len(t) < min_shared and len(t) >= 3):
        start = low.find(sec)
        while start >= 0:
            hit[start: start + len(sec)] = [True] * len(sec)
            start = low.find(sec, start + 1)
    out, i = [], 0
    while i < len(text):
        if hit[i]:
            while i < len(text) and hit[i]:
                i += 1
            out.append(REDACTED)
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


# --- trusted reference methods, in process ---------------------------------------------------------------------
def _alarm(signum, frame):  # noqa: ARG001
    raise MethodTimeout("method call exceeded its time limit")


def guarded_call(fn: Callable, timeout_s: float, *args: Any) -> Any:
    """A trusted method's hook under a time limit (an alarm: fine for code we wrote, not for a submission)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        return fn(*args)
    except MethodError:
        raise
    except Exception as e:
        raise MethodError(_one_line(f"{type(e).__name__}: {e}")) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class InProcessMethod:
    """A method object called directly. Only for trusted code: reference methods and tests."""

    isolation = "in-process"

    def __init__(self, method: EvictionMethod, name: str | None = None, timeout_s: float = 60.0,
                 digest: str = "") -> None:
        self.method = method
        self.name: str = name or str(getattr(method, "name", "unnamed"))
        self.code_hash = digest
        self.timeout_s = timeout_s
        self.attrs = MethodAttrs(query_window=int(getattr(method, "query_window", 0)),
                                 question_queries=bool(getattr(method, "question_queries", False)),
                                 reconstruction_queries=bool(getattr(method, "reconstruction_queries", False)),
                                 keeps_everything=bool(getattr(method, "keeps_everything", False)))
        self.states: dict[int, dict] = {}
        self._cpu = 0.0

    def _timed(self, fn: Callable, *args: Any) -> Any:
        t0 = time.process_time()
        try:
            return guarded_call(fn, self.timeout_s, *args)
        finally:
            self._cpu += time.process_time() - t0

    def setup(self, model: ModelInfo) -> None:
        self._timed(self.method.setup, model)

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        got = self._timed(self.method.layer_budgets, mean_budget, n_tokens, model)
        return None if got is None else [int(b) for b in got]

    def _with_state(self, view: LayerView) -> LayerView:
        from dataclasses import replace

        return replace(view, state=self.states.setdefault(view.layer, {}))

    def select(self, view: LayerView) -> Keep | Rewrite:
        return self._timed(self.method.select, self._with_state(view))

    def on_decode(self, view: LayerView) -> Keep | Rewrite:
        return self._timed(self.method.on_decode, self._with_state(view))

    def call_layers(self, op: str, views: list[LayerView]) -> list[Keep | Rewrite]:
        hook = self.on_decode if op == "on_decode" else self.select
        return [hook(v) for v in views]

    def reset(self) -> None:
        self.states.clear()

    def cpu_seconds(self) -> float:
        return self._cpu

    def executed_lines(self) -> list[int] | None:
        return None  # a trusted reference: its code is read whole

    def close(self) -> None:
        pass


# --- untrusted methods, in their own sandboxed process ---------------------------------------------------------
def proc_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of a process and all its descendants, read from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    stack, seen = [pid], set()
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
            for task in Path(f"/proc/{p}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


def stage_method(spec: str) -> Path:
    """A copy of the submission's method.py in a fresh world-readable folder of its own: the sandbox mounts
    that copy, never the bundle (its other files) or a folder only its owner can read."""
    src = method_file(spec)
    root = Path(tempfile.mkdtemp(prefix="rb-method-"))
    os.chmod(root, 0o755)
    folder = root / (src.parent.name or "method")
    folder.mkdir(mode=0o755)
    shutil.copyfile(src, folder / "method.py")
    os.chmod(folder / "method.py", 0o644)
    return folder


class _StderrTail:
    """Drains a pipe in fixed-size reads, keeping only the last bytes: a flood costs nothing but CPU."""

    def __init__(self, stream: Any, keep: int) -> None:
        self.buf: deque[bytes] = deque()
        self.size = 0
        self.keep = keep
        self.thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self.thread.start()

    def _run(self, stream: Any) -> None:
        while True:
            chunk = stream.read1(1 << 15) if hasattr(stream, "read1") else stream.read(1 << 15)
            if not chunk:
                return
            self.buf.append(chunk)
            self.size += len(chunk)
            while self.size > self.keep and self.buf:
                self.size -= len(self.buf.popleft())

    def last_line(self) -> str:
        text = b"".join(self.buf).decode("utf-8", "replace")
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return _one_line(lines[-1], 300) if lines else ""


class SandboxedMethod:
    """An untrusted method in its own sandboxed process, called over ``harness.wire``."""

    def __init__(self, spec: str, limits: MethodLimits = MethodLimits(), kind: str | None = None,
                 max_answer_bytes: int = 256 * 1024**2, device: str | None = None) -> None:
        from harness.sandbox import (HARNESS_DIR, gpu_devices, method_sandbox_command, sandbox_kind, seccomp_fd,
                                     thread_env)

        self.spec = spec
        self.limits = limits
        self.isolation = kind or sandbox_kind()
        self.code_hash = code_hash(spec)
        self.staged: Path | None = None if is_reference(spec) else stage_method(spec)
        self._dead: str | None = None
        self._lines: set[int] = set()  # the lines of method.py its process reported running (LineTrace)
        self._traced = True
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock = parent_sock
        self._to_child = parent_sock.fileno()
        self._from_child, c_out_w = os.pipe()
        c_in = child_sock.fileno()
        # the answer region is written by the method and only ever read here with bounded pread (never mapped)
        self._resp = os.memfd_create("rb-answer", os.MFD_CLOEXEC)
        self._region: SealedRegion | None = None  # the request region: sealed, replaced (not resized) to grow
        child_fds = (c_in, c_out_w, self._resp)
        argv = [sys.executable, "-m", "harness.methodhost", *map(str, child_fds)]
        ro = [self.staged] if self.staged else []  # the rest of the view: harness.sandbox.method_binds()
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": str(HARNESS_DIR.parent),
               "PYTHONDONTWRITEBYTECODE": "1", **thread_env(limits.threads), "TOKENIZERS_PARALLELISM": "false",
               "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               # torch reads the CPU's vector extensions from /proc and /sys, which the sandbox does not mount:
               # told here what this process found, it keeps its AVX2/AVX-512 kernels (2x slower without)
               "ATEN_CPU_CAPABILITY": torch.backends.cpu.get_cpu_capability().lower()}
        # a GPU run hands the method its layers in host shared memory; its process moves them to its own GPU
        self.device = device or os.environ.get("REVIEWBENCH_METHOD_DEVICE") or "cpu"
        devices = gpu_devices() if self.device.startswith("cuda") else []
        if devices:
            env["REVIEWBENCH_METHOD_DEVICE"] = self.device
            for key in ("CUDA_VISIBLE_DEVICES",):
                if os.environ.get(key):
                    env[key] = os.environ[key]
        bpf = seccomp_fd() if self.isolation == "bubblewrap" else None
        cmd = method_sandbox_command(argv, ro, env, limits, self.isolation,
                                     file_bytes=max(limits.file_bytes, max_answer_bytes), devices=devices, seccomp=bpf)
        try:
            self.proc = subprocess.Popen(cmd, pass_fds=(*child_fds, *([bpf] if bpf is not None else [])),
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         start_new_session=True)
        finally:
            child_sock.close()
            os.close(c_out_w)
            if bpf is not None:
                os.close(bpf)
        assert self.proc.stderr is not None
        self._stderr = _StderrTail(self.proc.stderr, limits.stderr_bytes)
        self._max_answer = max_answer_bytes
        try:
            self._load(spec)
        except BaseException:
            self.close()
            raise

    def _load(self, spec: str) -> None:
        reply = self._call({"op": "load", "spec": str(self.staged) if self.staged else spec},
                           self.limits.start_timeout_s)
        name, attrs = reply.get("name"), reply.get("attrs")
        if not isinstance(name, str) or not isinstance(attrs, dict):
            raise MethodError("the method's process answered the load request malformed")
        self.name = _one_line(name, MAX_NAME) or "unnamed"
        qw = attrs.get("query_window")
        if not isinstance(qw, int) or isinstance(qw, bool) or qw < 0:
            raise MethodError(f"query_window must be a non-negative integer, got {_one_line(repr(qw), 40)}")
        # a window longer than any context means every query (the harness's own H2O once asked for 1 << 30)
        self.attrs = MethodAttrs(query_window=min(qw, MAX_QUERY_WINDOW),
                                 question_queries=attrs.get("question_queries") is True,
                                 reconstruction_queries=attrs.get("reconstruction_queries") is True,
                                 keeps_everything=attrs.get("keeps_everything") is True)

    # --- plumbing --------------------------------------------------------------------------------------------
    def _kill(self, why: str) -> None:
        if self._dead is None:
            self._dead = why
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def _call(self, msg: dict[str, Any], timeout: float, fd: int | None = None) -> dict[str, Any]:
        """One request and its answer. Every error, as it leaves the boundary, is one clean line redacted
        against the items this process protects (the method's own words and its stderr among it)."""
        try:
            return self._exchange(msg, timeout, fd)
        except MethodError as e:
            text = redact(_one_line(str(e)), _PROTECTED)
            raise (MethodTimeout if isinstance(e, MethodTimeout) else MethodError)(text) from None

    def _exchange(self, msg: dict[str, Any], timeout: float, fd: int | None = None) -> dict[str, Any]:
        if self._dead is not None:
            raise MethodError(f"the method's process was stopped earlier: {self._dead}")
        what = str(msg.get("hook") or msg["op"])
        try:
            write_frame(self._to_child, {**msg, "req_fd": True} if fd is not None else msg)
            if fd is not None:
                send_fd(self._sock, fd)
            reply = read_frame(self._from_child, timeout)
        except WireTimeout:
            self._kill(f"no answer to {what} within {timeout:g} s")
            raise MethodTimeout(f"the method did not answer {what} within {timeout:g} s and was stopped") from None
        except (WireError, OSError) as e:
            self._kill(str(e))
            code = self.proc.returncode
            how = (f"killed by signal {-code}" if code is not None and code < 0 else
                   f"exited with status {code}" if code is not None else "stopped")
            tail = self._stderr.last_line()
            raise MethodError(_one_line(f"the method's process {how} during {what}"
                                        + (f": {tail}" if tail else f" ({_one_line(str(e), 100)})"))) from None
        self._note_lines(reply)
        if reply.get("ok") is not True:
            raise MethodError(_one_line(str(reply.get("error", "the method failed without saying why"))))
        return reply

    def _note_lines(self, reply: dict[str, Any]) -> None:
        """Keep the lines the answer says ran; an answer without its trace, or with the trace replaced, makes the
        whole record unknown (the method host sends both with every answer once the method is loaded)."""
        if self.staged is None:
            return
        lines = reply.get("lines")
        if reply.get("traced") is not True or not isinstance(lines, list) or len(lines) > MAX_LINES:
            self._traced = False
            return
        self._lines.update(n for n in lines if type(n) is int and 0 < n <= MAX_LINES)

    def executed_lines(self) -> list[int] | None:
        """The lines of method.py that ran on this process's calls, or None where the trace was lost (the method
        stopped or replaced it, or an answer came without it)."""
        return sorted(self._lines) if self._traced and self.staged is not None else None

    def _request_region(self, size: int) -> tuple[SealedRegion, bool]:
        """The sealed request region, replaced by a larger one (at least double) when ``size`` does not fit;
        True when it is new (the method's process must be handed its descriptor)."""
        if self._region is not None and size <= self._region.size:
            return self._region, False
        old = self._region
        self._region = SealedRegion(max(size, 2 * old.size if old else 0))
        if old is not None:
            old.close()
        return self._region, True

    # --- the interface ---------------------------------------------------------------------------------------
    def setup(self, model: ModelInfo) -> None:
        self._call({"op": "setup", "model": _model_dict(model)}, self.limits.call_timeout_s)

    def layer_budgets(self, mean_budget: int, n_tokens: int, model: ModelInfo) -> list[int] | None:
        reply = self._call({"op": "layer_budgets", "mean_budget": mean_budget, "n_tokens": n_tokens,
                            "model": _model_dict(model)}, self.limits.call_timeout_s)
        got = reply.get("budgets")
        if got is None:
            return None
        if not isinstance(got, list) or len(got) > 100_000 or not all(
                isinstance(b, int) and not isinstance(b, bool) for b in got):
            raise MethodError("layer_budgets must return a list of integers or None")
        return got

    def reset(self) -> None:
        self._call({"op": "reset"}, self.limits.call_timeout_s)

    def select(self, view: LayerView) -> Keep | Rewrite:
        return self.call_layers("select", [view])[0]

    def on_decode(self, view: LayerView) -> Keep | Rewrite:
        return self.call_layers("on_decode", [view])[0]

    def call_layers(self, op: str, views: list[LayerView]) -> list[Keep | Rewrite]:
        """Several layers in one round trip (their tensors side by side in the request region): board C asks
        every over-cap layer before each decoded token, and a wake-up per layer would dominate."""
        descs: list[dict[str, Any]] = []
        placed: list[tuple[torch.Tensor, int]] = []
        off = 0
        caps: list[int] = []
        for view in views:
            tensors = {"keys": view.keys, "values": view.values, "positions": view.positions, "valid": view.valid,
                       "queries": view.queries, "query_positions": view.query_positions}
            d: dict[str, dict[str, Any] | None] = {}
            for k, t in tensors.items():
                if t is None:
                    d[k] = None
                    continue
                d[k] = {"off": off, "shape": list(t.shape), "dtype": DTYPE_NAMES[t.dtype]}
                placed.append((t, off))
                off = aligned(off + nbytes(t.shape, t.dtype))
            h, n, dim = view.keys.shape
            caps.append(aligned(3 * ALIGN_MIN + h * n * (2 * dim * view.keys.element_size() + 8)))
            descs.append({"layer": view.layer, "budget": view.budget, "board": view.board, "phase": view.phase,
                          "model": _model_dict(view.model), "tensors": d})
        region, fresh = self._request_region(max(off, ALIGN_MIN))
        buf = region.map
        assert buf is not None
        for t, o in placed:
            if t.numel():
                dst = torch.frombuffer(buf, dtype=t.dtype, count=t.numel(), offset=o).view(t.shape)
                dst.copy_(t.detach().cpu())
        answer_cap = sum(caps)
        if answer_cap > self._max_answer:
            raise MethodError(f"the answer region would need {answer_cap} bytes, over the {self._max_answer} allowed")
        os.ftruncate(self._resp, answer_cap)
        starts = [sum(caps[:i]) for i in range(len(caps))]
        reader = region.reader_fd() if fresh else None
        try:
            reply = self._call({"op": "layers", "hook": op, "req_size": region.size, "views": descs,
                                "answer_offsets": starts, "answer_caps": caps}, self.limits.call_timeout_s, reader)
        finally:
            if reader is not None:
                os.close(reader)
        answers = reply.get("answers")
        if not isinstance(answers, list) or len(answers) != len(views):
            raise MethodError(f"the method's process answered {len(answers) if isinstance(answers, list) else 'no'} "
                              f"of {len(views)} layers")
        return [self._parse(view, a, start) for view, a, start in zip(views, answers, starts)]

    def _parse(self, view: LayerView, answer: Any, base: int) -> Keep | Rewrite:
        if not isinstance(answer, dict):
            raise MethodError(f"layer {view.layer}: malformed answer")
        h, n, dim = view.keys.shape
        esize = view.keys.element_size()
        kind, lengths = answer.get("kind"), answer.get("lengths")
        if not isinstance(lengths, list) or len(lengths) != h or not all(
                isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= n for x in lengths):
            raise MethodError(f"layer {view.layer}: the answer must give 0..{n} entries for each of {h} KV heads")
        if kind == "keep":
            data = self._read(base, 8 * sum(lengths))
            flat = torch.frombuffer(bytearray(data), dtype=torch.int64) if data else torch.empty(0, dtype=torch.int64)
            return Keep(tuple(flat.split(lengths)))
        if kind == "rewrite":
            if answer.get("dtype") != DTYPE_NAMES[view.keys.dtype] or answer.get("dims") != [dim] * h:
                raise MethodError(f"layer {view.layer}: Rewrite tensors must be (T', {dim}) of the cache's dtype")
            total = sum(lengths)
            kv_bytes = total * dim * esize
            keys = self._tensor(base, kv_bytes, view.keys.dtype, (total, dim))
            values = self._tensor(base + aligned(kv_bytes), kv_bytes, view.keys.dtype, (total, dim))
            pos = self._tensor(base + aligned(aligned(kv_bytes) + kv_bytes), 8 * total, torch.int64, (total,))
            return Rewrite(tuple(keys.split(lengths)), tuple(values.split(lengths)), tuple(pos.split(lengths)))
        raise MethodError(f"layer {view.layer}: unknown answer kind {_one_line(repr(kind), 40)}")

    def _read(self, off: int, size: int) -> bytes:
        data = os.pread(self._resp, size, off) if size else b""
        if len(data) != size:
            raise MethodError("the method's answer is shorter than it declared")
        return data

    def _tensor(self, off: int, size: int, dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
        if not size:
            return torch.empty(shape, dtype=dtype)
        raw = bytearray(self._read(off, size))
        if dtype == torch.bfloat16:
            return torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16).view(shape)
        return torch.frombuffer(raw, dtype=dtype).view(shape)

    def cpu_seconds(self) -> float:
        return proc_cpu_seconds(self.proc.pid)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self._sock.close()  # end of requests: the host returns
                self._to_child = -1
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill("closed")
        self._sock.close()
        for fd in (self._from_child, self._resp):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._to_child = self._from_child = self._resp = -1
        if self._region is not None:
            self._region.close()
            self._region = None
        if self.staged is not None:
            shutil.rmtree(self.staged.parent, ignore_errors=True)
            self.staged = None

    def __enter__(self) -> "SandboxedMethod":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


ALIGN_MIN = 64


def _model_dict(model: ModelInfo) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(model)


def open_method(spec: str, limits: MethodLimits = MethodLimits(), isolate: bool = True,
                kind: str | None = None) -> MethodHandle:
    """A handle on a method. Anything that is not a reference method is always isolated."""
    if isolate or not is_reference(spec):
        return SandboxedMethod(spec, limits, kind)
    name, method, digest = load_method(spec)
    return InProcessMethod(method, name, limits.call_timeout_s, digest)


__all__ = ["DTYPES", "InProcessMethod", "MethodAttrs", "MethodError", "MethodHandle", "MethodTimeout",
           "SandboxedMethod", "guarded_call", "open_method", "proc_cpu_seconds", "redact"]
