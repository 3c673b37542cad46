"""Tasks: clean-room generators for RULER's purely synthetic tasks, local loaders for LongBench v2 and
MATH-500, and a reasoning-trace fidelity task for board C.

Every item is split into ``context`` (compressed on boards A/B), ``questions`` (each with its answers) and
an answer prefix. Lengths are fitted with the model's own tokenizer. Dev items are seeded from public
constants (anyone can regenerate them: they are for development and claim checks). The hidden test split is
never generated from a constant: ``harness.split`` draws it from a secret seed once and stores the items in
the arena's data folder, so this code alone cannot reproduce it.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SPLIT_SEED = {"dev": 1_000}  # item i of a task's dev split uses SPLIT_SEED + 10_000 x TASK_SEED_OFFSET[task] + i
# Fixed forever (never derived from the list of tasks): item ids, and the committed results keyed by them, must not
# change when a task is added. A new task takes the next unused number.
TASK_SEED_OFFSET = {"cwe": 0, "fwe": 1, "niah_multikey": 2, "niah_multikey_needle": 3, "niah_multiquery": 4,
                    "niah_multivalue": 5, "niah_single": 6, "reasoning_trace": 7, "vt": 8}
NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
ADJECTIVES = ("amber brave calm dusty eager faint gentle hollow icy jolly keen lucky misty noble odd proud quiet rapid "
              "silent tidy upper vivid warm young zesty bold crisp damp elder fuzzy giant happy inner jagged kind "
              "lone mellow narrow oval pale quick rough sharp tall urban vast wild").split()
NOUNS = ("anchor badger canyon dagger ember falcon garden harbor island jacket kettle lantern meadow needle orchard "
         "pepper quartz rabbit saddle tunnel umbrella valley walnut yarrow zephyr beacon cobalt desert engine fossil "
         "glacier hammer ivory jungle kernel ladder magnet nickel oyster pillar").split()
WORDS = sorted(set(ADJECTIVES + NOUNS + ("apple river stone cloud forest bridge candle mirror window thunder "
                                         "violin ticket rocket pencil marble saturn copper velvet").split()))


@dataclass
class Question:
    text: str  # appended after the context (board B: after compression)
    answers: list[str]
    answer_prefix: str = ""


@dataclass
class Item:
    id: str
    task: str
    context: str
    questions: list[Question]
    metric: str = "string_match_all"
    max_new_tokens: int = 16
    meta: dict = field(default_factory=dict)


Tokenize = Callable[[str], int]  # text -> number of tokens


def _key(rng: random.Random) -> str:
    return f"{rng.choice(ADJECTIVES)}-{rng.choice(NOUNS)}"


def _fit(build: Callable[[int], str], n_tokens: Tokenize, target: int, lo: int = 1, hi: int = 4096) -> int:
    """The largest haystack size whose context fits in ``target`` tokens (binary search, as RULER)."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if n_tokens(build(mid)) <= target:
            lo = mid
        else:
            hi = mid - 1
    return lo


def niah(seed: int, n_tokens: Tokenize, length: int, n_keys: int = 1, n_values: int = 1, n_queries: int = 1,
         haystack: str = "noise", task: str = "niah_single") -> Item:
    rng = random.Random(seed)
    keys: list[str] = []
    while len(keys) < max(n_keys, n_queries):
        k = _key(rng)
        if k not in keys:
            keys.append(k)
    values = {k: [str(rng.randint(1_000_000, 9_999_999)) for _ in range(n_values)] for k in keys}
    needles = [f"One of the special magic numbers for {k} is: {v}." for k in keys for v in values[k]]
    rng.shuffle(needles)
    distractors = [f"One of the special magic numbers for {_key(rng)} is: {rng.randint(1_000_000, 9_999_999)}."
                   for _ in range(200)] if haystack == "needle" else []

    def build(n: int) -> str:
        r = random.Random(seed + 1)
        lines = list(distractors[:n]) if haystack == "needle" else [NOISE] * n
        for pos, needle in zip(sorted(r.sample(range(len(lines) + 1), len(needles)), reverse=True), needles):
            lines.insert(pos, needle)
        return ("Some special magic numbers are hidden within the following text. Make sure to memorize it. "
                "I will quiz you about the numbers afterwards.\n" + "\n".join(lines))

    size = _fit(build, n_tokens, length, hi=len(distractors) if haystack == "needle" else 4096)
    asked = rng.sample(keys, n_queries)
    questions = []
    for k in asked:
        if n_values == 1:
            text = f"What is the special magic number for {k} mentioned in the provided text?"
            prefix = f"The special magic number for {k} mentioned in the provided text is"
        else:
            text = f"What are all the special magic numbers for {k} mentioned in the provided text?"
            prefix = f"The special magic numbers for {k} mentioned in the provided text are"
        questions.append(Question(text=text, answers=values[k], answer_prefix=prefix))
    return Item(id=f"{task}-{seed}", task=task, context=build(size), questions=questions,
                max_new_tokens=12 * n_values + 4, meta={"haystack": haystack, "keys": n_keys})


def variable_tracking(seed: int, n_tokens: Tokenize, length: int, hops: int = 4) -> Item:
    rng = random.Random(seed)
    names: list[str] = []
    while len(names) < hops + 1:
        n = "".join(rng.choice(string.ascii_uppercase) for _ in range(5))
        if n not in names:
            names.append(n)
    value = str(rng.randint(10_000, 99_999))
    chain = [f"VAR {names[0]} = {value}."] + [f"VAR {names[j + 1]} = VAR {names[j]}." for j in range(hops)]
    example = ("Example:\nVAR QPX = 12345.\nVAR ZRT = VAR QPX.\n" + NOISE + "\nVAR MWB = VAR ZRT.\n"
               "Question: Find all variables that are assigned the value 12345 in the text above. Answer: According "
               "to the chain(s) of variable assignment in the text above, 3 variables are assigned the value 12345, "
               "they are: QPX ZRT MWB\n\n")

    def build(n: int) -> str:
        r = random.Random(seed + 1)
        lines = [NOISE] * n
        for j, pos in enumerate(sorted(r.sample(range(n + 1), len(chain)))):
            lines.insert(pos + j, chain[j])
        return (example + "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
                + "\n".join(lines))

    q = Question(text=f"Question: Find all variables that are assigned the value {value} in the text above.",
                 answers=names, answer_prefix=f"Answer: According to the chain(s) of variable assignment in the "
                                              f"text above, {hops + 1} variables are assigned the value {value}, "
                                              f"they are:")
    return Item(id=f"vt-{seed}", task="vt", context=build(_fit(build, n_tokens, length)), questions=[q],
                max_new_tokens=30)


def common_words(seed: int, n_tokens: Tokenize, length: int, n_common: int = 10) -> Item:
    rng = random.Random(seed)
    vocab = WORDS[:]
    rng.shuffle(vocab)
    common, rare_pool = vocab[:n_common], vocab[n_common:]

    def build(n: int) -> str:
        r = random.Random(seed + 1)
        words = common * 6 + rare_pool[: max(0, n)] * 1
        r.shuffle(words)
        return ("Below is a numbered list of words. In these words, some appear more often than others. Memorize the "
                "ones that appear most often.\n" + " ".join(f"{i + 1}. {w}" for i, w in enumerate(words)))

    size = _fit(build, n_tokens, length, hi=len(rare_pool))
    q = Question(text=f"Question: What are the {n_common} most common words in the above list?", answers=common,
                 answer_prefix=f"Answer: The top {n_common} words that appear most often in the list are:")
    return Item(id=f"cwe-{seed}", task="cwe", context=build(size), questions=[q], max_new_tokens=60)


def frequent_words(seed: int, n_tokens: Tokenize, length: int, alpha: float = 2.0) -> Item:
    rng = random.Random(seed)
    vocab = ["".join(rng.choice(string.ascii_lowercase) for _ in range(6)) for _ in range(40)]
    vocab[0] = "...."
    zeta = sum(k ** -alpha for k in range(1, len(vocab) + 1))

    def build(n: int) -> str:
        words = [w for k, w in enumerate(vocab, start=1) for _ in range(max(1, int(n * k ** -alpha / zeta)))]
        random.Random(seed + 1).shuffle(words)
        return ("Read the following coded text and track the frequency of each coded word. Find the three most "
                "frequently appeared coded words. " + " ".join(words))

    q = Question(text="Question: Do not provide any explanation. Please ignore the dots '....'. What are the three "
                      "most frequently appeared words in the above coded text?", answers=vocab[1:4],
                 answer_prefix="Answer: According to the coded text above, the three most frequently appeared words "
                               "are:")
    return Item(id=f"fwe-{seed}", task="fwe", context=build(_fit(build, n_tokens, length, hi=20_000)), questions=[q],
                max_new_tokens=24)


def _reasoning_prompt(seed: int) -> str:
    """A multi-step word problem; the template cycles with the seed and its numbers are drawn from it, so every
    item is distinct and the dev and test splits share none."""
    r = random.Random(seed)
    kind = seed % 4
    if kind == 0:
        return (f"A farmer has {r.randint(11, 40)} sheep, buys {r.randint(2, 9)} more each week for {r.randint(3, 9)} "
                "weeks, then sells a third of the flock. Think step by step and show every calculation, then give the "
                "final number.")
    if kind == 1:
        speed = r.choice([60, 64, 72, 80, 84, 90])
        return (f"A train leaves at {r.randint(6, 11)}:{r.choice(['05', '20', '40', '55'])} and travels "
                f"{speed * r.randint(2, 4)} km at {speed} km/h, stops {r.randint(10, 40)} minutes, then covers "
                f"{r.randint(40, 150)} km at {r.choice([48, 56, 64])} km/h. When does it arrive? Reason step by step "
                "before answering.")
    if kind == 2:
        return (f"Three friends split a bill of {r.randint(90, 400)} dollars: one pays twice as much as each of the "
                "others. Work through the algebra step by step and state how much each pays.")
    return (f"A rectangle's length is {r.randint(1, 9)} cm more than twice its width and its perimeter is "
            f"{2 * r.randint(15, 60)} cm. Find its area, explaining each step of the reasoning.")


def reasoning_trace(seed: int, n_tokens: Tokenize, length: int) -> Item:
    """Board C on a small model: the full cache's own greedy trace is the reference (KL, top-1 agreement)."""
    return Item(id=f"trace-{seed}", task="reasoning_trace", context="", metric="fidelity",
                questions=[Question(text=_reasoning_prompt(seed), answers=[])], max_new_tokens=length)


GENERATORS: dict[str, Callable[..., Item]] = {
    "niah_single": lambda s, t, n: niah(s, t, n, task="niah_single"),
    "niah_multikey": lambda s, t, n: niah(s, t, n, n_keys=4, haystack="noise", task="niah_multikey"),
    "niah_multikey_needle": lambda s, t, n: niah(s, t, n, n_keys=1, haystack="needle", task="niah_multikey_needle"),
    "niah_multivalue": lambda s, t, n: niah(s, t, n, n_values=4, task="niah_multivalue"),
    "niah_multiquery": lambda s, t, n: niah(s, t, n, n_keys=4, n_queries=4, task="niah_multiquery"),
    "vt": variable_tracking,
    "cwe": common_words,
    "fwe": frequent_words,
    "reasoning_trace": reasoning_trace,
}


def generate(task: str, split: str, n_items: int, n_tokens: Tokenize, length: int, offset: int = 0) -> list[Item]:
    """Public items (the dev split). The test split is not generated here: it is the arena's (``harness.split``)."""
    if task not in GENERATORS:
        raise ValueError(f"unknown task {task!r} (known: {', '.join(GENERATORS)}, longbench_v2, math500)")
    if split not in SPLIT_SEED:
        raise ValueError(f"split {split!r} is not generated from code: the test split is drawn from a secret seed "
                         "and stored in the arena (review harness split)")
    base = SPLIT_SEED[split] + 10_000 * TASK_SEED_OFFSET[task]
    return [GENERATORS[task](base + offset + i, n_tokens, length) for i in range(n_items)]


# --- scoring ----------------------------------------------------------------------------------------------------
_CTRL = re.compile(r"[\x00-\x1f]")


def string_match_all(pred: str, refs: list[str]) -> float:
    p = _CTRL.sub(" ", pred).lower()
    return sum(r.lower() in p for r in refs) / len(refs) if refs else 0.0


def string_match_part(pred: str, refs: list[str]) -> float:
    p = _CTRL.sub(" ", pred).lower()
    return float(any(r.lower() in p for r in refs))


def boxed_answer(text: str) -> str | None:
    """The content of the last \\boxed{...}, braces balanced."""
    i = text.rfind("\\boxed{")
    if i < 0:
        return None
    depth, j = 0, i + len("\\boxed{")
    start = j
    while j < len(text):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            if depth == 0:
                return text[start:j].strip()
            depth -= 1
        j += 1
    return None


def _norm_math(s: str) -> str:
    s = s.strip().strip("$").replace(" ", "").replace("\\!", "").replace("dfrac", "frac").replace("tfrac", "frac")
    s = s.replace("\\left", "").replace("\\right", "").rstrip(".")
    return re.sub(r"\\text\{(.*?)\}", r"\1", s)


def boxed_match(pred: str, refs: list[str]) -> float:
    got = boxed_answer(pred)
    return float(got is not None and any(_norm_math(got) == _norm_math(r) for r in refs))


def choice_match(pred: str, refs: list[str]) -> float:
    m = re.search(r"\b([ABCD])\b", pred.strip().upper())
    return float(m is not None and m.group(1) in refs)


METRICS = {"string_match_all": string_match_all, "string_match_part": string_match_part, "boxed": boxed_match,
           "choice": choice_match}


def score(item: Item, question: Question, prediction: str) -> float:
    return METRICS[item.metric](prediction, question.answers)


# --- local datasets in their published formats ----------------------------------------------------------------
def _records(path: Path) -> list[dict]:
    if path.suffix == ".parquet":
        import pandas as pd  # optional: only for parquet files

        return pd.read_parquet(path).to_dict("records")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        data = json.loads(text)
        return data if isinstance(data, list) else data.get("data", [])
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_longbench_v2(path: Path, limit: int | None = None) -> list[Item]:
    """LongBench v2 (``data.json``: _id, question, choice_A..D, answer, context). Multiple choice."""
    items = []
    for rec in _records(path)[:limit]:
        q = (f"What is the correct answer to this question: {rec['question']}\nChoices:\n(A) {rec['choice_A']}\n"
             f"(B) {rec['choice_B']}\n(C) {rec['choice_C']}\n(D) {rec['choice_D']}")
        items.append(Item(id=str(rec["_id"]), task="longbench_v2", context=rec["context"], metric="choice",
                          questions=[Question(text=q, answers=[rec["answer"]], answer_prefix="The correct answer is (")],
                          max_new_tokens=4, meta={"domain": rec.get("domain"), "length": rec.get("length")}))
    return items


def load_math500(path: Path, limit: int | None = None, max_new_tokens: int = 1024) -> list[Item]:
    """MATH-500 (``test.jsonl``: problem, solution, answer, subject, level, unique_id). Boxed-answer exact match."""
    items: list[Item] = []
    for rec in _records(path)[:limit]:
        q = rec["problem"] + "\nPlease reason step by step, and put your final answer within \\boxed{}."
        items.append(Item(id=str(rec.get("unique_id", len(items))), task="math500", context="", metric="boxed",
                          questions=[Question(text=q, answers=[str(rec["answer"])])], max_new_tokens=max_new_tokens,
                          meta={"level": rec.get("level"), "subject": rec.get("subject")}))
    return items


def save_items(items: list[Item], path: Path) -> None:
    """Write a split to disk (JSONL): how the arena stores its hidden test split where the audit watches."""
    from dataclasses import asdict

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(asdict(i)) + "\n" for i in items), encoding="utf-8")


def load_items(path: Path) -> list[Item]:
    out = []
    for rec in _records(path):
        rec["questions"] = [Question(**q) for q in rec["questions"]]
        out.append(Item(**rec))
    return out
