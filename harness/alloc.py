"""Freed memory goes back to the system: the process allocator's setting for a process that runs the model.

glibc's malloc serves a large block from its own mapping (given back on free) only above a threshold that
rises with every large block freed, up to 32 MiB. After the first prefill frees its activations, every
buffer under that size (each KV head's keys and values, a chunk's activations) comes from the heap, where
freed blocks stay resident and fragment: a second prompt prefilled in the same process (the next item, or
the same one again) sat on the first one's freed memory (issue 26: at 4,138 tokens, at the second prefill's
peak the heap held 163 MiB freed beside 448 MiB in use, and 352 MiB freed-but-resident after it; the sweep
measured peak / (model + KV) 1.45 at 4K and 1.57 at 8K). A fixed threshold of 1 MiB keeps every large tensor
in a mapping of its own, so what is freed leaves the resident set at once and the peak is what is in use.
Tensors are 64-byte aligned either way: the numbers computed do not change, only where the bytes live.

``REVIEWBENCH_MMAP_THRESHOLD`` (bytes) overrides the threshold; 0 leaves glibc's default. Elsewhere than
glibc (macOS, musl) nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

MMAP_THRESHOLD = 1 << 20  # bytes: a block this large or larger gets a mapping of its own
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
_applied: int | None = None


def libc() -> ctypes.CDLL | None:
    """glibc, or None (another C library: the setting does not apply)."""
    name = ctypes.util.find_library("c")
    try:
        lib = ctypes.CDLL(name or "libc.so.6")
    except OSError:
        return None
    return lib if hasattr(lib, "mallopt") and hasattr(lib, "gnu_get_libc_version") else None


def return_freed_memory() -> int:
    """Set the allocator's fixed mmap threshold once per process (see the module's docstring). Returns the
    threshold in force (0: left as it was)."""
    global _applied
    if _applied is not None:
        return _applied
    want = int(os.environ.get("REVIEWBENCH_MMAP_THRESHOLD", MMAP_THRESHOLD))
    lib = libc() if want > 0 else None
    _applied = want if lib is not None and lib.mallopt(_M_MMAP_THRESHOLD, ctypes.c_int(want)) == 1 else 0
    return _applied

