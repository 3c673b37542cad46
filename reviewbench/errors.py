"""User-facing errors: one line naming the file and what is wrong, exit code 2, no traceback."""

from __future__ import annotations

from pathlib import Path


class UserError(Exception):
    """A mistake in the user's input (bad bundle, bad config). The CLI prints it on one line and exits 2."""

    exit_code = 2

    def __init__(self, where: str | Path | None, message: str) -> None:
        self.where = str(where) if where is not None else None
        self.message = " ".join(str(message).split())  # always one line
        super().__init__(self.one_line())

    def one_line(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


class BundleError(UserError):
    """The submission folder cannot be reviewed as it is."""


class ConfigError(UserError):
    """arena.toml or a rubric file is invalid."""
