"""The judges' prompts, rendered from the jinja2 templates in one place (``reviewbench/templates/judge_*.j2``)."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined

from reviewbench.judges.inputs import JudgeInputs
from reviewbench.rubric import Rubric

_ENV = Environment(loader=PackageLoader("reviewbench", "templates"), undefined=StrictUndefined, trim_blocks=True,
                   lstrip_blocks=True, keep_trailing_newline=False, autoescape=False)


def system_prompt(rubric: Rubric, inputs: JudgeInputs, web_search: bool) -> str:
    return _ENV.get_template("judge_system.j2").render(rubric=rubric, tag=inputs.tag, web_search=web_search).strip()


def user_prompt(inputs: JudgeInputs) -> str:
    return _ENV.get_template("judge_user.j2").render(inp=inputs).strip()
