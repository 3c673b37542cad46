"""The gate's answers for programs piped into Python are kept by ``number_key`` (the number words of the
command set to 0): a differential test, on generated commands and states, that a command gets the answer the
gate gives it computed afresh, whatever other command with the same key came before."""

import random
import re

import pytest

from reviewbench.arena import Rules
from reviewbench.logs.events import Event
from reviewbench.logs.rules import Auditor, AgentState, number_key

CWDS = ["/arena/agents/agent1", "/arena/agents/agent1/exp", "/tmp"] * 4 + ["/arena", "/arena/data"]
PIECES = [  # lines of a program, with number words next to what the gate reads
    "import torch", "SEED = {n}", "x = torch.randn({n}, {n})", "budget = {f}", "print(f'mean={{x.mean():.4f}}')",
    "rows = [{f}, {f}, {n}]", "open('results/run_{n}.json', 'w')", "k = '{hex}'", "k = 'x {hex} y'", "s = '{n} {n}'",
    "p = '/tmp/a {n}/b.py'", "p = '/tmp/b {n} c.py'", "p = '/tmp/b {n} c.py {n}'", "p = 'data {n} /x.txt'",
    "p = '/arena/agents/agent1/data {n} /x.txt'", "open('/arena/agents/agent1/{n}.py')", "p = 'test {n}'",
    "'''docstring {n} with /tmp/b {n} c.py and 1:{n}'''", '"""see /tmp/x {n} and https: {n}"""', "# comment {n}",
    "q = '.. {n}'", "q = '%d {n}' % {n}", "q = '{{x}} {n}'.format(x={n})", "t = '{n}.{n}/x'", "y = {n}",
    "z = '{n}'", "v = ' {n}'", "p = '/tmp/run{n}/b.py'", "'''see {n}/x.py here'''", "w = '{n}\\t{n}'", "k = 'aGVsbG8gd29ybGQ {n}'",
] * 3 + ["open('/arena/data/test/{n}.jsonl')", "p = '/arena/data/te' + 'st {n}'", "import os",
         "os.environ['SEED'] = '{n}'", "u = 'hf.co {n}'", "import harness", "data = open(sys.argv[{n}]).read()"]
WRITES = ["/arena/agents/agent1/exp/run.py", "/arena/agents/agent1/5.py", "/tmp/a 5/b.py", "/tmp/check.py",
          "/tmp/b 5 c.py", "/arena/agents/agent1/data 7 /x.txt", "/tmp/b 7 c.py 42",
          "/tmp/run5/b.py", "/arena/agents/agent1/5/x.py", "/arena/agents/agent1/exp/5/x.py"]


def _num(rng: random.Random, kind: str) -> str:
    if kind == "n":
        return str(rng.choice([5, 7, 5, 7, 42, 3990, 12345678, 1234567890123456, 9876543210987654]))
    if kind == "f":
        return rng.choice(["0.1", "0.25", "1.5", "10.0", "3.14159"])
    return "".join(rng.choice("0123456789abcdef") for _ in range(rng.choice([8, 16, 20])))


def _program(rng: random.Random) -> str:
    lines = [rng.choice(PIECES) for _ in range(rng.randint(1, 3))]
    text = "\n".join(lines)
    return text.replace("{n}", "\0n").replace("{f}", "\0f").replace("{hex}", "\0h").replace("{{", "{").replace(
        "}}", "}")


def _fill(rng: random.Random, template: str) -> str:
    out = []
    for i, part in enumerate(template.split("\0")):
        if i:
            kind = {"n": "n", "f": "f", "h": "hex"}[part[0]]
            out.append(_num(rng, kind) + part[1:])
        else:
            out.append(part)
    return "".join(out)


def _variant(rng: random.Random, cmd: str) -> str:
    """``cmd`` with the digits of some of its number words changed (the same ``number_key``)."""
    def change(m: re.Match[str]) -> str:
        if rng.random() < 0.3:
            return m.group()
        return "".join(rng.choice("0123456789") if c.isdigit() else c for c in m.group())
    return re.sub(r"(?<=\s)[0-9][0-9.]*(?!\S)", change, cmd)


def _heredoc(rng: random.Random, body: str) -> str:
    head = rng.choice(["python - <<'EOF'", "python3 - <<EOF", "cd /arena/agents/agent1 && python - <<'EOF'",
                       "python - <<'EOF'",
                       "cd /arena/data && python - <<'PY'", "python - <<\"EOF\""])
    delim = "PY" if "PY" in head else "EOF"
    return f"{head}\n{body}\n{delim}"


@pytest.mark.parametrize("seed", range(20))
def test_number_key_keeps_the_gate_answer(seed):
    rng = random.Random(seed)
    cached = Auditor(Rules())
    fresh = Auditor(Rules())
    states: dict[bool, int] = {}
    # files the agents wrote before (literals may name them), some with paths the normalisation must not touch;
    # all before the commands (the verdicts the relevance test keeps are kept across a new file: the answers of a
    # gate with a cache and of one without would differ by that, not by the keys)
    for agent in ("agent1", None):
        for path in rng.sample(WRITES, rng.randint(0, 4)):
            for aud in (cached, fresh):
                aud._counter += 1
                aud.state.setdefault(agent, AgentState()).write(path, "x = 1", aud._counter)
    for step in range(500):
        agent = rng.choice(["agent1", None])
        cwd = rng.choice(CWDS)
        template = _heredoc(rng, _program(rng))
        cmds = []
        for _ in range(3):  # other numbers anywhere (other keys, mostly), and number words changed (the same key)
            cmd = _fill(rng, template)
            cmds += [cmd, _variant(rng, cmd), _variant(rng, cmd)]
            assert number_key(cmds[-1]) == number_key(cmd)
        rng.shuffle(cmds)
        for c in cmds:
            ev = Event(source=f"t:{step}", tool="Bash", kind="shell", agent=agent, cwd=cwd, command=c)
            st_c = cached.state.setdefault(agent, AgentState())
            st_f = fresh.state.setdefault(agent, AgentState())
            want = fresh._may_matter(ev, st_f)  # the gate computed afresh, no cache
            got = cached.may_matter(ev, st_c)
            states[got] = states.get(got, 0) + 1
            assert got == want, (c, cwd, agent)
    assert len(states) == 2  # both answers met


def test_number_key_only_touches_number_words():
    assert number_key("python - <<'EOF'\nSEED = 42\nx = f(5, 7)\nEOF") == "python - <<'EOF'\nSEED = 00\nx = f(5, 7)\nEOF"
    assert number_key("a 1.5 b=2 c/3 4/d 5x 2>&1 -9 0x1f") == "a 0.0 b=2 c/3 4/d 5x 2>&1 -9 0x1f"


def test_number_words_kept_exact_near_numbered_paths():
    """A written file whose path holds a digit after a blank (or a name starting with a digit) turns the
    normalisation off for that agent: a literal holding the number may name it."""
    aud = Auditor(Rules())
    st = AgentState()
    aud.state["agent1"] = st
    st.write("/tmp/a 5/b.py", "x = 1", 1)
    assert st.numbered
    st2 = AgentState()
    st2.write("/arena/agents/agent1/exp/run_5.py", "x = 1", 1)
    assert not st2.numbered
    st2.write("/arena/agents/agent1/5.py", "x = 1", 2)
    assert st2.numbered


def test_number_key_is_the_regex_definition():
    """The bytes.find path of long ASCII commands gives what ``_NUMBER_WORD.sub`` gives."""
    from reviewbench.logs.rules import _NUMBER_WORD, _zeros
    rng = random.Random(0)
    alpha = " \t\n\x0b\x0c\r\x1c\x1f0123456789..ab/=(),;'\"\xa0"
    for _ in range(3000):
        c = "".join(rng.choice(alpha) for _ in range(rng.choice([rng.randint(0, 20), rng.randint(250, 400)])))
        if rng.random() < 0.7:
            c = c.replace("\xa0", "x")
        assert number_key(c) == _NUMBER_WORD.sub(_zeros, c), repr(c)
