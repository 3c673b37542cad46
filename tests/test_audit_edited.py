"""A new version of a script judged inert before is judged by what changed (``static.python._edited_inert``).

The verdict of each version, judged against the earlier inert version of the same file (its changed lines,
found by the edits or by comparing the texts), must be the verdict the whole-text judgement gives
(``_python_inert`` without a path: every line looked up, long strings and the harness import looked for in
the whole text) after the same history. Random histories of writes and edits hide triple quotes, a harness
import split over lines, a protected path in a docstring, payloads and blank lines at the changed lines.
"""

from __future__ import annotations

import random

import pytest

from reviewbench.arena import Rules
from reviewbench.logs.rules import AgentState, Auditor
from reviewbench.logs.static.python import _common_affixes, _python_inert, inert_verdict

HOME = "/arena/agents/agent1"

LINES = [
    "import json", "import os", "x = 1", "y = x + 2", "def f(a: int) -> int:", "    return a * 2", "",
    "    ", "# a comment from the harness", "print(f(3))", 'NOTE = """', '"""', "'''", 'doc = """one line"""',
    "results go to results/", "/arena/data/test/niah_single.jsonl", "see /arena/data/test for the split",
    "import harness", "from harness import evaluate", "import os, \\", "    harness", "from \\", "harness.run()",
    "import", "from", 'path = "results/run.json"', "path = os.path.join(ROOT, 'data', 'test')",
    "ROOT = 'arena'", "print(open('/arena/data/test/a.jsonl').read())", "os.environ['HF_HUB_OFFLINE'] = '1'",
    "url = 'https://example.com/x'", "blob = 'aGVsbG8gd29ybGQgdGhpcyBpcyBhIHBheWxvYWQ='", 's = "a\\x41b"',
    "    '''", '    """Docstring: reads results/ only."""', "p = 'x' + '/' + 'y'", "q = '..'", 'w = "~/x"',
    "print('done')", "for i in range(3):", "    print(i)", '"""text with a/b: c"""', 'a = """', "b = '''x",
]


def _text(rng: random.Random, n: int) -> str:
    return "\n".join(rng.choice(LINES) for _ in range(n)) + ("\n" if rng.random() < 0.7 else "")


def _edit(rng: random.Random, text: str) -> tuple[str, str]:
    """An (old, new) pair that ``AgentState.edit`` applies: a piece of the text (usually a line or part of one)
    replaced by another piece, a line, quotes, a backslash, nothing."""
    if not text or rng.random() < 0.05:
        return "", rng.choice(LINES)
    a = rng.randrange(len(text))
    b = min(len(text), a + rng.choice([1, 2, 3, 5, 10, 30, 80]))
    old = text[a:b]
    new = rng.choice(["", "\n", '"', '"""', "'''", "\\", " ", "\n\n", "harness", "import ", "from ", "x",
                      "/arena/data/test", "0.5", "  # v2", "\n" + rng.choice(LINES) + "\n", rng.choice(LINES)])
    return old, (new + old if rng.random() < 0.3 else new)


@pytest.mark.parametrize("seed", range(40))
def test_edited_versions_are_judged_as_the_whole_text_is(seed):
    rng = random.Random(seed)
    fast, slow = Auditor(Rules()), Auditor(Rules())
    st_fast, st_slow = AgentState(), AgentState()
    rel_fast, rel_slow = fast._relevance("agent1", st_fast), slow._relevance("agent1", st_slow)
    paths = [f"{HOME}/exp/a.py", f"{HOME}/exp/b.py"]
    cwds = [HOME, "/tmp", "/arena/agents/agent1/exp"]
    counter = 0
    judged = 0
    for _ in range(60):
        path = rng.choice(paths)
        counter += 1
        r = rng.random()
        current = st_fast.files.get(path)
        if current is None or r < 0.15:  # written whole: new text, or the last one with a line changed
            if current is not None and r < 0.1:
                lines = current.split("\n")
                lines[rng.randrange(len(lines))] = rng.choice(LINES)
                text = "\n".join(lines)
            else:
                text = _text(rng, rng.randint(3, 25))
            st_fast.write(path, text, counter)
            st_slow.write(path, text, counter)
        else:
            edits = [_edit(rng, current) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
            st_fast.edit(path, edits, counter)
            st_slow.edit(path, edits, counter)
        assert st_fast.files[path] == st_slow.files[path]
        if rng.random() < 0.6:  # run it
            code = st_fast.files[path]
            cwd = rng.choice(cwds)
            want = _python_inert(code, cwd, rel_slow)
            got = inert_verdict(code, cwd, rel_fast, path, st_fast.changes.get(path))
            st_fast.judged(path, code)
            assert got == want, (seed, path, cwd, code)
            assert rel_fast.inert_lines == rel_slow.inert_lines
            judged += 1
    assert judged


@pytest.mark.parametrize("seed", range(20))
def test_changes_followed_through_edits_bound_what_differs(seed):
    """The common start and end ``AgentState.edit`` keeps are ones the texts share (not longer than the true
    ones, within both texts)."""
    rng = random.Random(seed)
    st = AgentState()
    path = f"{HOME}/exp/a.py"
    st.write(path, _text(rng, 20), 1)
    st.judged(path, st.files[path])
    for k in range(30):
        st.edit(path, [_edit(rng, st.files[path]) for _ in range(rng.choice([1, 2]))], k + 2)
        known = st.changes.get(path)
        assert known is not None and known[1] is st.files[path]
        base, text, start, end = known
        true_start, true_end = _common_affixes(base, text)
        assert start <= true_start and start + end <= min(len(base), len(text))
        assert base[:start] == text[:start] and base[len(base) - end:] == text[len(text) - end:]
        if rng.random() < 0.3:
            st.judged(path, text)


def test_common_affixes_are_the_longest():
    rng = random.Random(7)
    for _ in range(500):
        a = "".join(rng.choice("ab\n") for _ in range(rng.randint(0, 30)))
        b = "".join(rng.choice("ab\n") for _ in range(rng.randint(0, 30)))
        start, end = _common_affixes(a, b)
        n = min(len(a), len(b))
        assert a[:start] == b[:start] and (start == n or a[start] != b[start])
        assert start + end <= n and a[len(a) - end:] == b[len(b) - end:]
        assert start + end == n or a[len(a) - end - 1] != b[len(b) - end - 1]


@pytest.mark.parametrize("first, edit", [
    ("import os, \\\nx = 1\n    harness\n", ("x = 1\n", "")),  # a continued import now reaches "harness"
    ("import\nx\nharness\n", ("x", "")),  # only blanks left between "import" and "harness"
    ("import\nx\nharness\n", ("x", "  ")),
    ("import os, y\n    harness\n", ("y", "y \\")),  # a backslash continues the import
    ("y = 2\nimport os, y\n    harness\n", ("y = 2\nimport os, y", "import os, y \\")),
    ("import os, \\\n    y, \\\nz\n    harness\n", ("z", "z \\")),  # only the backslash is new
    ("z = 1\nharness\n", ("z = 1", "from")),
    ("z = 1\nharness\n", ("z = 1", "import")),
    ('x = 1\nNOTE = "a"\n/arena/data/test/a.jsonl\n"""\n', ("x = 1", '"""')),  # a long string now holds the path
    ('x = 1\nNOTE = """\nresults/\n"""\n', ("results/", "/arena/data/test/a.jsonl")),  # a new path in one
    # triple quotes taken away pair the others otherwise: a path falls inside a long string
    ('a = """\n"""\nb = """\n"""\n/arena/data/test/a.jsonl\n"""\n', ('a = """', "a = 1")),
    ('x = 1\nprint(x)\n', ("print(x)", "print(open('/arena/data/test/a.jsonl').read())")),
])
def test_an_edit_that_makes_a_script_matter_is_seen(first, edit):
    fast, slow = Auditor(Rules()), Auditor(Rules())
    st_fast, st_slow = AgentState(), AgentState()
    rel_fast, rel_slow = fast._relevance("agent1", st_fast), slow._relevance("agent1", st_slow)
    path = f"{HOME}/exp/a.py"
    for st in (st_fast, st_slow):
        st.write(path, first, 1)
    assert inert_verdict(first, HOME, rel_fast, path, st_fast.changes.get(path)) is True
    assert _python_inert(first, HOME, rel_slow) is True
    st_fast.judged(path, first)
    for st in (st_fast, st_slow):
        st.edit(path, [edit], 2)
    code = st_fast.files[path]
    assert rel_fast.inert_texts  # (the first version is what the second is compared with)
    assert inert_verdict(code, HOME, rel_fast, path, st_fast.changes.get(path)) is False
    assert _python_inert(code, HOME, rel_slow) is False
