"""What the tests of ported rules share: a description in the arena's six sections, an index paper by name, the
computation flags of a method's code under a description, and the checks every port folder gets (flagged uncredited,
clean credited, renaming-proof, honest neighbours not read as the port) (tests/test_priorart_ported_rules.py,
tests/test_priorart_storage_ports.py, tests/test_priorart_share_ports.py)."""

from __future__ import annotations

import ast

from reviewbench.evidence.computation import computation
from reviewbench.evidence.priorart_evidence import PriorArtEvidence, prior_art
from reviewbench.flags.prior_art import computation_flags
from reviewbench.priorart import load_index
from reviewbench.verdict import FlagClaim


def desc(idea: str, relation: str = "None.", builds: str = "None.") -> str:
    return (f"# M\n\n## Idea\n{idea}\n\n## Method summary\n{idea}\n\n## Relation to prior work\n{relation}\n\n"
            f"## Evidence\nNone.\n\n## Limitations\nSome.\n\n## Builds on\n{builds}\n")


def paper(short: str):
    return next(p for p in load_index().papers if p.short_name == short)


def flags(src: str, description: str) -> tuple[PriorArtEvidence, list[FlagClaim]]:
    ev = prior_art(src, "", "", description)
    return ev, computation_flags(ev.computed, [], src)


def assert_flagged_port(src: str, paper_name: str, op: str, description: str) -> None:
    """An uncredited disguised port: its mechanism read, its paper matched exactly and named in a proof."""
    assert op in computation(src).features
    ev, fl = flags(src, description)
    same = [m for m in ev.computed if m.level == "same"]
    assert paper_name in [m.short_name for m in same], [(m.short_name, m.level, m.extra) for m in ev.computed]
    assert [f.flag for f in fl] == ["UNDISCLOSED_PRIOR_ART"] and fl[0].strength == "proof"
    p = paper(paper_name)
    assert paper_name in fl[0].explanation and (p.arxiv is None or p.arxiv in fl[0].explanation)
    assert fl[0].quote in src


def assert_credited_twin_clean(src: str, paper_name: str, what: str = "we port its mechanism as a token score") -> None:
    """The same code under a description that credits the paper: nothing raised, the match credited."""
    p = paper(paper_name)
    credited = desc("The same method.", builds=f"{p.short_name} ({p.title}, arXiv {p.arxiv}): {what}.")
    ev, fl = flags(src, credited)
    assert fl == [], [f.explanation for f in fl]
    mine = [m for m in ev.computed if m.short_name == paper_name]
    assert mine and all(m.credited for m in mine), [(m.short_name, m.credited) for m in ev.computed]


def assert_rename_proof(src: str, renamed_src: str) -> None:
    assert renamed_src != ast.unparse(ast.parse(src))
    assert set(computation(renamed_src).features) == set(computation(src).features)


def assert_honest_neighbour(src: str, builds: str, absent: set[str], not_papers: list[str]) -> None:
    """An honest method using a neighbouring operation: not read as the port's operations or papers, nothing raised."""
    feats = computation(src).features
    assert not absent & set(feats), feats
    ev, fl = flags(src, desc("Our own rule.", builds=builds))
    assert fl == [], [f.explanation for f in fl]
    assert not set(not_papers) & {m.short_name for m in ev.computed}, [(m.short_name, m.level) for m in ev.computed]


def behaviour_against_references(sources: dict[str, str], description: str, root) -> dict:
    """Each method's behavioural matches against every reference on the bank: the candidates written to folders
    under ``root`` (``method.py`` and ``description``), fingerprinted fresh, compared with the references' cached
    kept sets (tests/test_priorart_disguised_ports.py, tests/test_priorart_family_refs.py)."""
    from harness.fingerprint_grid import reference_families
    from reviewbench.evidence.behaviour import all_members, compare, fingerprints

    folders = {}
    for name, src in sources.items():
        folder = root / name
        folder.mkdir()
        (folder / "method.py").write_text(src.lstrip())
        (folder / "DESCRIPTION.md").write_text(description)
        folders[name] = str(folder.resolve())
    refs = fingerprints(all_members())
    mine = fingerprints(list(folders.values()), use_cache=False)
    assert not mine["errors"], mine["errors"]
    merged = {**refs, "kept": {**refs["kept"], **mine["kept"]}, "probes": {**refs["probes"], **mine["probes"]},
              "views": mine["views"]}
    families = reference_families()
    return {name: compare(merged, folder, families) for name, folder in folders.items()}
