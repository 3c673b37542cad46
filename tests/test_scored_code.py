"""Reading method.py as it ran on the scored calls (``reviewbench.evidence.scored_code``): statements of which no
line ran are set aside in place; a record the method could have reached is not trusted."""

import ast
import textwrap

from reviewbench.evidence.scored_code import scored_code, untraced_reasons

# an environment probe picks the rule; the sandboxed, scored calls take the second branch
SRC = textwrap.dedent("""\
    import os
    import torch
    from harness import EvictionMethod, Keep


    def _spread(n, k):
        return torch.linspace(0, n - 1, k).long()


    class Two(EvictionMethod):
        def setup(self, model):
            try:
                self.host = os.stat("/etc/services").st_size > 0
            except OSError:
                self.host = False

        def select(self, view):
            if self.host:
                keep = _spread(view.keys.shape[1], view.budget)
                return Keep(tuple(keep for _ in range(view.keys.shape[0])))
            score = view.queries[:, -8:].softmax(-1).sum(1)
            k = min(view.budget, score.shape[-1])
            return Keep(tuple(score[h].topk(k).indices for h in range(score.shape[0])))
""")
RAN = [1, 2, 3, 6, 10, 11, 12, 13, 14, 15, 17, 18, 21, 22, 23]


def test_statements_that_never_ran_are_set_aside_with_their_lines_kept():
    r = scored_code(SRC, RAN)
    assert r.read == "as scored"
    assert [(s.first, s.last) for s in r.set_aside] == [(7, 7), (19, 19), (20, 20)]
    assert len(r.source.splitlines()) == len(SRC.splitlines())
    tree = ast.parse(r.source)
    assert "linspace" not in r.source and "_spread(" not in r.source.split("def _spread")[1]
    assert r.source.splitlines()[21] == SRC.splitlines()[21]  # what ran is untouched, line for line
    assert isinstance(tree, ast.Module)
    assert "3 statement(s)" in r.reason


def test_each_statement_that_never_ran_becomes_pass():
    src = "def f(x):\n    if x:\n        a = 1\n        b = 2\n    else:\n        a = 3\n    return a\n"
    r = scored_code(src, [1, 2, 6, 7])
    assert r.source == "def f(x):\n    if x:\n        pass\n        pass\n    else:\n        a = 3\n    return a\n"


def test_a_body_on_its_header_line_and_a_decorated_function():
    src = ("import functools\ndef g(x):\n    if x: return 1\n    else: return 2\n"
           "def h():\n    @functools.cache\n    def inner():\n        return 3\n    return 4\n")
    r = scored_code(src, [1, 2, 3, 5])
    ast.parse(r.source)
    assert "return 2" not in r.source and "else: pass" in r.source
    assert "cache" not in r.source and "return 3" not in r.source


def test_no_record_a_lost_trace_or_a_reachable_trace_reads_the_whole_file():
    assert scored_code(SRC, None).read == "whole"
    assert "stopped" in scored_code(SRC, None, trace_lost=True).reason
    assert scored_code(SRC, []).read == "whole"
    for reach in ("import sys\nsys.settrace(None)\n", "import gc\n", "f = getattr(torch, name)\n",
                  "import threading\n", "x = eval('1')\n", "from inspect import currentframe\n",
                  "import importlib\n", "t = __import__('s' + 'ys')\n", "y = x.__code__\n",
                  "torch.sys.__dict__['settrace'](None)\n", "from operator import attrgetter\n",
                  "import harness.methodhost as mh\n", "from harness import methodhost\n",
                  "f = view.keys.__class__.__dict__\n"):
        r = scored_code(SRC + reach, RAN)
        assert r.read == "whole" and "could reach" in r.reason, reach


def test_what_has_no_code_of_its_own_is_not_reported():
    src = 'def f():\n    """doc"""\n    global Z\n    y: int\n    pass\n    return 1\n'
    r = scored_code(src, [1, 6])
    assert r.set_aside == [] and r.source == src


def test_untraced_reasons_reads_names_attributes_imports_and_strings():
    tree = ast.parse("import os.path\nfrom concurrent.futures import ThreadPoolExecutor\n"
                     "getattr(sys, 'settrace')\nx = torch.stack([a])\nctx = get_context('fork')\n")
    assert untraced_reasons(tree) == ["ThreadPoolExecutor", "concurrent", "settrace"]  # a string is a name only
    # where it names an attribute
