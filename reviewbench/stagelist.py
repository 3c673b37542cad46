"""The review's stages by name, in the order data flows (torch-free and import-free: the CLI's option checks and
--help read it without loading the stages)."""

STAGE_NAMES: tuple[str, ...] = ("bundle", "audit", "benchmark", "evidence", "harness", "judges", "verdict", "points")


def stage_names() -> tuple[str, ...]:
    """Every registered stage in order: the built-in ones, and any stage added to ``reviewbench.stages.STAGES``
    (imported only when needed: a name outside STAGE_NAMES)."""
    from reviewbench.stages import STAGES

    return tuple(s.name for s in STAGES)


def check_stage(name: str) -> bool:
    """Whether ``name`` is a stage (``--only``/``--skip``/``--rerun``): the built-in list first, without importing
    the stages."""
    return name in STAGE_NAMES or name in stage_names()
