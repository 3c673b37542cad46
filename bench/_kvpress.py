"""kvpress's own virtualenv for the comparison scripts (``harness_overhead.py``, ``kvpress_parity.py``,
``gpu_check.py``).

kvpress 0.5.5 (PyPI) needs transformers < 5.3 while the project pins a newer one, so its side of a comparison
runs in ``bench/.venv-kvpress`` (made on first use: torch 2.13.0 from the local wheel, kvpress 0.5.5 and the
transformers it asks for) and talks to the script over pipes. A script that needs kvpress and cannot have it
exits non-zero with one line saying why; ``--ours-only`` is the explicit way to run just the harness's side
(the smoke test does that when the venv is absent, and says so).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KV_VENV = ROOT / "bench" / ".venv-kvpress"
KVPRESS_VERSION = "0.5.5"


def kvpress_python(python: Path | None = None) -> Path | None:
    """The venv's interpreter when kvpress imports there (None otherwise); no install."""
    py = python or KV_VENV / "bin" / "python"
    if not py.exists():
        return None
    ok = subprocess.run([str(py), "-c", "import kvpress"], capture_output=True).returncode == 0
    return py if ok else None


def ensure_kvpress_venv(python: Path | None = None) -> Path:
    """The interpreter of a venv with kvpress, building bench/.venv-kvpress when needed; one line and exit 1
    when it cannot be had (a comparison without its comparator is not a result)."""
    found = kvpress_python(python)
    if found:
        return found
    if python is not None:
        sys.exit(f"error: {python}: kvpress does not import there (pip install kvpress=={KVPRESS_VERSION})")
    py = KV_VENV / "bin" / "python"
    print(f"creating {KV_VENV} (torch 2.13.0 local wheel + kvpress {KVPRESS_VERSION}; transformers < 5.3) ...",
          file=sys.stderr, flush=True)
    pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    steps = [[sys.executable, "-m", "venv", str(KV_VENV)], [*pip, "torch==2.13.0"],
             [*pip, "-c", str(ROOT / "requirements" / "cpu.txt"), f"kvpress=={KVPRESS_VERSION}"]]
    for cmd in steps:
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["no output"])[-1]
            sys.exit(f"error: cannot install kvpress {KVPRESS_VERSION} into {KV_VENV} ({' '.join(cmd[-2:])}): {last}")
    found = kvpress_python()
    if not found:
        sys.exit(f"error: kvpress {KVPRESS_VERSION} installed into {KV_VENV} but does not import")
    return found
