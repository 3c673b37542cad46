"""A port is disguised: its names made opaque, ``x.sum(1)`` written ``torch.sum(x, 1)`` (or back), ``a @ b`` as
``torch.matmul(a, b)``, a softmax spelled another way. None of it changes what the code computes, so none may change
what the reader reads: the matrix runs every disguise over every method the project holds (the baselines, the
reference members of the index, the ports and honest neighbours of the tests, the public implementations). It found
the reader reading a dimension at the wrong position in ``torch.f(x, ...)`` (``torch.repeat_interleave(k, g, 0)``
read as blocks, ``torch.mean(a, 0)`` as no head average), a module call's first argument taken for its receiver
(``torch.masked_fill``, ``torch.max(x)``, ``torch.exp``, ``torch.clamp_min`` around a norm) and ``torch.reshape(x,
(h, -1))`` as no flattening. The second round of disguises (``a += b`` spelt out, ``masked_fill`` as ``torch.where``,
``amax`` as ``max(...).values``, a mean as a sum over the size, ``F.`` spelt ``torch.nn.functional.``, torch's
functions imported by name, nested calls computed into temporaries on the line before) found the reader reading a
window's start, a power iteration's vector and future RoPE positions only where they were written inline
(``arange(max(0, n - w), n)``, ``bmm(x.unsqueeze(1), a)``, ``rope_angles(arange(...))``), not through a name bound
the line before. The third round (comparisons mirrored, ``unsqueeze`` as indexing with None, ``size`` as ``shape``,
``clamp_min`` as ``clamp(min=)``, the softmax written out, each assigned call moved into a helper of its own) found
25 of the methods read otherwise through one-line helpers (a window's start, a pooling's input, a span's bounds lost at
the helper's boundary): helpers whose body is one return are read inline now, and ``x[0:n]`` / ``x[t - w:t]`` are the
first and the last tokens as ``x[:n]`` / ``x[t - w:]`` are. Pairs of statements moved into helpers that return both
found 18 read otherwise: a helper's parameters were matched to the call's arguments with every parameter named
``self`` or ``cls`` dropped, wherever it stood; only a method's own first parameter is skipped now. The fifth round
(``topk`` as a descending ``argsort``, ``topk`` of the negated score, dimensions passed positionally, a method called on
a call's result computed into a temporary first) found a unit vector whose norm was named the line before read as a
norm score, one head's reduction named the line before read as a reduction over the heads, and a power iteration's
product named before its reshape unread."""

import functools
from pathlib import Path

import pytest

from reviewbench.evidence.computation import computation
from tests.disguise import DISGUISES
from tests.renaming import names_by_string

ROOT = Path(__file__).resolve().parent.parent
METHODS = sorted({*ROOT.glob("tests/data/**/method.py"), *ROOT.glob("tests/data/*/*.py"),
                  *ROOT.glob("harness/methods/*.py"), *ROOT.glob("harness/methods/priorart/*.py"),
                  *ROOT.glob("calibration/ports/*.py")} - {p for p in ROOT.glob("harness/methods/**/__init__.py")})


@functools.lru_cache(maxsize=None)  # each method's plain reading once, whatever the number of disguises
def _read(path: Path) -> tuple[str, frozenset[str]]:
    src = path.read_text()
    return src, frozenset(computation(src).features)


@pytest.mark.parametrize("disguise", sorted(DISGUISES))
def test_no_disguise_changes_what_the_reader_reads(disguise):
    apply = DISGUISES[disguise]
    changed = []
    for path in METHODS:
        src, plain = _read(path)
        if disguise == "renamed" and names_by_string(src):
            continue  # getattr(self, "_x"): the name is data there, renaming it would change the code
        seen = set(computation(apply(src)).features)
        if seen != plain:
            changed.append(f"{path.relative_to(ROOT)}: lost {sorted(plain - seen)}, gained {sorted(seen - plain)}")
    assert not changed, "\n".join(changed)


def test_the_matrix_covers_the_project_s_methods_and_each_disguise_changes_the_text():
    """Each disguise rewrites the code (not only its layout) of several of the methods it runs over."""
    import ast

    assert len(METHODS) > 180
    sources = [p.read_text() for p in METHODS]
    layouts = [ast.unparse(ast.parse(s)) for s in sources]
    for name, apply in DISGUISES.items():
        assert sum(apply(s) != layout for s, layout in zip(sources, layouts)) >= 3, name
