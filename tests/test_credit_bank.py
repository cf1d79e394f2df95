"""The credit-assignment question bank: the shipped file validates, covers all 37 papers, every numeric
answer is recomputed here independently, predictions are checked with their tolerance, and every
validation error names the question and the field."""

import copy
import itertools
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab import credit_bank as cb

QS = cb.load_questions()
BY_ID = {q["id"]: q for q in QS}
ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- the file itself

def test_bank_validates_and_covers_every_paper():
    assert len(QS) >= 74
    assert len(cb.PAPERS) == 37
    counts = {k: sum(q["paper"] == k for q in QS) for k in cb.PAPERS}
    assert min(counts.values()) >= 2, {k: n for k, n in counts.items() if n < 2}
    assert set(counts) == {q["paper"] for q in QS}


def test_paper_list_matches_the_bank_methods():
    # the 37 method names of credit-assignment-question-bank.txt (kept here so the test is deterministic)
    names = {"Process supervision", "Math-Shepherd", "TACO", "MART-GRPO", "MGE-PO", "TAG", "SIF", "PRM4RL", "OpCredit",
             "MRTPO", "KnowGPO", "DIVERGE", "RAP-Walk", "UpTurn", "SOAR", "Residual Advantage", "TVRL", "My FAULT", "CARM",
             "T2SPO", "SHARPO", "PACT", "TIAO", "SPEAR", "V-Rubrics", "SRPO", "SA-MRPO", "Rubric Dropout", "RRC", "ADRS",
             "SERPO", "CoRT", "TCR", "DynamicRubric", "SCAR", "INTUITOR", "CONCUR"}
    assert {p["name"] for p in cb.papers().values()} == names


def test_ids_unique_families_and_mechanisms_known():
    assert len(BY_ID) == len(QS)
    assert {q["family"] for q in QS} <= set(cb.families())
    mechs = {q["mechanism"] for q in QS if "mechanism" in q}
    assert mechs <= set(cb.MECHANISM_KEYS)
    assert mechs == set(cb.MECHANISM_KEYS), "every mechanism of the gallery has at least one question"
    # the nine families named by the chapter are all used
    assert set(cb.FAMILIES[:9]) <= {q["family"] for q in QS}


def test_each_question_teaches():
    for q in QS:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z(])", q["answer_explanation"].strip()) if s]
        assert 2 <= len(sentences) <= 5, (q["id"], len(sentences))
        assert re.search(r"\d", q["example"]), f"{q['id']}: the example needs concrete numbers"
        assert q["citation"]["title"] and q["citation"]["where"], q["id"]
        assert cb.format_citation(q)
        if "choices" in q:
            assert cb.check_answer(q, q["answer"])
            assert not any(cb.check_answer(q, i) for i in range(len(q["choices"])) if i != q["answer"])
        else:
            assert cb.check_answer(q, q["numeric"])


def test_right_answers_are_not_all_in_one_place():
    # a learner must not be able to score by always picking the same position
    positions = [q["answer"] for q in QS if "choices" in q]
    assert len(set(positions)) >= 3
    assert max(positions.count(i) for i in set(positions)) <= 0.5 * len(positions)


def test_bank_file_ships_as_package_data():
    text = (ROOT / "pyproject.toml").read_text()
    assert '[tool.setuptools.package-data]' in text and 'lab = ["data/*.json"]' in text
    assert json.loads((ROOT / "lab" / "data" / "credit_questions.json").read_text()) == QS


def test_mechanism_keys_match_the_gallery():
    credit = pytest.importorskip("lab.credit", reason="lab.credit arrives with the credit-assignment chapter merge")
    assert set(cb.MECHANISM_KEYS) <= set(credit.MECHANISMS)


# ---------------------------------------------------------------- numeric answers, recomputed independently

def _shapley(v, n):
    """Exact Shapley values by averaging marginal gains over all n! orders (a different route from the subset formula)."""
    phi = [Fraction(0)] * n
    orders = list(itertools.permutations(range(n)))
    for order in orders:
        s = frozenset()
        for i in order:
            phi[i] += Fraction(v[s | {i}]) - Fraction(v[s])
            s = s | {i}
    return [float(p / len(orders)) for p in phi]


def _isotonic_minmax(y):
    """Isotonic (non-decreasing) least-squares fit by the max-min formula: f_i = max_{j<=i} min_{k>=i} mean(y[j..k])."""
    n = len(y)
    return [max(min(sum(y[j:k + 1]) / (k - j + 1) for k in range(i, n)) for j in range(i + 1)) for i in range(n)]


def _lcs(a, b):
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            t[i + 1][j + 1] = t[i][j] + 1 if x == y else max(t[i][j + 1], t[i + 1][j])
    return t[-1][-1]


def _corr(x, y):
    mx, my = sum(x) / len(x), sum(y) / len(y)
    cov = sum((a - mx) * (b - my) for a, b in zip(x, y))
    return cov / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))


def _pstd(x):
    m = sum(x) / len(x)
    return math.sqrt(sum((a - m) ** 2 for a in x) / len(x))


_F = frozenset
_ps = [0.5, 0.3, 0.2]
_pt = [0.6, 0.3, 0.1]
_res = [math.log(t / s) for s, t in zip(_ps, _pt)]
_p = [0.98, 0.01, 0.01]

RECOMPUTED = {
    "process_supervision-1": (1 - 0.5) / _pstd([1, 0]),
    "math_shepherd-1": sum([1, 0, 0, 1, 0, 0, 1, 0]) / 8,
    "taco-1": -0.8,  # nonpositive advantages are untouched by the risk weight
    "mart-1": sum([-1] * 6 + [0] * 4) / 10,
    "mart-2": (1 / 6) / (1 / 10),
    "mgepo-2": 0.0 - sum([0.3, 0.3, 0.0]) / 3,
    "tag-1": 0 + 0.5 * 0.9 * 0,
    "tag-3": sum([0.5, 0.5] + [0.0] * 8) / 10,
    "sif-2": sum(a > b for a, b in zip((2.1, 1.4, 0.9), (2.1, 1.2, 1.0))),
    "prm4rl-1": sum(r + g - f for r, f, g in zip([0, 0, 1], [0, 0.4, 0.7], [0.4, 0.7, 0.0])),
    "prm4rl-2": 0.0 - 0.4,
    "prm4rl-3": 5 * 0.9,
    "t2spo-1": 0.0,
    "mrtpo-2": 1.0,
    "knowgpo-2": 1 - sum([1, 0, 0]) / 3,
    "diverge-1": min(0.8, 0.7),
    "rap_walk-1": 1 / 2,
    "upturn-1": 1000 - 640,
    "residual_advantage-1": _res[0] - sum(s * r for s, r in zip(_ps, _res)),
    "residual_advantage-2": 0.2,
    "tvrl-1": 1.0 / (sum([0.2, 1.0, 0.3, 0.5]) / 4),
    "my_fault-1": -1 * 3 / sum([0, 0, 3, 1]),
    "my_fault-3": -1 - 0.5,
    "carm-1": sum(abs(x) for x in [0.3, -0.3, 0.2, -0.2]) / 4,
    "sharpo-1": -0.6 * 2 / (1 + math.exp(1)),
    "pact-1": 0 - 0.9,
    "tiao-1": -0.2 - (-2.5),
    "spear-1": 2 * (3 / 4) * (3 / 4) / (3 / 4 + 3 / 4) if _lcs("ABCD", "ACBD") == 3 else None,
    "srpo-2": -0.5 - (-1.2),
    "sa_mrpo-1": 1 - 0.4,
    "rrc-1": (4 - 2) / 3 - sum((4 - r) / 3 for r in range(1, 5)) / 4,
    "adrs-1": _corr([1, -1, 1, -1], [0, 1, 0, 1]),
    "cort-1": 0.6 * 0.9 / (sum([0.1, 0.9, 0.1, 0.1]) / 4),
    "tcr-1": 0.9 - 0.8,
    "scar-1": _shapley({_F(): 0, _F({0}): 0.2, _F({1}): 0.0, _F({0, 1}): 1.0}, 2)[0],
    "scar-2": _shapley({_F(): 0, _F({0}): 0.8, _F({1}): -0.2, _F({0, 1}): 0.5}, 2)[1],
    "scar-3": 2 ** 10,
    "intuitor-1": sum((1 / 3) * math.log((1 / 3) / x) for x in _p),
    "concur-1": _isotonic_minmax([1, 3, 2, 4])[2],
    "concur-3": (0.51 - 0.505) / _pstd([0.50, 0.51]),
}


def test_every_numeric_answer_is_recomputed():
    numeric = {q["id"] for q in QS if "numeric" in q}
    assert numeric == set(RECOMPUTED), (numeric ^ set(RECOMPUTED))
    for qid, want in RECOMPUTED.items():
        q = BY_ID[qid]
        assert abs(q["numeric"] - want) <= max(q["tolerance"], 1e-9) / 2 + 1e-9, (qid, q["numeric"], want)


def test_recomputation_helpers_on_hand_values():
    assert _shapley({_F(): 0, _F({0}): 1, _F({1}): 1, _F({0, 1}): 2}, 2) == [1.0, 1.0]  # symmetry
    assert _isotonic_minmax([3, 1, 2]) == [2.0, 2.0, 2.0]
    assert _lcs("ABCD", "ACBD") == 3
    assert _corr([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)


# ---------------------------------------------------------------- check_answer

def test_check_answer_hand_values():
    num = {"id": "x", "numeric": 0.25, "tolerance": 0.01}
    assert cb.check_answer(num, 0.25) and cb.check_answer(num, 0.26) and cb.check_answer(num, 0.24)
    assert not cb.check_answer(num, 0.2601) and not cb.check_answer(num, 0.2399)
    assert cb.check_answer({"numeric": 1024, "tolerance": 0}, 1024)  # an int prediction converts at the boundary
    assert not cb.check_answer({"numeric": 1024, "tolerance": 0}, 1023)
    ch = {"choices": ["a", "b", "c"], "answer": 2}
    assert cb.check_answer(ch, 2) and not cb.check_answer(ch, 0)


@pytest.mark.parametrize("q,pred", [
    ({"numeric": 1.0, "tolerance": 0.1}, True),
    ({"numeric": 1.0, "tolerance": 0.1}, float("nan")),
    ({"numeric": 1.0, "tolerance": 0.1}, float("inf")),
    ({"numeric": 1.0, "tolerance": 0.1}, "1.0"),
    ({"numeric": 1.0, "tolerance": 0.1}, None),
    ({"choices": ["a", "b"], "answer": 0}, 2),
    ({"choices": ["a", "b"], "answer": 0}, -1),
    ({"choices": ["a", "b"], "answer": 0}, True),
    ({"choices": ["a", "b"], "answer": 0}, 0.0),
    ({"choices": ["a", "b"], "answer": 0}, None),
])
def test_check_answer_rejects_bad_predictions(q, pred):
    with pytest.raises(ValueError, match="prediction"):
        cb.check_answer(q, pred)


@settings(max_examples=200, deadline=None)
@given(ans=st.floats(-1e6, 1e6), tol=st.floats(0, 10), off=st.floats(-1, 1))
def test_check_answer_accepts_exactly_the_tolerance_band(ans, tol, off):
    q = {"numeric": ans, "tolerance": tol}
    pred = ans + off * tol
    assert cb.check_answer(q, pred)  # inside (or on) the band, rounding included
    if tol > 0:
        assert not cb.check_answer(q, ans + 1.01 * tol + 1e-9 * max(1.0, abs(ans)) + 1e-12)


@pytest.mark.parametrize("k", [0, 1, 2, 8, 64, 1024])
@pytest.mark.parametrize("ans", [0.0, 1e-300, 0.1, 1.0 / 3, -2.5, 1e6])
def test_check_answer_near_degenerate_sweep(ans, k):
    # tolerance 0 and predictions a few ulps away: float rounding of a typed answer must not flip a right answer
    q = {"numeric": ans, "tolerance": 0.0}
    pred = ans
    for _ in range(k):
        pred = math.nextafter(pred, math.inf)
    assert cb.check_answer(q, pred) == (abs(pred - ans) <= 1e-12 * max(1.0, abs(ans)))
    assert cb.check_answer(q, ans)


# ---------------------------------------------------------------- validate: every error names id and field

def _mut(field, value):
    def f(q):
        if value is _DEL:
            q.pop(field, None)
        else:
            q[field] = value
    return f


_DEL = object()
BAD = [
    ("question", _mut("question", ""), "question"),
    ("question", _mut("question", _DEL), "question"),
    ("answer_explanation", _mut("answer_explanation", "  "), "answer_explanation"),
    ("example", _mut("example", _DEL), "example"),
    ("paper", _mut("paper", "no_such_paper"), "paper"),
    ("family", _mut("family", "astrology"), "family"),
    ("citation", _mut("citation", "Someone 2025"), "citation"),
    ("citation", lambda q: q["citation"].update(title=""), "citation"),
    ("citation", lambda q: q["citation"].update(where=None), "citation"),
    ("citation", lambda q: q["citation"].update(year="2025"), "citation"),
    ("citation", lambda q: q["citation"].update(authors=""), "citation"),
    ("example_source", _mut("example_source", "paper"), "example_source"),
    ("mechanism", _mut("mechanism", "not_a_mechanism"), "mechanism"),
    ("answer", _mut("answer", 9), "answer"),
    ("answer", _mut("answer", True), "answer"),
    ("answer", _mut("answer", _DEL), "answer"),
    ("choices", _mut("choices", ["only one"]), "choices"),
    ("choices", _mut("choices", ["same", "same"]), "choices"),
    ("choices", lambda q: q.update(numeric=1.0, tolerance=0.1), "choices"),  # both kinds at once
]


@pytest.mark.parametrize("name,mutate,field", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_validate_names_question_and_field(name, mutate, field):
    qs = copy.deepcopy(QS)
    target = next(q for q in qs if "choices" in q)
    mutate(target)
    with pytest.raises(ValueError) as ei:
        cb.validate(qs)
    msg = str(ei.value)
    assert repr(field) in msg, msg
    assert target["id"] in msg or field == "question", msg  # a missing id is reported by its position instead


@pytest.mark.parametrize("mutate,field", [
    (_mut("numeric", float("nan")), "numeric"),
    (_mut("numeric", "0.5"), "numeric"),
    (_mut("numeric", True), "numeric"),
    (_mut("tolerance", -0.1), "tolerance"),
    (_mut("tolerance", _DEL), "tolerance"),
    (_mut("tolerance", float("inf")), "tolerance"),
])
def test_validate_numeric_fields(mutate, field):
    qs = copy.deepcopy(QS)
    target = next(q for q in qs if "numeric" in q)
    mutate(target)
    with pytest.raises(ValueError, match=f"{target['id']}.*'{field}'"):
        cb.validate(qs)


def test_validate_duplicates_coverage_and_shape():
    qs = copy.deepcopy(QS)
    qs[1]["id"] = qs[0]["id"]
    with pytest.raises(ValueError, match=r"'id'.*unique"):
        cb.validate(qs)
    thin = [q for q in QS if q["paper"] != "scar"] + [next(q for q in QS if q["paper"] == "scar")]
    with pytest.raises(ValueError, match=r"'paper'.*scar"):
        cb.validate(copy.deepcopy(thin))
    with pytest.raises(ValueError, match="questions"):
        cb.validate([])
    with pytest.raises(ValueError, match="questions"):
        cb.validate({"id": "x"})
    with pytest.raises(ValueError, match=r"questions\[0\]"):
        cb.validate(["not an object"])


def test_load_questions_from_a_path(tmp_path):
    p = tmp_path / "bank.json"
    p.write_text(json.dumps(QS))
    assert cb.load_questions(p) == QS
    p.write_text("{not json")
    with pytest.raises(ValueError, match="path"):
        cb.load_questions(p)


# ---------------------------------------------------------------- filter and score

def test_filter_questions():
    scar = cb.filter_questions(QS, paper="scar")
    assert [q["id"] for q in scar] == ["scar-1", "scar-2", "scar-3", "scar-4"]
    masks = cb.filter_questions(QS, family="masks")
    assert masks and all(q["family"] == "masks" for q in masks)
    assert cb.filter_questions(QS, paper="scar", family="masks") == []
    assert cb.filter_questions(QS) == QS
    assert cb.filter_questions(paper="mart") == cb.filter_questions(QS, paper="mart")
    with pytest.raises(ValueError, match="paper"):
        cb.filter_questions(QS, paper="SCAR ")
    with pytest.raises(ValueError, match="family"):
        cb.filter_questions(QS, family="Masks")


def test_score_hand_values():
    s = cb.score({"scar-1": True, "scar-2": False, "mart-1": True}, QS)
    assert s["total"] == {"correct": 2, "answered": 3}
    assert s["by_family"] == {"shapley": {"correct": 1, "answered": 2}, "masks": {"correct": 1, "answered": 1}}
    assert s["by_paper"]["scar"] == {"correct": 1, "answered": 2}
    assert cb.score({}, QS)["total"] == {"correct": 0, "answered": 0}
    with pytest.raises(ValueError, match="answers"):
        cb.score({"nope": True}, QS)
    with pytest.raises(ValueError, match="answers"):
        cb.score({"scar-1": 1}, QS)


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(BY_ID)), st.booleans(), max_size=30))
def test_score_properties(answers):
    s = cb.score(answers, QS)
    assert s["total"]["answered"] == len(answers)
    assert s["total"]["correct"] == sum(answers.values())
    for part in ("by_family", "by_paper"):
        assert sum(v["answered"] for v in s[part].values()) == len(answers)
        assert sum(v["correct"] for v in s[part].values()) == s["total"]["correct"]
        assert all(0 <= v["correct"] <= v["answered"] for v in s[part].values())


def test_answer_text_and_citation():
    assert cb.answer_text(BY_ID["scar-1"]) == "0.6 (± 0.001)"
    q = BY_ID["scar-4"]
    assert cb.answer_text(q) == q["choices"][q["answer"]]
    assert "Cao" in cb.format_citation(BY_ID["scar-1"])
    assert "not stated in the bank" in cb.format_citation(BY_ID["mart-1"])


@settings(max_examples=40, deadline=None)
@given(st.permutations(list(range(len(QS)))))
def test_filters_partition_the_bank_in_any_order(perm):
    qs = [QS[i] for i in perm]
    assert cb.validate(qs) is qs  # validation does not depend on order
    by_paper = [q["id"] for k in cb.PAPERS for q in cb.filter_questions(qs, paper=k)]
    by_family = [q["id"] for f in cb.FAMILIES for q in cb.filter_questions(qs, family=f)]
    assert sorted(by_paper) == sorted(by_family) == sorted(BY_ID)
    k = qs[0]["paper"]
    assert [q["id"] for q in cb.filter_questions(qs, paper=k)] == [q["id"] for q in qs if q["paper"] == k]  # order kept


def test_cycle_index_and_page_of():
    from lab import credit_bank as cb

    assert [cb.cycle_index(0, -1, 5), cb.cycle_index(4, 1, 5), cb.cycle_index(2, 1, 5)] == [4, 0, 3]
    assert cb.page_of(list(range(25)), 20, 10) == [20, 21, 22, 23, 24]
    for call, name in [(lambda: cb.cycle_index(0, 1, 0), "count"), (lambda: cb.page_of([1], 0, 0), "per_page")]:
        with pytest.raises(ValueError, match=name):
            call()
