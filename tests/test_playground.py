"""lab.playground and lab.grpo.rloo_advantages: hand values, properties, near-degenerate sweeps, bad input,
TRL parity for RLOO, and every phenomenon of the Dynamics page as a test against playground.train."""

import itertools
import math
import tempfile

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab import playground as P
from lab.dpo import dpo_loss, optimal_policy
from lab.grpo import rloo_advantages

torch.set_num_threads(1)

FLOATS = st.floats(-50, 50, allow_nan=False, allow_infinity=False)


# ------------------------------------------------------------------------------------------ rloo_advantages


def test_rloo_hand_values():
    # group (1, 0, 0, 0): baseline of the first = 0, of the others = 1/3 → A = (1, −1/3, −1/3, −1/3)
    a = rloo_advantages([1.0, 0.0, 0.0, 0.0], group_size=4)
    assert torch.allclose(a, torch.tensor([1.0, -1 / 3, -1 / 3, -1 / 3], dtype=torch.float64), atol=1e-15)
    # two groups of two: A_i = r_i − r_other
    assert rloo_advantages([1, 2, 3, 7], 2).tolist() == [-1.0, 1.0, -4.0, 4.0]
    # k = 3: (3, 1, 2) → baselines (1.5, 2.5, 2) → (1.5, −1.5, 0)
    assert rloo_advantages([3.0, 1.0, 2.0], 3).tolist() == [1.5, -1.5, 0.0]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(1, 3), st.data())
def test_rloo_properties(k, groups, data):
    r = torch.tensor(data.draw(st.lists(FLOATS, min_size=k * groups, max_size=k * groups)), dtype=torch.float64)
    a = rloo_advantages(r, k)
    g = r.view(groups, k)
    # the baseline excludes the sample itself: A_i = r_i − mean of the others
    for j in range(groups):
        for i in range(k):
            others = torch.cat([g[j, :i], g[j, i + 1 :]])
            assert math.isclose(float(a.view(groups, k)[j, i]), float(g[j, i] - others.mean()), abs_tol=1e-9)
    # advantages sum to 0 in every group
    assert torch.allclose(a.view(groups, k).sum(-1), torch.zeros(groups, dtype=torch.float64), atol=1e-9)
    # changing one member's reward by δ changes its own advantage by exactly δ (its baseline ignores it)
    r2 = r.clone()
    r2[0] += 1.0
    assert math.isclose(float(rloo_advantages(r2, k)[0] - a[0]), 1.0, abs_tol=1e-9)


@pytest.mark.parametrize("value", [0.1, 1 / 3, 1e-300, -7.3, 1e17, 0.0, 2.0 ** -1074])
@pytest.mark.parametrize("k", [2, 3, 5, 7])
def test_rloo_equal_rewards_give_exactly_zero(value, k):
    a = rloo_advantages([value] * (2 * k), k)
    assert a.abs().max().item() == 0.0  # exactly, not ~1e-17


def test_rloo_int_and_bool_rewards_convert_at_the_boundary():
    a = rloo_advantages(torch.tensor([True, False, False, True]), 2)
    assert a.dtype == torch.float64 and a.tolist() == [1.0, -1.0, -1.0, 1.0]
    assert rloo_advantages(torch.tensor([1, 0, 0, 0]), 4).dtype == torch.float64
    assert rloo_advantages([1, 0, 0, 0], 4)[0].item() == 1.0


def test_rloo_near_equal_rewards_stay_small_and_finite():
    for gap in (1e-15, 1e-12, 1e-8):
        a = rloo_advantages([0.1, 0.1 + gap, 0.1, 0.1], 4)
        assert torch.isfinite(a).all() and a.abs().max() <= 2 * gap
        assert a[1] > 0 > a[0]


@pytest.mark.parametrize(
    "rewards,k,name",
    [([1.0, 2.0, 3.0], 2, "group_size"), ([1.0, 2.0], 1, "group_size"), ([[1.0, 2.0]], 2, "rewards"),
     ([1.0, float("nan")], 2, "rewards"), ([1.0, float("inf")], 2, "rewards"), ([], 2, "group_size"), ("ab", 2, "rewards")],
)
def test_rloo_bad_input(rewards, k, name):
    with pytest.raises(ValueError, match=name):
        rloo_advantages(rewards, k)


def test_rloo_matches_trl():
    """TRL 1.16's RLOOTrainer computes the advantages inside a real generation step (tiny local GPT-2)."""
    pytest.importorskip("trl")
    from datasets import Dataset
    from trl import RLOOConfig, RLOOTrainer

    from tests import trl_helpers as H

    H.quiet()
    g = torch.Generator().manual_seed(3)
    rewards = torch.randn(8, generator=g)
    rewards[4:] = 0.1  # one group of equal rewards
    path = H.saved_tiny_model(seed=0)

    def reward_fn(completions, **_):
        return [float(x) for x in rewards[: len(completions)]]

    args = RLOOConfig(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=8, num_generations=4, max_completion_length=6,
                      report_to=[], use_cpu=True, seed=0, bf16=False, beta=0.0)
    ds = Dataset.from_list([{"prompt": p} for p in ["1+1=", "2+5="]])
    tr = RLOOTrainer(model=path, reward_funcs=[reward_fn], args=args, train_dataset=ds, processing_class=H.tokenizer())
    tr.model.train()
    out = tr._generate_and_score_completions([{"prompt": p} for p in ["1+1="] * 4 + ["2+5="] * 4])
    ours = rloo_advantages(rewards.double(), 4)
    assert torch.allclose(out["advantages"].double(), ours, atol=1e-6)
    assert ours[4:].abs().max().item() == 0.0


# ------------------------------------------------------------------------------------------ train: hand values


def test_exact_reinforce_one_step_hand_value():
    # K = 2 uniform, r = (1, 0): ∂E[r]/∂z = π(r − E r) = (0.25, −0.25); lr 1 → z = (0.25, −0.25), π_1 = σ(0.5)
    run = P.train(P.Bandit(rewards=[1.0, 0.0]), "reinforce", 1, 1.0, exact=True)
    assert math.isclose(float(run.probs[1, 0]), 1 / (1 + math.exp(-0.5)), rel_tol=1e-12)
    assert math.isclose(float(run.grad_norm[0]), math.sqrt(2) * 0.25, rel_tol=1e-12)
    assert math.isclose(float(run.expected_reward[0]), 0.5, rel_tol=1e-12)
    assert float(run.kl[0]) == 0.0


def test_exact_kl_regularized_step_hand_value():
    # at π = π_ref the KL gradient is 0, so the first step equals exact REINFORCE's
    b = P.Bandit(rewards=[1.0, 0.0])
    a = P.train(b, "kl_regularized", 1, 1.0, exact=True, beta=0.5)
    r = P.train(b, "reinforce", 1, 1.0, exact=True)
    assert torch.allclose(a.probs, r.probs, atol=1e-14)
    assert math.isclose(float(a.loss[0]), -0.5, rel_tol=1e-12)  # −(E r − β·0)


def test_sequence_policy_enumeration_and_reference():
    s = P.SequencePolicy(vocab=2, length=3, eos=True, reward=lambda q: float(len(q)))
    sp = P.build_space(s)
    assert sp.labels == [".", "a.", "aa.", "aaa"]
    run = P.train(s, "reinforce", 0, 0.1)
    # uniform per prefix: P(.) = 1/2, P(a.) = 1/4, P(aa.) = P(aaa) = 1/8
    assert torch.allclose(run.probs[0], torch.tensor([0.5, 0.25, 0.125, 0.125], dtype=torch.float64))
    assert run.lengths.tolist() == [1.0, 2.0, 3.0, 3.0]
    assert run.rewards.tolist() == [1.0, 2.0, 3.0, 3.0]
    full = P.SequencePolicy(vocab=3, length=2, reward=lambda q: 0.0)
    assert len(P.build_space(full).labels) == 9


def test_exact_sequence_reinforce_equals_bandit_over_sequences():
    # the expected gradient over enumerated sequences raises E[r] and matches the sampled average's direction
    s = P.SequencePolicy(vocab=2, length=2, reward=lambda q: float(q == (1, 1)))
    ex = P.train(s, "reinforce", 20, 1.0, exact=True)
    assert ex.expected_reward[-1] > ex.expected_reward[0] + 0.3


# ------------------------------------------------------------------------------------------ train: properties


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-3, 3, allow_nan=False), min_size=2, max_size=5), st.floats(-10, 10, allow_nan=False))
def test_baseline_and_reward_shift_do_not_change_exact_updates(rewards, shift):
    b = P.Bandit(rewards=rewards)
    none = P.train(b, "reinforce", 3, 0.5, exact=True, baseline="none")
    mean = P.train(b, "reinforce", 3, 0.5, exact=True, baseline="mean")
    assert torch.allclose(none.probs, mean.probs, atol=1e-10)  # a baseline changes variance, not the expectation
    shifted = P.train(P.Bandit(rewards=[r + shift for r in rewards]), "grpo", 3, 0.5, exact=True, group_size=2, scale="none")
    plain = P.train(b, "grpo", 3, 0.5, exact=True, group_size=2, scale="none")
    assert torch.allclose(shifted.probs, plain.probs, atol=1e-9)  # group credit is shift-invariant


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(P.OBJECTIVES), st.integers(0, 2**31 - 1), st.booleans())
def test_deterministic_per_seed_and_probabilities_valid(objective, seed, exact):
    b = P.Bandit(rewards=[1.0, 0.3, 0.0], init_probs=[0.2, 0.3, 0.5])
    a = P.train(b, objective, 5, 0.5, seed=seed, exact=exact)
    c = P.train(b, objective, 5, 0.5, seed=seed, exact=exact)
    assert torch.equal(a.probs, c.probs) and torch.equal(a.loss, c.loss)
    assert torch.allclose(a.probs.sum(-1), torch.ones(6, dtype=torch.float64), atol=1e-12)
    assert (a.kl >= -1e-15).all() and torch.isfinite(a.loss).all() and torch.isfinite(a.grad_norm).all()


def test_sampled_mean_gradient_approaches_exact():
    b = P.Bandit(rewards=[1.0, 0.0, 0.5])
    ex = P.train(b, "reinforce", 1, 0.01, exact=True)
    moves = torch.stack([P.train(b, "reinforce", 1, 0.01, seed=s, n=64).probs[1] for s in range(40)]).mean(0)
    assert torch.allclose(moves - ex.probs[0], ex.probs[1] - ex.probs[0], atol=4e-4)


# ------------------------------------------------------------------------------------------ near-degenerate sweep


@pytest.mark.parametrize("objective", P.OBJECTIVES)
@pytest.mark.parametrize("rewards", [[0.0, 0.0, 1e-12], [1e8, 1e8 + 1.0, 1e8], [0.1, 0.1, 0.1 + 1e-15], [-1e-300, 0.0, 1e-300]])
@pytest.mark.parametrize("init", [None, [1e-6, 0.5 - 5e-7, 0.5 - 5e-7]])
def test_near_degenerate_inputs_stay_finite(objective, rewards, init):
    b = P.Bandit(rewards=rewards, init_probs=init)
    for exact in (False, True):
        run = P.train(b, objective, 3, 0.5, exact=exact)
        assert torch.isfinite(run.probs).all() and torch.isfinite(run.loss).all() and torch.isfinite(run.kl).all()
        assert torch.allclose(run.probs.sum(-1), torch.ones(4, dtype=torch.float64), atol=1e-12)


# ------------------------------------------------------------------------------------------ bad input


BANDIT = P.Bandit(rewards=[1.0, 0.0, 0.0])


@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(objective="sft"), "objective"),
        (dict(steps=-1), "steps"),
        (dict(steps=2.5), "steps"),
        (dict(lr=-0.1), "lr"),
        (dict(lr=float("nan")), "lr"),
        (dict(seed="a"), "seed"),
        (dict(objective="grpo", n=10, group_size=4), "n"),
        (dict(objective="grpo", group_size=1), "group_size"),
        (dict(batch=3), "unknown convention"),
        (dict(baseline="median"), "baseline"),
        (dict(lam=1.5), "lam"),
        (dict(gamma=-0.1), "gamma"),
        (dict(objective="dpo", beta=0.0), "beta"),
        (dict(objective="ppo", epsilon=1.5), "epsilon"),
        (dict(objective="grpo", loss_type="sum"), "loss_type"),
        (dict(objective="grpo", exact=True, beta=0.1), "beta"),
        (dict(objective="grpo", exact=True, group_size=12), "group_size"),
        (dict(epochs=0), "epochs"),
        (dict(value_noise=-1.0), "value_noise"),
        (dict(exact="yes"), "exact"),
        (dict(objective="ppo", clip="no"), "clip"),
        (dict(n=True), "n"),
    ],
)
def test_train_bad_input(kwargs, name):
    args = dict(policy=BANDIT, objective="reinforce", steps=2, lr=0.1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        P.train(**args)


@pytest.mark.parametrize(
    "policy,name",
    [
        (P.Bandit(rewards=[1.0]), "rewards"),
        (P.Bandit(rewards=[1.0, float("nan")]), "rewards"),
        (P.Bandit(rewards=[1.0, 0.0], init_probs=[0.5, 0.6]), "init_probs"),
        (P.Bandit(rewards=[1.0, 0.0], init_probs=[1.0, 0.0]), "init_probs"),
        (P.Bandit(rewards=[1.0, 0.0], init_probs=[0.5, 0.3, 0.2]), "init_probs"),
        (P.Bandit(rewards=[1.0, 0.0], features=[[1.0]]), "features"),
        (P.Bandit(rewards=[1.0, 0.0], chosen=2), "chosen"),
        (P.Bandit(rewards=[1.0, 0.0], chosen=1, rejected=1), "chosen and rejected"),
        (P.Bandit(rewards=[1.0, 0.0], ref_probs=[0.5, 0.2]), "ref_probs"),
        (P.SequencePolicy(vocab=5, reward=lambda q: 0.0), "vocab"),
        (P.SequencePolicy(length=1, reward=lambda q: 0.0), "length"),
        (P.SequencePolicy(), "reward"),
        (P.SequencePolicy(reward=lambda q: 0.0, chosen=(1, 1, 1, 1)), "chosen"),
        ("bandit", "policy"),
    ],
)
def test_policy_bad_input(policy, name):
    with pytest.raises(ValueError, match=name):
        P.train(policy, "reinforce", 1, 0.1)


def test_dpo_needs_a_pair_and_helpers_reject_bad_input():
    with pytest.raises(ValueError, match="chosen"):
        P.train(P.SequencePolicy(reward=lambda q: 0.0), "dpo", 1, 0.1)
    with pytest.raises(ValueError, match="lengths"):
        P.length_weights([0, 2], "grpo")
    with pytest.raises(ValueError, match="max_completion_length"):
        P.length_weights([3, 2], "dr_grpo", max_completion_length=2)
    with pytest.raises(ValueError, match="loss_type"):
        P.length_weights([3, 2], "mean")
    with pytest.raises(ValueError, match="p .* q"):
        P.total_variation([0.5, 0.5], [1.0])
    with pytest.raises(ValueError, match="runs"):
        P.advantage_bias_variance([])
    with pytest.raises(ValueError, match="runs"):
        P.advantage_bias_variance([P.train(BANDIT, "reinforce", 1, 0.1, exact=True)])


# ------------------------------------------------------------------------------------------ phenomena


@pytest.mark.parametrize("beta", [0.25, 0.5, 1.0, 2.0])
def test_phenomenon_kl_regularized_converges_to_closed_form(beta):
    b = P.Bandit(rewards=[1.0, 0.5, 0.0], init_probs=[0.2, 0.3, 0.5])
    run = P.train(b, "kl_regularized", 400, 2.0, exact=True, beta=beta)
    target = optimal_policy(run.ref_probs, run.rewards, beta)
    assert P.total_variation(run.probs[-1], target) < 1e-3
    assert P.total_variation(run.probs[0], target) > 0.05  # it really moved there
    # β trades reward against staying near the reference
    assert run.expected_reward[-1] > run.expected_reward[0]


def test_phenomenon_kl_regularized_sequence_policy_converges():
    s = P.SequencePolicy(vocab=2, length=3, reward=lambda q: float(sum(q)))
    run = P.train(s, "kl_regularized", 400, 2.0, exact=True, beta=1.0)
    assert P.total_variation(run.probs[-1], optimal_policy(run.ref_probs, run.rewards, 1.0)) < 1e-3


@pytest.mark.parametrize("exact,seed", [(True, 0)] + [(False, s) for s in range(5)])
def test_phenomenon_ppo_trust_region(exact, seed):
    # two actions: once the rewarded one passes 1 + ε the other is past 1 − ε too, every term is clipped,
    # the gradient is exactly zero and the ratio freezes
    b = P.Bandit(rewards=[1.0, 0.0])
    eps = 0.2
    clipped = P.train(b, "ppo", 1, 0.5, seed=seed, exact=exact, epochs=12, clip=True, epsilon=eps, baseline="mean", n=16)
    free = P.train(b, "ppo", 1, 0.5, seed=seed, exact=exact, epochs=12, clip=False, baseline="mean", n=16)
    col = 0 if exact else int((clipped.samples[0] == 0).nonzero()[0])  # a sample of the rewarded action: A > 0
    rc, rf = clipped.ratios[0][:, col], free.ratios[0][:, col]
    first_out = int((rc > 1 + eps).nonzero()[0])  # the first epoch whose ratio is past 1 + ε
    assert first_out < 11
    assert torch.allclose(rc[first_out:], rc[first_out].expand(12 - first_out), atol=1e-12)
    assert float(rc.max()) < 1.5
    # without clipping it keeps growing, epoch after epoch
    assert (rf[1:] > rf[:-1]).all() and float(rf[-1]) > 1.6  # toward its ceiling 1/π_old = 2
    assert clipped.metrics[0]["clip_ratio/high_mean"] > 0


def test_phenomenon_ppo_clip_removes_an_incentive_not_a_bound():
    # three actions: past 1 + ε the rewarded action's own term has zero gradient, but the unrewarded ones are
    # still pushed down until they pass 1 − ε, and the shared softmax lifts the rewarded ratio further; then it freezes
    b = P.Bandit(rewards=[1.0, 0.0, 0.0])
    run = P.train(b, "ppo", 1, 1.0, exact=True, epochs=12, epsilon=0.2, baseline="mean")
    r = run.ratios[0][:, 0]
    first_out = int((r > 1.2).nonzero()[0])
    assert float(r[first_out + 1]) > float(r[first_out])  # it still moves after passing the band
    assert torch.allclose(r[-4:], r[-1].expand(4), atol=1e-12) and float(r[-1]) < 1.6  # then stops


def test_phenomenon_ppo_clip_higher_allows_a_larger_ratio():
    b = P.Bandit(rewards=[1.0, 0.0, 0.0])
    low = P.train(b, "ppo", 1, 1.0, exact=True, epochs=12, epsilon=0.2, baseline="mean").ratios[0][-1, 0]
    high = P.train(b, "ppo", 1, 1.0, exact=True, epochs=12, epsilon=0.2, epsilon_high=0.28, baseline="mean").ratios[0][-1, 0]
    assert float(high) > float(low) > 1.2


def test_phenomenon_dpo_chosen_probability_falls_reference_numbers():
    """The overview's three-outcome example [37]: β = 1, π_ref = (0.40, 0.40, 0.20) → π = (0.30, 0.20, 0.50)."""
    # the two constructed distributions, evaluated with lab.dpo.dpo_loss
    before, _, _ = dpo_loss([math.log(0.4)], [math.log(0.4)], [math.log(0.4)], [math.log(0.4)], beta=1.0)
    after, _, _ = dpo_loss([math.log(0.3)], [math.log(0.2)], [math.log(0.4)], [math.log(0.4)], beta=1.0)
    assert round(float(before), 3) == 0.693 and round(float(after), 3) == 0.511
    # one gradient step of size 2/log 1.5 from the reference lands exactly on the second distribution:
    # ∂loss/∂θ = −log 1.5 · σ(0) = −log(1.5)/2 at θ = 0, and θ = 1 is that distribution (lab's construction)
    b = P.dpo_three_outcome_bandit()
    run = P.train(b, "dpo", 1, 2 / math.log(1.5), beta=1.0)
    assert torch.allclose(run.probs[0], torch.tensor([0.40, 0.40, 0.20], dtype=torch.float64), atol=1e-15)
    assert torch.allclose(run.probs[1], torch.tensor([0.30, 0.20, 0.50], dtype=torch.float64), atol=1e-12)
    assert math.isclose(float(run.loss[0]), math.log(2), rel_tol=1e-12)
    two = P.train(b, "dpo", 2, 2 / math.log(1.5), beta=1.0)
    assert math.isclose(float(two.loss[1]), float(after), rel_tol=1e-10)
    # a slow run: the loss falls every step while the chosen probability falls every step
    slow = P.train(b, "dpo", 40, 0.5, beta=1.0)
    assert (slow.loss[1:] < slow.loss[:-1]).all()
    assert (slow.probs[1:, 0] < slow.probs[:-1, 0]).all()
    assert (slow.probs[1:, 2] > slow.probs[:-1, 2]).all()  # mass moves to the third outcome
    assert slow.metrics[-1]["rewards/margins"] > 0


def test_dpo_tabular_bandit_raises_chosen_instead():
    # with one free logit per response the DPO gradient only raises y⁺ and lowers y⁻: sharing is what lowers y⁺
    run = P.train(P.Bandit(rewards=[1.0, 0.0, 0.0], init_probs=[0.4, 0.4, 0.2]), "dpo", 20, 1.0, beta=1.0)
    assert (run.probs[1:, 0] > run.probs[:-1, 0]).all()


CONVENTIONS = [
    dict(scale=s, ddof=d, eps=e, loss_type=lt, epsilon_high=eh)
    for s, d, e, lt, eh in itertools.product(("group", "batch", "none"), (0, 1), (0.0, 1e-4), ("grpo", "bnpo", "dr_grpo", "dapo"), (None, 0.28))
]


@pytest.mark.parametrize("conv", CONVENTIONS, ids=lambda c: "-".join(str(v) for v in c.values()))
def test_phenomenon_equal_rewards_move_nothing(conv):
    s = P.SequencePolicy(vocab=2, length=3, eos=True, reward=lambda q: 1.0)  # every response earns the same
    for exact in (False, True):
        run = P.train(s, "grpo", 5, 1.0, exact=exact, group_size=2 if exact else 4, **conv)
        assert torch.equal(run.probs[-1], run.probs[0])
        assert float(run.grad_norm.abs().max()) == 0.0
        assert all(float(a.abs().max()) == 0.0 for a in run.advantages)
    rl = P.train(s, "rloo", 5, 1.0, group_size=4)
    assert torch.equal(rl.probs[-1], rl.probs[0])
    with pytest.raises(ValueError, match="zero spread"):
        P.train(s, "grpo", 1, 1.0, zero_std="raise", scale="group")


def test_equal_but_inexact_rewards_with_eps_zero_move_nothing():
    b = P.Bandit(rewards=[0.1, 0.1, 0.1])
    run = P.train(b, "grpo", 1, 1.0, group_size=3, n=3, eps=0.0)
    assert torch.equal(run.probs[-1], run.probs[0])


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo"])
def test_phenomenon_length_weighting(loss_type):
    w = P.length_weights([1, 4], loss_type)
    expected = {"grpo": [0.5, 0.5], "bnpo": [0.2, 0.8], "dapo": [0.2, 0.8], "dr_grpo": [0.125, 0.5]}[loss_type]
    assert torch.allclose(w, torch.tensor(expected, dtype=torch.float64), atol=1e-15)
    s = P.SequencePolicy(vocab=2, length=4, eos=True, reward=lambda q: 1.0 if q in ((0,), (1, 1, 1, 1)) else 0.0)
    run = P.train(s, "grpo", 3, 1.0, loss_type=loss_type, n=16, group_size=4)
    for idx, wr in zip(run.samples, run.response_weights):
        L = run.lengths[idx]
        if loss_type == "grpo":
            assert torch.allclose(wr, torch.full_like(wr, 1 / 16))
        elif loss_type == "dr_grpo":
            assert torch.allclose(wr, L / (16 * 4))
        else:
            assert torch.allclose(wr, L / L.sum())


def test_phenomenon_length_weighting_changes_the_dynamics():
    s = P.SequencePolicy(vocab=2, length=4, eos=True, reward=lambda q: 1.0 if q in ((0,), (1, 1, 1, 1)) else 0.0)
    end = {lt: P.train(s, "grpo", 20, 1.0, exact=True, group_size=2, loss_type=lt).probs[-1] for lt in ("grpo", "bnpo", "dr_grpo", "dapo")}
    assert torch.equal(end["bnpo"], end["dapo"])  # within one batch DAPO's count is bnpo's
    assert P.total_variation(end["grpo"], end["bnpo"]) > 1e-3
    assert P.total_variation(end["grpo"], end["dr_grpo"]) > 1e-3


def test_phenomenon_gae_bias_variance_tradeoff():
    s = P.SequencePolicy(vocab=2, length=4, step_reward=lambda q, t: float(q[t]) * (1.0 if t % 2 else -0.5))
    seeds = range(6)
    stats = []
    for lam in (1.0, 0.5, 0.0):
        runs = [P.train(s, "reinforce", 1, 0.0, seed=k, n=64, advantage="gae", lam=lam, value_noise=0.5) for k in seeds]
        stats.append(P.advantage_bias_variance(runs))
    (b1, v1), (b5, v5), (b0, v0) = stats
    assert v1 > v5 > v0  # variance falls as λ goes 1 → 0
    assert b1 < b5 < b0  # bias rises
    assert b1 < 0.05 and b0 > 0.1  # λ = 1 is unbiased up to sampling noise
