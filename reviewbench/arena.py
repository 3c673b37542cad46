"""The arena: a folder with ``arena.toml``, ``submit/``, ``baselines/``, ``logs/`` and ``reviews/``.

``arena.toml`` is a contract that other tools write to, so every table forbids unknown keys (a typo must
not silently become a default) and every table is optional with the defaults documented here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.results import BOARDS, EMBEDDED_MODEL
from reviewbench.errors import ConfigError
from reviewbench.overall import DECODE_WEIGHTS, OverallWeights, WeightLimits
from reviewbench.tomlio import read_toml, validate_file

if TYPE_CHECKING:
    from harness.results import MethodLimits

ARENA_FILE = "arena.toml"
# A submission is the folder submit/<agent>-<NNN>: the agent's id (as arena.toml declares it) and its number.
AGENT_ID = re.compile(r"^[a-z0-9_]+$")
SUBMISSION_ID = re.compile(r"^(?P<agent>[a-z0-9_]+)-(?P<seq>[0-9]{3})$")

Family = Literal["anthropic", "openai", "google", "meta", "mistral", "qwen", "huggingface", "local", "evidence",
                 "other"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


HARNESS_BOARDS = BOARDS  # the harness's protocols: one list, harness.results.BOARDS


class Board(_Strict):
    """A leaderboard. ``budget_kind`` says whether ``budgets`` are kept fractions (A, B) or token caps (C).

    The benchmark settings say how every submission is measured on the board's hidden test split: the stored
    split (``test_split``, written by ``review harness split``), the tasks and items per task drawn from it, the
    model, and how the Overall score weighs accuracy against efficiency (``weights``).
    """

    name: str
    setting: str = ""
    budget_kind: Literal["fraction", "tokens"] = "fraction"
    budgets: list[float] = Field(min_length=1)
    benchmark: str = ""
    query_aware: bool = True
    phase: Literal["prefill", "decode"] = "prefill"
    offline_compression: bool = False  # B_offline: a slow one-off compression pass is allowed
    # The board's starting bar: the published baselines measured on the board's test split (reviewbench.bars/2,
    # from `review harness baselines --arena`), relative to the arena folder. Its methods count as baselines.
    bars: str | None = None
    test_split: str | None = None  # folder of the hidden test split (default data/test/<board>)
    tasks: list[str] | None = None  # default: the split's tasks
    items: int = Field(default=10, ge=1)  # items per task of the split the benchmark runs (at most the split's)
    length: int | None = Field(default=None, ge=16)  # context tokens (default 2048), or trace tokens on C (384)
    model: str = "embedded"  # "embedded" (SmolLM2-135M) or a local transformers model folder
    weights: OverallWeights | None = None  # default: 0.7/0.1/0.1/0.1 (A, B); 0.6/0.1/0.1/0.1 + 0.1 length (C)

    @model_validator(mode="after")
    def _budgets_fit_kind(self) -> "Board":
        for b in self.budgets:
            if self.budget_kind == "fraction" and not 0 < b <= 1:
                raise ValueError(f"board {self.name}: fraction budget {b} not in (0, 1]")
            if self.budget_kind == "tokens" and (b < 1 or b != int(b)):
                raise ValueError(f"board {self.name}: token budget {b} must be a positive integer")
        if self.phase == "decode" and self.budget_kind != "tokens":
            raise ValueError(f"board {self.name}: a decode-time board caps tokens per layer (budget_kind = \"tokens\")")
        return self

    @property
    def harness_board(self) -> str:
        """The harness's protocol for this board: A (question in the prefill), B_online / B_offline (compress
        the context alone), C (evict while decoding)."""
        if self.phase == "decode":
            return "C"
        if self.query_aware:
            return "A"
        return "B_offline" if self.offline_compression else "B_online"

    @property
    def overall_weights(self) -> OverallWeights:
        return self.weights or (DECODE_WEIGHTS if self.phase == "decode" else OverallWeights())

    @property
    def resolved_length(self) -> int:
        return self.length or (384 if self.phase == "decode" else 2048)

    def split_dir(self, root: Path) -> Path:
        return root / (self.test_split or f"data/test/{self.name}")

    @property
    def model_spec(self) -> str:
        return EMBEDDED_MODEL if self.model in ("embedded", "default", EMBEDDED_MODEL) else self.model


class Agent(_Strict):
    id: str = Field(pattern=AGENT_ID.pattern)  # the prefix of its submissions' folder names and its logs/<id>/
    family: Family = "other"


class Rules(_Strict):
    """The rules contract (exact keys). Paths are globs as the agents saw the file system."""

    test_split: list[str] = ["/arena/data/test/**"]
    agent_home: str = "/arena/agents/{agent}"
    judge_reviews: list[str] = ["/arena/reviews/**"]
    harness: list[str] = ["/arena/harness/**"]
    allowed_hosts: list[str] = ["github.com", "arxiv.org"]
    submissions_per_24h: int = Field(default=5, ge=1)

    @field_validator("agent_home")
    @classmethod
    def _names_the_agent(cls, v: str) -> str:
        if "{agent}" not in v:
            raise ValueError("must contain '{agent}'")
        return v


class JudgeSpec(_Strict):
    """One judge of the panel. ``provider`` picks the client (a module of reviewbench/judges/providers/, checked
    against that registry by ``reviewbench.judges.panel.check_panel``); ``family`` is what the tie-break compares."""

    family: Family
    provider: str
    model: str
    base_url: str | None = None
    temperature: float = 0.0
    samples: int = Field(default=1, ge=1)
    web_search: bool = True
    timeout: float = Field(default=300.0, gt=0)  # seconds per request
    max_tokens: int | None = Field(default=None, ge=1)  # per reply; None: the provider's default
    max_context: int | None = Field(default=None, ge=256)  # the server's context window in tokens: prompts are cut to fit
    output: Literal["tools", "json_schema"] = "tools"  # json_schema: the verdict as schema-constrained content
    role: Literal["primary", "advisory"] = "primary"  # advisory: run and shown in the report, never counted
    max_steps: int = Field(default=16, ge=1, le=64)  # model requests per judge run


class Panel(_Strict):
    """The judge panel; with no API keys the pipeline falls back to the ``local`` panel and says so."""

    judges: list[JudgeSpec] = [
        JudgeSpec(family="anthropic", provider="anthropic", model="claude-sonnet-4-5"),
        JudgeSpec(family="openai", provider="openai", model="gpt-5"),
    ]
    rubric: str = "default"
    # A `review calibrate` report (JSON, relative to the arena) whose per-family offsets the tie-break subtracts
    # before comparing two judges, when the rubric sets tie_break.subtract_family_offsets = true.
    calibration: str | None = None
    # Without API keys: also run the small local LLMs as advisors beside the evidence judge (shown, never counted;
    # about two minutes per review on 2 CPU cores). False: the evidence judge alone.
    offline_advisors: bool = True


class PointsSettings(_Strict):
    rule_set: str | None = None  # None = the rubric's default rule set


class BundleLimits(_Strict):
    max_file_bytes: int = Field(default=256 * 1024, ge=1)
    max_total_bytes: int = Field(default=2 * 1024 * 1024, ge=1)


class ArenaMeta(_Strict):
    name: str = "arena"


class HarnessSettings(_Strict):
    """How the harness measures submissions: the claim ledger's minimum re-run sizes (a claim's own ``items`` can
    raise them, never lower them: the tolerance is the reviewer's), the limits every untrusted method runs under,
    and whether a run without a file-system sandbox may touch the hidden test split."""

    claim_items: int = Field(default=10, ge=1)  # items per task per seed, at least
    claim_seeds: int = Field(default=2, ge=2)  # disjoint item sets, at least: the tolerance comes from their spread
    call_timeout_s: float = Field(default=60.0, gt=0, le=3600)  # one call of a method's hook
    method_cpu_s: int = Field(default=3600, ge=1)  # CPU seconds of a method's process
    method_memory_gb: float = Field(default=8.0, gt=0)
    worker_wall_hours: float = Field(default=2.0, gt=0)  # a benchmark or claim run, all methods
    threads: int | None = Field(default=None, ge=1)  # torch threads of the trusted worker (default: all cores)
    allow_unsandboxed_test_split: bool = False  # only for development machines without bubblewrap
    # Where the trusted workers of the benchmark and the claim ledger run: "local" (subprocesses here) or "ray"
    # (Ray tasks on ray_address: "auto" = a cluster running on this machine, else a new local one; or HOST:PORT,
    # ray://HOST:PORT). Excluded from every input hash: a run gives the same numbers wherever it runs.
    executor: Literal["local", "ray"] = Field(default="local", exclude=True)
    ray_address: str | None = Field(default=None, min_length=1, exclude=True)

    @model_validator(mode="after")
    def _address_needs_ray(self) -> "HarnessSettings":
        if self.ray_address is not None and self.executor != "ray":
            raise ValueError("ray_address needs executor = \"ray\"")
        return self

    def method_limits(self) -> "MethodLimits":
        from harness.results import MethodLimits

        return MethodLimits(call_timeout_s=self.call_timeout_s, cpu_s=self.method_cpu_s,
                            memory_bytes=int(self.method_memory_gb * 1024**3))


class ArenaConfig(_Strict):
    arena: ArenaMeta = ArenaMeta()
    boards: list[Board] = []
    agents: list[Agent] = []
    rules: Rules = Rules()
    panel: Panel = Panel()
    points: PointsSettings = PointsSettings()
    bundle: BundleLimits = BundleLimits()
    harness: HarnessSettings = HarnessSettings()
    overall: WeightLimits = WeightLimits()  # bounds on every board's Overall weights

    @model_validator(mode="after")
    def _weights_within_limits(self) -> "ArenaConfig":
        for b in self.boards:
            why = self.overall.check(b.overall_weights, b.phase == "decode")
            if why:
                raise ValueError(f"board {b.name}: {why}")
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> "ArenaConfig":
        for what, names in (("board", [b.name for b in self.boards]), ("agent", [a.id for a in self.agents])):
            dup = {n for n in names if names.count(n) > 1}
            if dup:
                raise ValueError(f"duplicate {what} {sorted(dup)[0]!r}")
        return self

    def board(self, name: str) -> Board | None:
        return next((b for b in self.boards if b.name == name), None)

    def agent(self, agent_id: str) -> Agent | None:
        return next((a for a in self.agents if a.id == agent_id), None)


class Arena(BaseModel):
    """A loaded arena: its root folder and validated configuration."""

    model_config = ConfigDict(frozen=True)

    root: Path
    config: ArenaConfig

    @property
    def submit_dir(self) -> Path:
        return self.root / "submit"

    @property
    def baselines_dir(self) -> Path:
        return self.root / "baselines"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def reviews_dir(self) -> Path:
        return self.root / "reviews"

    @property
    def store_path(self) -> Path:
        return self.reviews_dir / "reviewbench.sqlite"

    def agent_logs(self, agent: str) -> Path:
        """``logs/<agent>/``, resolved (symlinks too) and checked to stay inside ``logs/``: the only logs read for
        an agent. Refused (ConfigError) for an id that is not an agent id or a folder that leads elsewhere."""
        if not AGENT_ID.fullmatch(agent):
            raise ConfigError(self.logs_dir, f"{agent[:60]!r} is not an agent id (lower-case letters, digits, _)")
        logs = self.logs_dir.resolve()
        folder = (self.logs_dir / agent).resolve()
        if folder != logs / agent:  # a link to another agent's folder, or out of logs/ altogether
            raise ConfigError(self.logs_dir / agent, f"the agent's logs folder resolves to {folder}, not "
                                                     f"{logs / agent}")
        return folder

    def submission_ids(self) -> list[str]:
        if not self.submit_dir.is_dir():
            return []
        return sorted(p.name for p in self.submit_dir.iterdir() if p.is_dir() and not p.name.startswith("."))


def load_arena(root: Path) -> Arena:
    root = root.resolve()
    path = root / ARENA_FILE
    if not path.is_file():
        raise ConfigError(path, "no arena.toml here (an arena folder needs one)")
    config = validate_file(ArenaConfig, read_toml(path), path)
    return Arena(root=root, config=config)


def find_arena(start: Path) -> Path:
    """The nearest folder at or above ``start`` that holds an arena.toml."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ARENA_FILE).is_file():
            return folder
    raise ConfigError(start, "no arena.toml in this folder or any parent; pass --arena DIR")


def parse_submission_id(sub_id: str) -> tuple[str, int] | None:
    m = SUBMISSION_ID.fullmatch(sub_id)
    return (m["agent"], int(m["seq"])) if m else None
