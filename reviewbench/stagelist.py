"""The review's stages by name, in the order data flows (torch-free and import-free: the CLI's option checks and
--help read it without loading the stages)."""

STAGE_NAMES: tuple[str, ...] = ("bundle", "audit", "evidence", "harness", "benchmark", "judges", "verdict", "points")
