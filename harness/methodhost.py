"""The untrusted side of the boundary: one method, alone in its own sandboxed process.

    python -m harness.methodhost CTRL_IN CTRL_OUT RESP

CTRL_IN is a Unix socket: requests arrive on it, and with them (SCM_RIGHTS) each new request region, a sealed
memfd this process can only map copy-on-write.

It imports the submission's ``method.py`` and answers the trusted harness's requests (load, setup,
layer_budgets, select, on_decode, reset) over ``harness.wire``. It owns nothing that measures it: no model,
no cache, no items, no scores, no result file. Whatever it does to itself — patching the harness modules it
imported, disabling signals, writing into its copy of the layer — changes only its own answers, which the
trusted side validates.

It also reports which lines of method.py ran (``LineTrace``): the review reads the code the scored calls
executed, so a branch taken only where a method thinks it is being fingerprinted is seen for what it is.
"""

from __future__ import annotations

import mmap
import os
import socket
import sys
import traceback
from pathlib import Path
from typing import Any

import torch

from harness.api import EvictionMethod, Keep, LayerView, ModelInfo, Rewrite
from harness.wire import DTYPE_NAMES, DTYPES, WireError, aligned, read_frame, recv_fd, tensor_at, write_frame

# where the method computes: the layer arrives in host shared memory and is moved here (a GPU when the trusted
# side runs on one and exposes it to this sandbox: harness.boundary.SandboxedMethod's device)
DEVICE = os.environ.get("REVIEWBENCH_METHOD_DEVICE") or "cpu"


def _one_line(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(tb) if f.filename.endswith("method.py")),
                 None)
    text = " ".join(f"{type(e).__name__}: {e}".split())[:400]
    return f"{text} (at {where})" if where else text


class LineTrace:
    """The lines of one file that ran, for a global ``sys.settrace``: other files' frames are not traced.

    New lines go out with the next answer (``take``), so what the method later does to this object cannot take
    back lines already reported; ``intact`` says whether the trace is still the one installed (a method that
    stops it has its lines read as unknown, and the trusted side says so)."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.seen: set[int] = set()
        self.new: list[int] = []
        self.todo: dict[Any, set[int]] = {}  # per code object of the file: its lines not seen yet
        self.done: set[Any] = set()  # code objects every line of which has run: no need to trace them again

    def __call__(self, frame: Any, event: str, arg: Any) -> Any:  # noqa: ARG002 - the settrace signature
        code = frame.f_code
        if code in self.done or code.co_filename != self.filename:
            return None
        if code not in self.todo:
            # (the line of the def itself never runs as a line of the body)
            self.todo[code] = {n for _, _, n in code.co_lines() if n is not None} - self.seen - {code.co_firstlineno}
        return self.line

    def line(self, frame: Any, event: str, arg: Any) -> Any:  # noqa: ARG002
        if event == "line" and frame.f_lineno not in self.seen:
            n = frame.f_lineno
            self.seen.add(n)
            self.new.append(n)
            todo = self.todo.get(frame.f_code)
            if todo is not None:
                todo.discard(n)
                if not todo:  # every line of this code has run: there is nothing left to learn from it
                    self.done.add(frame.f_code)
                    frame.f_trace_lines = False
        return self.line

    def install(self) -> None:
        import threading

        sys.settrace(self)
        threading.settrace(self)

    def intact(self) -> bool:
        return sys.gettrace() is self

    def take(self) -> list[int]:
        out, self.new = self.new, []
        return out


class Host:
    def __init__(self, ctrl_in: int, ctrl_out: int, resp: int) -> None:
        self.ctrl_in, self.ctrl_out, self.resp_fd = ctrl_in, ctrl_out, resp
        self.sock = socket.socket(fileno=ctrl_in)
        self.req_fd = -1
        self.method: EvictionMethod | None = None
        self.states: dict[int, dict] = {}
        self._req_map: mmap.mmap | None = None
        self._req_size = 0
        self.trace: LineTrace | None = None

    def serve(self) -> None:
        while True:
            try:
                msg = read_frame(self.ctrl_in)
                if msg.get("req_fd") is True:  # a new request region follows the frame
                    self._new_region(recv_fd(self.sock))
            except (WireError, OSError):
                return  # the trusted side closed the socket: done
            try:
                reply = self.handle(msg)
            except BaseException as e:  # noqa: BLE001 - everything the method raises is its answer
                reply = {"ok": False, "error": _one_line(e)}
            if self.trace is not None:
                reply["lines"], reply["traced"] = self.trace.take(), self.trace.intact()
            write_frame(self.ctrl_out, reply)

    def handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        op = msg.get("op")
        if op == "load":
            from harness.loading import load_method, method_file
            from harness.methods import REFERENCE_METHODS

            spec = str(msg["spec"])
            if spec not in REFERENCE_METHODS and self.trace is None:
                self.trace = LineTrace(str(method_file(spec)))
                self.trace.install()
            name, self.method, _ = load_method(spec)
            m = self.method
            return {"ok": True, "name": str(name), "attrs": {
                "query_window": int(getattr(m, "query_window", 0)),
                "question_queries": bool(getattr(m, "question_queries", False)),
                "reconstruction_queries": bool(getattr(m, "reconstruction_queries", False)),
                "keeps_everything": bool(getattr(m, "keeps_everything", False))}}
        method = self.method
        if method is None:
            raise RuntimeError("no method loaded")
        if op == "setup":
            method.setup(ModelInfo(**msg["model"]))
            return {"ok": True}
        if op == "layer_budgets":
            got = method.layer_budgets(int(msg["mean_budget"]), int(msg["n_tokens"]), ModelInfo(**msg["model"]))
            return {"ok": True, "budgets": None if got is None else [int(b) for b in got]}
        if op == "reset":
            self.states.clear()
            return {"ok": True}
        if op == "layers":
            hook = method.on_decode if msg["hook"] == "on_decode" else method.select
            buf = self._request_buffer(int(msg["req_size"]))
            answers = []
            for v, start, cap in zip(msg["views"], msg["answer_offsets"], msg["answer_caps"]):
                answers.append(self.answer(hook(self.view(v, buf)), v, int(start), int(cap)))
            return {"ok": True, "answers": answers}
        raise RuntimeError(f"unknown request {op!r}")

    def _new_region(self, fd: int) -> None:
        if self.req_fd >= 0:
            os.close(self.req_fd)
        self.req_fd, self._req_map, self._req_size = fd, None, 0

    def _request_buffer(self, size: int) -> mmap.mmap:
        if self._req_map is None or size != self._req_size:
            # copy-on-write over a read-only descriptor: writable for torch, invisible to the trusted side
            self._req_map = mmap.mmap(self.req_fd, size, access=mmap.ACCESS_COPY)
            self._req_size = size
        return self._req_map

    def view(self, v: dict[str, Any], buf: mmap.mmap) -> LayerView:
        t = {k: tensor_at(buf, d).to(DEVICE) if d is not None else None for k, d in v["tensors"].items()}
        layer = int(v["layer"])
        return LayerView(layer=layer, keys=t["keys"], values=t["values"], positions=t["positions"],
                         queries=t["queries"], budget=int(v["budget"]), board=v["board"], phase=v["phase"],
                         model=ModelInfo(**v["model"]), valid=t["valid"], query_positions=t["query_positions"],
                         state=self.states.setdefault(layer, {}))

    def answer(self, result: object, v: dict[str, Any], start: int, cap: int) -> dict[str, Any]:
        """Write one layer's answer at ``start`` in the response region (at most ``cap`` bytes)."""
        if isinstance(result, Keep):
            idx = [torch.as_tensor(i).reshape(-1).to(torch.int64).cpu().contiguous() for i in result.indices]
            data = torch.cat(idx) if idx else torch.empty(0, dtype=torch.int64)
            self._write(data.numpy().tobytes(), start, 0, cap)
            return {"kind": "keep", "lengths": [int(i.numel()) for i in idx]}
        if isinstance(result, Rewrite):
            want = DTYPES[v["tensors"]["keys"]["dtype"]]
            ks = [torch.as_tensor(k).to(want).cpu().contiguous() for k in result.keys]
            vs = [torch.as_tensor(x).to(want).cpu().contiguous() for x in result.values]
            ps = [torch.as_tensor(p).reshape(-1).to(torch.int64).cpu().contiguous() for p in result.positions]
            off = 0
            for group in (ks, vs, ps):
                blob = b"".join(_raw(x) for x in group)
                self._write(blob, start, off, cap)
                off = aligned(off + len(blob))
            return {"kind": "rewrite", "lengths": [int(k.shape[0]) if k.dim() else 0 for k in ks],
                    "dims": [int(k.shape[1]) if k.dim() == 2 else -1 for k in ks], "dtype": DTYPE_NAMES[want]}
        raise TypeError(f"layer {v['layer']}: select returned {type(result).__name__}, expected Keep or Rewrite")

    def _write(self, blob: bytes, start: int, off: int, cap: int) -> None:
        if off + len(blob) > cap:
            raise ValueError(f"the answer needs {off + len(blob)} bytes, more than the {cap} allowed")
        os.pwrite(self.resp_fd, blob, start + off)


def _raw(x: torch.Tensor) -> bytes:
    if x.dtype == torch.bfloat16:
        return x.view(torch.int16).numpy().tobytes()
    return x.numpy().tobytes()


def main(argv: list[str] | None = None) -> int:
    args = [int(a) for a in (argv if argv is not None else sys.argv[1:])]
    threads = int(os.environ.get("OMP_NUM_THREADS", "1"))
    torch.set_num_threads(max(1, threads))
    sys.stdout = sys.stderr  # a method's prints never reach a pipe the harness reads
    Host(*args).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
