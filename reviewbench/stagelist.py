"""The review's stages by name, in the order data flows (torch-free and import-free: the CLI's option checks and
--help read it without loading the stages). ``reviewbench.stages.STAGES`` is the registry; a test checks that
this list names its stages in its order."""

STAGE_NAMES: tuple[str, ...] = ("bundle", "audit", "benchmark", "evidence", "ledger", "standing", "judges", "verdict",
                                "points")
# Renamed stages: the old name is still understood on the command line (the stored reports are upgraded on read).
RENAMED: dict[str, str] = {"harness": "ledger"}


def stage_names() -> tuple[str, ...]:
    """Every registered stage in order: the built-in ones, and any stage added to ``reviewbench.stages.STAGES``
    (imported only when needed: a name outside STAGE_NAMES)."""
    from reviewbench.stages import STAGES

    return tuple(s.name for s in STAGES)


def canonical(name: str) -> str:
    """A stage's current name (``harness`` -> ``ledger``)."""
    return RENAMED.get(name, name)


def check_stage(name: str) -> bool:
    """Whether ``name`` is a stage (``--only``/``--skip``/``--rerun``): the built-in list first, without importing
    the stages."""
    return name in STAGE_NAMES or name in stage_names()
