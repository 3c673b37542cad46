"""The calibration suite as data: which case is which (the answer key), and which panel to run.

``calibration/answer_key.toml`` maps each opaque code to its method, source paper and expected flags. It is
read by the calibration runner after the judges have answered and never enters a judge's inputs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import tomli_w
from pydantic import BaseModel, ConfigDict, Field

from reviewbench.arena import JudgeSpec
from reviewbench.errors import ConfigError
from reviewbench.rubric import FlagId
from reviewbench.tomlio import read_toml, validate_file

KEY_FILE = "answer_key.toml"
KEY_SCHEMA = "reviewbench.calibration-key/1"
PANELS_FILE = "panels.toml"
SUITE_SEED = 20261202
# The twelve published baselines (harness reference names), in the order of ../shared/reference/baselines.md.
BASELINE_CASES = ("snapkv", "pyramidkv", "adakv", "tova", "window", "knorm", "expected_attention", "kvzip",
                  "snapkv_qa", "h2o", "rkv", "random")
Plant = Literal["fabricated_numbers", "undisclosed_copy", "injection_canary", "test_split_read"]


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str  # the opaque submission id, e.g. k07-001
    kind: Literal["baseline", "port", "planted"]  # port: public reference code ported and disguised (calibration/ports)
    method: str  # the harness method it was built from
    board: str
    plant: Plant | None = None
    paper: str | None = None  # the source paper's title; None when there is nothing to name (random, some plants)
    arxiv: str | None = None
    accept_arxiv: list[str] = Field(default_factory=list)  # any of these arXiv ids names the source
    accept_titles: list[str] = Field(default_factory=list)  # ... or any of these titles / short names
    expected_flags: list[FlagId] = Field(default_factory=list)
    allowed_flags: list[FlagId] = Field(default_factory=list)  # neither missed nor false (a blinded baseline IS prior art)
    twin: str | None = None  # the canary's clean twin: the score shift is measured against it

    @property
    def has_source(self) -> bool:
        return bool(self.accept_arxiv or self.accept_titles)


class AnswerKey(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: str = Field(default=KEY_SCHEMA, alias="schema")
    seed: int = SUITE_SEED
    cases: list[Case]

    def case(self, code: str) -> Case | None:
        return next((c for c in self.cases if c.code == code), None)

    def write(self, path: Path) -> None:
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        header = ("# The calibration suite's answer key, written by `review calibrate build`. Never shown to a judge.\n"
                  "# code -> the baseline it was built from, its source paper, and the flags it should get.\n")
        tmp = path.with_suffix(".partial")
        tmp.write_text(header + tomli_w.dumps(data))
        tmp.replace(path)


def load_key(root: Path) -> AnswerKey:
    path = root / KEY_FILE
    if not path.is_file():
        raise ConfigError(path, "missing: build the suite first with `review calibrate build`")
    return validate_file(AnswerKey, read_toml(path), path)


class PanelsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    panels: dict[str, list[JudgeSpec]]


def load_panels(root: Path) -> dict[str, list[JudgeSpec]]:
    path = root / PANELS_FILE
    data = read_toml(path)
    return validate_file(PanelsFile, {"panels": {k: v.get("judges", []) for k, v in data.get("panels", {}).items()}},
                         path).panels


def leak_terms(papers: Iterable) -> list[str]:
    """What a blinded bundle must not contain: names, titles, arXiv ids, first authors, repositories."""
    terms = {"kvpress", "KVCache-Factory", "heavy hitter", "heavy-hitter", "attention sink", "multi-state",
             "hh_score", "expected attention", "context reconstruction", "l2 norm-based", "pyramidal", "funnel"}
    for p in papers:
        terms |= {p.short_name, p.title}
        if p.baseline and p.baseline not in ("window", "random"):
            terms.add(p.baseline)
        if p.arxiv:
            terms.add(p.arxiv)
    terms |= {"SnapKV", "PyramidKV", "AdaKV", "Ada-KV", "TOVA", "StreamingLLM", "KNorm", "K-norm", "KVzip", "H2O",
              "R-KV", "RKV", "snap", "pyramid"}
    return sorted(t for t in terms if t and t not in ("Random",))


def surnames(papers: Iterable) -> list[str]:
    return sorted({p.first_author.split()[-1] for p in papers if p.first_author})


def leaks(text: str, terms: list[str], names: list[str]) -> list[str]:
    """The terms found in ``text``: case-insensitive substrings, and surnames as whole, capitalised words."""
    low = text.lower()
    found = [t for t in terms if t.lower() in low]
    found += [n for n in names if re.search(rf"\b{re.escape(n)}\b", text)]
    return found
