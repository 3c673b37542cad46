"""The wire between the trusted harness and an untrusted method's process.

Control messages are length-prefixed JSON frames on a socket (never pickle: the trusted side must not unpickle
what an untrusted process wrote). Tensors travel through shared memory: the trusted side writes a layer's
tensors into a :class:`SealedRegion` (a memfd sealed against shrinking, growing and any new writer: the method's
process can map it copy-on-write and nothing else, even when it reopens it read-write through /proc; a region
that must grow is replaced by a new one, handed over on the control socket), and the method writes its answer
into a response region that the trusted side reads back with bounded ``pread`` calls (never mapped: a truncated
region cannot crash the trusted process) and validates before use.
"""

from __future__ import annotations

import fcntl
import json
import mmap
import os
import select
import socket
import time
from typing import Any

import torch

MAX_FRAME = 1 << 20  # the largest control message either side accepts
ALIGN = 64

DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
                                  "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


class WireError(Exception):
    """The peer broke the protocol: closed the pipe, sent an oversized or malformed frame, or took too long."""


class WireTimeout(WireError):
    pass


# Linux >= 5.1: no new writer (write(), shared writable mmap) after the seal; the sealer's own mapping stays writable
F_SEAL_FUTURE_WRITE = getattr(fcntl, "F_SEAL_FUTURE_WRITE", 0x0010)
REQUEST_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | F_SEAL_FUTURE_WRITE | fcntl.F_SEAL_SEAL


class SealedRegion:
    """Shared memory only the trusted side can write: a memfd of fixed size, mapped shared and writable here
    once, then sealed (no shrink, no grow, no future writer, no seal changes). A method that reopens its
    descriptor read-write cannot truncate it (the trusted side's copy would die of SIGBUS), write to it or map
    it shared-writable; it can only read it or map it copy-on-write."""

    def __init__(self, size: int, name: str = "rb-request") -> None:
        self.size = max(int(size), ALIGN)
        self.fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            os.ftruncate(self.fd, self.size)
            self.map: mmap.mmap | None = mmap.mmap(self.fd, self.size)
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, REQUEST_SEALS)
        except BaseException:
            os.close(self.fd)
            raise

    def seals(self) -> int:
        return fcntl.fcntl(self.fd, fcntl.F_GET_SEALS)

    def reader_fd(self) -> int:
        """A new read-only descriptor of the region, for the method's process (the caller closes it)."""
        return os.open(f"/proc/self/fd/{self.fd}", os.O_RDONLY | os.O_CLOEXEC)

    def close(self) -> None:
        if self.map is not None:
            try:
                self.map.close()
            except BufferError:  # a tensor view still holds it; the memory goes with the last reference
                pass
            self.map = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def send_fd(sock: socket.socket, fd: int) -> None:
    """One descriptor over a Unix socket (SCM_RIGHTS), after the frame that announced it."""
    socket.send_fds(sock, [b"F"], [fd])


def recv_fd(sock: socket.socket) -> int:
    data, fds, _, _ = socket.recv_fds(sock, 1, 4)
    for extra in fds[1:]:
        os.close(extra)
    if data != b"F" or not fds:
        raise WireError("expected a descriptor on the control socket")
    return fds[0]


def aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def nbytes(shape: list[int] | tuple[int, ...], dtype: torch.dtype) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n * torch.empty((), dtype=dtype).element_size()


def write_frame(fd: int, obj: dict[str, Any]) -> None:
    body = json.dumps(obj, separators=(",", ":")).encode()
    if len(body) > MAX_FRAME:
        raise WireError(f"frame of {len(body)} bytes exceeds {MAX_FRAME}")
    data = len(body).to_bytes(4, "big") + body
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    got = 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WireTimeout("no answer within the time limit")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise WireTimeout("no answer within the time limit")
        chunk = os.read(fd, min(n - got, 1 << 16))
        if not chunk:
            raise WireError("the peer closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, timeout: float | None = None) -> dict[str, Any]:
    """One frame; the size is checked before anything is allocated for it."""
    deadline = None if timeout is None else time.monotonic() + timeout
    size = int.from_bytes(_read_exact(fd, 4, deadline), "big")
    if size > MAX_FRAME:
        raise WireError(f"frame of {size} bytes exceeds {MAX_FRAME}")
    try:
        obj = json.loads(_read_exact(fd, size, deadline))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise WireError(f"malformed frame: {e}") from None
    if not isinstance(obj, dict):
        raise WireError("a frame must be a JSON object")
    return obj


def tensor_at(buf: Any, desc: dict[str, Any]) -> torch.Tensor:
    """A view of the tensor described by ``desc`` ({off, shape, dtype}) in a mapped buffer."""
    dtype = DTYPES[desc["dtype"]]
    shape = [int(s) for s in desc["shape"]]
    count = 1
    for s in shape:
        count *= s
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(buf, dtype=dtype, count=count, offset=int(desc["off"])).view(shape)
