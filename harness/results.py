"""The harness's result document (``harness.result/2``) as typed, frozen records.

Every reader — the report tables, the claim ledger, the benchmark stage, the board's bars — goes through
these types instead of string keys, so a renamed or missing field fails in one place (and in the type
checker), not silently in five. Torch-free: reviewbench imports this module to read results without paying
for torch.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeVar

RESULT_SCHEMA = "harness.result/2"
#: Bumped when what a run measures changes meaning (metrics, item construction, reference format); results
#: and cached full-cache references of another version are never compared with this one.
HARNESS_VERSION = "2"
#: Boards whose protocol changed after HARNESS_VERSION: board C asks a method only when a layer reaches its cap
#: and evicts a block (f0a30ff), so its rows measure something else than version 2's per-token eviction.
BOARD_VERSIONS: dict[str, str] = {"C": "3"}

Board = Literal["A", "B_online", "B_offline", "C"]
BOARDS: tuple[str, ...] = typing.get_args(Board)  # one list: the Literal above


def harness_version(board: str) -> str:
    """The version a run on `board` (a harness board name) is measured with; only equal versions compare."""
    return BOARD_VERSIONS.get(board, HARNESS_VERSION)


DEFAULT_TASKS: dict[str, list[str]] = {"A": ["niah_single"], "B_online": ["niah_multiquery"],
                                       "B_offline": ["niah_multiquery"], "C": ["reasoning_trace"]}
DEFAULT_BUDGETS: dict[str, list[float]] = {"A": [0.02, 0.05, 0.10], "B_online": [0.10, 0.25, 0.50],
                                           "B_offline": [0.10, 0.25, 0.50], "C": [2048, 4096]}
EMBEDDED_MODEL = "embedded:smollm2-135m-instruct"
EMBEDDED_C_SCALE = 1 / 16  # board C caps for the 135M embedded model: 2048/4096 -> 128/256 tokens per layer


class ResultFormatError(ValueError):
    """A document that is not a valid harness result (wrong schema, missing or mistyped field)."""


@dataclass(frozen=True)
class MethodLimits:
    """What an untrusted method's own process may use; enforced from outside that process."""

    call_timeout_s: float = 60.0  # one hook call (select, on_decode, layer_budgets, setup)
    start_timeout_s: float = 120.0  # interpreter start + import of method.py
    cpu_s: int = 3600  # CPU seconds over the process's life (RLIMIT_CPU)
    memory_bytes: int = 8 * 1024**3  # address space (RLIMIT_AS)
    max_procs: int = 64  # processes/threads of the sandbox user (RLIMIT_NPROC)
    file_bytes: int = 16 * 1024**2  # largest file it may write (RLIMIT_FSIZE)
    tmpfs_bytes: int = 64 * 1024**2  # its private /tmp
    stderr_bytes: int = 64 * 1024  # how much of its stderr is kept (the rest is read and dropped)
    threads: int = 1


@dataclass(frozen=True)
class RunConfig:
    board: str = "A"
    methods: list[str] = field(default_factory=lambda: ["full"])  # reference names or method folders
    budgets: list[float] | None = None
    tasks: list[str] | None = None
    split: str = "dev"
    items: int = 20
    length: int | None = None  # context tokens (A, B: default 2048); trace tokens (C: default 384)
    seeds: int = 1
    model: str = EMBEDDED_MODEL
    device: str = "cpu"
    dtype: str | None = None
    data: str | None = None  # a folder of stored items (the arena's test split)
    c_scale: float | None = None  # board C caps = budgets x c_scale (default: 1/16 on the embedded model)
    cap_per_head: bool = False  # board C: the cap binds every KV head, not only the layer's mean over its heads
    threads: int | None = None
    reference: str | None = None  # a full-cache reference file: read when it matches, else computed and written
    kept: str | None = None  # boards A/B: a folder for the kept sets of the scored calls (harness.keptsets)
    kept_items: int = 4  # ... recorded on this many items and kept_layers attention layers (chosen by a hash of
    kept_layers: int = 6  # the split), with the baselines' on the same calls
    limits: MethodLimits = field(default_factory=MethodLimits)

    def resolved_budgets(self) -> list[float]:
        return list(self.budgets or DEFAULT_BUDGETS[self.board])

    def resolved_length(self) -> int:
        return self.length or (384 if self.board == "C" else 2048)

    def resolved_tasks(self) -> list[str]:
        return list(self.tasks or DEFAULT_TASKS[self.board])

    def resolved_caps(self) -> list[int]:
        """Board C's per-layer token caps actually run (budgets scaled for small models)."""
        if self.board != "C":
            return []
        scale = self.c_scale if self.c_scale is not None else (
            EMBEDDED_C_SCALE if self.model.startswith("embedded") else 1.0)
        return [max(8, int(b * scale)) for b in self.resolved_budgets()]


@dataclass(frozen=True)
class ModelFacts:
    """The model as the harness saw it: architecture facts the metrics and cost model need."""

    name: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    rope_theta: float | None = None
    param_bytes: int = 0  # weights read per decoded token (the speed cost model's fixed term)
    attention_layers: list[int] | None = None  # layers that hold a KV cache (None: all)


@dataclass(frozen=True)
class Row:
    """One method at one budget on one question of one item (the full cache is ``method == "full"``)."""

    item: str
    task: str
    question: int
    method: str
    budget: float
    seed: int = 0
    score: float | None = None  # task accuracy of this answer (None where the task has none)
    kl: float | None = None  # KL(full || compressed) over the reference answer's tokens
    top1: float | None = None  # next-token agreement with the full cache
    eviction_cost: float | None = None  # attention mass of future queries lost (fraction)
    eviction_cost_oracle: float | None = None  # the same for the best keep-set of the same size
    kept_tokens: float | None = None
    kv_bytes: int | None = None  # right after compression
    kv_bytes_peak: int | None = None  # the most held while answering
    kv_bytes_decode_mean: float | None = None  # mean held per decoded token (the speed cost model)
    kv_tokens_layer_max: int | None = None  # the most tokens per head any layer held at any time (board C's cap)
    model_cpu_s: float | None = None  # CPU seconds of the trusted process's forward passes (prefill + answer)
    compress_s: float | None = None  # wall seconds of the method's calls
    compress_cpu_s: float | None = None  # CPU seconds the method's process spent, read from the kernel
    offline_s: float | None = None  # B_offline: the one-off reconstruction pass, reported apart
    decode_tok_s: float | None = None  # measured; reported, not scored (noisy on shared CPUs)
    generated_tokens: int | None = None
    prediction: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Aggregate:
    method: str
    budget: float
    task: str  # "*" = over all tasks
    n: int
    errors: int
    error: str | None
    accuracy: float | None
    full_accuracy: float | None
    normalized_accuracy: float | None
    normalized_ci95: list[float] | None
    kl: float | None
    top1: float | None
    eviction_cost: float | None
    eviction_cost_oracle: float | None
    kept_tokens: float | None
    kv_bytes: float | None
    kv_bytes_ratio: float | None
    kv_bytes_peak: float | None
    kv_tokens_layer_max: int | None
    compress_s: float | None
    offline_s: float | None
    decode_tok_s: float | None
    decode_speed_ratio: float | None
    generated_tokens: float | None


@dataclass(frozen=True)
class SeedSpread:
    method: str
    budget: float
    task: str
    normalized_accuracy_std: float | None
    kl_std: float | None
    seeds: int


@dataclass(frozen=True)
class Environment:
    python: str
    torch: str
    transformers: str
    device: str
    dtype: str
    threads: int
    platform: str
    sandbox: str  # how untrusted methods were isolated ("bubblewrap", "unshare-net", "in-process" for references)
    seconds: float
    peak_rss_bytes: int = 0  # of the trusted worker (what a flood or a long context costs the measuring side)


@dataclass(frozen=True)
class Result:
    config: RunConfig
    model: ModelFacts
    code_hashes: dict[str, str]
    method_errors: dict[str, str]
    rows: list[Row]
    aggregates: list[Aggregate]
    seed_spread: list[SeedSpread] | None
    environment: Environment
    caps: list[int] | None = None
    data_hash: str | None = None  # content hash of the stored items (the test split), None for generated ones
    reference: str | None = None  # "computed" or "reused": where the full cache's rows came from
    harness_version: str = HARNESS_VERSION  # the evaluator sets harness_version(config.board)
    # per sandboxed method: the lines of its method.py that ran on these calls (the code that was scored); a
    # method whose line trace was lost is in trace_lost instead
    executed_lines: dict[str, list[int]] = field(default_factory=dict)
    trace_lost: list[str] = field(default_factory=list)
    schema: str = RESULT_SCHEMA

    def to_json(self) -> dict[str, Any]:
        return _clean(asdict(self))

    @staticmethod
    def from_json(data: object) -> "Result":
        if not isinstance(data, dict):
            raise ResultFormatError("a harness result is a JSON object")
        if data.get("schema") != RESULT_SCHEMA:
            raise ResultFormatError(f"schema {data.get('schema')!r}, expected {RESULT_SCHEMA}")
        return build(Result, data)

    def methods(self) -> list[str]:
        return sorted({r.method for r in self.rows if r.method != "full"})

    def aggregate(self, method: str, budget: float, task: str = "*") -> Aggregate | None:
        return next((a for a in self.aggregates if a.method == method and abs(a.budget - budget) < 1e-9
                     and a.task == task), None)


def _clean(obj: Any) -> Any:
    """JSON has no NaN: a metric that could not be computed is null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


T = TypeVar("T")


def build(cls: type[T], data: object, where: str = "") -> T:
    """A frozen dataclass from JSON data, checking keys and field types (unknown keys are an error)."""
    if not isinstance(data, dict):
        raise ResultFormatError(f"{where or cls.__name__}: expected an object")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = set(data) - names
    if unknown:
        raise ResultFormatError(f"{where or cls.__name__}: unknown field {sorted(unknown)[0]!r}")
    kwargs = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in data:
            kwargs[f.name] = _convert(hints[f.name], data[f.name], f"{where}.{f.name}" if where else f.name)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ResultFormatError(f"{where or cls.__name__}: missing field {f.name!r}")
    return cls(**kwargs)


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return _convert(a, value, where)
            except ResultFormatError as e:
                errors.append(str(e))
        raise ResultFormatError(errors[0] if errors else f"{where}: bad value")
    if origin is Literal:
        if value not in args:
            raise ResultFormatError(f"{where}: {value!r} not one of {args}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ResultFormatError(f"{where}: expected a list")
        return [_convert(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ResultFormatError(f"{where}: expected an object")
        return {str(k): _convert(args[1], v, f"{where}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return build(tp, value, where)  # type: ignore[arg-type]
    if tp is Any:
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ResultFormatError(f"{where}: expected a number, got {type(value).__name__}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ResultFormatError(f"{where}: expected an integer, got {type(value).__name__}")
        return value
    if tp in (str, bool):
        if not isinstance(value, tp):
            raise ResultFormatError(f"{where}: expected {tp.__name__}, got {type(value).__name__}")
        return value
    raise ResultFormatError(f"{where}: unsupported field type {tp!r}")
