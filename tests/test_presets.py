"""lab.presets: framework presets on one batch (issue 17).

Hand values for nanochat-rl, dr-grpo-paper and trl-1.16-grpo; every preset differs from the others on a fixed
batch; masked fillers change nothing; bad input raises ValueError naming the argument; and a generated sweep
over every public function of lab.presets (a new public function without an entry in SPECS fails).
"""

from __future__ import annotations

import inspect
import math
import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import lab.presets as presets
from lab.presets import (
    PREFERENCE_PRESETS,
    PRESETS,
    RL_PRESETS,
    PreferencePairs,
    Preset,
    RLBatch,
    differing_quantities,
    get_preset,
    preset_advantages,
    preset_differences,
    run_preference_preset,
    run_preset,
)

INF, NAN = float("inf"), float("nan")


def fixed_batch(**over) -> RLBatch:
    """Two groups of four, off-policy ratios on both sides of the clip range, ragged masks with fillers."""
    kw = dict(
        rewards=[1, 0, 0, 1, 1, 1, 0, 0.5], group_ids=[0, 0, 0, 0, 1, 1, 1, 1],
        logps=[[-1.0, -0.5, -2.0], [-0.3, -1.2, -INF], [-0.7, -0.9, -1.5], [-2.0, -0.1, NAN],
               [-1.1, -0.6, -0.2], [-0.4, -1e4, 0.0], [-0.8, -0.8, -0.8], [-1.5, -0.3, -0.9]],
        old_logps=[[-1.2, -0.5, -1.5], [-0.1, -1.0, 0.0], [-0.7, -1.4, -1.0], [-1.5, -0.4, -0.4],
                   [-1.0, -0.9, -0.5], [-0.9, -2.0, -1.0], [-0.8, -0.5, -1.2], [-1.0, -0.3, -1.4]],
        mask=[[1, 1, 1], [1, 1, 0], [1, 1, 1], [1, 1, 0], [1, 1, 1], [1, 0, 0], [1, 1, 1], [1, 1, 1]],
        ref_logps=[[-1.1, -0.6, -1.8], [-0.2, -1.1, 0.0], [-0.8, -1.0, -1.2], [-1.7, -0.3, 0.0],
                   [-1.0, -0.7, -0.4], [-0.6, 0.0, 0.0], [-0.9, -0.6, -1.0], [-1.2, -0.4, -1.1]],
    )
    kw.update(over)
    return RLBatch(**kw)


def small_batch() -> RLBatch:
    """On-policy (ratio 1), one group of two, second response one token long (its second slot a filler)."""
    return RLBatch(rewards=[1.0, 0.0], group_ids=["p", "p"], logps=[[-1.0, -2.0], [-0.5, -1e4]],
                   old_logps=[[-1.0, -2.0], [-0.5, 0.0]], mask=[[1, 1], [1, 0]])


# ---------------------------------------------------------------- registry


def test_required_presets_exist_with_framework_version_and_file():
    for name in ("trl-1.16-grpo", "trl-1.16-dpo", "verl-grpo", "verl-ppo", "openrlhf-grpo", "openrlhf-reinforce++",
                 "open-instruct-grpo", "nanochat-rl", "dapo-paper", "dr-grpo-paper"):
        p = get_preset(name)
        assert p.framework and p.version and p.mirrors and p.verified
        assert p.reasons, f"{name} gives no reason for its settings"


def test_framework_facts_are_encoded():
    trl = get_preset("trl-1.16-grpo")
    assert (trl.loss_agg, trl.beta, trl.epsilon, trl.epsilon_high, trl.ddof, trl.eps, trl.kl_bias_correction) == ("dapo", 0.0, 0.2, None, 1, 1e-4, True)
    verl = get_preset("verl-grpo")
    assert (verl.eps, verl.clip_ratio_c, verl.log_ratio_clamp, verl.loss_agg, verl.singleton, verl.kl_clamp) == (1e-6, 3.0, 20.0, "bnpo", "raw", 10.0)
    ppo = get_preset("verl-ppo")
    assert ppo.advantage == "gae" and ppo.whiten and ppo.clip_ratio_c == 3.0
    assert get_preset("open-instruct-grpo").ddof == 0
    nano = get_preset("nanochat-rl")
    assert (nano.advantage, nano.policy_loss, nano.beta, nano.loss_agg) == ("centered", "none", 0.0, "bnpo")
    assert get_preset("trl-1.16-dpo").pref_beta == 0.1 and get_preset("trl-1.16-dpo").preference_loss == "sigmoid"


# ---------------------------------------------------------------- hand values


def test_nanochat_hand_values():
    # A = r − μ = [0.5, −0.5]; loss = −Σ logp·A / 3 active tokens = −((−1 − 2)·0.5 + (−0.5)(−0.5))/3 = 1.25/3
    r = run_preset("nanochat-rl", small_batch())
    assert r.loss == pytest.approx(1.25 / 3, abs=1e-12)
    assert r.advantages.tolist() == [[0.5, 0.5], [-0.5, 0.0]]
    assert torch.allclose(r.grad, torch.tensor([[-0.5 / 3, -0.5 / 3], [0.5 / 3, 0.0]], dtype=torch.float64), rtol=1e-12, atol=1e-12)
    assert r.clip_fraction == 0.0


def test_dr_grpo_hand_values():
    # ρ = 1: per-token −A; token sum −(0.5 + 0.5 − 0.5) divided by B·L = 2·2
    r = run_preset("dr-grpo-paper", small_batch())
    assert r.loss == pytest.approx(-0.125, abs=1e-12)
    assert torch.allclose(r.grad, torch.tensor([[-0.125, -0.125], [0.125, 0.0]], dtype=torch.float64), rtol=1e-12, atol=1e-12)


def test_trl_grpo_hand_values():
    a = 0.5 / (math.sqrt(0.5) + 1e-4)  # std ddof 1 of [1, 0] is √0.5, plus TRL's 1e-4
    r = run_preset("trl-1.16-grpo", small_batch())
    assert r.advantages[0, 0].item() == pytest.approx(a, rel=1e-12)
    assert r.loss == pytest.approx(-(2 * a - a) / 3, rel=1e-12)  # dapo: token sum / 3 active tokens
    assert torch.allclose(r.grad, torch.tensor([[-a / 3, -a / 3], [a / 3, 0.0]], dtype=torch.float64), rtol=1e-12, atol=1e-12)


def test_verl_singleton_keeps_its_reward_trl_gives_zero():
    b = RLBatch(rewards=[2.0, 1.0, 0.0], group_ids=[0, 0, 1], logps=[[-1.0], [-1.0], [-1.0]], old_logps=[[-1.0], [-1.0], [-1.0]],
                mask=[[1], [1], [1]], ref_logps=[[-1.0], [-1.0], [-1.0]])
    b2 = RLBatch(**{**b.__dict__, "rewards": [2.0, 1.0, 3.0]})
    assert preset_advantages("verl-grpo", b2)[2, 0].item() == pytest.approx(3.0 / (1 + 1e-6), rel=1e-12)
    assert preset_advantages("trl-1.16-grpo", b2)[2, 0].item() == 0.0


def test_open_instruct_population_std():
    b = small_batch()
    # population std of [1, 0] is 0.5: A = 0.5/(0.5 + 1e-8)
    assert preset_advantages("open-instruct-grpo", b)[0, 0].item() == pytest.approx(0.5 / (0.5 + 1e-8), rel=1e-12)


def test_verl_dual_clip_bounds_negative_advantage_terms():
    # A < 0 with ratio e^3 ≈ 20: the plain clip loss grows with ρ, dual-clip caps the term at c·|A| = 3|A|
    b = RLBatch(rewards=[0.0, 1.0], group_ids=[0, 0], logps=[[-0.1], [-1.0]], old_logps=[[-3.1], [-1.0]], mask=[[1], [1]],
                ref_logps=[[-0.1], [-1.0]])
    v = run_preset("verl-grpo", b)
    o = run_preset("openrlhf-grpo", b)
    a = preset_advantages("verl-grpo", b)[0, 0].item()
    assert a < 0
    assert v.metrics["pg_clipfrac_lower"] == 0.5
    assert v.grad[0, 0].item() == 0.0  # held at c·A: no gradient through the huge ratio
    assert abs(o.grad[0, 0].item()) > 1.0


def test_whitened_presets_have_zero_mean_over_active_tokens():
    b = fixed_batch()
    m = torch.tensor(b.mask, dtype=torch.bool)
    for name in ("verl-ppo", "openrlhf-reinforce++", "openrlhf-reinforce++-baseline"):
        adv = preset_advantages(name, b)
        assert abs(adv[m].mean().item()) < 1e-12
        assert adv[m].std().item() == pytest.approx(1.0, abs=1e-6)


# ---------------------------------------------------------------- presets are never silently identical


def test_each_preset_differs_from_every_other_on_the_fixed_batch():
    b = fixed_batch()
    res = {n: run_preset(n, b) for n in RL_PRESETS}
    for n in RL_PRESETS:
        for o in RL_PRESETS:
            if o != n:
                d = differing_quantities([res[n], res[o]], atol=1e-9)
                assert any(d.values()), f"{n} and {o} compute the same numbers on the fixed batch"
    pairs = PreferencePairs([-5.0, -8, -3], [-6.0, -7, -9], [-5.5, -7.5, -4], [-5.5, -7.5, -8], [5, 8, 3], [6, 7, 9])
    losses = {n: run_preference_preset(n, pairs).loss for n in PREFERENCE_PRESETS}
    assert len({round(v, 12) for v in losses.values()}) == len(losses)


def test_trl_dpo_preset_equals_dpo_loss_mean():
    from lab.dpo import dpo_loss

    pairs = PreferencePairs([-5.0, -8.0], [-6.0, -7.0], [-5.5, -7.5], [-5.5, -7.5])
    want = dpo_loss(*[torch.tensor(x, dtype=torch.float64) for x in ([-5.0, -8.0], [-6.0, -7.0], [-5.5, -7.5], [-5.5, -7.5])], beta=0.1)[0].mean()
    assert run_preference_preset("trl-1.16-dpo", pairs).loss == pytest.approx(float(want), rel=1e-14)


def test_differences_come_with_reasons():
    diffs = {d.setting: d for d in preset_differences(["trl-1.16-grpo", "verl-grpo"])}
    assert {"eps", "clip_ratio_c", "loss_agg", "kl_clamp"} <= set(diffs)
    assert "dual-clip" in diffs["clip_ratio_c"].reasons["verl-grpo"]


# ---------------------------------------------------------------- fillers, properties


@pytest.mark.parametrize("filler", [0.0, -1e4, -100.0, -INF, INF, NAN])
def test_masked_fillers_change_nothing(filler):
    base = fixed_batch()
    def fill(x):
        return [[v if mk else filler for v, mk in zip(row, mrow)] for row, mrow in zip(x, base.mask)]
    other = fixed_batch(logps=fill(base.logps), old_logps=fill(base.old_logps), ref_logps=fill(base.ref_logps))
    for n in RL_PRESETS:
        a, b = run_preset(n, base), run_preset(n, other)
        assert a.loss == b.loss and torch.equal(a.grad, b.grad) and torch.equal(a.advantages, b.advantages), n
        assert bool(torch.isfinite(b.grad).all())
        m = torch.tensor(base.mask) == 0
        assert (b.grad[m] == 0).all() and (b.advantages[m] == 0).all()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.5, 1.0, 0.1, 1e-17]), min_size=8, max_size=8), st.integers(0, 2**31 - 1))
def test_property_group_presets_centre_each_group_and_grads_are_finite(rewards, seed):
    g = torch.Generator().manual_seed(seed)
    lp = -torch.rand(8, 4, generator=g, dtype=torch.float64) * 2
    olp = lp + (torch.rand(8, 4, generator=g, dtype=torch.float64) - 0.5) * 0.6
    olp = olp.clamp(max=0.0)
    mask = torch.ones(8, 4)
    mask[:, 3] = (torch.rand(8, generator=g) > 0.5).float()
    b = RLBatch(rewards, [i // 4 for i in range(8)], lp, olp, mask, ref_logps=olp)
    for n in RL_PRESETS:
        r = run_preset(n, b)
        assert math.isfinite(r.loss) and bool(torch.isfinite(r.grad).all()), n
        if PRESETS[n].advantage in ("group", "centered", "rloo") and not PRESETS[n].whiten:
            per_resp = r.advantages[:, 0].view(2, 4)
            assert per_resp.sum(-1).abs().max().item() < 1e-9, n


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("call, name", [
    (lambda: get_preset("trl-2-grpo"), "name"),
    (lambda: run_preset("trl-1.16-dpo", small_batch()), "preset"),
    (lambda: run_preset(3, small_batch()), "preset"),
    (lambda: run_preset("trl-1.16-grpo", RLBatch([1.0, 0.0], [0], [[-1.0], [-1.0]], [[-1.0], [-1.0]], [[1], [1]])), "group_ids"),
    (lambda: run_preset("verl-grpo", small_batch()), "ref_logps"),
    (lambda: run_preset("trl-1.16-grpo", RLBatch([1.0, NAN], [0, 0], [[-1.0], [-1.0]], [[-1.0], [-1.0]], [[1], [1]])), "rewards"),
    (lambda: run_preset("trl-1.16-grpo", RLBatch([1.0, 0.0], [0, 0], [[-1.0], [0.5]], [[-1.0], [-1.0]], [[1], [1]])), "logps"),
    (lambda: run_preset("trl-1.16-grpo", RLBatch([1.0, 0.0], [0, 0], [[-1.0], [-1.0]], [[-1.0], [-1.0]], [[1, 1], [1, 1]])), "mask"),
    (lambda: run_preset("trl-1.16-grpo", RLBatch([1.0, 0.0], [0, 0], [-1.0, -1.0], [[-1.0], [-1.0]], [[1], [1]])), "logps"),
    (lambda: run_preset(Preset("x", "f", "v", "m", advantage="rloo"), RLBatch([1.0, 0.0], [0, 1], [[-1.0], [-1.0]], [[-1.0], [-1.0]], [[1], [1]])), "group_ids"),
    (lambda: Preset("x", "f", "v", "m", loss_agg="mean"), "loss_agg"),
    (lambda: Preset("x", "f", "v", "m", clip_ratio_c=3.0), "loss_agg"),
    (lambda: Preset("x", "f", "v", "m", advantage="ppo"), "advantage"),
    (lambda: Preset("x", "f", "v", "m", ddof=2), "ddof"),
    (lambda: Preset("x", "f", "v", "m", reasons={"bogus": "x"}), "reasons"),
    (lambda: run_preference_preset("trl-1.16-dpo", PreferencePairs([-1.0], [-2.0])), "ref_chosen_logps"),
    (lambda: run_preference_preset("simpo-paper", PreferencePairs([-1.0], [-2.0])), "chosen_lengths"),
    (lambda: run_preference_preset("trl-1.16-grpo", PreferencePairs([-1.0], [-2.0])), "preset"),
    (lambda: run_preference_preset("trl-1.16-dpo", PreferencePairs([-1.0, -2.0], [-2.0], [-1.0], [-1.0])), "chosen_logps"),
    (lambda: preset_differences(["trl-1.16-grpo"]), "presets"),
    (lambda: differing_quantities([]), "results"),
    (lambda: run_preset("trl-9-grpo", small_batch()), "preset"),
    (lambda: differing_quantities([run_preset("nanochat-rl", small_batch()), run_preset("nanochat-rl", fixed_batch())]), "results"),
])
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])"):
        call()


# ---------------------------------------------------------------- generated edge sweep over every public function


def _public():
    return {n for n, f in inspect.getmembers(presets, inspect.isfunction) if not n.startswith("_") and f.__module__ == presets.__name__}


def _near_constant_batches():
    for noise in (0.0, 1e-17, 1e-15, 1e-12, 1e-9):
        for base in (0.0, 0.1, 1.0, 1e6):
            yield RLBatch([base, base + noise, base, base + 2 * noise], [0, 0, 0, 0], [[-1.0, -2.0]] * 4,
                          [[-1.1, -1.9]] * 4, [[1, 1], [1, 0], [1, 1], [1, 1]], ref_logps=[[-1.0, -2.0]] * 4)


def _sweep_cases():
    """name → list of (label, call, expect): expect is None (valid: finite result) or the argument name a ValueError must name."""
    b = fixed_batch()
    pairs = PreferencePairs([-5.0, -8.0], [-6.0, -7.0], [-5.5, -7.5], [-5.5, -7.5], [5, 8], [6, 7])
    spec = {
        "get_preset": [(n, (lambda n=n: get_preset(n)), None) for n in PRESETS]
        + [("unknown", lambda: get_preset("x"), "name"), ("not a string", lambda: get_preset(None), "name")],
        "preset_advantages": [(f"{n} near-constant {i}", (lambda n=n, nb=nb: preset_advantages(n, nb)), None)
                              for n in RL_PRESETS if PRESETS[n].advantage != "rloo" for i, nb in enumerate(_near_constant_batches())]
        + [("empty rewards", lambda: preset_advantages("trl-1.16-grpo", RLBatch([], [], [[]], [[]], [[]])), "rewards")],
        "run_preset": [(f"{n} fixed", (lambda n=n: run_preset(n, b)), None) for n in RL_PRESETS]
        + [(f"{n} near-constant {i}", (lambda n=n, nb=nb: run_preset(n, nb)), None)
           for n in RL_PRESETS for i, nb in enumerate(_near_constant_batches())]
        + [(f"{n} int/bool inputs", (lambda n=n: run_preset(n, RLBatch(torch.tensor([1, 0, 1, 1]), [0, 0, 1, 1],
                                                                       [[-1.0]] * 4, [[-1.0]] * 4, torch.ones(4, 1, dtype=torch.bool),
                                                                       ref_logps=[[-1.0]] * 4))), None) for n in RL_PRESETS]
        + [(f"{n} +inf old_logps", (lambda n=n: run_preset(n, fixed_batch(old_logps=[[INF] * 3] * 8))), "old_logps")
           for n in RL_PRESETS if PRESETS[n].policy_loss != "none"],
        "run_preference_preset": [(n, (lambda n=n: run_preference_preset(n, pairs)), None) for n in PREFERENCE_PRESETS]
        + [(f"{n} huge margin", (lambda n=n: run_preference_preset(n, PreferencePairs([-1.0], [-1e4], [-1e4], [-1.0], [1], [1]))), None)
           for n in PREFERENCE_PRESETS]
        + [(f"{n} NaN", (lambda n=n: run_preference_preset(n, PreferencePairs([NAN], [-1.0], [-1.0], [-1.0], [1], [1]))), "chosen_logps")
           for n in PREFERENCE_PRESETS],
        "make_batch": [("demo ratios", lambda: presets.make_batch(presets.DEMO_GROUPS, presets.DEMO_LOGPS, ratios=presets.DEMO_RATIOS), None),
                       ("on-policy", lambda: presets.make_batch([[1, 0]], [[-1.0], [-2.0, -0.5]]), None),
                       ("old logps", lambda: presets.make_batch([[1, 0]], [[-1.0], [-2.0]], old_logps=[[-1.5], [-1.0]]), None),
                       ("bool rewards", lambda: presets.make_batch([[True, False]], [[-1.0], [-2.0]]), None),
                       ("huge ratio", lambda: presets.make_batch([[1, 0]], [[-1.0], [-2.0]], ratios=[[1e300], [1.0]]), None),
                       ("tiny ratio", lambda: presets.make_batch([[1, 0]], [[-1.0], [-2.0]], ratios=[[1e-300], [1.0]]), "ratios"),
                       ("no groups", lambda: presets.make_batch([], [[-1.0]]), "groups"),
                       ("empty group", lambda: presets.make_batch([[1.0], []], [[-1.0]]), "groups"),
                       ("too few rows", lambda: presets.make_batch([[1, 0]], [[-1.0]]), "logps"),
                       ("empty response", lambda: presets.make_batch([[1, 0]], [[-1.0], []]), "logps"),
                       ("positive logp", lambda: presets.make_batch([[1, 0]], [[0.5], [-1.0]]), "logps"),
                       ("nan logp", lambda: presets.make_batch([[1, 0]], [[NAN], [-1.0]]), "logps"),
                       ("zero ratio", lambda: presets.make_batch([[1, 0]], [[-1.0], [-1.0]], ratios=[[0.0], [1.0]]), "ratios"),
                       ("inf ratio", lambda: presets.make_batch([[1, 0]], [[-1.0], [-1.0]], ratios=[[INF], [1.0]]), "ratios"),
                       ("ratio too small for a probability", lambda: presets.make_batch([[1, 0]], [[-0.1], [-1.0]], ratios=[[0.5], [1.0]]), "ratios"),
                       ("ragged ratios", lambda: presets.make_batch([[1, 0]], [[-1.0], [-1.0]], ratios=[[1.0, 1.0], [1.0]]), "ratios"),
                       ("both", lambda: presets.make_batch([[1, 0]], [[-1.0], [-1.0]], ratios=[[1.0], [1.0]], old_logps=[[-1.0], [-1.0]]), "ratios"),
                       ("negative shift", lambda: presets.make_batch([[1, 0]], [[-1.0], [-1.0]], ref_shift=-1.0), "ref_shift"),
                       ("nan shift", lambda: presets.make_batch([[1, 0]], [[-1.0], [-1.0]], ref_shift=NAN), "ref_shift")],
        "masked_rows": [("grad", lambda: presets.masked_rows(run_preset("verl-grpo", b).grad, b.mask), None),
                        ("fillers", lambda: presets.masked_rows([[1.0, NAN], [INF, 2.0]], [[1, 0], [0, 1]]), None),
                        ("1-D", lambda: presets.masked_rows([1.0, 2.0], [1, 1]), "values"),
                        ("bad mask", lambda: presets.masked_rows([[1.0]], [[1, 1]]), "mask")],
        "playground_conventions": [(n, (lambda n=n: presets.playground_conventions(n)), None) for n in RL_PRESETS]
        + [("preference preset", lambda: presets.playground_conventions("trl-1.16-dpo"), "preset")],
        "simulate_presets": [("two", lambda: presets.simulate_presets(["nanochat-rl", "verl-ppo"], steps=3), None),
                             ("none", lambda: presets.simulate_presets([], steps=3), "names"),
                             ("bad steps", lambda: presets.simulate_presets(["nanochat-rl"], steps=-1), "steps"),
                             ("bad lr", lambda: presets.simulate_presets(["nanochat-rl"], steps=2, lr=-1.0), "lr")],
        "preset_differences": [("pairs", lambda: preset_differences(list(RL_PRESETS[:2])), None),
                               ("all", lambda: preset_differences(list(PRESETS)), None),
                               ("one", lambda: preset_differences(["nanochat-rl"]), "presets")],
        "differing_quantities": [("two", lambda: differing_quantities([run_preset("nanochat-rl", b), run_preset("dr-grpo-paper", b)]), None),
                                 ("negative atol", lambda: differing_quantities([run_preset("nanochat-rl", b)] * 2, atol=-1.0), "atol")],
    }
    return spec


def _finite(x) -> bool:
    if isinstance(x, torch.Tensor):
        return bool(torch.isfinite(x).all())
    if isinstance(x, float):
        return math.isfinite(x)
    if isinstance(x, dict):
        return all(_finite(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return all(_finite(v) for v in x)
    if hasattr(x, "__dataclass_fields__"):
        return all(_finite(getattr(x, f)) for f in x.__dataclass_fields__)
    return True


def test_every_public_function_is_swept():
    assert _public() <= set(_sweep_cases()), f"public functions without sweep entries: {_public() - set(_sweep_cases())}"


def test_masked_rows_blanks_masked_positions():
    assert presets.masked_rows([[1.0, NAN], [INF, 2.0]], [[1, 0], [0, 1]]) == [[1.0, None], [None, 2.0]]


def test_make_batch_ratios_give_old_logps_and_pad_with_the_filler():
    b = presets.make_batch([[1.0, 0.0]], [[-1.0, -2.0], [-0.5]], ratios=[[2.0, 1.0], [0.8]], ref_shift=0.25)
    assert b.old_logps[0, 0].item() == pytest.approx(-1.0 - math.log(2.0), rel=1e-15)
    assert b.old_logps[1, 0].item() == pytest.approx(-0.5 - math.log(0.8), rel=1e-15)
    assert b.logps[1, 1].item() == presets.FILLER and b.mask.tolist() == [[1.0, 1.0], [1.0, 0.0]]
    assert b.ref_logps[0, 1].item() == pytest.approx(-2.25, rel=1e-15) and b.group_ids == [0, 0]


def test_playground_divergence_dr_grpo_against_nanochat():
    # same seed, same first batch: the first step's expected reward is shared, later ones differ (no std, other normaliser)
    sims = presets.simulate_presets(["nanochat-rl", "dr-grpo-paper", "gspo-paper"], steps=10)
    a, b = sims["nanochat-rl"][0], sims["dr-grpo-paper"][0]
    assert a.expected_reward[0] == b.expected_reward[0]
    assert abs(float(a.expected_reward[-1]) - float(b.expected_reward[-1])) > 1e-3
    assert sims["gspo-paper"][0] is None and "gspo" in sims["gspo-paper"][1][0]


def test_edge_sweep():
    failures = []
    count = 0
    for fn, cases in _sweep_cases().items():
        for label, call, expect in cases:
            count += 1
            try:
                out = call()
            except ValueError as exc:
                if expect is None or not re.search(rf"(?<![A-Za-z0-9_]){re.escape(expect)}(?![A-Za-z0-9_])", str(exc)):
                    failures.append(f"{fn} [{label}]: ValueError {exc}")
                continue
            except Exception as exc:  # noqa: BLE001 - the point is to count these
                failures.append(f"{fn} [{label}]: {type(exc).__name__}: {exc}")
                continue
            if expect is not None:
                failures.append(f"{fn} [{label}]: returned instead of a ValueError naming {expect}")
            elif fn not in ("masked_rows", "simulate_presets", "playground_conventions") and not _finite(out):
                failures.append(f"{fn} [{label}]: non-finite result")
    assert count > 150
    assert not failures, "\n".join(failures)
