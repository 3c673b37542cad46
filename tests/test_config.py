from pathlib import Path

import pytest

from reviewbench.arena import Rules, find_arena, load_arena, parse_submission_id
from reviewbench.errors import ConfigError
from reviewbench.rubric import RUBRICS_DIR, load_rubric
from reviewbench.verdict import CriterionScore, JudgeVerdict, decide_tie_break
from tests.conftest import EXAMPLE_ARENA


def test_example_arena_declares_the_four_boards_and_agents():
    a = load_arena(EXAMPLE_ARENA)
    assert [b.name for b in a.config.boards] == ["A", "B_online", "B_offline", "C"]
    assert a.config.board("A").budgets == [0.02, 0.05, 0.10]
    assert a.config.board("C").budget_kind == "tokens" and a.config.board("C").budgets == [2048, 4096]
    assert {x.id: x.family for x in a.config.agents} == {"agent1": "anthropic", "agent2": "anthropic",
                                                         "agent3": "openai", "agent4": "openai"}
    assert len(a.submission_ids()) == 8


def test_every_section_is_optional(tmp_path):
    (tmp_path / "arena.toml").write_text("")
    a = load_arena(tmp_path)
    assert a.config.rules == Rules() and a.config.rules.submissions_per_24h == 5
    assert a.config.rules.agent_home == "/arena/agents/{agent}"


@pytest.mark.parametrize("text, needle", [
    ("[rules]\ntest_splits = ['/x/**']\n", "unknown key 'rules.test_splits'"),
    ("[rules]\nagent_home = '/arena/agents'\n", "rules.agent_home"),
    ("[rules]\nsubmissions_per_24h = 0\n", "rules.submissions_per_24h"),
    ("colour = 'blue'\n", "unknown key 'colour'"),
    ("[[boards]]\nname='A'\nbudgets=[1.5]\n", "fraction budget 1.5"),
    ("[[agents]]\nid='a'\n[[agents]]\nid='a'\n", "duplicate agent 'a'"),
    ("[rules\n", "invalid TOML"),
])
def test_bad_arena_toml_names_the_file_and_key(tmp_path, text, needle):
    (tmp_path / "arena.toml").write_text(text)
    with pytest.raises(ConfigError) as e:
        load_arena(tmp_path)
    assert "arena.toml" in e.value.one_line() and needle in e.value.one_line()


def test_arena_is_found_from_a_bundle(tmp_path):
    (tmp_path / "arena.toml").write_text("")
    (tmp_path / "submit" / "a-001").mkdir(parents=True)
    assert find_arena(tmp_path / "submit" / "a-001") == tmp_path.resolve()
    with pytest.raises(ConfigError):
        find_arena(Path("/"))


def test_submission_ids():
    assert parse_submission_id("agent1-003") == ("agent1", 3)
    assert parse_submission_id("agent1_x-042") == ("agent1_x", 42)
    for bad in ("agent1-3", "003", "agent1_x-0042", "Agent1-003", "agent-1-003", "../x-003", "agent1-003\n"):
        assert parse_submission_id(bad) is None, bad  # an id is <agent>-<NNN>: lower case, three digits


def test_default_rubric(rubric):
    assert [c.id for c in rubric.criteria] == ["novelty", "effectiveness", "soundness"]
    assert rubric.raw_max == 13 and rubric.judge_points_max == 30
    assert rubric.flag_effect.penalty_points == 20
    assert set(rubric.points.rule_sets) == {"seed", "own_best"} and rubric.points.default_rule_set == "seed"


def test_a_second_rubric_changes_behaviour_without_code(tmp_path, rubric):
    text = (RUBRICS_DIR / "default.toml").read_text().replace("threshold = 1\n", "threshold = 2\n")
    alt = tmp_path / "lenient.toml"
    alt.write_text(text)
    lenient = load_rubric(alt)
    assert lenient.content_hash != rubric.content_hash

    def j(jid, fam, nov):
        return JudgeVerdict(judge_id=jid, family=fam, provider=fam, model="m",
                            scores={c: CriterionScore(score=s) for c, s in
                                    (("novelty", nov), ("effectiveness", 3), ("soundness", 2))})

    a, b = j("c", "anthropic", 1), j("g", "openai", 3)
    assert decide_tie_break(a, b, rubric, "anthropic").needed
    assert not decide_tie_break(a, b, lenient, "anthropic").needed


@pytest.mark.parametrize("old, new, needle", [
    ('id = "MISSING_ATTRIBUTION"', 'id = "PLAGIARISM"', "flags.4.id"),
    ("5 = \"A genuinely", "6 = \"A genuinely", "anchors must cover 0..5"),
    ('default_rule_set = "seed"', 'default_rule_set = "nope"', "default_rule_set 'nope'"),
])
def test_bad_rubric_files_are_refused(tmp_path, old, new, needle):
    bad = tmp_path / "bad.toml"
    bad.write_text((RUBRICS_DIR / "default.toml").read_text().replace(old, new))
    with pytest.raises(ConfigError) as e:
        load_rubric(bad)
    assert "bad.toml" in e.value.one_line() and needle in e.value.one_line()
