"""PPO with a value model (issue 12): the library pieces (explained variance, the per-token advantage pipeline)
and the small-run algorithm's mechanics."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab.ppo import ppo_advantages
from lab.rl import explained_variance, gae

# ----------------------------------------------------------------------------- explained_variance


def test_explained_variance_hand_values():
    # returns (0, 1, 3): mean 4/3, Var = 42/27; residual (0, 0, 1): Var = 6/27 → 1 − 6/42 = 6/7
    assert explained_variance([0.0, 1.0, 2.0], [0.0, 1.0, 3.0]) == pytest.approx(6 / 7, abs=1e-15)
    assert explained_variance([0.0, 1.0, 3.0], [0.0, 1.0, 3.0]) == 1.0  # a perfect value function
    assert explained_variance([4 / 3] * 3, [0.0, 1.0, 3.0]) == pytest.approx(0.0, abs=1e-15)  # the mean: explains nothing
    # the masked position holds a filler and is ignored
    assert explained_variance([0.0, -1e4, 1.0, 2.0], [0.0, float("nan"), 1.0, 3.0], mask=[1, 0, 1, 1]) == pytest.approx(6 / 7)


def test_explained_variance_constant_returns_is_declared():
    assert math.isnan(explained_variance([0.1, 0.2], [1.0, 1.0]))  # CleanRL's convention: undefined
    assert explained_variance([0.1, 0.2], [1.0, 1.0], if_constant=0.0) == 0.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-5, 5), st.floats(-5, 5)), min_size=2, max_size=12), st.floats(-3, 3), st.floats(0.1, 3))
def test_explained_variance_properties(pairs, shift, scale):
    v = torch.tensor([p[0] for p in pairs], dtype=torch.float64)
    g = torch.tensor([p[1] for p in pairs], dtype=torch.float64)
    if float(g.max() - g.min()) < 1e-3:
        return
    ev = explained_variance(v, g)
    assert ev <= 1.0 + 1e-12  # never above 1
    # invariant to a common affine change of values and returns; a constant offset in V alone changes nothing
    assert explained_variance(v * scale + shift, g * scale + shift) == pytest.approx(ev, rel=1e-7, abs=1e-9)
    assert explained_variance(v + shift, g) == pytest.approx(ev, rel=1e-7, abs=1e-9)


def test_explained_variance_bad_input():
    with pytest.raises(ValueError, match="values"):
        explained_variance([0.0, 1.0], [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="returns"):
        explained_variance([0.0, 1.0], [float("inf"), 1.0])
    with pytest.raises(ValueError, match="mask"):
        explained_variance([0.0, 1.0], [0.0, 1.0], mask=[0, 0])


# ----------------------------------------------------------------------------- ppo_advantages


def test_ppo_advantages_hand_values():
    # one completion of 3 tokens, score 1, β = 0.1, log π − log π_ref = (0.2, 0, −0.1), V = (0.1, 0.2, 0.3), γ = 1, λ = 0.95
    r, a, g = ppo_advantages([1.0], [[-1.0, -0.5, -0.2]], [[-1.2, -0.5, -0.1]], [[0.1, 0.2, 0.3]], [[1, 1, 1]], kl_coef=0.1,
                             whiten=False)
    assert r.tolist()[0] == pytest.approx([-0.02, 0.0, 1.01])
    # δ = (−0.02 + 0.2 − 0.1, 0 + 0.3 − 0.2, 1.01 + 0 − 0.3) = (0.08, 0.1, 0.71); Â_2 = 0.71, Â_1 = 0.1 + 0.95·0.71, Â_0 = 0.08 + 0.95·Â_1
    a1 = 0.1 + 0.95 * 0.71
    assert a.tolist()[0] == pytest.approx([0.08 + 0.95 * a1, a1, 0.71])
    assert g.tolist()[0] == pytest.approx([0.08 + 0.95 * a1 + 0.1, a1 + 0.2, 0.71 + 0.3])


def test_ppo_advantages_nothing_leaks_past_eos():
    # row 2 ends after one token: its padding (huge values, NaN log-probs) must change nothing
    kw = dict(scores=[1.0, 0.5], logp=[[-1.0, -0.5, -0.2], [-0.3, float("nan"), -1e4]], ref_logp=[[-1.2, -0.5, -0.1], [-0.2, 0.0, -0.0]],
              mask=[[1, 1, 1], [1, 0, 0]], kl_coef=0.1, whiten=False)
    r1, a1, g1 = ppo_advantages(values=[[0.1, 0.2, 0.3], [0.4, 1e4, float("inf")]], **kw)
    r2, a2, g2 = ppo_advantages(values=[[0.1, 0.2, 0.3], [0.4, 0.0, 0.0]], **kw)
    assert torch.equal(a1, a2) and torch.equal(g1, g2) and torch.equal(r1, r2)
    # the last token's advantage is r_T − V_T: the state after eos is terminal (V = 0)
    assert float(a1[1, 0]) == pytest.approx(0.5 - 0.1 * (-0.3 + 0.2) - 0.4)
    assert a1[1, 1:].tolist() == [0.0, 0.0] and g1[1, 1:].tolist() == [0.0, 0.0]


def test_ppo_advantages_whitening_over_active_tokens():
    kw = dict(scores=[1.0, 0.0], logp=[[-1.0, -0.5, -0.2], [-0.3, -0.7, -1.0]], ref_logp=[[-1.2, -0.5, -0.1], [-0.2, -0.7, -1.0]],
              values=[[0.1, 0.2, 0.3], [0.4, 0.1, 0.0]], mask=[[1, 1, 1], [1, 1, 0]], kl_coef=0.05)
    _, a, _ = ppo_advantages(**kw)
    act = a[torch.tensor(kw["mask"]).bool()]
    assert float(act.mean()) == pytest.approx(0.0, abs=1e-12)
    assert float(act.var(unbiased=True)) == pytest.approx(1.0, abs=1e-6)  # Bessel-corrected, eps 1e-8 inside the root
    assert float(a[1, 2]) == 0.0


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.floats(0, 0.5), st.floats(0, 1), st.integers(0, 10_000))
def test_ppo_advantages_properties(B, T, kl, lam, seed):
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(1, T + 1, (B,), generator=g)
    mask = (torch.arange(T)[None, :] < lens[:, None]).long()
    lp = -torch.rand(B, T, generator=g, dtype=torch.float64) * 3
    rlp = -torch.rand(B, T, generator=g, dtype=torch.float64) * 3
    v = torch.randn(B, T, generator=g, dtype=torch.float64)
    s = torch.randn(B, generator=g, dtype=torch.float64)
    r, a, ret = ppo_advantages(s, lp, rlp, v, mask, kl_coef=kl, lam=lam, whiten=False)
    m = mask.bool()
    # shaped rewards sum to score − β Σ log ratio per sequence (the sequence form of kl_shaped_reward)
    assert torch.allclose(r.sum(-1), s - kl * ((lp - rlp) * mask).sum(-1))
    # equal to lab.rl.gae on the truncated rows (terminal after the last active token)
    for b in range(B):
        n = int(lens[b])
        want, want_ret = gae(r[b, :n], v[b, :n], 1.0, lam)
        assert torch.allclose(a[b, :n], want) and torch.allclose(ret[b, :n], want_ret)
    assert bool((a[~m] == 0).all()) and bool((ret[~m] == 0).all()) and bool((r[~m] == 0).all())
    # λ = 1, γ = 1: the return is the sum of the remaining rewards (Monte Carlo)
    _, _, mc = ppo_advantages(s, lp, rlp, v, mask, kl_coef=kl, lam=1.0, whiten=False)
    tail = torch.flip(torch.cumsum(torch.flip(r, [-1]), -1), [-1])
    assert torch.allclose(mc[m], tail[m])


def test_ppo_advantages_bad_input():
    kw = dict(scores=[1.0], logp=[[-1.0, -0.5]], ref_logp=[[-1.2, -0.5]], values=[[0.1, 0.2]], mask=[[1, 1]])
    with pytest.raises(ValueError, match="kl_coef"):
        ppo_advantages(**kw, kl_coef=-1.0)
    with pytest.raises(ValueError, match="mask"):
        ppo_advantages(**dict(kw, mask=[[0, 1]]))
    with pytest.raises(ValueError, match="scores"):
        ppo_advantages(**dict(kw, scores=[float("nan")]))
    with pytest.raises(ValueError, match="values"):
        ppo_advantages(**dict(kw, values=[[0.1]]))
    with pytest.raises(ValueError, match="gamma"):
        ppo_advantages(**kw, gamma=1.5)


# ----------------------------------------------------------------------------- the ppo algorithm (a tiny model, few steps)

import json  # noqa: E402
import threading  # noqa: E402

from lab.smallrun import RunConfig, SmallRun  # noqa: E402
from tests.test_smallrun_rm import save_tiny_policy, separable_pairs  # noqa: E402

PPO_KEYS = {"objective/kl", "objective/scores", "objective/non_score_reward", "objective/rlhf_reward", "policy/approxkl_avg",
            "policy/clipfrac_avg", "loss/policy_avg", "loss/value_avg", "val/clipfrac_avg", "policy/entropy_avg",
            "val/explained_variance", "reward", "grad_norm"}


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("ppo_policy")
    save_tiny_policy(d)
    return d


def ppo_cfg(policy_dir, **kw):
    base = dict(algorithm="ppo", model=str(policy_dir), steps=4, batch_size=6, num_ppo_epochs=2, num_mini_batches=2, eval_every=2,
                eval_size=8, save_every=100, warmup_steps=2, seed=1)
    return RunConfig(**{**base, **kw})


def test_ppo_step_metrics_samples_and_value_checkpoint(tmp_path, policy_dir):
    events = []
    run = SmallRun(ppo_cfg(policy_dir), tmp_path / "ppo", callback=events.append)
    v0 = {k: t.clone() for k, t in run.algorithm.value.state_dict().items()}
    run.run()
    steps = [h for h in run.history if h["type"] == "step"]
    assert len(steps) == 4 and PPO_KEYS <= set(steps[-1])
    assert all(math.isfinite(h[k]) for h in steps for k in PPO_KEYS)
    assert all(-1e-9 <= h["policy/clipfrac_avg"] <= 1 and h["loss/value_avg"] >= 0 for h in steps)
    assert "reward/verifier" not in steps[-1]  # the verifier is the reward here: nothing to compare
    # the value model trained and is saved beside the policy
    assert any(not torch.equal(v0[k], t) for k, t in run.algorithm.value.state_dict().items())
    final = tmp_path / "ppo" / "final"
    assert (final / "model.safetensors").is_file() and (final / "value.safetensors").is_file()
    assert len(json.loads((final / "value.config.json").read_text())["id2label"]) == 1  # one label: a scalar head
    # the samples event carries the per-token GAE advantage strip: one advantage and one value per token
    s = [e for e in events if e["type"] == "samples"][-1]
    assert len(s["tokens"]) == len(s["advantages"]) == len(s["values"]) == len(s["completions"])
    assert all(len(t) == len(a) == len(v) for t, a, v in zip(s["tokens"], s["advantages"], s["values"]))


def test_ppo_resume_is_bitwise_exact_with_the_value_model(tmp_path, policy_dir):
    cfg = ppo_cfg(policy_dir, steps=6)
    full = SmallRun(cfg, tmp_path / "full")
    full.run()
    stop = threading.Event()
    part = SmallRun(cfg, tmp_path / "part", stop_event=stop, callback=lambda e: stop.set() if e["type"] == "step" and e["step"] == 3 else None)
    assert part.run()["stopped"] and part.step == 3
    resumed = SmallRun(RunConfig(), tmp_path / "part", resume=True)
    assert resumed.step == 3
    resumed.run()
    for name in ("policy", "value"):
        a, b = getattr(full.algorithm, name).state_dict(), getattr(resumed.algorithm, name).state_dict()
        assert all(torch.equal(a[k], b[k]) for k in a), f"resumed {name} diverged from the uninterrupted run"
    ha = [{k: v for k, v in h.items() if k not in ("step_time", "steps_per_second", "prev_sha256")} for h in full.history if h["type"] == "step"]
    hb = [{k: v for k, v in h.items() if k not in ("step_time", "steps_per_second", "prev_sha256")} for h in resumed.history if h["type"] == "step"]
    assert ha == hb


@pytest.mark.parametrize("algorithm", ["ppo", "grpo", "dpo"])
def test_reward_model_logs_proxy_and_gold(tmp_path, policy_dir, algorithm):
    """A reward model trained a few steps on a separable file, then each algorithm with --reward-model: the proxy
    and the verifier are logged side by side (the page reads exactly these names)."""
    data = tmp_path / "pairs.jsonl"
    separable_pairs(data, n=16)
    SmallRun(RunConfig(algorithm="rm", model=str(policy_dir), data=str(data), steps=3, batch_size=8, eval_size=4, save_every=100),
             tmp_path / "rm").run()
    rm = str(tmp_path / "rm" / "final")
    if algorithm == "ppo":
        cfg = ppo_cfg(policy_dir, steps=2, reward_model=rm)
    elif algorithm == "grpo":
        cfg = RunConfig(algorithm="grpo", model=str(policy_dir), steps=2, batch_size=2, group_size=4, eval_every=2, eval_size=8,
                        save_every=100, reward_model=rm)
    else:
        cfg = RunConfig(algorithm="dpo", model=str(policy_dir), steps=2, batch_size=4, dpo_pairs=8, eval_every=2, eval_size=8,
                        save_every=100, reward_model=rm)
    run = SmallRun(cfg, tmp_path / algorithm)
    run.run()
    evals = [h for h in run.history if h["type"] == "eval"]
    assert all({"eval/proxy_reward", "eval/accuracy"} <= set(h) for h in evals) and len(evals) == 2
    if algorithm != "dpo":
        steps = [h for h in run.history if h["type"] == "step"]
        assert all({"reward", "reward/verifier"} <= set(h) for h in steps)
        assert all(0.0 <= h["reward/verifier"] <= 1.0 for h in steps)


def test_ppo_with_reward_model_and_a_base_stage(tmp_path, policy_dir):
    """Without --model the base SFT stage runs first (its config carries reward_model along, unused), then PPO
    scores with the reward model."""
    data = tmp_path / "pairs.jsonl"
    separable_pairs(data, n=16)
    SmallRun(RunConfig(algorithm="rm", model=str(policy_dir), data=str(data), steps=2, batch_size=8, eval_size=4, save_every=100),
             tmp_path / "rm").run()
    # the rm above was built on policy_dir's tokenizer, which is the lab's character tokenizer: the fresh base policy's
    cfg = RunConfig(algorithm="ppo", steps=2, base_steps=3, batch_size=4, model_size="tiny", eval_every=2, eval_size=4,
                    save_every=100, reward_model=str(tmp_path / "rm" / "final"))
    run = SmallRun(cfg, tmp_path / "ppo")
    run.run()
    assert {"eval/proxy_reward", "eval/accuracy"} <= set([h for h in run.history if h["type"] == "eval"][-1])
