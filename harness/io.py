"""Small I/O shared by the sandboxed workers."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_json_atomic(path: str | Path, obj: object) -> None:
    """The parent reads the result only once it is whole: write beside it, then rename."""
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, path)
