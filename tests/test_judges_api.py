"""The API judges through the real ``anthropic`` and ``openai`` SDK clients, with httpx.MockTransport replaying
each API's documented wire format (Anthropic Messages, OpenAI Responses, Chat Completions of OpenAI-compatible
servers): tool-use loops with server-side and client-side web search, a malformed verdict retried, the search
rule, 429/5xx then success, the third-judge path for both author families, and replay from the store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import httpx2  # the anthropic and openai SDKs ship on httpx2 (httpx's API, its own package)
import pytest

from reviewbench.arena import JudgeSpec, Panel
from reviewbench.judges.inputs import EarlierRef, build_inputs
from reviewbench.judges.panel import PanelRunner, ResolvedPanel, resolve_panel
from reviewbench.judges.providers.anthropic import AnthropicJudge
from reviewbench.judges.providers.openai import OpenAIJudge
from reviewbench.judges.providers.openai_compatible import OpenAICompatibleJudge
from reviewbench.judges.tools import ToolBox
from reviewbench.judges.websearch import WebSearch
from reviewbench.store import Store
from reviewbench.verdict import JudgeVerdict, decide

from conftest import EXAMPLE_ARENA

BUNDLE = EXAMPLE_ARENA / "submit" / "agent1-003"
CLAUDE = JudgeSpec(family="anthropic", provider="anthropic", model="claude-sonnet-4-5")
GPT = JudgeSpec(family="openai", provider="openai", model="gpt-5")

ARXIV_ATOM = """<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>arXiv Query: search_query=all:heavy AND all:hitter</title>
  <entry>
    <id>http://arxiv.org/abs/2306.14048v3</id>
    <published>2023-06-24T05:07:49Z</published>
    <title>H$_2$O: Heavy-Hitter Oracle for Efficient Generative Inference of Large Language Models</title>
    <summary>Large Language Models, despite their recent impressive accomplishments, are notably cost-prohibitive.</summary>
    <author><name>Zhenyu Zhang</name></author>
    <author><name>Ying Sheng</name></author>
  </entry>
</feed>"""


@pytest.fixture
def inputs():
    return build_inputs(
        submission_id="agent1-003", board="C", board_setting="decode-time eviction",
        method_src=(BUNDLE / "method.py").read_text(), description=(BUNDLE / "DESCRIPTION.md").read_text(),
        audit_summary="20 tool calls", audit_findings=[], evidence_lines=["claim ledger: not run"],
        earlier=[EarlierRef(id="agent2-003", agent="agent2", board="C", short_name="kvprior",
                            path=str(EXAMPLE_ARENA / "submit" / "agent2-003"))],
        log_dir=EXAMPLE_ARENA / "logs" / "agent1", classify=False)


def verdict_input(novelty=2, effectiveness=2, soundness=2, flags=()):
    return {"scores": {"novelty": {"score": novelty, "rationale": "extrapolated trend on top of H2O-style EMA"},
                       "effectiveness": {"score": effectiveness, "rationale": "no verified numbers"},
                       "soundness": {"score": soundness, "rationale": "accurate description"}},
            "flags": list(flags),
            "prior_work": [{"title": "H2O: Heavy-Hitter Oracle", "arxiv_id": "2306.14048", "relation": "base"}],
            "citations_checked": [{"citation": "Zhang et al., 2023, arXiv 2306.14048", "status": "real"},
                                  {"citation": "Jo et al., 2024, arXiv 2407.20485", "status": "real"},
                                  {"citation": "Dong et al., 2026, arXiv 2602.03203", "status": "real"}],
            "summary": "An H2O variant with a trend term."}


# --- Anthropic Messages API wire format ---------------------------------------------------------------------
def anthropic_message(content, stop="tool_use", searches=0, i=1200, o=300):
    usage = {"input_tokens": i, "output_tokens": o}
    if searches:
        usage["server_tool_use"] = {"web_search_requests": searches}
    return {"id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929", "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": usage}


def tool_use(name, args, uid):
    return {"type": "tool_use", "id": uid, "name": name, "input": args}


class Script:
    """Replays queued responses in order and keeps every request body."""

    def __init__(self, responses):
        self.responses = list(responses)
        self.requests: list[dict] = []

    def __call__(self, request):
        self.requests.append(json.loads(request.content))
        status, body, headers = self.responses.pop(0)
        return httpx2.Response(status, json=body, headers=headers)


def anthropic_client(script):
    return AnthropicJudge(api_key="sk-ant-test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(script)))


def openai_client(script):
    return OpenAIJudge(api_key="sk-test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(script)))


def runner(inputs, rubric, clients, store=None, author="anthropic", web=None):
    return PanelRunner(inputs=inputs, rubric=rubric, author_family=author, store=store,
                       make_provider=lambda spec, _inputs: clients[spec.provider],
                       make_web=web or (lambda: None))


def test_anthropic_tool_loop_with_server_web_search_and_a_malformed_verdict_retried(inputs, rubric):
    script = Script([
        (200, anthropic_message([
            {"type": "text", "text": "The code keeps an EMA of attention. Searching for prior work."},
            {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
             "input": {"query": "attention trend extrapolation KV cache eviction decode"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": [
                {"type": "web_search_result", "url": "https://arxiv.org/abs/2306.14048",
                 "title": "H2O: Heavy-Hitter Oracle for Efficient Generative Inference", "encrypted_content": "Eqg",
                 "page_age": "June 2023"}]},
            tool_use("prior_art_search", {"query": "accumulated attention forgetting factor"}, "toolu_01")],
            searches=1), {}),
        (200, anthropic_message([tool_use("read_author_related_work", {}, "toolu_02")]), {}),
        (200, anthropic_message([tool_use("submit_verdict", verdict_input(novelty=7), "toolu_03")]), {}),
        (200, anthropic_message([tool_use("submit_verdict", verdict_input(novelty=2), "toolu_04")], stop="end_turn"), {}),
    ])
    r = runner(inputs, rubric, {"anthropic": anthropic_client(script)})
    out = asyncio.run(r.run_one(r.task(CLAUDE, "primary", "claude")))
    assert out.verdict is not None and out.verdict.score("novelty") == 2 and out.error is None
    assert out.invalid_outputs and "novelty" in out.invalid_outputs[0]
    names = [c.name for c in out.tool_calls]
    assert names == ["web_search", "prior_art_search", "read_author_related_work"]
    assert out.tool_calls[0].server_side and "2306.14048" in out.tool_calls[0].result
    assert "A2SF" in out.tool_calls[1].result  # the packaged index found the forgetting-factor paper
    assert "H2O (Zhang et al., 2023" in out.tool_calls[2].result  # related work released after the searches
    # wire format: the server tool is declared, results go back as tool_result blocks, the bad verdict as an error
    first = script.requests[0]
    assert {"type": "web_search_20250305", "name": "web_search", "max_uses": 8} in first["tools"]
    assert "Relation to prior work" not in first["messages"][0]["content"]  # withheld from the first prompt
    second = script.requests[1]["messages"][-1]["content"][0]
    assert second["type"] == "tool_result" and second["tool_use_id"] == "toolu_01"
    retry = script.requests[3]["messages"][-1]["content"][0]
    assert retry["is_error"] and "invalid verdict" in retry["content"]
    assert out.usage.calls == 4 and out.usage.web_searches == 1 and out.usage.input_tokens == 4800
    assert out.usage.cost_usd == pytest.approx(4800 * 3e-6 + 1200 * 15e-6 + 0.01)


def test_related_work_is_refused_before_any_search(inputs):
    tools = ToolBox(inputs=inputs)
    text, err = asyncio.run(tools.call("read_author_related_work", {}))
    assert err and "search for prior work first" in text


def test_anthropic_429_is_retried_with_backoff_then_succeeds(inputs, rubric):
    script = Script([
        (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "Number of requests exceeded"}},
         {"retry-after-ms": "5"}),
        (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, {"retry-after-ms": "5"}),
        (200, anthropic_message(SEARCH + [tool_use("submit_verdict", verdict_input(), "toolu_01")], searches=1), {}),
    ])
    r = runner(inputs, rubric, {"anthropic": anthropic_client(script)})
    out = asyncio.run(r.run_one(r.task(CLAUDE, "primary", "claude")))
    assert out.verdict is not None and len(script.requests) == 3


def test_anthropic_persistent_errors_give_no_verdict_not_a_zero(inputs, rubric):
    err = (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad model"}}, {})
    r = runner(inputs, rubric, {"anthropic": anthropic_client(Script([err]))})
    out = asyncio.run(r.run_one(r.task(CLAUDE, "primary", "claude")))
    assert out.verdict is None and "bad model" in out.error


# --- OpenAI Chat Completions wire format ---------------------------------------------------------------------
def chat_completion(calls=None, content=None, i=1000, o=200):
    msg = {"role": "assistant", "content": content, "refusal": None}
    if calls:
        msg["tool_calls"] = [{"id": f"call_{n}", "type": "function",
                              "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
                             for n, (name, args) in enumerate(calls)]
    return {"id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG", "object": "chat.completion", "created": 1764662400,
            "model": "gpt-5-2025-08-07", "choices": [{"index": 0, "message": msg, "logprobs": None,
                                                      "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o}}


# --- OpenAI Responses API wire format ------------------------------------------------------------------------
def responses_reply(calls=(), text=None, searches=(), i=1000, o=200, status="completed", reason=None):
    """A Responses API ``response`` object: web_search_call items, a message, function_call items."""
    output = [{"type": "web_search_call", "id": f"ws_{n}", "status": "completed",
               "action": {"type": "search", "query": q,
                          "sources": [{"type": "url", "url": "https://arxiv.org/abs/2306.14048"}]}}
              for n, q in enumerate(searches)]
    if text is not None:
        output.append({"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    output += [{"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": name, "status": "completed",
                "arguments": args if isinstance(args, str) else json.dumps(args)} for n, (name, args) in enumerate(calls)]
    return {"id": "resp_68af4030592c81938ec0a5fbab4a3e9f", "object": "response", "created_at": 1764662400,
            "status": status, "model": "gpt-5-2025-08-07", "output": output, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "error": None,
            "incomplete_details": {"reason": reason} if reason else None,
            "usage": {"input_tokens": i, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": o,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": i + o}}


def test_openai_responses_server_web_search_5xx_and_bad_json_retried(inputs, rubric):
    script = Script([
        (500, {"error": {"message": "The server had an error", "type": "server_error"}}, {"retry-after-ms": "5"}),
        (200, responses_reply([("prior_art_search", {"query": "attention trend extrapolation", "k": 3})],
                              searches=["heavy hitter attention eviction"]), {}),
        (200, responses_reply([("submit_verdict", '{"scores": {"novelty": ')]), {}),  # truncated JSON
        (200, responses_reply([("submit_verdict", verdict_input(novelty=3))]), {}),
    ])
    r = runner(inputs, rubric, {"openai": openai_client(script)})
    out = asyncio.run(r.run_one(r.task(GPT, "primary", "gpt")))
    assert out.verdict is not None and out.verdict.score("novelty") == 3 and out.error is None
    assert out.invalid_outputs and "not valid JSON" in out.invalid_outputs[0]
    web = out.tool_calls[0]
    assert web.name == "web_search" and web.server_side and "2306.14048" in web.result
    assert out.searches == ["heavy hitter attention eviction"] and out.usage.web_searches == 1
    body = script.requests[1]
    assert script.requests[1] == script.requests[0]  # the 500 was retried with the same request
    assert "temperature" not in body and body["store"] is False  # gpt-5 accepts only its default temperature
    assert {"type": "web_search"} in body["tools"] and "web_search.action.sources" not in body["include"]
    assert "web_search_call.action.sources" in body["include"] and body["instructions"].startswith("You review")
    functions = {t["name"] for t in body["tools"] if t["type"] == "function"}
    assert "web_search" not in functions and {"submit_verdict", "search_log"} <= functions  # the server searches
    follow = script.requests[2]["input"]
    assert [i.get("type") for i in follow[1:4]] == ["web_search_call", "function_call", "function_call_output"]
    assert follow[3]["call_id"] == "call_0" and "short_name" in follow[3]["output"]
    assert out.usage.cost_usd == pytest.approx(3000 * 1.25e-6 + 600 * 10e-6 + 0.01)


def test_openai_json_schema_output_reads_the_verdict_from_the_text(inputs, rubric):
    spec = GPT.model_copy(update={"output": "json_schema"})
    script = Script([(200, responses_reply(text=json.dumps(verdict_input(novelty=1)),
                                           searches=["token eviction attention trend"]), {})])
    r = runner(inputs, rubric, {"openai": openai_client(script)})
    out = asyncio.run(r.run_one(r.task(spec, "primary", "gpt")))
    assert out.verdict is not None and out.verdict.score("novelty") == 1
    body = script.requests[0]
    assert body["text"]["format"]["type"] == "json_schema" and body["tools"] == [{"type": "web_search"}]
    assert "The verdict's JSON Schema" in body["instructions"] and "Prior work the arena retrieved" in \
        body["input"][0]["content"]


def test_the_search_rule_sends_a_verdict_back_once(inputs, rubric):
    """Submitted before any web search and leaving two citations unchecked: sent back once with both reasons;
    the second submission (after a search) is recorded, and the outcome lists the reminder and the search."""
    partial = verdict_input()
    partial["citations_checked"] = partial["citations_checked"][:1]
    script = Script([(200, responses_reply([("submit_verdict", partial)]), {}),
                     (200, responses_reply([("submit_verdict", verdict_input())], searches=["A2SF forgetting"]), {})])
    r = runner(inputs, rubric, {"openai": openai_client(script)})
    out = asyncio.run(r.run_one(r.task(GPT, "primary", "gpt")))
    assert out.verdict is not None and len(script.requests) == 2
    assert len(out.reminders) == 1 and "before any web search" in out.reminders[0]
    assert "2407.20485" in out.reminders[0] and "2602.03203" in out.reminders[0]
    back = script.requests[1]["input"][-1]
    assert back["type"] == "function_call_output" and back["output"].startswith("verdict not recorded")
    assert f"untrusted-{inputs.tag}" in back["output"]  # the citations are the submission's words: fenced
    assert out.searches == ["A2SF forgetting"] and len(out.citations_checked) == 3
    # only once: a judge that ignores the reminder is recorded as it is, the reminder on its outcome
    lazy = Script([(200, responses_reply([("submit_verdict", partial)]), {})] * 2)
    out = asyncio.run(runner(inputs, rubric, {"openai": openai_client(lazy)}).run_one(
        r.task(GPT, "primary", "gpt")))
    assert out.verdict is not None and len(lazy.requests) == 2 and out.searches == [] and out.reminders


# --- OpenAI-compatible servers: Chat Completions -------------------------------------------------------------
COMPAT = JudgeSpec(family="qwen", provider="openai_compatible", model="Qwen3-32B", base_url="http://localhost:8000/v1",
                   timeout=7.5, max_tokens=900)


def compat_client(script):
    return OpenAICompatibleJudge(base_url="http://localhost:8000/v1",
                                 http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(script)))


def test_openai_compatible_turns_servers_accept_client_search_and_no_key(inputs, rubric, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    script = Script([
        (200, chat_completion([("web_search", {"query": "heavy hitter attention eviction"}),
                               ("prior_art_search", {"query": "attention trend extrapolation", "k": 3})]), {}),
        (200, chat_completion(content="Let me think about it."), {}),
        (200, chat_completion([("submit_verdict", verdict_input())]), {}),
    ])
    arxiv = httpx.MockTransport(lambda req: httpx.Response(200, text=ARXIV_ATOM)
                                if req.url.host == "export.arxiv.org" else httpx.Response(404))
    r = runner(inputs, rubric, {"openai_compatible": compat_client(script)},
               web=lambda: WebSearch(client=httpx.AsyncClient(transport=arxiv), use_ddgs=False))
    out = asyncio.run(r.run_one(r.task(COMPAT, "primary", "qwen")))
    assert out.verdict is not None and out.usage.cost_usd == 0.0
    web = out.tool_calls[0]
    assert web.name == "web_search" and not web.server_side and "Heavy-Hitter Oracle" in web.result
    assert f"untrusted-{inputs.tag}" in web.result  # web pages are fenced like the submission
    first, second, third = script.requests
    assert first["max_tokens"] == 900 and first["temperature"] == 0.0 and "tool_choice" not in first
    assert {t["function"]["name"] for t in first["tools"]} >= {"web_search", "submit_verdict", "search_log"}
    assistant = [m for m in second["messages"] if m["role"] == "assistant"][0]
    assert assistant["content"] == "" and len(assistant["tool_calls"]) == 2  # "" not null: servers reject null
    assert [m["tool_call_id"] for m in second["messages"] if m["role"] == "tool"] == ["call_0", "call_1"]
    assert third["messages"][-1] == {"role": "user", "content": "Call submit_verdict now with your verdict."}


def test_openai_compatible_json_schema_mode_and_a_verdict_wrapped_in_prose(inputs, rubric):
    spec = COMPAT.model_copy(update={"output": "json_schema", "web_search": False})
    wrapped = "Here is my verdict:\n```json\n" + json.dumps(verdict_input(novelty=4)) + "\n```"
    script = Script([(200, chat_completion(content="I think it is good."), {}),
                     (200, chat_completion(content=wrapped), {})])
    r = runner(inputs, rubric, {"openai_compatible": compat_client(script)})
    out = asyncio.run(r.run_one(r.task(spec, "primary", "qwen")))
    assert out.verdict is not None and out.verdict.score("novelty") == 4 and len(out.invalid_outputs) == 1
    body = script.requests[0]
    assert body["response_format"]["type"] == "json_schema" and "tools" not in body
    assert body["response_format"]["json_schema"]["schema"]["required"][0] == "scores"
    assert script.requests[1]["messages"][-1]["content"].startswith("invalid verdict")


def test_max_context_cuts_fenced_bodies_and_keeps_every_fence(inputs, rubric):
    spec = COMPAT.model_copy(update={"max_context": 3000, "max_tokens": 500})
    script = Script([(200, chat_completion([("submit_verdict", verdict_input())]), {})])
    r = runner(inputs, rubric, {"openai_compatible": compat_client(script)})
    asyncio.run(r.run_one(r.task(spec, "primary", "qwen")))
    user = script.requests[0]["messages"][1]["content"]
    full = r.task(spec, "primary", "qwen").user
    assert len(user) < len(full) and "characters cut to fit the context" in user
    assert user.count(f"<untrusted-{inputs.tag} ") == full.count(f"<untrusted-{inputs.tag} ")
    assert user.count(f"</untrusted-{inputs.tag}>") == full.count(f"</untrusted-{inputs.tag}>")


# --- the panel: third judge and replay ------------------------------------------------------------------------
SEARCH = [{"type": "server_tool_use", "id": "srvtoolu_9", "name": "web_search", "input": {"query": "KV eviction"}},
          {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_9", "content": []}]


def split_scripts(claude_novelty, gpt_novelty, tie_novelty):
    claude = Script([(200, anthropic_message(SEARCH + [tool_use("submit_verdict", verdict_input(claude_novelty), "t1")],
                                             searches=1), {}),
                     (200, anthropic_message(SEARCH + [tool_use("submit_verdict", verdict_input(tie_novelty), "t2")],
                                             searches=1), {})])
    gpt = Script([(200, responses_reply([("submit_verdict", verdict_input(gpt_novelty))], searches=["q"]), {}),
                  (200, responses_reply([("submit_verdict", verdict_input(tie_novelty))], searches=["q"]), {})])
    return claude, gpt


@pytest.mark.parametrize("author, third", [("anthropic", "openai"), ("openai", "anthropic")])
def test_a_split_calls_a_third_judge_of_the_family_that_did_not_write_it(inputs, rubric, tmp_path, author, third):
    claude, gpt = split_scripts(4, 1, 2)
    store = Store(tmp_path / "s.sqlite")
    r = runner(inputs, rubric, {"anthropic": anthropic_client(claude), "openai": openai_client(gpt)}, store, author)
    panel = ResolvedPanel(judges=[CLAUDE, GPT], local=False, note="api")
    result = asyncio.run(r.run(panel))
    assert result.tie_break.needed and result.tie_break.family == third
    assert "novelty" in result.tie_break.reasons[0]
    roles = [(o.family, o.role) for o in result.outcomes]
    assert roles == [("anthropic", "primary"), ("openai", "primary"), (third, "tie_break")]
    assert len((gpt if third == "openai" else claude).requests) == 2
    assert len((claude if third == "openai" else gpt).requests) == 1
    final = decide([o.verdict for o in result.outcomes], rubric, author, corpus=result.corpus)
    assert final.status == "complete" and final.scores["novelty"] == 2  # the middle of 4, 1, 2
    # a rerun replays all three runs from the store: no request reaches either API
    claude2, gpt2 = split_scripts(0, 0, 0)
    r2 = runner(inputs, rubric, {"anthropic": anthropic_client(claude2), "openai": openai_client(gpt2)}, store, author)
    again = asyncio.run(r2.run(panel))
    assert all(o.cached for o in again.outcomes) and not claude2.requests and not gpt2.requests
    assert [o.verdict.score("novelty") for o in again.outcomes] == [4, 1, 2]
    # `review --fresh judges`: every judge is asked again, and the new answers are what counts
    claude3, gpt3 = split_scripts(3, 3, 3)
    r3 = runner(inputs, rubric, {"anthropic": anthropic_client(claude3), "openai": openai_client(gpt3)}, store, author)
    r3.replay = False
    fresh = asyncio.run(r3.run(panel))
    assert not any(o.cached for o in fresh.outcomes) and claude3.requests and gpt3.requests
    assert [o.verdict.score("novelty") for o in fresh.outcomes] == [3, 3]  # they agree now: no third judge


def test_a_flag_whose_quote_is_not_in_the_inputs_is_dropped(inputs, rubric):
    real = {"flag": "MISSING_ATTRIBUTION", "quote": "Score = level + 4 * trend", "location": "DESCRIPTION.md:15",
            "explanation": "x"}
    fake = {"flag": "FABRICATED_EVIDENCE", "quote": "we reach 99.9% on RULER", "location": "DESCRIPTION.md:3",
            "explanation": "y"}
    claude = Script([(200, anthropic_message(SEARCH + [tool_use("submit_verdict", verdict_input(flags=[real, fake]), "t")],
                                             searches=1), {})])
    gpt = Script([(200, responses_reply([("submit_verdict", verdict_input(flags=[real, fake]))], searches=["q"]), {})])
    r = runner(inputs, rubric, {"anthropic": anthropic_client(claude), "openai": openai_client(gpt)})
    result = asyncio.run(r.run(ResolvedPanel(judges=[CLAUDE, GPT], local=False, note="api")))
    final = decide([o.verdict for o in result.outcomes], rubric, "anthropic", corpus=result.corpus)
    assert [f.flag for f in final.standing_flags] == ["MISSING_ATTRIBUTION"]
    assert {d.claim.flag for d in final.dropped_flags} == {"FABRICATED_EVIDENCE"}


def test_without_keys_the_local_panel_runs_and_says_so():
    panel = Panel()
    local = resolve_panel(panel, env={})
    assert local.local and [(j.provider, j.role) for j in local.judges] == [
        ("evidence", "primary"), ("local", "advisory"), ("local", "advisory")]
    assert "OFFLINE" in local.note and "ANTHROPIC_API_KEY" in local.note and "OPENAI_API_KEY" in local.note
    api = resolve_panel(panel, env={"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "b"})
    assert not api.local and [j.provider for j in api.judges] == ["anthropic", "openai"]
    bare = resolve_panel(panel.model_copy(update={"offline_advisors": False}), env={})
    assert [(j.provider, j.role) for j in bare.judges] == [("evidence", "primary")] and "without advisors" in bare.note
    assert resolve_panel(panel.model_copy(update={"offline_advisors": False}),
                         env={"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "b"}).judges == api.judges  # keys: unchanged


def test_verdict_schema_follows_the_rubric(rubric):
    from reviewbench.judges.schema import verdict_schema

    s = verdict_schema(rubric)
    crit = s["properties"]["scores"]["properties"]
    assert crit["novelty"]["properties"]["score"]["maximum"] == 5 and crit["soundness"]["properties"]["score"]["maximum"] == 3
    assert s["properties"]["flags"]["items"]["properties"]["flag"]["enum"] == [f.id for f in rubric.flags]


def test_prior_submission_and_log_search_tools(inputs):
    tools = ToolBox(inputs=inputs)
    text, err = asyncio.run(tools.call("read_prior_submission", {"submission_id": "agent2-003"}))
    assert not err and "agent2-003/method.py" in text and f"untrusted-{inputs.tag}" in text
    text, err = asyncio.run(tools.call("read_prior_submission", {"submission_id": "agent3-001"}))
    assert err and "agent2-003" in text  # only earlier submissions, and it says which exist
    text, err = asyncio.run(tools.call("search_log", {"text": "huggingface.co"}))
    assert not err and ".jsonl:" in text
    assert JudgeVerdict  # imported for the type; silence linters
