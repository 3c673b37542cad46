import os
import re
from pathlib import Path

import pytest

from reviewbench.arena import BundleLimits
from reviewbench.bundle import load_bundle
from reviewbench.errors import BundleError
from tests.conftest import run_review

GOOD_METHOD = '''from harness import EvictionMethod, Keep


class Mine(EvictionMethod):
    """Keeps the newest tokens."""
    name = "mine"
    query_window = 4

    def select(self, view):
        return Keep.from_topk(view.positions.float(), view.budget)
'''
GOOD_DESCRIPTION = """# Mine

## Idea
Newest tokens matter.

## Method summary
Keep the most recent tokens.

## Relation to prior work
StreamingLLM without sinks.

## Evidence
None yet.

## Limitations
Forgets everything old.

## Builds on
StreamingLLM.
"""


def make_bundle(root: Path, name="agent1-009", method=GOOD_METHOD, description=GOOD_DESCRIPTION, **extra) -> Path:
    b = root / name
    b.mkdir(parents=True)
    if method is not None:
        (b / "method.py").write_text(method)
    if description is not None:
        (b / "DESCRIPTION.md").write_text(description)
    for fname, content in extra.items():
        path = b / fname.replace("__", ".")
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    return b


def test_good_bundle_loads_with_sections_class_and_hash(tmp_path):
    b = load_bundle(make_bundle(tmp_path, meta__toml='board = "A"\nsubmitted_at = 2026-11-01T00:00:00Z\n'))
    assert b.id == "agent1-009" and b.agent == "agent1" and b.seq == 9 and b.board == "A"
    assert b.method.candidate.name == "Mine" and b.method.candidate.attributes["query_window"] == 4
    assert b.method.candidate.hooks == ["select"]
    assert set(b.description.sections) == {"idea", "method_summary", "relation_to_prior_work", "evidence",
                                           "limitations", "builds_on"}
    assert b.description.section_text("builds_on") == "StreamingLLM."
    assert not [f for f in b.findings if f.severity != "info"]
    assert len(b.content_hash) == 64


def test_hash_ignores_line_endings_but_not_content(tmp_path):
    a = load_bundle(make_bundle(tmp_path / "a"))
    crlf = load_bundle(make_bundle(tmp_path / "b", method=GOOD_METHOD.replace("\n", "\r\n")))
    other = load_bundle(make_bundle(tmp_path / "c", method=GOOD_METHOD.replace("newest", "oldest")))
    assert a.content_hash == crlf.content_hash != other.content_hash


def test_missing_sections_are_findings_not_errors(tmp_path):
    b = load_bundle(make_bundle(tmp_path, description="# X\n\n## Idea\nsomething\n\n## Evidence\n\n"))
    codes = [(f.code, f.message) for f in b.findings]
    assert ("description.missing_section", "no 'Limitations' section") in codes
    assert ("description.empty_section", "section 'Evidence' is empty") in codes


def test_headings_inside_code_fences_are_not_sections(tmp_path):
    text = GOOD_DESCRIPTION.replace("Keep the most recent tokens.", "```\n## Limitations\nfake\n```")
    b = load_bundle(make_bundle(tmp_path, description=text))
    assert b.description.section_text("limitations") == "Forgets everything old."


@pytest.mark.parametrize("method, message", [
    ("def select(view):\n    return None\n", "no class subclasses EvictionMethod"),
    ("class A:\n    def select(self, view):\n        return None\n", "class A defines select but does not subclass it"),
    ("from harness.api import EvictionMethod\nclass A(EvictionMethod):\n    def select(self, v): pass\n"
     "class B(EvictionMethod):\n    def select(self, v): pass\n", "2 classes subclass EvictionMethod (A, B)"),
    ("from harness.api import EvictionMethod\nclass A(EvictionMethod):\n    def select(self, v): pass\n"
     "class B(A):\n    pass\n", "2 classes subclass EvictionMethod (A, B)"),
])
def test_exactly_one_interface_class_or_the_bundle_is_refused(tmp_path, method, message):
    """The harness loads exactly one EvictionMethod subclass: anything else is refused up front (exit 2)."""
    with pytest.raises(BundleError, match=re.escape(message)):
        load_bundle(make_bundle(tmp_path, method=method))


def test_subclassing_a_baseline_counts_as_the_interface(tmp_path):
    b = load_bundle(make_bundle(tmp_path, method="from harness.methods.snapkv import SnapKV\n"
                                                  "class Wider(SnapKV):\n    query_window = 64\n"))
    assert b.method.candidate is not None and b.method.candidate.name == "Wider"


def test_suspicious_imports_are_noted(tmp_path):
    b = load_bundle(make_bundle(tmp_path, method="import socket\n" + GOOD_METHOD))
    assert any(f.code == "method.suspicious_import" and "socket" in f.message for f in b.findings)


def test_method_is_never_imported(tmp_path):
    marker = tmp_path / "imported"
    code = f"open({str(marker)!r}, 'w').write('x')\n" + GOOD_METHOD
    load_bundle(make_bundle(tmp_path, method=code))
    assert not marker.exists()


@pytest.mark.parametrize("case", ["no_folder", "no_method", "no_description", "not_utf8", "binary", "too_big",
                                  "symlink_out", "syntax", "bad_meta_key", "bad_claims"])
def test_bad_bundles_are_refused_naming_the_file(tmp_path, case):
    outside = tmp_path / "secret.txt"
    outside.write_text("s")
    root = tmp_path / "sub"
    limits = BundleLimits()
    if case == "no_folder":
        path, culprit = root / "agent1-001", "agent1-001"
    elif case == "no_method":
        path, culprit = make_bundle(root, method=None), "method.py"
    elif case == "no_description":
        path, culprit = make_bundle(root, description=None), "DESCRIPTION.md"
    elif case == "not_utf8":
        path, culprit = make_bundle(root, notes__md=b"caf\xe9\n"), "notes.md"
    elif case == "binary":
        path, culprit = make_bundle(root, weights__bin=b"\x00\x01\x02"), "weights.bin"
    elif case == "too_big":
        path, culprit = make_bundle(root, big__txt="x" * 2000), "big.txt"
        limits = BundleLimits(max_file_bytes=1000)
    elif case == "symlink_out":
        path, culprit = make_bundle(root), "leak"
        os.symlink(outside, path / "leak")
    elif case == "syntax":
        path, culprit = make_bundle(root, method="class X(:\n"), "method.py:1"
    elif case == "bad_meta_key":
        path, culprit = make_bundle(root, meta__toml='bord = "A"\n'), "meta.toml"
    else:
        path, culprit = make_bundle(root, claims__json='[{"metric": "acc"}]'), "claims.json"
    with pytest.raises(BundleError) as e:
        load_bundle(path, limits)
    line = e.value.one_line()
    assert culprit in line and "\n" not in line


def test_links_inside_the_bundle_are_fine(tmp_path):
    b = make_bundle(tmp_path)
    os.symlink(b / "DESCRIPTION.md", b / "README.md")
    assert {f.path for f in load_bundle(b).files} == {"DESCRIPTION.md", "README.md", "method.py"}


@pytest.mark.parametrize("mutate, culprit", [
    (lambda b: (b / "method.py").unlink(), "method.py"),
    (lambda b: (b / "DESCRIPTION.md").write_bytes(b"\xff\xfe bad"), "DESCRIPTION.md"),
    (lambda b: (b / "method.py").write_text("def (:\n"), "method.py:1"),
    (lambda b: (b / "blob.dat").write_bytes(b"\x00" * 10), "blob.dat"),
    (lambda b: os.symlink("/etc/passwd", b / "passwd"), "passwd"),
])
def test_cli_refuses_bad_bundles_with_one_line_exit_2_and_writes_nothing(arena, mutate, culprit):
    bundle = arena / "submit" / "agent1-003"
    mutate(bundle)
    r = run_review("submit/agent1-003", cwd=arena)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and culprit in lines[0] and "Traceback" not in r.stderr
    assert list((arena / "reviews").iterdir()) == []


def test_cli_refuses_a_missing_folder(arena):
    r = run_review("submit/agent9-001", cwd=arena)
    assert r.returncode == 2 and "agent9-001: no such" in r.stderr
    assert list((arena / "reviews").iterdir()) == []
