"""A finding: one observation of a stage, with where it stands. Shared by every stage."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Severity = Literal["error", "warning", "info"]


class Finding(BaseModel):
    """``code`` is stable (tests and tools match on it); ``message`` is for people; ``location`` is file:line."""

    model_config = ConfigDict(frozen=True)

    code: str
    severity: Severity
    message: str
    location: str | None = None
