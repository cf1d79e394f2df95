"""The playground's speed shortcuts (issue 14) leave every number unchanged.

The tabular bandit skips the product with the identity feature matrix, the identity gather and the
multiplication by an all-ones mask; a bandit given the identity as explicit features still takes the
general path. Both must give bit-identical runs under every objective variant, in both modes.
"""

import pytest
import torch

from lab import playground as P

TABULAR = P.Bandit(rewards=[1.0, 0.5, 0.0], init_probs=[0.2, 0.3, 0.5])
GENERAL = P.Bandit(rewards=[1.0, 0.5, 0.0], init_probs=[0.2, 0.3, 0.5], features=torch.eye(3).tolist())


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("variant", list(P.VARIANTS))
def test_tabular_shortcut_is_bit_identical_to_identity_features(variant, exact):
    objective, fixed = P.VARIANTS[variant]
    kw = dict(fixed, group_size=2) if exact and objective in ("grpo", "rloo") else dict(fixed)
    a = P.train(TABULAR, objective, 15, 0.7, seed=1, exact=exact, **kw)
    b = P.train(GENERAL, objective, 15, 0.7, seed=1, exact=exact, **kw)
    for field in ("probs", "loss", "kl", "grad_norm", "expected_reward"):
        assert torch.equal(getattr(a, field), getattr(b, field)), field
    for x, y in zip(a.advantages, b.advantages):
        assert torch.equal(x, y)
    for x, y in zip(a.ratios, b.ratios):
        assert (x is None and y is None) or torch.equal(x, y)
    assert a.metrics == b.metrics


def test_space_flags():
    """The shortcuts switch on only where they are identities."""
    tab = P.build_space(TABULAR)
    tab.token_logps(tab.theta0)
    assert not tab._gather and not tab._masked
    eos = P.build_space(P.sequence_task("short_or_long", 2, 3))
    eos.token_logps(eos.theta0)
    assert eos._gather and eos._masked
    seq = P.build_space(P.sequence_task("count", 2, 3))
    seq.token_logps(seq.theta0)
    assert seq._gather and not seq._masked


# ---------------------------------------------------------------------------------------------------------------
# Fast cores (issue 14, speed): the trainer validates what is fixed once per step and what moves once per epoch, then
# calls the lab's unchecked cores. Runs must be those of the implementation before the cores, and of the checked path.

import json
import math
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as hst

from lab.ppo import _clip_fractions, _clipped_surrogate, clip_fractions, clipped_surrogate
from lab.rl import _likelihood_ratio, _policy_gradient_surrogate, likelihood_ratio, policy_gradient_surrogate

GOLDEN = json.loads((Path(__file__).parent / "data" / "playground_pre_fastpath.json").read_text())


def _golden_policy(name):
    if name == "bandit":
        return P.Bandit(rewards=[1.0, 0.5, 0.0], init_probs=[0.2, 0.3, 0.5])
    return P.sequence_task("short_or_long", 2, 3)


@pytest.mark.parametrize("case", GOLDEN, ids=lambda c: f"{c['policy']}-{c['variant']}-{'exact' if c['exact'] else 'sampled'}")
def test_runs_equal_the_implementation_before_the_fast_cores(case):
    """12 steps of every variant, both modes, bandit and EOS sequence policy, against values recorded with the
    pre-core implementation (commit 4a6a88e). Bit-identical on the machine that recorded them; 1e-12 here so
    that another CPU's rounding in library kernels cannot fail it."""
    run = P.train(_golden_policy(case["policy"]), P.VARIANTS[case["variant"]][0], 12, 0.7, seed=3, exact=case["exact"],
                  **case["conventions"])
    close = dict(rel=1e-12, abs=1e-15)
    assert run.probs[-1].tolist() == pytest.approx(case["probs_last"], **close)
    assert run.loss.tolist() == pytest.approx(case["loss"], **close)
    assert run.grad_norm.tolist() == pytest.approx(case["grad_norm"], **close)
    assert float(run.kl[-1]) == pytest.approx(case["kl_last"], **close)
    ratios = [x for x in run.ratios if x is not None]
    if case["ratios_last"] is None:
        assert not ratios
    else:
        assert ratios[-1].flatten().tolist() == pytest.approx(case["ratios_last"], **close)
    assert run.metrics[-1] == pytest.approx(case["metrics_last"], **close)


@pytest.mark.parametrize("policy", ["bandit", "sequence_eos"])
@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("variant", list(P.VARIANTS))
def test_fast_path_is_bit_identical_to_the_checked_path(variant, exact, policy, monkeypatch):
    """With the sufficient tests forced to fail, every call goes through the public, fully checked functions:
    the run must be the same to the last bit."""
    objective, fixed = P.VARIANTS[variant]
    kw = dict(fixed, group_size=2) if exact and objective in ("grpo", "rloo") else dict(fixed)
    fast = P.train(_golden_policy(policy), objective, 8, 0.7, seed=5, exact=exact, **kw)
    monkeypatch.setattr(P, "_logps_ok", lambda tok: False)
    monkeypatch.setattr(P, "_finite", lambda t: False)
    checked = P.train(_golden_policy(policy), objective, 8, 0.7, seed=5, exact=exact, **kw)
    for name in ("probs", "loss", "kl", "grad_norm", "expected_reward"):
        assert torch.equal(getattr(fast, name), getattr(checked, name)), name
    for x, y in zip(fast.ratios, checked.ratios):
        assert (x is None and y is None) or torch.equal(x, y)
    for x, y in zip(fast.advantages, checked.advantages):
        assert torch.equal(x, y)
    assert fast.metrics == checked.metrics


def test_sufficient_tests_by_hand():
    ok = torch.log(torch.tensor([[0.5, 0.5], [1.0, 1e-300]], dtype=torch.float64))
    assert P._logps_ok(ok) and P._finite(ok)
    for bad in (float("nan"), float("inf"), -float("inf")):
        t = ok.clone()
        t[1, 1] = bad
        assert not P._logps_ok(t) and not P._finite(t)
    assert not P._logps_ok(torch.tensor([[0.0, 1e-12]], dtype=torch.float64))  # a log-prob above 0
    assert P._finite(torch.tensor([1e308, 1e308], dtype=torch.float64)) is False  # a sum that overflows: the public check decides
    assert not P._logps_ok(torch.zeros(0, 2, dtype=torch.float64))  # nothing to test: the public function decides


finite = hst.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(hst.lists(hst.tuples(hst.floats(0, 3), finite), min_size=1, max_size=12), hst.floats(0.01, 0.99), hst.one_of(hst.none(), hst.floats(0.01, 2)))
def test_clipped_surrogate_core_equals_public(pairs, eps, eps_high):
    """Values and gradients (ratio and advantage) of the core equal the public function's, bit for bit, including
    ratios exactly on the band's edges and at 1 (the minimum's ties)."""
    rho = torch.tensor([p[0] for p in pairs] + [1.0, 1.0 - eps, 1.0 + (eps if eps_high is None else eps_high)], dtype=torch.float64)
    adv = torch.tensor([p[1] for p in pairs] + [2.0, -1.0, 3.0], dtype=torch.float64)
    r1, a1 = rho.clone().requires_grad_(), adv.clone().requires_grad_()
    r2, a2 = rho.clone().requires_grad_(), adv.clone().requires_grad_()
    public = clipped_surrogate(r1, a1, eps, eps_high)
    low, high = P._clip_bounds(eps, eps_high)
    core = _clipped_surrogate(r2, a2, low, high)
    assert torch.equal(public, core)
    public.sum().backward()
    core.sum().backward()
    assert torch.equal(r1.grad, r2.grad) and torch.equal(a1.grad, a2.grad)


@settings(max_examples=100, deadline=None)
@given(hst.lists(hst.tuples(hst.floats(-30, 0), hst.floats(-30, 0), finite), min_size=1, max_size=10))
def test_ratio_and_pg_cores_equal_public(rows):
    lp = torch.tensor([[r[0]] for r in rows], dtype=torch.float64, requires_grad=True)
    old = torch.tensor([[r[1]] for r in rows], dtype=torch.float64)
    adv = torch.tensor([[r[2]] for r in rows], dtype=torch.float64)
    assert torch.equal(likelihood_ratio(lp, old), _likelihood_ratio(lp, old))
    ones = torch.ones_like(adv)
    public = policy_gradient_surrogate(lp, adv, ones)
    (g_public,) = torch.autograd.grad(public, lp)
    for active in (ones > 0, None):  # None: every position active, the selection skipped
        core = _policy_gradient_surrogate(lp, adv, active, ones.sum())
        (g_core,) = torch.autograd.grad(core, lp)
        assert torch.equal(public, core) and torch.equal(g_public, g_core)


def test_clip_fractions_core_equals_public_by_hand():
    rho = torch.tensor([[1.5, 0.5, 1.0, 1.3]], dtype=torch.float64)
    adv = torch.tensor([[1.0, -1.0, 1.0, 1.0]], dtype=torch.float64)
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]], dtype=torch.float64)
    public = clip_fractions(rho, adv, mask)
    assert public == {"clip_ratio/low_mean": 1 / 3, "clip_ratio/high_mean": 1 / 3, "clip_ratio/region_mean": 2 / 3}
    assert _clip_fractions(rho, adv, mask > 0, mask.sum(), 0.8, 1.2) == public


@pytest.mark.parametrize(
    "ratio, adv, message",
    [
        ([float("nan"), 1.0], [1.0, 1.0], "ratio must not contain NaN"),
        ([float("nan"), 1.0], [float("nan"), 1.0], "ratio must not contain NaN"),  # the ratio is checked first
        ([float("inf"), 1.0], [1.0, 1.0], "ratio must be finite"),
        ([-0.5, 1.0], [1.0, 1.0], "ratio must be >= 0"),
        ([-0.5, 1.0], [float("inf"), 1.0], "ratio must be >= 0"),
        ([1.0, 1.0], [float("nan"), 1.0], "advantages must not contain NaN"),
        ([1.0, 1.0], [-float("inf"), 1.0], "advantages must be finite"),
        ([1.0, 1.0], [1e308, 1e308], None),  # finite entries whose sum overflows: the full check decides, and passes
    ],
)
def test_clipped_surrogate_errors_after_the_fast_test(ratio, adv, message):
    if message is None:
        assert clipped_surrogate(ratio, adv).tolist() == [1e308, 1e308]
    else:
        with pytest.raises(ValueError, match=message):
            clipped_surrogate(ratio, adv)


def test_draws_samples():
    assert P.draws_samples("reinforce", False) and P.draws_samples("grpo", False) and P.draws_samples("kl_regularized", False)
    assert not P.draws_samples("dpo", False) and not P.draws_samples("ppo", True)
    with pytest.raises(ValueError, match="objective"):
        P.draws_samples("sft", False)
    with pytest.raises(ValueError, match="exact"):
        P.draws_samples("ppo", 1)


@pytest.mark.parametrize("objective", P.OBJECTIVES)
def test_runs_that_draw_nothing_do_not_depend_on_the_seed(objective):
    """What lets the Dynamics page keep a run across seed changes."""
    kw = dict(group_size=2) if objective in ("grpo", "rloo") else {}
    for exact in (False, True):
        if P.draws_samples(objective, exact):
            continue
        a = P.train(TABULAR, objective, 5, 0.7, seed=1, exact=exact, **kw)
        b = P.train(TABULAR, objective, 5, 0.7, seed=2, exact=exact, **kw)
        assert torch.equal(a.probs, b.probs) and torch.equal(a.loss, b.loss)


@settings(max_examples=120, deadline=None)
@given(
    hst.integers(1, 5), hst.integers(1, 4), hst.integers(0, 2**31 - 1),
    hst.sampled_from(["grpo", "bnpo", "dr_grpo", "dapo"]), hst.booleans(), hst.booleans(), hst.one_of(hst.none(), hst.floats(0.05, 1.0)),
)
def test_grpo_loss_validated_equals_grpo_loss(B, T, seed, loss_type, full_mask, with_ref, eps_high):
    """The GRPO core the playground calls after its own tests: loss, gradient and metrics equal grpo_loss's bit for bit,
    with masked positions holding fillers, every row holding a token, with and without a reference and β."""
    from lab.grpo import _grpo_loss_validated, grpo_loss

    g = torch.Generator().manual_seed(seed)
    m = torch.ones(B, T, dtype=torch.float64) if full_mask else (torch.rand(B, T, generator=g) < 0.6).to(torch.float64)
    m[:, 0] = 1.0  # a token in every row
    lp0 = torch.log_softmax(torch.randn(B, T, 3, generator=g, dtype=torch.float64), -1)[..., 0]
    old = torch.log_softmax(torch.randn(B, T, 3, generator=g, dtype=torch.float64), -1)[..., 0]
    ref = torch.log_softmax(torch.randn(B, T, 3, generator=g, dtype=torch.float64), -1)[..., 0] if with_ref else None
    lp0, old = torch.where(m > 0, lp0, torch.full_like(lp0, -1e4)), torch.where(m > 0, old, torch.zeros_like(old))
    adv = torch.randn(B, 1, generator=g, dtype=torch.float64).expand(B, T)
    beta = 0.04 if with_ref else 0.0
    lp1, lp2 = lp0.clone().requires_grad_(), lp0.clone().requires_grad_()
    loss1, met1 = grpo_loss(lp1, old, adv, m, ref, beta, 0.2, eps_high, loss_type, T + 1)
    low, high = P._clip_bounds(0.2, eps_high)
    loss2, met2, ratio = _grpo_loss_validated(lp2, old, adv, m, None if full_mask else m > 0, low, high, loss_type, T + 1, ref, beta)
    assert torch.equal(loss1, loss2) and met1 == met2
    (g1,) = torch.autograd.grad(loss1, lp1)
    (g2,) = torch.autograd.grad(loss2, lp2)
    assert torch.equal(g1, g2)
    assert bool(torch.isfinite(ratio).all())


@pytest.mark.parametrize("objective", ["ppo", "grpo", "rloo"])
def test_invalid_clip_width_is_refused_at_the_first_loss_as_before(objective):
    """ε is validated where the public losses validate it: a run of 0 steps never evaluates a loss."""
    P.train(TABULAR, objective, 0, 0.5, epsilon=1.5)
    for kw, message in ((dict(epsilon=1.5), "epsilon must lie in"), (dict(epsilon_high=-1.0), "epsilon_high must be > 0")):
        with pytest.raises(ValueError, match=message):
            P.train(TABULAR, objective, 3, 0.5, **kw)
