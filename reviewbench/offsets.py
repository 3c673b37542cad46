"""Per-family score offsets from a calibration report: what the tie-break may subtract before comparing two
judges. Read here, below both the judges stage and the calibration report that writes them."""

from __future__ import annotations

from pathlib import Path

from harness.io import read_json
from reviewbench.errors import ConfigError

CALIBRATION_SCHEMA = "reviewbench.calibration/1"


def load_offsets(path: Path) -> dict[str, dict[str, float]]:
    """The family offsets of a calibration report (arena.toml: [panel] calibration = ...)."""
    try:
        data = read_json(path)
    except FileNotFoundError:
        raise ConfigError(path, "calibration report not found ([panel] calibration in arena.toml)") from None
    except (OSError, ValueError) as e:
        raise ConfigError(path, f"not a calibration report: {e}") from None
    if not isinstance(data, dict) or data.get("schema") != CALIBRATION_SCHEMA:
        raise ConfigError(path, f"not a {CALIBRATION_SCHEMA} report")
    try:
        offsets = data["calibration"]["family_offsets"]
        return {str(f): {str(c): float(v) for c, v in by.items()} for f, by in offsets.items()}
    except (KeyError, TypeError, AttributeError, ValueError):
        raise ConfigError(path, "calibration report without valid family_offsets") from None
