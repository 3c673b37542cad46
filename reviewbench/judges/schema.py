"""The structured output every API judge must return through its ``submit_verdict`` tool.

The JSON Schema is built from the rubric (criteria and their ranges, the five flags), so a second rubric
changes what the judges are asked for without code changes. ``parse_submission`` is strict: a missing
criterion, an out-of-range score or an unknown flag is an invalid output, which the loop sends back to the
model with the reason; it is never scored 0.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from reviewbench.judges.base import Capabilities, JudgeTask
from reviewbench.rubric import Rubric
from reviewbench.verdict import CriterionScore, FlagClaim, JudgeCitationCheck, JudgeVerdict, PriorWork

SUBMIT_TOOL = "submit_verdict"
NUDGE = f"Call {SUBMIT_TOOL} now with your verdict."


def verdict_schema(rubric: Rubric) -> dict[str, Any]:
    criteria = {
        c.id: {"type": "object", "additionalProperties": False, "required": ["score", "rationale"],
               "properties": {"score": {"type": "integer", "minimum": 0, "maximum": c.max,
                                        "description": c.question},
                              "rationale": {"type": "string", "description": "Why this level, citing evidence."}}}
        for c in rubric.criteria
    }
    return {
        "type": "object", "additionalProperties": False,
        "required": ["scores", "flags", "prior_work", "citations_checked", "summary"],
        "properties": {
            "scores": {"type": "object", "additionalProperties": False, "required": list(criteria),
                       "properties": criteria},
            "flags": {"type": "array", "description": "Only flags you can prove with an exact quote from the inputs.",
                      "items": {"type": "object", "additionalProperties": False,
                                "required": ["flag", "quote", "location", "explanation"],
                                "properties": {"flag": {"type": "string", "enum": [f.id for f in rubric.flags]},
                                               "quote": {"type": "string",
                                                         "description": "Exact text from the inputs that proves it."},
                                               "location": {"type": "string",
                                                            "description": "file:line, log line or URL"},
                                               "explanation": {"type": "string"}}}},
            "prior_work": {"type": "array", "description": "The closest prior work you found, closest first.",
                           "items": {"type": "object", "additionalProperties": False,
                                     "required": ["title", "relation"],
                                     "properties": {"title": {"type": "string"}, "arxiv_id": {"type": "string"},
                                                    "url": {"type": "string"}, "relation": {"type": "string"}}}},
            "citations_checked": {"type": "array", "description": "Every citation in DESCRIPTION.md, checked.",
                                  "items": {"type": "object", "additionalProperties": False,
                                            "required": ["citation", "status"],
                                            "properties": {"citation": {"type": "string"},
                                                           "status": {"type": "string", "enum": [
                                                               "real", "wrong_metadata", "not_found", "unchecked"]},
                                                           "note": {"type": "string"}}}},
            "summary": {"type": "string", "description": "Two or three sentences: what the method is and is worth."},
        },
    }


class InvalidOutput(ValueError):
    """The model's structured output does not satisfy the schema; the message goes back to the model."""


def parse_submission(data: Any, task: JudgeTask, caps: Capabilities) -> JudgeVerdict:
    rubric = task.rubric
    if isinstance(data, str):  # the provider could not decode the arguments; the string says why
        raise InvalidOutput(data)
    if not isinstance(data, dict):
        raise InvalidOutput("the verdict must be a JSON object")
    scores_in = data.get("scores")
    if not isinstance(scores_in, dict):
        raise InvalidOutput("'scores' must be an object with one entry per criterion")
    scores: dict[str, CriterionScore] = {}
    for c in rubric.criteria:
        entry = scores_in.get(c.id)
        if not isinstance(entry, dict) or "score" not in entry:
            raise InvalidOutput(f"scores.{c.id} is missing (give score and rationale)")
        s = entry["score"]
        if isinstance(s, bool) or not isinstance(s, (int, float)) or s != int(s) or not 0 <= s <= c.max:
            raise InvalidOutput(f"scores.{c.id}.score must be an integer from 0 to {c.max}, got {s!r}")
        scores[c.id] = CriterionScore(score=float(s), rationale=str(entry.get("rationale", "")))
    extra = set(scores_in) - {c.id for c in rubric.criteria}
    if extra:
        raise InvalidOutput(f"unknown criteria in scores: {', '.join(sorted(extra))}")
    try:
        flags = [FlagClaim.model_validate({**f, "raised_by": task.judge_id}) for f in data.get("flags") or []]
        prior = [PriorWork.model_validate(p) for p in data.get("prior_work") or []]
        cites = [JudgeCitationCheck.model_validate(c) for c in data.get("citations_checked") or []]
    except (ValidationError, TypeError) as e:
        first = e.errors()[0] if isinstance(e, ValidationError) else {"loc": (), "msg": str(e)}
        raise InvalidOutput(f"{'.'.join(map(str, first['loc'])) or 'flags/prior_work'}: {first['msg']}") from None
    spec = task.spec
    return JudgeVerdict(judge_id=task.judge_id, family=spec.family, provider=spec.provider, model=spec.model,
                        local=caps.embedded, role=task.role, scores=scores, flags=flags, prior_work=prior,
                        citations_checked=cites, summary=str(data.get("summary", "")))
