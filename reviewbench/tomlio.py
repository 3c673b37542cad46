"""TOML reading with errors that name the file, and pydantic validation errors turned into one line."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from reviewbench.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


MAX_TOML_BYTES = 4 * 1024**2


def read_toml(path: Path) -> dict:
    """A TOML file; every failure (missing, too big, not UTF-8, invalid, absurdly nested) is one line naming it."""
    try:
        size = path.stat().st_size
        if size > MAX_TOML_BYTES:
            raise ConfigError(path, f"{size} bytes, over the {MAX_TOML_BYTES}-byte limit for a configuration file")
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(path, "file not found") from None
    except IsADirectoryError:
        raise ConfigError(path, "is a folder, not a file") from None
    except RecursionError:
        raise ConfigError(path, "nested too deeply to be a configuration file") from None
    except UnicodeDecodeError as e:
        raise ConfigError(path, f"not valid UTF-8 (byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(path, f"invalid TOML: {e}") from None


def describe_validation_error(err: ValidationError) -> str:
    """The first problem, as 'key.path: message' (unknown keys say 'unknown key')."""
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
    if first["type"] == "extra_forbidden":
        return f"unknown key '{loc}'"
    return f"{loc}: {first['msg']}"


def validate_file(model: type[M], data: dict, path: Path) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise ConfigError(path, describe_validation_error(e)) from None
