"""Issue 10 §1, agentic/replay/feedback pieces at the edges: hand-computed cases and bad input.

Each test names the finding it pins down. The generated sweep over every public function lives in
tests/test_edge_sweep_agentic.py.
"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.feedback import (
    OUTCOME,
    OutcomeLabel,
    ProcessLabel,
    arithmetic_step_verdict,
    check_arithmetic_step,
    is_online_measurable,
    label_trace,
)

# ----------------------------------------------------------------------------- feedback: step checker


@pytest.mark.parametrize(
    "text, verdict, label",
    [
        ("1/0 = 5", "undefined", 0),  # was ZeroDivisionError
        ("2 + 1/0 = 2", "undefined", 0),
        ("3 × 4 = 12", "holds", 1),
        ("17 + 2 = 18", "wrong", 0),
        ("3-2=1", "holds", 1),  # "-2" after a number is the operator minus
        ("3 - -2 = 5", "holds", 1),
        ("2 + 3 * 4 = 14", "holds", 1),  # precedence: 2 + 12
        ("7/2*2 = 7", "holds", 1),  # exact rationals: 3.5 * 2
        ("10/4 = 2", "wrong", 0),  # 2.5 is not 2: no integer division
        ("6/3/2 = 1", "holds", 1),  # left to right
        ("1 + 1 = 2 and 2 * 2 = 5", "wrong", 0),  # every equation must hold
        ("3 +\n4\n= 7", "holds", 1),
        ("no equation here", "no_equation", 1),
        ("", "no_equation", 1),
        ("٣ + ٤ = ٧", "no_equation", 1),  # ASCII digits only: nothing to refute
    ],
)
def test_arithmetic_checker_hand_cases(text, verdict, label):
    assert arithmetic_step_verdict(text) == verdict
    assert check_arithmetic_step(text) == label


def test_arithmetic_checker_bounds_its_input():
    # 5000-digit number: was SyntaxError from eval; now a ValueError naming the argument
    with pytest.raises(ValueError, match=r"^text has 5008 characters"):
        check_arithmetic_step("1" * 5000 + " + 1 = 2")
    with pytest.raises(ValueError, match=r"^text holds a 150-digit number"):
        check_arithmetic_step("1" * 150 + " + 1 = 2")
    assert check_arithmetic_step("9" * 100 + " - 1 = 9" + "9" * 98 + "8") == 1  # 100 digits is allowed, exactly
    assert check_arithmetic_step("1" * 150 + " + 1 = 2", max_digits=200) == 0
    with pytest.raises(ValueError, match="text must be a string"):
        check_arithmetic_step(None)
    with pytest.raises(ValueError, match="max_chars"):
        check_arithmetic_step("1 + 1 = 2", max_chars=0)
    with pytest.raises(ValueError, match="max_digits"):
        check_arithmetic_step("1 + 1 = 2", max_digits=True)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-10**6, 10**6), min_size=2, max_size=6), st.lists(st.sampled_from("+-*/"), min_size=5, max_size=5))
def test_arithmetic_checker_matches_exact_reference(nums, ops):
    from fractions import Fraction

    expr = str(nums[0])
    for op, n in zip(ops, nums[1:]):
        expr += f" {op} {n}"
    # reference: Python's own grammar on Fractions (same precedence, left to right)
    src = " ".join(f"Fraction({t})" if t.lstrip("-").isdigit() else t for t in expr.split())
    try:
        value = eval(src, {"Fraction": Fraction})
    except ZeroDivisionError:
        assert arithmetic_step_verdict(f"{expr} = 0") == "undefined"
        return
    if value.denominator == 1:
        assert arithmetic_step_verdict(f"{expr} = {value.numerator}") == "holds"
        assert arithmetic_step_verdict(f"{expr} = {value.numerator + 1}") == "wrong"
    else:
        assert arithmetic_step_verdict(f"{expr} = {math.floor(value)}") == "wrong"


# ----------------------------------------------------------------------------- feedback: records and measurability


def test_label_records_refuse_bad_fields():
    with pytest.raises(ValueError, match="value must be finite"):
        ProcessLabel("r", 1, math.nan, "x", 1)
    with pytest.raises(ValueError, match="value must be a real number"):
        OutcomeLabel("r", "1", "x")
    with pytest.raises(ValueError, match="step must be an integer"):
        ProcessLabel("r", 1.5, 1.0, "x", 2)
    with pytest.raises(ValueError, match="step must be an integer"):
        ProcessLabel("r", True, 1.0, "x", 2)
    with pytest.raises(ValueError, match="computed_after"):
        ProcessLabel("r", 1, 1.0, "x", math.nan)
    assert ProcessLabel("r", 2, True, "x", OUTCOME).value == 1.0  # bool label converts to the same number
    assert OutcomeLabel("r", 1, "x").value == 1.0 and isinstance(OutcomeLabel("r", 1, "x").value, float)


def test_online_measurability_refuses_nan_and_wrong_types():
    lab_ = ProcessLabel("r", 2, 1.0, "checker", 2)
    with pytest.raises(ValueError, match="step"):
        is_online_measurable(lab_, math.nan)  # was: silently False
    with pytest.raises(ValueError, match="step"):
        is_online_measurable(lab_, math.inf)
    with pytest.raises(ValueError, match="available_through"):
        is_online_measurable(lab_, 3, available_through=math.nan)
    with pytest.raises(ValueError, match="label"):
        is_online_measurable({"computed_after": 1}, 3)
    assert is_online_measurable(lab_, 2.0) and not is_online_measurable(lab_, 1)


def test_label_trace_bad_input():
    with pytest.raises(ValueError, match="steps must be a list of strings"):
        label_trace("r", "1 + 1 = 2", "2", "2")
    with pytest.raises(ValueError, match="final_answer must be a string"):
        label_trace("r", ["1 + 1 = 2"], 2, "2")
    out, proc = label_trace("r", ["1/0 = 5", "3 × 4 = 12"], "12", "12")
    assert out.value == 1.0 and [p.value for p in proc] == [0.0, 1.0]


# ----------------------------------------------------------------------------- agentic: serializer (ftip-004P, ftip-004R)

from lab.agentic import (  # noqa: E402
    Action,
    ActionSerializer,
    AgenticState,
    Ledger,
    Malformed,
    RoundCostError,
    RoundSpec,
    Sandbox,
    ScriptedPolicy,
    agentic_round,
    agentic_run,
    react_episode,
    round_seeds,
)

_NAME = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"), blacklist_characters='"<>'), min_size=1, max_size=12).filter(
    lambda n: not any(c.isspace() or not c.isprintable() for c in n))


def test_camel_case_tool_decodes_its_own_encoding():
    ser = ActionSerializer(tools=("runTests",))  # was: the decoder only accepted [a-z_][a-z0-9_]*
    a = Action("runTests", "test_solution.py")
    assert ser.encode(a) == '<action tool="runTests">test_solution.py</action>'
    assert ser.decode(ser.encode(a)) == a
    assert isinstance(ser.decode('<action tool="run_tests">x</action>'), Malformed)  # exactly the names given
    assert isinstance(ser.decode('<action tool="runtests">x</action>'), Malformed)


@settings(max_examples=150, deadline=None)
@given(st.lists(_NAME, min_size=1, max_size=4, unique=True), st.data())
def test_every_allowed_tool_round_trips(tools, data):
    ser = ActionSerializer(tools=tools)
    tool = data.draw(st.sampled_from(tools))
    arg = data.draw(st.text(max_size=40))
    thought = data.draw(st.text(max_size=30)).strip()
    a = Action(tool, arg, thought)
    if ser.in_domain(a):
        assert ser.decode(ser.encode(a)) == a
        assert ser.decode("\n " + ser.encode(a) + " \n") == a
    else:
        assert "</action>" in arg or "<action" in thought
        with pytest.raises(ValueError, match="action.argument|action.thought"):
            ser.encode(a)
    other = data.draw(_NAME)
    if other not in tools:
        assert isinstance(ser.decode(f'<action tool="{other}">{arg.replace("</action>", "")}</action>'), Malformed)


def test_react_thought_before_action_is_kept_apart():
    ser = ActionSerializer()
    text = 'Thought: the test expects 9, so squares are needed.\n<action tool="run_tests">test_solution.py</action>\n'
    d = ser.decode(text)
    assert d == Action("run_tests", "test_solution.py", "Thought: the test expects 9, so squares are needed.")
    assert ser.encode(d) == text.strip()
    strict = ActionSerializer(allow_thought=False)
    assert isinstance(strict.decode(text), Malformed) and "before" in strict.decode(text).reason
    assert strict.decode(' <action tool="finish">ok</action>') == Action("finish", "ok")
    with pytest.raises(ValueError, match="action.thought"):
        strict.encode(Action("finish", "ok", "why"))


@pytest.mark.parametrize("text, why", [
    ("I will run the tests now.", "no <action"),
    ('Thought: fix it. <action tool="python">print(1)', "closing"),
    ('<action tool="python">a</action><action tool="finish">b</action>', "after"),
    ('Thought <action tool=python>x</action>', "malformed opening tag"),
    ('<action tool="rm">-rf /</action>', "unknown tool"),
    ('<actiontool="python">x</action>', "malformed opening tag"),
    ("", "no <action"),
])
def test_genuinely_malformed_text_stays_malformed(text, why):
    d = ActionSerializer().decode(text)
    assert isinstance(d, Malformed) and why in d.reason


def test_serializer_bad_input():
    with pytest.raises(ValueError, match="tools must be a sequence"):
        ActionSerializer(tools="runTests")  # a string would be a tuple of letters
    with pytest.raises(ValueError, match="tools"):
        ActionSerializer(tools=("run tests",))
    with pytest.raises(ValueError, match="tools"):
        ActionSerializer(tools=('a"b',))
    with pytest.raises(ValueError, match="tools must name at least one"):
        ActionSerializer(tools=())
    with pytest.raises(ValueError, match="tools must not repeat"):
        ActionSerializer(tools=("a", "a"))
    with pytest.raises(ValueError, match="text must be a string"):
        ActionSerializer().decode(None)
    with pytest.raises(ValueError, match="action must be an Action"):
        ActionSerializer().encode("python")


# ----------------------------------------------------------------------------- agentic: hard budget and output cap (ftip-0074)


def _printing_spec(sb, n_chars, max_steps=1, feedback=None, credit=None):
    """Each round: one real sandbox step that prints ``n_chars - 1`` x's and a newline (n_chars bytes)."""
    ser = ActionSerializer()
    gen = ser.encode(Action("python", f"print('x' * {n_chars - 1})"))
    return RoundSpec(
        task="print",
        sample_instance=lambda seed: (f"instance-{seed}", {}),
        rollout=lambda inst, files, seed: react_episode(ScriptedPolicy([gen] * max_steps), sb, inst, files=files, max_steps=max_steps),
        feedback=feedback or (lambda t: {"steps": len(t.steps)}),
        credit=credit or (lambda t, fb: [0.0] * len(t.steps)),
        update=lambda state, credit, seed: ("accept", f"m{state.round_index + 1}", f"o{state.round_index + 1}"),
        policy_stamp=lambda state: state.artifact_id,
    )


def test_run_stops_before_crossing_a_1500_byte_budget(tmp_path):
    with Sandbox(timeout_s=5, memory_mb=256) as sb:
        state = AgenticState("m0", "o0", Ledger(tmp_path / "a.jsonl"))
        res = agentic_run(state, _printing_spec(sb, 1000), rounds=5, budget=[600, 600, 1500], max_round_cost=[60, 60, 1000])
        assert [r.cost[2] for r in res.records] == [1000.0]  # the second round (1000 + 1000 > 1500) is not admitted
        assert res.stop_reason == "budget" and res.cumulative_cost[2] == 1000.0
        # a declared bound that is false (rounds cost 1000, declared 400) stops the run at once, with an error,
        # instead of admitting a second round that ends at 2000 > 1500 (the old behaviour)
        state2 = AgenticState("m0", "o0", Ledger(tmp_path / "b.jsonl"))
        with pytest.raises(RoundCostError, match="max_round_cost is not a bound") as exc:
            agentic_run(state2, _printing_spec(sb, 1000), rounds=5, budget=[600, 600, 1500], max_round_cost=[60, 60, 400])
        assert len(exc.value.result.records) == 1 and exc.value.result.cumulative_cost[2] == 1000.0 <= 1500
        assert len(state2.ledger.read()[0]) == 1  # the round that ran is recorded


@pytest.mark.parametrize("bad", [math.nan, -1.0, math.inf, True, "1500", None])
def test_budget_components_must_be_finite_nonnegative_numbers(tmp_path, bad):
    state = AgenticState("m0", "o0", Ledger(tmp_path / "c.jsonl"))
    with pytest.raises(ValueError, match=r"^budget \(output bytes\)"):
        agentic_run(state, None, rounds=3, budget=[1, 1, bad], max_round_cost=[1, 1, 1])
    with pytest.raises(ValueError, match=r"^max_round_cost \(wall seconds\)"):
        agentic_run(state, None, rounds=3, budget=[1, 1, 1], max_round_cost=[bad, 1, 1])
    assert not (tmp_path / "c.jsonl").exists()  # nothing ran


def test_run_argument_checks(tmp_path):
    state = AgenticState("m0", "o0", Ledger(tmp_path / "d.jsonl"))
    with pytest.raises(ValueError, match="budget must have 3 components"):
        agentic_run(state, None, rounds=1, budget=[1, 1], max_round_cost=[1, 1, 1])
    with pytest.raises(ValueError, match="budget must be a sequence"):
        agentic_run(state, None, rounds=1, budget="1500", max_round_cost=[1, 1, 1])
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="rounds"):
            agentic_run(state, None, rounds=bad, budget=[1, 1, 1], max_round_cost=[1, 1, 1])
    with pytest.raises(ValueError, match="seed"):
        agentic_run(state, None, rounds=1, budget=[1, 1, 1], max_round_cost=[1, 1, 1], seed=-1)
    assert agentic_run(state, None, rounds=0, budget=[0, 0, 0], max_round_cost=[0, 0, 0]).records == []


def test_max_output_bytes_bounds_the_recorded_cost(tmp_path):
    with Sandbox(timeout_s=5, memory_mb=256, max_output_bytes=1000) as sb:
        t = react_episode(ScriptedPolicy([ActionSerializer().encode(Action("python", "print('é' * 3000)"))]), sb, "print", max_steps=1)
        r = t.steps[0].result
        assert r.output_bytes <= 1000 and t.cost[1] <= 1000  # was 6001 (every byte the child printed)
        assert len(r.stdout.encode()) == r.output_bytes == 1000  # 500 two-byte characters, none cut in half
        assert r.evidence["output_truncated"] and r.evidence["output_bytes_produced"] == 6001
        # so a run may declare max_steps * max_output_bytes as its bytes bound, and it holds
        state = AgenticState("m0", "o0", Ledger(tmp_path / "e.jsonl"))
        res = agentic_run(state, _printing_spec(sb, 5000, max_steps=2), rounds=3, budget=[600, 600, 4500], max_round_cost=[60, 60, 2 * 1000])
        assert [r.cost[2] for r in res.records] == [2000.0, 2000.0] and res.stop_reason == "budget"


# ----------------------------------------------------------------------------- agentic: seeds reach the maps (ftip-0073)


def test_feedback_and_credit_seeds_are_passed_on(tmp_path):
    import random

    import torch

    def feedback(t, seed):  # e.g. a sampled judge: the seed fixes its randomness
        return {"steps": len(t.steps), "judge_draw": random.Random(seed).random()}

    def credit(t, fb, seed):  # e.g. a sampled baseline
        g = torch.Generator().manual_seed(seed)
        return [float(torch.rand((), generator=g, dtype=torch.float64))] * len(t.steps)

    def run(seed, name):
        with Sandbox() as sb:
            state = AgenticState("m0", "o0", Ledger(tmp_path / f"{name}.jsonl"))
            spec = _printing_spec(sb, 10, feedback=feedback, credit=credit)
            return agentic_run(state, spec, rounds=2, budget=[600, 600, 1e6], max_round_cost=[60, 60, 100], seed=seed).records

    a, b, c = run(7, "a"), run(7, "b"), run(8, "c")
    assert [r.feedback for r in a] == [r.feedback for r in b] and [r.credit for r in a] == [r.credit for r in b]
    assert [r.feedback for r in a] != [r.feedback for r in c] and [r.credit for r in a] != [r.credit for r in c]
    assert a[0].feedback != a[1].feedback  # each round draws its own seed
    s = round_seeds(7, 1)
    assert a[1].seeds == s and a[1].feedback["judge_draw"] == random.Random(s["feedback"]).random()
    g = torch.Generator().manual_seed(s["credit"])
    assert a[1].credit == [float(torch.rand((), generator=g, dtype=torch.float64))]


def test_deterministic_maps_record_no_seed(tmp_path):
    with Sandbox() as sb:
        state = AgenticState("m0", "o0", Ledger(tmp_path / "f.jsonl"))
        rec = agentic_round(state, _printing_spec(sb, 10), round_seeds(3, 0))
    assert rec.seeds["feedback"] is None and rec.seeds["credit"] is None  # not passed on, so not claimed
    assert rec.seeds["task"] == 3 * 1_000_003 and rec.seeds["update"] == 3 * 1_000_003 + 4
    with pytest.raises(ValueError, match="seeds"):
        agentic_round(state, _printing_spec(None, 10), {"task": 0})
    with pytest.raises(ValueError, match=r"seeds\['credit'\]"):
        agentic_round(state, _printing_spec(None, 10), {**round_seeds(0, 0), "credit": math.nan})


def test_model_policy_seed_reproduces_and_changes_samples():
    import torch

    from lab.agentic import ModelPolicy
    from lab.models import char_tokenizer, tiny_gpt2

    tok = char_tokenizer()
    m = tiny_gpt2(len(tok), n_layer=1, n_embd=16, n_head=2)

    def sample(seed):
        p = ModelPolicy(m, tok, max_new_tokens=12, do_sample=True, seed=seed)
        return [p("Task: 6*7\n"), p("Task: 6*7\n")]

    torch.manual_seed(123)
    before = torch.get_rng_state()
    a, b, c = sample(1), sample(1), sample(2)
    assert torch.equal(torch.get_rng_state(), before)  # the caller's RNG is untouched
    assert a == b and a != c
    assert a[0] != a[1]  # the second step does not replay the first step's noise
    with pytest.raises(ValueError, match="temperature"):
        ModelPolicy(m, tok, temperature=math.nan)
    with pytest.raises(ValueError, match="seed"):
        ModelPolicy(m, tok, seed=1.5)


# ----------------------------------------------------------------------------- replay: policy stamp (ftip-004Z)

from lab.models import char_tokenizer, tiny_gpt2  # noqa: E402
from lab.replay import (  # noqa: E402
    CurrentPolicy,
    DynamicGradientGate,
    ReplayPool,
    RolloutRecord,
    annotate,
    forecast_checkpoint,
    gate_zscore,
    gradient_energy,
    rank_one_projectors,
    tokenizer_hash,
)


def _lowercasing_char_tokenizer():
    """Same vocabulary and special tokens as char_tokenizer(), but lowercases text before splitting."""
    from tokenizers import normalizers

    tok = char_tokenizer()
    tok.backend_tokenizer.normalizer = normalizers.Lowercase()
    return tok


def test_tokenizer_hash_sees_behaviour_not_just_vocabulary():
    a, b = char_tokenizer(), _lowercasing_char_tokenizer()
    assert a.get_vocab() == b.get_vocab() and a.special_tokens_map == b.special_tokens_map
    assert a("Ab")["input_ids"] != b("Ab")["input_ids"]  # they encode the same text differently
    assert tokenizer_hash(a) != tokenizer_hash(b)  # was equal (vocabulary + special tokens only)
    assert tokenizer_hash(char_tokenizer()) == tokenizer_hash(char_tokenizer())  # built twice: equal
    h = tokenizer_hash(a)
    a(["ab", "abcdef"], padding=True, truncation=True, max_length=4)  # per-call state written into the backend
    assert tokenizer_hash(a) == h
    c = char_tokenizer()
    c.add_special_tokens({"additional_special_tokens": ["<tool>"]})
    assert tokenizer_hash(c) != h
    d = char_tokenizer()
    d.padding_side = "left"  # batched generation pads differently
    assert tokenizer_hash(d) != h
    with pytest.raises(ValueError, match="tokenizer must be"):
        tokenizer_hash("char")


def test_tokenizer_hash_pre_tokenizer_matters():
    from tokenizers import pre_tokenizers

    a, b = char_tokenizer(), char_tokenizer()
    b.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Split(pattern="", behavior="isolated")])
    assert a("a b")["input_ids"] != b("a b")["input_ids"]  # Whitespace drops the space
    assert tokenizer_hash(a) != tokenizer_hash(b)


# ----------------------------------------------------------------------------- replay: annotation in log space (ftip-0057, 0059)


def _rec(lp, at=0):
    return RolloutRecord("r", "q", "stamp-b", ("y",), tuple(lp), ("e",), at)


def test_annotate_log_space_no_overflow():
    a = annotate(_rec([-1000.0]), CurrentPolicy("now", lambda r: [0.0]), update_index=0, prior_uses=0)  # was OverflowError
    assert a.ratios == (math.inf,) and a.clipped == (True,) and a.log_ratios == (1000.0,)
    b = annotate(_rec([-1000.0, -2.0]), CurrentPolicy("now", lambda r: [-1000.0 + math.log(2), -math.inf]), update_index=0, prior_uses=0)
    assert b.ratios[0] == pytest.approx(2.0, rel=1e-12) and b.ratios[1] == 0.0 and b.clipped == (True, True)
    # just inside and just outside float64's range
    assert math.isfinite(annotate(_rec([-709.0]), CurrentPolicy("now", lambda r: [0.0]), 0, 0).ratios[0])
    assert annotate(_rec([-710.0]), CurrentPolicy("now", lambda r: [0.0]), 0, 0).ratios[0] == math.inf
    # hand-computed ftip-0059: 0.5 / 0.25 = 2, age 3, two prior uses
    c = annotate(_rec([math.log(0.25)]), CurrentPolicy("now", lambda r: [math.log(0.5)]), update_index=3, prior_uses=2)
    assert c.ratios == pytest.approx((2.0,)) and c.age == 3 and c.prior_uses == 2


def test_annotate_and_record_bad_input():
    with pytest.raises(ValueError, match="behavior_logps must be finite"):
        _rec([-math.inf])  # a sampled action had probability > 0
    with pytest.raises(ValueError, match="behavior_logps must be finite"):
        _rec([math.nan])
    with pytest.raises(ValueError, match="behavior_logps must be <= 0"):
        _rec([0.5])
    with pytest.raises(ValueError, match="collected_at"):
        _rec([-1.0], at=-1)
    r = _rec([-1.0])
    with pytest.raises(ValueError, match="current_policy must give log-probabilities"):
        annotate(r, CurrentPolicy("now", lambda x: [math.nan]), 0, 0)
    with pytest.raises(ValueError, match="current_policy must give log-probabilities"):
        annotate(r, CurrentPolicy("now", lambda x: [0.1]), 0, 0)
    with pytest.raises(ValueError, match="update_index"):
        annotate(r, CurrentPolicy("now", lambda x: [-1.0]), True, 0)
    with pytest.raises(ValueError, match="prior_uses"):
        annotate(r, CurrentPolicy("now", lambda x: [-1.0]), 0, -1)
    with pytest.raises(ValueError, match="epsilon"):
        annotate(r, CurrentPolicy("now", lambda x: [-1.0]), 0, 0, epsilon=math.nan)
    assert _rec([-1, 0]).behavior_logps == (-1.0, 0.0)  # ints convert to the same numbers


def test_replay_pool_and_gate_bad_input():
    for bad in (math.nan, 2.5, True, 0):
        with pytest.raises(ValueError, match="capacity"):
            ReplayPool(bad)
    pool = ReplayPool(3, insertion="nonzero_advantage")
    with pytest.raises(ValueError, match="advantage_spread"):
        pool.insert(_rec([-1.0]), advantage_spread=math.nan)  # was: NaN counted as a non-zero spread
    with pytest.raises(ValueError, match="advantage_spread is required"):
        pool.insert(_rec([-1.0]))
    assert pool.insert(_rec([-1.0]), advantage_spread=1e-17) and not pool.insert(_rec([-1.0]), advantage_spread=0.0)
    with pytest.raises(ValueError, match="k must be"):
        pool.select(True)
    with pytest.raises(ValueError, match="z_threshold"):
        DynamicGradientGate(z_threshold=math.nan)  # was: every proposal silently rejected
    with pytest.raises(ValueError, match="ddof"):
        DynamicGradientGate(ddof=3, min_history=3)
    gate = DynamicGradientGate()
    with pytest.raises(ValueError, match="energy"):
        gate.decide(math.inf)
    assert gate.cost.proposals == 0  # a refused call leaves the gate as it was
    with pytest.raises(ValueError, match="increment"):
        gate_zscore(math.nan, 0.0, 1.0)  # was: NaN returned
    with pytest.raises(ValueError, match="mu"):
        gate_zscore(1.0, math.inf, 1.0)
    import torch

    p = torch.nn.Parameter(torch.ones(2))
    p.grad = torch.tensor([1.0, math.nan])
    with pytest.raises(ValueError, match="param.grad must be finite"):
        gradient_energy(p)
    p.grad = torch.tensor([3.0, 4.0])
    assert gradient_energy(p) == 25.0


def test_projectors_and_forecast_at_the_edges():
    import torch

    with pytest.raises(ValueError, match="u must be non-zero"):
        rank_one_projectors([0.0, 0.0], [1.0])  # was: NaN projector
    with pytest.raises(ValueError, match="v must be finite"):
        rank_one_projectors([1.0], [math.inf, 1.0])
    P, Q = rank_one_projectors([3e200, 4e200], [1])  # ‖u‖ overflows float64 unless scaled first
    assert torch.allclose(P, torch.tensor([[0.36, 0.48], [0.48, 0.64]], dtype=torch.float64)) and Q.item() == 1.0
    P2, _ = rank_one_projectors([3, 4], [1])  # ints
    assert torch.allclose(P2, P)
    big = [torch.tensor([[1e200, 0.0], [0.0, 1e199]], dtype=torch.float64) * k for k in (1.0, 2.0)]
    f = forecast_checkpoint(big)
    assert f.explained == pytest.approx([100 / 101] * 2, rel=1e-12)  # was NaN (S² overflowed)
    assert float(f.predicted_delta[0, 0]) == pytest.approx(3e200, rel=1e-12)
    with pytest.raises(ValueError, match="deltas must (be finite|not contain NaN)"):
        forecast_checkpoint([torch.eye(2), torch.full((2, 2), math.nan)])
    with pytest.raises(ValueError, match="deltas must be finite"):
        forecast_checkpoint([torch.eye(2), torch.full((2, 2), math.inf)])
    with pytest.raises(ValueError, match="deltas must be non-empty matrices"):
        forecast_checkpoint([torch.zeros(0, 2), torch.zeros(0, 2)])
    with pytest.raises(ValueError, match="rank"):
        forecast_checkpoint([torch.eye(2), torch.eye(2)], rank=True)
    assert forecast_checkpoint([[[1, 0], [0, 0]], [[2, 0], [0, 0]]]).predicted_delta[0, 0].item() == pytest.approx(3.0)
