"""The evidence judge as a panel provider: its own family ("evidence"), deterministic, free, embedded.

It scores from the measured facts handed to the panel (``JudgeInputs.facts``) with
:func:`reviewbench.evidence.judge.judge`; it reads no prompt text, so an injected twin and its clean twin get
the same verdict by construction. It is the offline default's counted judge.
"""

from __future__ import annotations

from reviewbench.evidence.judge import judge
from reviewbench.judges.base import Capabilities, JudgeProvider, StepRequest, StepResult, Usage
from reviewbench.judges.inputs import JudgeInputs
from reviewbench.verdict import JudgeVerdict


class EvidenceJudge(JudgeProvider):
    capabilities = Capabilities(deterministic=True, embedded=True, free=True, raises_flags=False,
                                scores_directly=True, reads_prose=False,
                                version="evidence-judge/2")  # bump when reviewbench/evidence/judge.py maps differently

    def __init__(self, inputs: JudgeInputs) -> None:
        self.inputs = inputs

    async def step(self, req: StepRequest) -> StepResult:
        facts = self.inputs.facts
        if facts is None:
            raise ValueError("no measured facts were gathered for this submission")
        task = req.task
        v = judge(facts, task.rubric)
        spec = task.spec
        return StepResult(usage=Usage(calls=1, cost_usd=0.0), verdict=JudgeVerdict(
            judge_id=task.judge_id, family=spec.family, provider=spec.provider, model=spec.model, local=True,
            role=task.role, scores=v.scores, flags=[], prior_work=v.prior_work, summary=v.summary,
            deterministic=True))


PROVIDER = EvidenceJudge
