"""The arena's hidden test split: drawn once from a secret seed and stored, never derivable from code.

``write_test_split`` draws a random seed (``secrets``), generates each task's items with it, gives them opaque
ids (``<task>-t0007``: the seed appears nowhere) and writes ``<task>.jsonl`` plus ``split.json`` (its manifest:
tasks, sizes, model, content hash) into the arena's data folder. The seed is not stored: the items are the
split. Agents' sandboxes never mount that folder, the audit watches it, and only the trusted harness process
reads it.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from harness.io import atomic_write_text, read_json

SPLIT_SCHEMA = "reviewbench.split/1"
MANIFEST = "split.json"


@dataclass(frozen=True)
class SplitManifest:
    board: str
    tasks: list[str]
    items: int
    length: int
    model: str
    content_hash: str
    created_at: str
    schema: str = SPLIT_SCHEMA


def write_test_split(out: Path, board: str, tasks: list[str], items: int, length: int, model: str,
                     seed: int | None = None) -> SplitManifest:
    """Generate and store a test split. ``seed`` is for tests only; arenas let it be drawn."""
    from transformers import AutoTokenizer

    from harness.evaluate import data_hash
    from harness.model import resolve_model_path
    from harness.tasks import GENERATORS, TASK_SEED_OFFSET

    secret = seed if seed is not None else secrets.randbits(62) | (1 << 40)  # far above every public dev seed
    tok = AutoTokenizer.from_pretrained(resolve_model_path(model))

    def n_tokens(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    out.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        if task not in GENERATORS:
            raise ValueError(f"unknown task {task!r} (known: {', '.join(GENERATORS)})")
        base = secret + (TASK_SEED_OFFSET[task] << 24)
        made = [replace(GENERATORS[task](base + i, n_tokens, length), id=f"{task}-t{i:04d}") for i in range(items)]
        atomic_write_text(out / f"{task}.jsonl", "".join(json.dumps(asdict(i)) + "\n" for i in made))
    manifest = SplitManifest(board=board, tasks=list(tasks), items=items, length=length, model=model,
                             content_hash=data_hash(out, tasks),
                             created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    atomic_write_text(out / MANIFEST, json.dumps(asdict(manifest), indent=1) + "\n")
    return manifest


def read_manifest(folder: Path) -> SplitManifest:
    """The split's manifest; ValueError/OSError when it is missing or malformed."""
    from harness.results import build

    data = read_json(folder / MANIFEST, max_bytes=1 << 20)
    if not isinstance(data, dict) or data.get("schema") != SPLIT_SCHEMA:
        raise ValueError(f"{folder / MANIFEST}: not a {SPLIT_SCHEMA} manifest")
    return build(SplitManifest, data)
