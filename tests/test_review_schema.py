"""The review.json schema has no open object (the README's promise): every object either lists its properties or
is a map whose values are themselves typed; none accepts arbitrary content (``additionalProperties: true``, an
empty value schema, or a bare ``{"type": "object"}``). Model names in the schema are unique, so no two classes
share a name (pydantic would otherwise qualify them with their module paths)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from reviewbench.report import review_json_schema
from tests.conftest import ROOT


def _objects(node: Any, path: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        if node.get("type") == "object" or "properties" in node or "additionalProperties" in node:
            yield path, node
        for k, v in node.items():
            yield from _objects(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _objects(v, f"{path}/{i}")


def _open(obj: dict[str, Any]) -> str | None:
    extra = obj.get("additionalProperties")
    if extra is True:
        return "additionalProperties: true"
    if isinstance(extra, dict) and not extra:
        return "additionalProperties: {} (any value)"
    if extra is not None and extra is not False and not isinstance(extra, dict):
        return f"additionalProperties: {extra!r}"
    if extra is None and "properties" not in obj:
        return "an object with neither properties nor a typed map"
    return None


def _schemas() -> list[tuple[str, dict[str, Any]]]:
    committed = json.loads((ROOT / "reviewbench" / "schemas" / "review.schema.json").read_text())
    return [("generated", review_json_schema()), ("committed", committed)]


def test_review_schema_has_no_open_object():
    for which, schema in _schemas():
        found = [f"{path}: {why}" for path, obj in _objects(schema) if (why := _open(obj))]
        assert not found, f"{which} review schema has open objects:\n" + "\n".join(found)


def test_the_open_object_check_sees_one():
    assert _open({"type": "object", "additionalProperties": True})
    assert _open({"type": "object", "additionalProperties": {}})
    assert _open({"type": "object"})
    assert _open({"type": "object", "additionalProperties": {"type": "number"}}) is None
    assert _open({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}) is None


def test_review_schema_model_names_are_unique():
    for which, schema in _schemas():
        qualified = [name for name in schema.get("$defs", {}) if "__" in name]
        assert not qualified, f"{which}: two models share a name, pydantic qualified them: {qualified}"
