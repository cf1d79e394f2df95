"""The credit-assignment question bank: load, validate, filter, check a prediction, score a session.

The questions live in ``lab/data/credit_questions.json`` (shipped as package data). They are written in
the project's own words from the facts of ``credit-assignment-question-bank.txt`` (37 papers); every
question cites its paper, asks for a prediction before the reveal (a choice or a number), explains why,
and carries a small example with numbers. Examples are the lab's own illustrations unless
``example_source`` says the bank states them.

A question record (JSON object)::

    id                  unique string, e.g. "scar-2"
    paper               a key of PAPERS
    citation            {"title", "authors", "year", "where"}; authors/year may be null when the bank
                        does not state them (never guessed)
    family              one of FAMILIES
    question            the prompt
    choices + answer    a list of >= 2 strings and the index of the right one, or
    numeric + tolerance a finite number and a tolerance >= 0 (|prediction - numeric| <= tolerance)
    answer_explanation  why (2-5 sentences)
    example             a small concrete example with numbers
    example_source      "lab" (the lab's own illustration) or "bank" (numbers stated in the bank)
    mechanism           optional: a key of lab.credit.MECHANISMS (MECHANISM_KEYS) the reveal can demo
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

# The 37 papers of the bank, keyed by a stable short key. ``title`` is the title the bank prints; None where
# the bank names the method only (its entry gives no title), in which case ``name`` is the bank's method name.
PAPERS: dict[str, dict[str, str | None]] = {
    "process_supervision": {"name": "Process supervision", "title": None},
    "math_shepherd": {"name": "Math-Shepherd", "title": None},
    "taco": {"name": "TACO", "title": None},
    "mart": {"name": "MART-GRPO", "title": "When to Stop Penalizing Actions? Martingale GRPO for VLA Reinforcement Learning"},
    "mgepo": {"name": "MGE-PO", "title": "MGE-PO: Entropy-Aware Credit Assignment for Mathematical Reasoning"},
    "tag": {"name": "TAG", "title": "Multi-Reward Hacking: From Aggregation-Induced Drift to Trust-Anchored Defense"},
    "sif": {"name": "SIF", "title": "Learning to Reason with Selective Internal Feedback"},
    "prm4rl": {"name": "PRM4RL", "title": "Progress Reward Model for Reinforcement Learning via Large Language Models"},
    "opcredit": {"name": "OpCredit", "title": "OpCredit: Operation-Aware Policy Learning for Agentic Knowledge Graph Question Answering"},
    "mrtpo": {"name": "MRTPO", "title": None},
    "knowgpo": {"name": "KnowGPO", "title": "KnowGPO: Knowledge-Grouped Policy Optimization for Search Agents"},
    "diverge": {"name": "DIVERGE", "title": "Training Reasoning Models to Generate Diverse Scientific Ideas"},
    "rap_walk": {"name": "RAP-Walk", "title": "When Pairwise Preferences Cycle: A Reliability-Anchored Preference Walk for Video GRPO"},
    "upturn": {"name": "UpTurn", "title": "Inject a Turn, Not a Token: Learning Where to Redirect LLM Reasoning for Self-Correction"},
    "soar": {"name": "SOAR", "title": "SOAR: Source-Aware Reinforcement Learning with Precise Credit Assignment for Search Agents"},
    "residual_advantage": {"name": "Residual Advantage", "title": "Residual Advantage: Student-Relative Teacher Guidance for RL with Verifiable Rewards"},
    "tvrl": {"name": "TVRL", "title": "Token-Level Video Reinforcement Learning"},
    "my_fault": {"name": "My FAULT", "title": "My FAULT: Self-Diagnosis as Credit Assignment in Self-Evolving Agentic Reinforcement Learning"},
    "carm": {"name": "CARM", "title": "CARM: Cancellation-Aware Response Masking for LLM Reinforcement Learning"},
    "t2spo": {"name": "T2SPO", "title": "T2SPO: Trajectory-to-Step Policy Optimization for Agentic Reinforcement Learning"},
    "sharpo": {"name": "SHARPO", "title": "SHARPO: Segment-Level Credit Assignment for Agentic Reinforcement Learning"},
    "pact": {"name": "PACT", "title": "PACT: From Credit Assignment to Critic Alignment"},
    "tiao": {"name": "TIAO", "title": "TIAO: Token Importance-Aware Policy Optimization for Text Summarization"},
    "spear": {"name": "SPEAR", "title": None},
    "v_rubrics": {"name": "V-Rubrics", "title": "V-Rubrics: Visual Faithfulness via Rubric-Based Reinforcement Learning"},
    "srpo": {"name": "SRPO", "title": "SRPO: Self-Reflective Policy Optimization for Long-Horizon Reasoning"},
    "sa_mrpo": {"name": "SA-MRPO", "title": None},
    "rubric_dropout": {"name": "Rubric Dropout", "title": "Rubric Dropout: A Simple Way to Mitigate Reward Hacking in Rubric-as-Reward RL"},
    "rrc": {"name": "RRC", "title": None},
    "adrs": {"name": "ADRS", "title": None},
    "serpo": {"name": "SERPO", "title": "SERPO: Self-Evolving Rubric Policy Optimization for Open-Ended Test-Time Reinforcement Learning"},
    "cort": {"name": "CoRT", "title": None},
    "tcr": {"name": "TCR", "title": None},
    "dynamic_rubric": {"name": "DynamicRubric", "title": "Co-Evolving LLM Evaluators and Policies via DynamicRubric"},
    "scar": {"name": "SCAR", "title": "SCAR: Shapley Credit Assignment for More Efficient RLHF"},
    "intuitor": {"name": "INTUITOR", "title": None},
    "concur": {"name": "CONCUR", "title": "CONCUR: Concordant Auxiliary Rewards for Multi-Task, Multi-Reward Reinforcement Learning"},
}

# The families of the chapter; the last three are the lab's own names for papers that fit none of the first nine.
FAMILIES: tuple[str, ...] = (
    "process supervision",
    "continuations",
    "shaping",
    "masks",
    "entropy and confidence",
    "multi-reward and rubrics",
    "agentic segments and turns",
    "shapley",
    "teacher-relative",
    "counterfactual token attribution",
    "rankings and preference graphs",
    "critics and values",
)

# The keys of lab.credit.MECHANISMS (fixed by the chapter's issue; other code calls them by these names).
MECHANISM_KEYS: tuple[str, ...] = (
    "outcome", "process_labels", "math_shepherd", "potential_shaping", "shapley", "pava", "mart", "mgepo",
    "carm", "taco", "rubric_dropout", "tag", "sharpo", "residual_advantage", "t2spo", "knowgpo",
)

EXAMPLE_SOURCES = ("lab", "bank")
MIN_PER_PAPER = 2
_TEXT_FIELDS = ("id", "paper", "family", "question", "answer_explanation", "example")
_DATA = "data/credit_questions.json"


def _fail(qid: Any, field: str, condition: str) -> None:
    raise ValueError(f"question {qid!r}: field {field!r} {condition}")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _validate_one(i: int, q: Any) -> None:
    if not isinstance(q, Mapping):
        raise ValueError(f"questions[{i}] must be a JSON object; got {type(q).__name__}")
    qid = q.get("id", f"#{i}")
    for f in _TEXT_FIELDS:
        if not isinstance(q.get(f), str) or not q[f].strip():
            _fail(qid, f, "must be a non-empty string")
    if q["paper"] not in PAPERS:
        _fail(qid, "paper", f"must be one of the {len(PAPERS)} paper keys; got {q['paper']!r}")
    if q["family"] not in FAMILIES:
        _fail(qid, "family", f"must be one of {list(FAMILIES)}; got {q['family']!r}")
    cit = q.get("citation")
    if not isinstance(cit, Mapping):
        _fail(qid, "citation", "must be an object with title, authors, year and where")
    if not (isinstance(cit.get("title"), str) and cit["title"].strip()):
        _fail(qid, "citation", "must give a non-empty title (the bank's title, or the method name where it gives none)")
    if not (isinstance(cit.get("where"), str) and cit["where"].strip()):
        _fail(qid, "citation", "must say where in the paper (section/equation as the bank gives it)")
    if cit.get("authors") is not None and not (isinstance(cit["authors"], str) and cit["authors"].strip()):
        _fail(qid, "citation", "authors must be a non-empty string or null (not stated)")
    if cit.get("year") is not None and not (isinstance(cit["year"], int) and not isinstance(cit["year"], bool) and 1950 <= cit["year"] <= 2100):
        _fail(qid, "citation", "year must be an integer year or null (not stated)")
    if q.get("example_source") not in EXAMPLE_SOURCES:
        _fail(qid, "example_source", f"must be one of {list(EXAMPLE_SOURCES)}; got {q.get('example_source')!r}")
    has_choices, has_numeric = "choices" in q, "numeric" in q
    if has_choices == has_numeric:
        _fail(qid, "choices", "or 'numeric' must be given, exactly one of them")
    if has_choices:
        ch = q["choices"]
        if not isinstance(ch, list) or len(ch) < 2 or not all(isinstance(c, str) and c.strip() for c in ch):
            _fail(qid, "choices", "must be a list of at least 2 non-empty strings")
        if len(set(ch)) != len(ch):
            _fail(qid, "choices", "must not repeat a choice")
        a = q.get("answer")
        if not (isinstance(a, int) and not isinstance(a, bool)) or not 0 <= a < len(ch):
            _fail(qid, "answer", f"must be an index in [0, {len(ch) - 1}]; got {a!r}")
    else:
        x = q["numeric"]
        if not _is_number(x) or not math.isfinite(x):
            _fail(qid, "numeric", f"must be a finite number; got {x!r}")
        tol = q.get("tolerance")
        if not _is_number(tol) or not math.isfinite(tol) or tol < 0:
            _fail(qid, "tolerance", f"must be a finite number >= 0; got {tol!r}")
    m = q.get("mechanism")
    if m is not None and m not in MECHANISM_KEYS:
        _fail(qid, "mechanism", f"must be one of {list(MECHANISM_KEYS)} or absent; got {m!r}")


def validate(questions: Any) -> list[dict]:
    """Check a list of question records; return it unchanged or raise ValueError naming question id and field.

    Checks every record's fields (see the module docstring), unique ids, and that every paper of PAPERS
    is covered by at least MIN_PER_PAPER questions.
    """
    if not isinstance(questions, list) or not questions:
        raise ValueError(f"questions must be a non-empty list of question objects; got {type(questions).__name__}")
    seen: set[str] = set()
    for i, q in enumerate(questions):
        _validate_one(i, q)
        if q["id"] in seen:
            _fail(q["id"], "id", "must be unique; it appears twice")
        seen.add(q["id"])
    counts = {k: 0 for k in PAPERS}
    for q in questions:
        counts[q["paper"]] += 1
    thin = [k for k, n in counts.items() if n < MIN_PER_PAPER]
    if thin:
        raise ValueError(f"field 'paper': every paper needs at least {MIN_PER_PAPER} questions; too few for {thin}")
    return questions


def load_questions(path: str | Path | None = None) -> list[dict]:
    """The validated question bank (from the shipped data file, or from ``path``)."""
    if path is None:
        text = resources.files("lab").joinpath(_DATA).read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"path: the question file is not valid JSON ({exc})") from None
    return validate(data)


def papers() -> dict[str, dict[str, str | None]]:
    """Paper key -> {"name", "title"} for the 37 papers of the bank."""
    return {k: dict(v) for k, v in PAPERS.items()}


def families() -> list[str]:
    return list(FAMILIES)


def filter_questions(questions: list[dict] | None = None, paper: str | None = None, family: str | None = None) -> list[dict]:
    """Questions of one paper and/or one family (None = no filter), in bank order."""
    if paper is not None and paper not in PAPERS:
        raise ValueError(f"paper must be one of the paper keys (e.g. 'scar', 'mart'); got {paper!r}")
    if family is not None and family not in FAMILIES:
        raise ValueError(f"family must be one of {list(FAMILIES)}; got {family!r}")
    qs = load_questions() if questions is None else questions
    return [q for q in qs if (paper is None or q["paper"] == paper) and (family is None or q["family"] == family)]


def check_answer(question: Mapping, prediction: Any) -> bool:
    """True when ``prediction`` is right: the answer index for a choice question, or within ``tolerance`` of
    the numeric answer. A prediction of the wrong kind (a bool, NaN, an index out of range) is a ValueError."""
    if "choices" in question:
        n = len(question["choices"])
        if not (isinstance(prediction, int) and not isinstance(prediction, bool)) or not 0 <= prediction < n:
            raise ValueError(f"prediction must be a choice index in [0, {n - 1}]; got {prediction!r}")
        return prediction == question["answer"]
    if not _is_number(prediction) or not math.isfinite(prediction):
        raise ValueError(f"prediction must be a finite number; got {prediction!r}")
    # a hair of relative slack so a prediction typed exactly at the tolerance edge is not lost to float rounding
    slack = 1e-12 * max(1.0, abs(question["numeric"]))
    return abs(float(prediction) - float(question["numeric"])) <= float(question["tolerance"]) + slack


def score(answers: Mapping[str, bool], questions: Iterable[Mapping] | None = None) -> dict:
    """Session score from ``answers`` (question id -> whether the first committed prediction was right).

    Returns {"total": {"correct", "answered"}, "by_family": {family: {...}}, "by_paper": {paper: {...}}};
    only families and papers with at least one answer appear. An id not in the bank is a ValueError.
    """
    index = {q["id"]: q for q in (load_questions() if questions is None else questions)}
    total = {"correct": 0, "answered": 0}
    by_family: dict[str, dict[str, int]] = {}
    by_paper: dict[str, dict[str, int]] = {}
    for qid, ok in answers.items():
        if qid not in index:
            raise ValueError(f"answers: unknown question id {qid!r}")
        if not isinstance(ok, bool):
            raise ValueError(f"answers[{qid!r}] must be True or False; got {ok!r}")
        q = index[qid]
        for bucket in (total, by_family.setdefault(q["family"], {"correct": 0, "answered": 0}),
                       by_paper.setdefault(q["paper"], {"correct": 0, "answered": 0})):
            bucket["answered"] += 1
            bucket["correct"] += int(ok)
    return {"total": total, "by_family": by_family, "by_paper": by_paper}


def answer_text(question: Mapping) -> str:
    """The right answer as a learner reads it: the choice's text, or the number with its tolerance."""
    if "choices" in question:
        return question["choices"][question["answer"]]
    return f"{question['numeric']:g} (± {question['tolerance']:g})"


def format_citation(question: Mapping) -> str:
    """'Authors (year). Title. Where.' with 'authors and year not stated in the bank' when they are unknown."""
    c = question["citation"]
    who = c.get("authors") or "authors not stated in the bank"
    when = f" ({c['year']})" if c.get("year") else ""
    return f"{who}{when}. *{c['title']}*. {c['where']}"


def cycle_index(index: int, step: int, count: int) -> int:
    """The question index after moving ``step`` places through ``count`` questions, wrapping around."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be an integer >= 1; got {count!r}")
    return (int(index) + int(step)) % count


def page_of(questions: list, start: int, per_page: int) -> list:
    """The ``per_page`` questions from position ``start`` (a list-mode screen of the quiz)."""
    if isinstance(per_page, bool) or not isinstance(per_page, int) or per_page < 1:
        raise ValueError(f"per_page must be an integer >= 1; got {per_page!r}")
    return list(questions[int(start): int(start) + per_page])
