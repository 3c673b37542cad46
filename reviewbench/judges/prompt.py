"""The judges' prompts, rendered from the jinja2 templates in one place (``reviewbench/templates/judge_*.j2``).

``tools`` says whether the judge works through tools (search, then ``submit_verdict``) or answers with the
verdict JSON as its content (``output = "json_schema"``): then the schema is in the system prompt, and the
prior art the arena retrieved and the author's related work are in the user prompt, since the judge cannot
ask for them.
"""

from __future__ import annotations

import json

from jinja2 import Environment, PackageLoader, StrictUndefined

from reviewbench.judges.inputs import JudgeInputs
from reviewbench.judges.sanitize import safe_label
from reviewbench.rubric import Rubric

_ENV = Environment(loader=PackageLoader("reviewbench", "templates"), undefined=StrictUndefined, trim_blocks=True,
                   lstrip_blocks=True, keep_trailing_newline=False, autoescape=False)
_ENV.filters["safe_label"] = safe_label


def system_prompt(rubric: Rubric, inputs: JudgeInputs, web_search: bool, tools: bool = True) -> str:
    from reviewbench.judges.schema import verdict_schema

    schema = "" if tools else json.dumps(verdict_schema(rubric), separators=(",", ":"))
    return _ENV.get_template("judge_system.j2").render(rubric=rubric, tag=inputs.tag, web_search=web_search,
                                                       tools=tools, schema=schema).strip()


def user_prompt(inputs: JudgeInputs, tools: bool = True) -> str:
    retrieved = "" if tools else retrieved_prior_art(inputs)
    return _ENV.get_template("judge_user.j2").render(inp=inputs, tools=tools, retrieved=retrieved).strip()


def retrieved_prior_art(inputs: JudgeInputs, k: int = 5) -> str:
    """The packaged index searched with the method summary (or the code): for judges that cannot search."""
    from reviewbench.priorart import load_index

    query = " ".join([inputs.sections.get("method_summary", ""), inputs.sections.get("idea", "")]).strip()
    hits = load_index().search((query or inputs.method_py)[:2000], k)
    return "\n".join(f"- {h.paper.title} ({h.paper.first_author} {h.paper.year}, arXiv {h.paper.arxiv or '-'}): "
                     f"{h.paper.key_idea}" for h in hits) or "(nothing found)"
