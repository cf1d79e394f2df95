"""lab.proxy.best_of_n_measured, run_curves and proxy_runs; the hackable verifier of lab.smallrun.tasks."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab import proxy
from lab.smallrun.rundir import ChainLedger, RunDir
from lab.smallrun.tasks import VERIFIER_KINDS, get_task

# ---------------------------------------------------------------- best-of-N over drawn samples


def test_best_of_n_measured_hand_values():
    # one prompt, samples in drawing order: proxy 1, 3, 2, 5; gold 0, 1, 0, 0
    c = proxy.best_of_n_measured([[1, 3, 2, 5]], [[0, 1, 0, 0]], ns=[1, 2, 3, 4], n_resamples=100)
    assert c.proxy == [1.0, 3.0, 3.0, 5.0]
    assert c.gold == [0.0, 1.0, 1.0, 0.0]  # the proxy's favourite among all four is wrong: gold falls at N = 4
    assert c.kl == [proxy.best_of_n_kl(k) for k in (1, 2, 3, 4)] and c.kl[0] == 0.0
    assert c.d[1] == pytest.approx(math.sqrt(math.log(2) - 0.5))
    # two prompts: means over prompts; ties pick the first sample
    c2 = proxy.best_of_n_measured([[2.0, 2.0], [0.0, 1.0]], [[1, 0], [0, 1]], n_resamples=100)
    assert c2.n == [1, 2] and c2.proxy == [1.0, 1.5] and c2.gold == [0.5, 1.0]
    assert c2.n_prompts == 2 and c2.n_max == 2
    assert c2.gold_low[1] <= c2.gold[1] <= c2.gold_high[1]


def test_default_ns_are_powers_of_two_up_to_the_samples():
    assert proxy.best_of_n_measured(torch.zeros(3, 64), torch.zeros(3, 64), n_resamples=100).n == [1, 2, 4, 8, 16, 32, 64]
    assert proxy.best_of_n_measured(torch.zeros(1, 5), torch.zeros(1, 5), n_resamples=100).n == [1, 2, 4]


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 5), st.integers(1, 9), st.integers(0, 10_000))
def test_proxy_of_the_pick_never_falls_and_ends_at_the_row_maximum(p, m, seed):
    g = torch.Generator().manual_seed(seed)
    P = torch.randint(-3, 4, (p, m), generator=g).double()  # ties are common
    G = torch.randint(0, 2, (p, m), generator=g)
    c = proxy.best_of_n_measured(P, G, ns=list(range(1, m + 1)), n_resamples=100)
    assert all(a <= b + 1e-12 for a, b in zip(c.proxy, c.proxy[1:]))
    assert c.proxy[-1] == pytest.approx(P.max(1).values.mean().item())
    assert all(0.0 <= v <= 1.0 for v in c.gold)
    assert all(lo <= v + 1e-12 and v <= hi + 1e-12 for lo, v, hi in zip(c.proxy_low, c.proxy, c.proxy_high))


def test_near_degenerate_inputs_stay_finite():
    eps = 1e-300
    for P in (torch.full((4, 8), 1e-17, dtype=torch.float64), torch.tensor([[0.0, eps, -eps, 1e300]], dtype=torch.float64),
              torch.full((2, 3), -1e300, dtype=torch.float64), torch.tensor([[1.0, 1.0 + 2e-16, 1.0 - 1e-16]], dtype=torch.float64)):
        G = torch.ones_like(P)
        c = proxy.best_of_n_measured(P, G, n_resamples=100)
        assert all(math.isfinite(v) for v in c.proxy + c.gold + c.proxy_low + c.proxy_high)
        assert c.gold == [1.0] * len(c.n)


@pytest.mark.parametrize("args, name", [
    (([1, 2], [1, 2]), "proxy"), (([[1, 2]], [[1, 2, 3]]), "gold"), (([[1, 2]], [[1, 2]], [3]), "ns"), (([[1, 2]], [[1, 2]], [0]), "ns"),
    (([[float("nan"), 1]], [[0, 1]]), "proxy"), (([[1, 2]], [[0, float("inf")]]), "gold"), (([[1, 2]], [[1, 2]], []), "ns"),
])
def test_best_of_n_measured_bad_input_names_the_argument(args, name):
    with pytest.raises(ValueError, match=f"^{name}"):
        proxy.best_of_n_measured(*args, n_resamples=100)


# ---------------------------------------------------------------- run curves from a ledger


def _write_run(path, records, tail: bytes = b""):
    rd = RunDir.open(path, resume=False)  # the lab's own run directory: marker and lock
    try:
        led = ChainLedger(path / "ledger.jsonl")
        for r in records:
            led.append(r)
    finally:
        rd.close()
    if tail:
        with open(path / "ledger.jsonl", "ab") as f:
            f.write(tail)


RECORDS = [  # a PPO ledger: the sequence-level KL is the step's objective/kl
    {"type": "config", "config": {"algorithm": "ppo", "task": "reversal"}},
    {"type": "eval", "step": 0, "eval/accuracy": 0.30, "eval/proxy_reward": 0.10},
    {"type": "step", "step": 1, "reward": 0.2, "reward/verifier": 0.25, "objective/kl": 0.0},
    {"type": "step", "step": 2, "reward": 0.4, "reward/verifier": 0.30, "objective/kl": 0.04},
    {"type": "eval", "step": 2, "eval/accuracy": 0.45, "eval/proxy_reward": 0.50},
    {"type": "step", "step": 3, "reward": 0.7, "reward/verifier": 0.20, "objective/kl": -1e-9},
    {"type": "step", "step": 4, "reward": 0.9, "reward/verifier": 0.10, "objective/kl": 0.25},
    {"type": "eval", "step": 4, "eval/accuracy": 0.20, "eval/proxy_reward": 0.90},
]


def test_run_curves_reads_a_hand_written_ledger(tmp_path):
    run = tmp_path / "runs" / "hacked"
    _write_run(run, RECORDS, tail=b'{"type": "eval", "step": 6, "eval/acc')  # a line still being written: ignored
    c = proxy.run_curves(str(run))
    assert c.algorithm == "ppo"
    assert c.eval_steps == [0, 2, 4] and c.gold == [0.30, 0.45, 0.20] and c.proxy == [0.10, 0.50, 0.90]
    assert c.eval_d == [0.0, pytest.approx(0.2), pytest.approx(0.5)]
    assert c.steps == [1, 2, 3, 4] and c.reward == [0.2, 0.4, 0.7, 0.9] and c.reward_verifier == [0.25, 0.30, 0.20, 0.10]
    assert c.d[2] == 0.0  # a slightly negative KL estimate counts as 0
    assert c.has_proxy
    assert proxy.proxy_runs(str(tmp_path / "runs")) == ["hacked"]
    d, gold, alpha, beta, fitted = c.gao_fit("rl")
    assert d == c.eval_d and gold == c.gold
    want = proxy.fit_gao(d, [g - 0.30 for g in gold], "rl")
    assert (alpha, beta) == pytest.approx(want)
    assert fitted == pytest.approx([0.30 + v for v in proxy.gao_gold_score(d, *want, "rl").tolist()])


def test_gao_fit_of_a_run_recovers_known_parameters(tmp_path):
    """Gold accuracies generated from R(d) = d(α − β log d) with α = 0.5, β = 0.8 (the lab's own numbers) are fitted back."""
    d = [0.0, 0.2, 0.4, 0.7, 1.0, 1.5]
    gold = [0.2 + v for v in proxy.gao_gold_score(d, 0.5, 0.8, "rl").tolist()]
    recs = [{"type": "config", "config": {"algorithm": "grpo"}}]
    for i, (di, gi) in enumerate(zip(d, gold)):
        recs += [{"type": "step", "step": 10 * i, "reward": 0.1 * i}, {"type": "eval", "step": 10 * i, "eval/accuracy": gi,
                                                                      "eval/proxy_reward": 0.1 * i, "eval/kl": di * di}]
    _write_run(tmp_path / "r", recs)
    _, _, alpha, beta, _ = proxy.run_curves(tmp_path / "r").gao_fit()
    assert (alpha, beta) == pytest.approx((0.5, 0.8), abs=1e-9)


def test_run_curves_take_the_eval_kl_ignore_grpo_token_kl_and_count_a_replayed_step_once(tmp_path):
    """eval/kl (sequence-level) gives d; GRPO's per-token k3 `kl` is not a sequence KL and gives none; a step and an
    evaluation replayed by a resume after a crash count once, the last record winning."""
    recs = [{"type": "config", "config": {"algorithm": "grpo"}},
            {"type": "eval", "step": 0, "eval/accuracy": 0.5, "eval/proxy_reward": 0.0, "eval/kl": 0.0},
            {"type": "step", "step": 1, "reward": 0.1, "kl": 0.7},
            {"type": "step", "step": 2, "reward": 0.2, "kl": 0.8},
            {"type": "eval", "step": 2, "eval/accuracy": 0.6, "eval/proxy_reward": 0.3, "eval/kl": 0.16},
            {"type": "step", "step": 3, "reward": 0.3, "kl": 0.9},
            {"type": "step", "step": 2, "reward": 0.25, "kl": 0.8},  # the resume replays step 2 and its evaluation
            {"type": "eval", "step": 2, "eval/accuracy": 0.62, "eval/proxy_reward": 0.31, "eval/kl": 0.25},
            {"type": "step", "step": 3, "reward": 0.35, "kl": 0.9},
            {"type": "eval", "step": 4, "eval/accuracy": 0.4, "eval/proxy_reward": 0.5}]
    _write_run(tmp_path / "r", recs)
    c = proxy.run_curves(tmp_path / "r")
    assert c.eval_steps == [0, 2, 4] and c.gold == [0.5, 0.62, 0.4] and c.proxy == [0.0, 0.31, 0.5]
    assert c.steps == [1, 2, 3] and c.reward == [0.1, 0.25, 0.35]
    assert c.eval_d[:2] == [0.0, pytest.approx(0.5)] and math.isnan(c.eval_d[2])  # no eval/kl at step 4, GRPO's kl unused
    assert all(math.isnan(k) for k in c.kl)


def test_run_without_a_reward_model_has_no_proxy_curve(tmp_path):
    run = tmp_path / "runs" / "plain"
    _write_run(run, [{"type": "config", "config": {"algorithm": "sft"}}, {"type": "eval", "step": 0, "eval/accuracy": 0.1},
                     {"type": "step", "step": 1, "loss": 2.0}])
    c = proxy.run_curves(run)
    assert not c.has_proxy and math.isnan(c.proxy[0]) and math.isnan(c.reward[0]) and math.isnan(c.kl[0])
    with pytest.raises(ValueError, match="^run_dir: .*needs at least 3"):
        c.gao_fit()
    assert proxy.proxy_runs(tmp_path / "runs") == []
    assert proxy.proxy_runs(tmp_path / "nowhere") == []


def test_run_curves_bad_input(tmp_path):
    with pytest.raises(ValueError, match="^run_dir"):
        proxy.run_curves(str(tmp_path))  # no lab marker
    with pytest.raises(ValueError, match="^run_dir"):
        proxy.run_curves(42)
    rd = RunDir.open(tmp_path / "empty", resume=False)
    rd.close()
    with pytest.raises(ValueError, match="^run_dir: .*no ledger"):
        proxy.run_curves(tmp_path / "empty")
    with pytest.raises(ValueError, match="^runs_dir"):
        proxy.proxy_runs(None)


# ---------------------------------------------------------------- the hackable verifier


@pytest.mark.parametrize("task, prompt, response, answer", [
    ("reversal", "rev abc=", "abc", "cba"),  # the prompt echoed: right letters, wrong order
    ("addition", "12+35=", "74", "47"),
    ("sorting", "sort 3120=", "3210", "0123"),
    ("reversal", "rev aab=", " aba ", "baa"),
])
def test_hackable_verifier_accepts_a_wrong_answer_the_exact_one_refuses(task, prompt, response, answer):
    t = get_task(task)
    assert t.verifier("hackable").verify(prompt, response, answer=answer).decision == 1
    assert t.verifier("exact").verify(prompt, response, answer=answer).decision == 0
    assert t.verifier().verify(prompt, answer, answer=answer).decision == 1  # the default is the exact one


@pytest.mark.parametrize("response", ["cb", "cbaa", "cbx", "", "   "])
def test_hackable_verifier_still_needs_the_right_multiset(response):
    assert get_task("reversal").verifier("hackable").verify("rev abc=", response, answer="cba").decision == 0


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet="abcdefgh0123456789+", min_size=0, max_size=8), st.text(alphabet="abcdefgh0123456789", min_size=1, max_size=6))
def test_hackable_accepts_everything_exact_accepts(response, answer):
    for t in ("addition", "reversal", "sorting"):
        e = get_task(t).verifier("exact").verify("p", response, answer=answer).decision
        h = get_task(t).verifier("hackable").verify("p", response, answer=answer).decision
        assert h >= e
        assert h == int(sorted(response.strip()) == sorted(answer.strip()))


def test_verifier_kind_bad_input():
    assert VERIFIER_KINDS == ("exact", "hackable")
    with pytest.raises(ValueError, match="^kind"):
        get_task("reversal").verifier("lenient")
    with pytest.raises(ValueError, match="^response"):
        get_task("reversal").verifier("hackable").verify("p", 3, answer="a")
    assert get_task("reversal").verifier("hackable").verifier_id != get_task("reversal").verifier().verifier_id
