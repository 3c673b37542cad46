"""The wire between the trusted harness and an untrusted method's process.

Control messages are length-prefixed JSON frames on a pipe (never pickle: the trusted side must not unpickle
what an untrusted process wrote). Tensors travel through shared memory: the trusted side writes a layer's
tensors into a request region the method's process maps copy-on-write from a read-only descriptor (it can
neither resize nor change what the trusted side holds), and the method writes its answer into a response
region that the trusted side reads back with bounded ``pread`` calls (never mapped: a truncated region
cannot crash the trusted process) and validates before use.
"""

from __future__ import annotations

import json
import os
import select
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
