"""The judges' prompts, rendered from the jinja2 templates in one place (``reviewbench/templates/judge_*.j2``).

``tools`` says whether the judge works through tools (search, then ``submit_verdict``) or answers with the
verdict JSON as its content (``output = "json_schema"``): then the schema is in the system prompt, and the
prior art the arena retrieved and the author's related work are in the user prompt, since the judge cannot
ask for them.

The templates see only fields of the inventory (:data:`reviewbench.judges.inputs.PROMPT_FIELDS`): the user
prompt through ``field(name)`` (fenced when untrusted), the system prompt through trusted values checked here.
"""

from __future__ import annotations

import json

from jinja2 import Environment, PackageLoader, StrictUndefined

from typing import Any

from reviewbench.judges.inputs import FIELDS, JudgeInputs
from reviewbench.judges.sanitize import safe_label
from reviewbench.rubric import Rubric

_ENV = Environment(loader=PackageLoader("reviewbench", "templates"), undefined=StrictUndefined, trim_blocks=True,
                   lstrip_blocks=True, keep_trailing_newline=False, autoescape=False)
_ENV.filters["safe_label"] = safe_label


_FLAGS = {"tools", "web_search"}  # booleans that choose a template's branches (no text)
_AS_FIELD = {"tag": "fence_tag", "schema": "verdict_schema", "retrieved": "retrieved_prior_art"}


def _render(template: str, **values: Any) -> str:
    """A judge template with only trusted inventory fields and branch flags as values; untrusted text reaches a
    template only through ``field`` (which fences it)."""
    for key, value in values.items():
        if key in _FLAGS or key in ("field", "has"):
            continue
        spec = FIELDS.get(_AS_FIELD.get(key, key))
        if spec is None or spec.trust != "trusted":
            raise KeyError(f"{key!r} is not a trusted prompt field (see PROMPT_FIELDS)")
    return _ENV.get_template(template).render(**values).strip()


def system_prompt(rubric: Rubric, inputs: JudgeInputs, web_search: bool, tools: bool = True) -> str:
    from reviewbench.judges.schema import verdict_schema

    schema = "" if tools else json.dumps(verdict_schema(rubric), separators=(",", ":"))
    return _render("judge_system.j2", rubric=rubric, tag=inputs.tag, web_search=web_search, tools=tools,
                   schema=schema)


def user_prompt(inputs: JudgeInputs, tools: bool = True) -> str:
    retrieved = "" if tools else retrieved_prior_art(inputs)
    return _render("judge_user.j2", field=inputs.field, has=inputs.has, tools=tools, retrieved=retrieved)


def retrieved_prior_art(inputs: JudgeInputs, k: int = 5) -> str:
    """The packaged index searched with the method summary (or the code): for judges that cannot search."""
    from reviewbench.priorart import load_index

    query = " ".join([inputs.sections.get("method_summary", ""), inputs.sections.get("idea", "")]).strip()
    hits = load_index().search((query or inputs.method_py)[:2000], k)
    return "\n".join(f"- {h.paper.title} ({h.paper.first_author} {h.paper.year}, arXiv {h.paper.arxiv or '-'}): "
                     f"{h.paper.key_idea}" for h in hits) or "(nothing found)"
