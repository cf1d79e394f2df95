"""Framework presets: what TRL, verl, OpenRLHF, open-instruct and nanochat compute on the same batch.

The same algorithm name ("GRPO") computes different numbers in different frameworks: the std divisor and
its eps, whether advantages are whitened over tokens, how token losses are aggregated, dual-clip, KL
estimator clamps, TRL's KL bias correction. A :class:`Preset` is a named, versioned bundle that maps one
framework's defaults onto the lab's explicit parameters (group advantages ftip-004D, estimator conventions
ftip-004G, token-level aggregation ftip-004J, GAE ftip-003E, the clipped surrogate ftip-0039), and
:func:`run_preset` computes one batch with the lab's own tested functions only:

- advantages (:mod:`lab.grpo` ``uneven_group_advantages`` / ``rloo_advantages`` / ``reinforce_pp_advantages``
  / ``whiten_advantages``, :func:`lab.rl.gae`);
- the loss (:func:`lab.grpo.grpo_loss`, ``gspo_loss``, ``cispo_loss``, :func:`lab.ppo.ppo_objective` for
  dual-clip and log-ratio clamps, :func:`lab.rl.policy_gradient_surrogate` for unclipped REINFORCE), plus the
  KL term (:func:`lab.kl.kl_estimate`, aggregated like the policy loss);
- the per-token gradient weight ∂loss/∂log π(y_t) by autograd, and the clip fractions.

Each preset states what was read in the framework's code and what is assumed (``verified``). The lab's
conventions are the frameworks' as the lead and this module's author read them at the versions named; they are
not executed against those frameworks (only TRL's losses are, in the TRL parity tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal, Mapping, Sequence

import torch

from lab._checks import TensorLike, active_values, as_mask, as_tensor, check_active, check_finite
from lab.dpo import cdpo_loss, dpo_loss, ipo_loss, simpo_loss
from lab.grpo import (
    LOSS_TYPES,
    aggregate_token_loss,
    cispo_loss,
    grpo_loss,
    gspo_loss,
    reinforce_pp_advantages,
    rloo_advantages,
    uneven_group_advantages,
    whiten_advantages,
)
from lab.kl import kl_estimate
from lab.ppo import ppo_objective
from lab.rl import gae, policy_gradient_surrogate

AdvantageRule = Literal["group", "centered", "rloo", "reinforce++", "reinforce++-baseline", "gae"]
PolicyLoss = Literal["clip", "gspo", "cispo", "none"]
PreferenceLoss = Literal["sigmoid", "cdpo", "ipo", "simpo"]
ADVANTAGE_RULES = ("group", "centered", "rloo", "reinforce++", "reinforce++-baseline", "gae")
POLICY_LOSSES = ("clip", "gspo", "cispo", "none")
PREFERENCE_LOSSES = ("sigmoid", "cdpo", "ipo", "simpo")
KL_KINDS = ("k1", "k2", "k3", "abs", "k3+")


@dataclass(frozen=True)
class Preset:
    """A framework's defaults as lab parameters. Every field below is explicit; ``reasons`` gives one line per
    field whose value differs from the lab's plain default (the paper's GRPO: group std, ddof 1, eps 1e-4,
    clip ε = 0.2, per-response mean aggregation "grpo", no KL)."""

    name: str  # registry key, e.g. "verl-grpo"
    framework: str  # "TRL", "verl", "OpenRLHF", "open-instruct", "nanochat" or "paper"
    version: str  # the version (or paper) the numbers are taken from
    mirrors: str  # the file (or paper section) the preset mirrors
    kind: Literal["rl", "preference"] = "rl"
    # ---- advantages
    advantage: AdvantageRule = "group"  # group: (r − μ)/(σ + eps); centered: r − μ; rloo; reinforce++(-baseline); gae
    ddof: int = 1  # std divisor of the group std (1: n − 1, torch.std; 0: n, numpy's default)
    eps: float = 1e-4  # added to the group std (TRL 1e-4, verl 1e-6, open-instruct 1e-8, OpenRLHF 1e-9)
    singleton: Literal["zero", "raw", "raise"] = "zero"  # what a group of one gets (verl: mean 0, std 1 → "raw")
    whiten: bool = False  # whiten the token advantages over the batch's active tokens afterwards (masked mean/var)
    whiten_eps: float = 1e-8  # eps inside the square root of the whitening
    gamma: float = 1.0  # GAE discount (advantage "gae")
    lam: float = 1.0  # GAE λ (advantage "gae")
    kl_in_reward: float = 0.0  # REINFORCE++: coefficient of the k1 KL-to-go subtracted from each token's return
    # ---- policy loss
    policy_loss: PolicyLoss = "clip"  # clip: PPO/GRPO token clip; gspo: sequence ratio; cispo: clipped IS weight; none: REINFORCE
    epsilon: float = 0.2  # lower clip range ε
    epsilon_high: float | None = None  # upper clip range (None: = ε); for cispo the absolute cap ε_max
    clip_ratio_c: float | None = None  # dual-clip constant c (> 1) for A < 0 (Ye et al. 2020); None: off
    log_ratio_clamp: float | None = None  # clamp log ρ to ±c before exp; None: off
    loss_agg: str = "grpo"  # aggregation, one of lab.grpo.LOSS_TYPES
    # ---- KL to the reference
    beta: float = 0.0  # KL coefficient in the loss (0: no KL term)
    kl_estimator: str = "k3"  # k1, k2, k3, abs, k3+ (lab.kl.kl_estimate)
    kl_clamp: float | None = None  # clamp of the per-token KL estimate (verl: ±10); None: off
    kl_bias_correction: bool = False  # multiply the k3 term by ρ (TRL use_bias_correction_kl)
    # ---- preference presets
    preference_loss: PreferenceLoss = "sigmoid"
    pref_beta: float = 0.1  # DPO β (IPO τ, SimPO β)
    label_smoothing: float = 0.0  # cDPO ε
    simpo_gamma: float = 0.5  # SimPO target margin γ
    reasons: Mapping[str, str] = field(default_factory=dict)  # field name → one-line reason for its value
    verified: str = ""  # what was checked in the framework's code, and what is assumed

    def __post_init__(self):
        if self.kind not in ("rl", "preference"):
            raise ValueError(f"kind must be 'rl' or 'preference'; got {self.kind!r}")
        if self.advantage not in ADVANTAGE_RULES:
            raise ValueError(f"advantage must be one of {ADVANTAGE_RULES}; got {self.advantage!r}")
        if self.policy_loss not in POLICY_LOSSES:
            raise ValueError(f"policy_loss must be one of {POLICY_LOSSES}; got {self.policy_loss!r}")
        if self.preference_loss not in PREFERENCE_LOSSES:
            raise ValueError(f"preference_loss must be one of {PREFERENCE_LOSSES}; got {self.preference_loss!r}")
        if self.loss_agg not in LOSS_TYPES:
            raise ValueError(f"loss_agg must be one of {LOSS_TYPES}; got {self.loss_agg!r}")
        if self.kl_estimator not in KL_KINDS:
            raise ValueError(f"kl_estimator must be one of {KL_KINDS}; got {self.kl_estimator!r}")
        if self.ddof not in (0, 1):
            raise ValueError(f"ddof must be 0 or 1; got {self.ddof!r}")
        # the lab functions that implement these losses fix their aggregation: declare it, never imply it
        if (self.clip_ratio_c is not None or self.log_ratio_clamp is not None or self.policy_loss == "none") and self.loss_agg != "bnpo":
            raise ValueError(f"loss_agg must be 'bnpo' (token mean) with dual-clip, a log-ratio clamp or policy_loss 'none'; got {self.loss_agg!r}")
        if self.policy_loss == "gspo" and (self.loss_agg != "grpo" or self.whiten or self.advantage in ("gae", "reinforce++", "reinforce++-baseline")):
            raise ValueError("policy_loss 'gspo' needs one advantage per response (no whitening, no token returns) and loss_agg 'grpo'")
        if self.policy_loss == "cispo" and self.loss_agg != "dapo":
            raise ValueError(f"loss_agg must be 'dapo' with policy_loss 'cispo'; got {self.loss_agg!r}")
        if self.kl_bias_correction and (self.kl_estimator != "k3" or self.kl_clamp is not None or self.policy_loss != "clip"
                                        or self.clip_ratio_c is not None or self.log_ratio_clamp is not None):
            raise ValueError("kl_bias_correction is TRL's: it needs kl_estimator 'k3', no kl_clamp and the plain clip loss")
        unknown = set(self.reasons) - {f.name for f in fields(self)}
        if unknown:
            raise ValueError(f"reasons names fields that do not exist: {sorted(unknown)}")


_COMMON = "Not executed against the framework; "

PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset(
        "trl-1.16-grpo", "TRL", "1.16", "trl/trainer/grpo_trainer.py, trl/trainer/grpo_config.py",
        advantage="group", ddof=1, eps=1e-4, loss_agg="dapo", beta=0.0, kl_bias_correction=True,
        reasons={"loss_agg": "TRL 1.16's GRPOConfig default loss_type is 'dapo': token sum / active tokens of the generation batch",
                 "kl_bias_correction": "TRL 1.16 defaults use_bias_correction_kl=True (k3 times ρ); it matters only with beta > 0",
                 "beta": "TRL 1.16's default beta is 0.0: no KL term"},
        verified="Defaults read from TRL 1.16 (installed): loss_type 'dapo', scale_rewards 'group', beta 0, epsilon 0.2, "
                 "std ddof 1 + 1e-4. Losses at parity with TRL in the parity tests."),
    Preset(
        "trl-1.16-dpo", "TRL", "1.16", "trl/trainer/dpo_trainer.py, trl/trainer/dpo_config.py", kind="preference",
        preference_loss="sigmoid", pref_beta=0.1,
        reasons={"pref_beta": "DPOConfig default beta 0.1"},
        verified="DPOConfig defaults read from TRL 1.16: loss_type 'sigmoid', beta 0.1, label_smoothing 0."),
    Preset(
        "verl-grpo", "verl", "core_algos.py as verified by the lab (release not pinned)", "verl/trainer/ppo/core_algos.py",
        advantage="group", ddof=1, eps=1e-6, singleton="raw", clip_ratio_c=3.0, log_ratio_clamp=20.0, loss_agg="bnpo",
        beta=0.001, kl_estimator="k3", kl_clamp=10.0,
        reasons={"eps": "verl adds 1e-6 to torch.std (ddof 1)",
                 "singleton": "verl gives a lone sample mean 0 and std 1, so its advantage is its reward",
                 "clip_ratio_c": "verl's vanilla policy loss always applies dual-clip with c = 3",
                 "log_ratio_clamp": "verl clamps log ρ to ±20 before exp",
                 "loss_agg": "verl's default loss_agg_mode is 'token-mean' (every token of the batch weighs the same)",
                 "beta": "verl's GRPO example scripts use use_kl_loss=True, kl_loss_coef=0.001",
                 "kl_clamp": "verl's low_var_kl is k3 clamped to ±10"},
        verified="Advantage (std ddof 1 + 1e-6, singleton mean 0 std 1), dual-clip c = 3, log-ratio clamp ±20, "
                 "token-mean default and low_var_kl clamp verified by the lead in core_algos.py. The KL coefficient 0.001 "
                 "is the example scripts' value (assumed)."),
    Preset(
        "verl-ppo", "verl", "core_algos.py as verified by the lab (release not pinned)", "verl/trainer/ppo/core_algos.py (compute_gae_advantage_return, masked_whiten)",
        advantage="gae", gamma=1.0, lam=1.0, whiten=True, clip_ratio_c=3.0, log_ratio_clamp=20.0, loss_agg="bnpo",
        reasons={"advantage": "PPO with a critic: GAE over each response's tokens (reward at the last token)",
                 "whiten": "verl whitens GAE advantages over the batch's active tokens (masked_whiten)",
                 "clip_ratio_c": "verl's vanilla policy loss always applies dual-clip with c = 3",
                 "log_ratio_clamp": "verl clamps log ρ to ±20 before exp",
                 "loss_agg": "verl's default loss_agg_mode is 'token-mean'"},
        verified="GAE with γ = λ = 1 (verl's defaults) then masked_whiten, dual-clip and clamp as verified by the lead; "
                 + _COMMON + "values come from the batch (0 when none are given)."),
    Preset(
        "openrlhf-grpo", "OpenRLHF", "experience_maker.py, 2025 main branch (release not pinned)", "openrlhf/trainer/ppo_utils/experience_maker.py (group_norm)",
        advantage="group", ddof=1, eps=1e-9, loss_agg="bnpo", beta=0.001, kl_estimator="k3",
        reasons={"eps": "OpenRLHF's group_norm adds 1e-9 to torch.std (ddof 1)",
                 "loss_agg": "OpenRLHF's PolicyLoss averages over all active tokens (token-level loss)",
                 "beta": "OpenRLHF's GRPO example uses --use_kl_loss --init_kl_coef 1e-3 --kl_estimator k3"},
        verified="group_norm (r − mean)/(std + 1e-9), torch std ddof 1: read in experience_maker.py. Token-level mean "
                 "aggregation and the KL settings are assumed from its example scripts, not verified in code."),
    Preset(
        "openrlhf-reinforce++", "OpenRLHF", "experience_maker.py, 2025 main branch (release not pinned)", "openrlhf/trainer/ppo_utils/experience_maker.py (reinforce)",
        advantage="reinforce++", kl_in_reward=0.01, loss_agg="bnpo",
        reasons={"advantage": "REINFORCE++: reward minus KL-to-go, whitened over all active tokens, no group, no critic",
                 "kl_in_reward": "the KL (k1) enters the reward with OpenRLHF's default init_kl_coef 0.01",
                 "loss_agg": "OpenRLHF's PolicyLoss averages over all active tokens"},
        verified="Formula from Hu et al. 2025 (REINFORCE++, §3); " + _COMMON + "the coefficient 0.01, k1 in the reward "
                 "and token-mean aggregation are assumed, not verified in OpenRLHF's code."),
    Preset(
        "openrlhf-reinforce++-baseline", "OpenRLHF", "experience_maker.py, 2025 main branch (release not pinned)",
        "openrlhf/trainer/ppo_utils/experience_maker.py (reinforce_baseline)",
        advantage="reinforce++-baseline", kl_in_reward=0.0, loss_agg="bnpo",
        reasons={"advantage": "REINFORCE++-baseline: r − group mean, then whitened over the batch's tokens (no per-group std)",
                 "loss_agg": "OpenRLHF's PolicyLoss averages over all active tokens"},
        verified="Group-mean subtraction read in experience_maker.py; the token whitening is REINFORCE++'s (§3) and "
                 "assumed; " + _COMMON.lower()),
    Preset(
        "open-instruct-grpo", "open-instruct", "grpo_fast.py, 2025 main branch (release not pinned)", "open_instruct/grpo_fast.py",
        advantage="group", ddof=0, eps=1e-8, loss_agg="bnpo", beta=0.05, kl_estimator="k3",
        reasons={"ddof": "open-instruct uses numpy's std: population std (divides by n, not n − 1)",
                 "eps": "open-instruct adds 1e-8 to the std",
                 "loss_agg": "masked mean over all tokens of the batch (assumed)",
                 "beta": "KL coefficient 0.05 with the kl3 estimator (assumed default)"},
        verified="(scores − mean)/(std + 1e-8) with numpy std (ddof 0) read in grpo_fast.py. Aggregation and the KL "
                 "coefficient are assumed, not verified."),
    Preset(
        "nanochat-rl", "nanochat", "commit 030de3a7 (2025)", "scripts/chat_rl.py",
        advantage="centered", policy_loss="none", loss_agg="bnpo", beta=0.0,
        reasons={"advantage": "nanochat uses r − μ (group mean), no std scaling",
                 "policy_loss": "on-policy REINFORCE: no ratio, no clipping",
                 "loss_agg": "Σ logp·A divided by the number of valid tokens (token-level normalisation)",
                 "beta": "no KL term and no reference model"},
        verified="Read in scripts/chat_rl.py: advantages = rewards − mean, loss = −Σ logp·A / num_valid tokens, "
                 "no ratio, no KL."),
    Preset(
        "dapo-paper", "paper", "Yu et al. 2025 (DAPO)", "DAPO §3.1 (clip-higher), §3.3 (token-level loss), eq. 8",
        advantage="group", ddof=1, eps=1e-6, epsilon=0.2, epsilon_high=0.28, loss_agg="dapo", beta=0.0,
        reasons={"epsilon_high": "clip-higher: ε_high = 0.28 leaves room for low-probability tokens to rise (§3.1)",
                 "loss_agg": "token-level loss: sum over all tokens / their number (§3.3)",
                 "beta": "DAPO removes the KL term (§2.3)",
                 "eps": "the paper's released recipe runs on verl (std + 1e-6)"},
        verified="Paper values ε_low 0.2, ε_high 0.28, no KL. Dynamic sampling and overlong shaping act on the batch "
                 "before the loss and are not part of this preset."),
    Preset(
        "dr-grpo-paper", "paper", "Liu et al. 2025 (Dr. GRPO)", "Understanding R1-Zero-Like Training, §3.2, eq. 3",
        advantage="centered", loss_agg="dr_grpo", beta=0.0,
        reasons={"advantage": "Dr. GRPO drops the std division: advantage r − μ",
                 "loss_agg": "token sum divided by a constant (B × the completion width), not by each response's length",
                 "beta": "no KL term"},
        verified="Paper: no std, no length normalisation. The constant is TRL's dr_grpo form (B × max_completion_length, "
                 "here the batch width); verl's seq-mean-token-sum-norm divides by the width only."),
    Preset(
        "gspo-paper", "paper", "Zheng et al. 2025 (GSPO)", "GSPO §4.1, eqs. 5-7",
        advantage="group", policy_loss="gspo", epsilon=3e-4, epsilon_high=4e-4, loss_agg="grpo",
        reasons={"policy_loss": "one ratio per response: the geometric mean of its token ratios",
                 "epsilon": "sequence ratios stay near 1, so the range is narrow (3e-4)",
                 "epsilon_high": "upper range 4e-4"},
        verified="Paper values; the lab's gspo_loss is at parity with TRL 1.16 (importance_sampling_level='sequence')."),
    Preset(
        "cispo-minimax", "paper", "MiniMax 2025 (MiniMax-M1, CISPO)", "MiniMax-M1 §3.1, eq. 4",
        advantage="group", policy_loss="cispo", epsilon_high=5.0, loss_agg="dapo",
        reasons={"policy_loss": "clip the detached importance weight, not the update: every token keeps a gradient",
                 "epsilon_high": "the absolute cap ε_max on the weight (TRL reads it from epsilon_high)",
                 "loss_agg": "token-level sum over the batch's active tokens"},
        verified="The lab's cispo_loss is at parity with TRL 1.16 loss_type='cispo'; the cap 5.0 is the lab's own choice."),
    Preset(
        "ipo-paper", "paper", "Azar et al. 2023 (IPO)", "A General Theoretical Paradigm, §5.2, eq. 17", kind="preference",
        preference_loss="ipo", pref_beta=0.1,
        reasons={"preference_loss": "squared loss toward a finite margin 1/(2τ) instead of a sigmoid"},
        verified="The lab's ipo_loss is at parity with TRL 1.16 loss_type='ipo' (without length normalisation here)."),
    Preset(
        "cdpo-0.1", "paper", "Mitchell 2023 (cDPO)", "A note on DPO with noisy preferences", kind="preference",
        preference_loss="cdpo", pref_beta=0.1, label_smoothing=0.1,
        reasons={"label_smoothing": "assumes 10% of labels are flipped (the lab's own illustration)"},
        verified="The lab's cdpo_loss is at parity with TRL 1.16 (label_smoothing)."),
    Preset(
        "simpo-paper", "paper", "Meng et al. 2024 (SimPO)", "SimPO §2.2, eq. 6", kind="preference",
        preference_loss="simpo", pref_beta=2.0, simpo_gamma=0.5,
        reasons={"preference_loss": "reference-free, length-normalised log-likelihood with a target margin γ",
                 "pref_beta": "SimPO's β is on average log-probs, so it is much larger (2.0)"},
        verified="The lab's simpo_loss is at parity with TRL 1.16 (CPO trainer, loss_type='simpo'); β = 2, γ = 0.5 "
                 "are one of the paper's settings."),
)}

RL_PRESETS = tuple(n for n, p in PRESETS.items() if p.kind == "rl")
PREFERENCE_PRESETS = tuple(n for n, p in PRESETS.items() if p.kind == "preference")


def get_preset(name: str) -> Preset:
    """The preset registered under ``name`` (``ValueError`` naming ``name`` when there is none)."""
    if not isinstance(name, str) or name not in PRESETS:
        raise ValueError(f"name must be one of {sorted(PRESETS)}; got {name!r}")
    return PRESETS[name]


def _as_preset(preset: Preset | str, kind: str) -> Preset:
    if isinstance(preset, str) and preset not in PRESETS:
        raise ValueError(f"preset must be a Preset or one of {sorted(PRESETS)}; got {preset!r}")
    p = PRESETS[preset] if isinstance(preset, str) else preset
    if not isinstance(p, Preset):
        raise ValueError(f"preset must be a Preset or a preset name; got {preset!r}")
    if p.kind != kind:
        raise ValueError(f"preset {p.name!r} is a {p.kind} preset; this function needs a {kind} preset")
    return p


# ---- an RL batch ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RLBatch:
    """One RL batch, as every framework sees it.

    ``rewards`` (B,) one per response; ``group_ids`` (B,) the prompt each response answers (groups may have
    different sizes; a lone response is a singleton group); ``logps``, ``old_logps`` (B, T) the current and
    behaviour log-probs of the sampled tokens; ``mask`` (B, T) active tokens (masked positions may hold any
    filler); ``ref_logps`` (B, T) the reference's, needed when a preset has a KL term; ``values`` (B, T) critic
    values for GAE presets (0 when absent).
    """

    rewards: TensorLike
    group_ids: Sequence[object]
    logps: TensorLike
    old_logps: TensorLike
    mask: TensorLike
    ref_logps: TensorLike | None = None
    values: TensorLike | None = None


@dataclass
class RecipeResult:
    """What one preset computes on one batch (tensors detached)."""

    preset: str
    advantages: torch.Tensor  # (B, T) the advantage each active token is trained with; 0 where masked
    loss: float
    grad: torch.Tensor  # (B, T) ∂loss/∂logps by autograd; 0 where masked
    clip_fraction: float  # fraction of active tokens (responses, for GSPO) whose term the clip changes
    metrics: dict[str, float]  # the underlying loss function's metrics (TRL / verl names) plus "kl" when present


def _mask_of(batch: RLBatch, lp: torch.Tensor) -> torch.Tensor:
    return as_mask(batch.mask, lp, "mask")


def _gae_advantages(p: Preset, r: torch.Tensor, values: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """GAE over each response's active tokens, the reward at its last active token (B, T)."""
    out = torch.zeros_like(m)
    for i in range(m.shape[0]):
        idx = m[i].nonzero().flatten()  # (n_i,) active positions of response i
        if idx.numel() == 0:
            continue
        step_r = torch.zeros(idx.numel(), dtype=m.dtype)
        step_r[-1] = r[i]  # outcome reward at the last active token
        adv, _ = gae(step_r, values[i, idx], p.gamma, p.lam)
        out[i, idx] = adv
    return out


def preset_advantages(preset: Preset | str, batch: RLBatch) -> torch.Tensor:
    """The advantages ``preset`` trains each token with, (B, T), 0 at masked positions."""
    p = _as_preset(preset, "rl")
    r = as_tensor(batch.rewards, "rewards")
    check_finite(r, "rewards")
    if r.dim() != 1 or r.numel() == 0:
        raise ValueError(f"rewards must be a non-empty vector (B,); got shape {tuple(r.shape)}")
    lp = as_tensor(batch.logps, "logps", allow_nan=True)
    if lp.dim() != 2 or lp.shape[0] != r.shape[0]:
        raise ValueError(f"logps must have shape (B, T) with B = {r.shape[0]} responses; got {tuple(lp.shape)}")
    m = _mask_of(batch, lp)  # (B, T)
    active = m > 0
    ids = list(batch.group_ids)
    if len(ids) != r.numel():
        raise ValueError(f"group_ids must give one label per response ({r.numel()}); got {len(ids)}")
    r = r.to(m.dtype)
    if p.advantage in ("group", "centered"):
        scale = "group" if p.advantage == "group" else "none"
        per_resp = uneven_group_advantages(r, ids, scale=scale, ddof=p.ddof, eps=p.eps, singleton=p.singleton)  # (B,)
        adv = per_resp.unsqueeze(-1) * m
    elif p.advantage == "rloo":
        per_resp = torch.zeros_like(r)
        for g in dict.fromkeys(ids):
            sel = torch.tensor([i for i, x in enumerate(ids) if x == g])
            if sel.numel() < 2:
                raise ValueError(f"group_ids: group {g!r} has one member; RLOO's leave-one-out baseline needs at least two")
            per_resp[sel] = rloo_advantages(r[sel], sel.numel())
        adv = per_resp.unsqueeze(-1) * m
    elif p.advantage in ("reinforce++", "reinforce++-baseline"):
        base = r if p.advantage == "reinforce++" else uneven_group_advantages(r, ids, scale="none", singleton=p.singleton)
        kl = None
        if p.kl_in_reward > 0:
            if batch.ref_logps is None:
                raise ValueError(f"ref_logps must be given for preset {p.name!r} (its reward carries a KL penalty)")
            kl = kl_estimate(lp.detach(), as_tensor(batch.ref_logps, "ref_logps", allow_nan=True), "k1", mask=m)
        adv = reinforce_pp_advantages(base, m, kl=kl, kl_coef=p.kl_in_reward, eps=p.whiten_eps)
    else:  # gae
        v = torch.zeros_like(m) if batch.values is None else as_tensor(batch.values, "values", allow_nan=True).to(m.dtype)
        if v.shape != m.shape:
            raise ValueError(f"values (shape {tuple(v.shape)}) must have the shape of logps {tuple(m.shape)}")
        check_active(v, active, "values")
        adv = _gae_advantages(p, r, active_values(v, active), m)
    if p.whiten:
        adv = whiten_advantages(adv, m, eps=p.whiten_eps)
    return active_values(adv, active)


def run_preset(preset: Preset | str, batch: RLBatch) -> RecipeResult:
    """Compute ``batch`` the way ``preset``'s framework does: advantages, loss, ∂loss/∂logps, clip fractions.

    Every number comes from the lab's own tested functions (see the module docstring). The KL term, when the
    preset has β > 0, is β times the per-token estimate aggregated like the policy loss (TRL adds it per token
    before aggregating, verl aggregates it separately with the same mode: the same number).
    """
    p = _as_preset(preset, "rl")
    adv = preset_advantages(p, batch)  # (B, T)
    lp = as_tensor(batch.logps, "logps", allow_nan=True).detach().clone().to(adv.dtype).requires_grad_(True)  # (B, T)
    olp = as_tensor(batch.old_logps, "old_logps", allow_nan=True)
    m = _mask_of(batch, lp)
    ref = None if batch.ref_logps is None else as_tensor(batch.ref_logps, "ref_logps", allow_nan=True)
    # validated here under the batch's field names (the loss functions name their own arguments)
    for t, name in ((lp, "logps"), (olp, "old_logps")) + (((ref, "ref_logps"),) if ref is not None else ()):
        if t.shape != lp.shape:
            raise ValueError(f"{name} (shape {tuple(t.shape)}) must have the shape of logps {tuple(lp.shape)}")
        check_active(t, m > 0, name, logprob=True)
    if p.beta > 0 and ref is None:
        raise ValueError(f"ref_logps must be given for preset {p.name!r} (beta = {p.beta} > 0 adds a KL term)")
    metrics: dict[str, float] = {}
    kl_inside = p.policy_loss == "clip" and p.clip_ratio_c is None and p.log_ratio_clamp is None and p.kl_estimator == "k3" and p.kl_clamp is None
    if p.policy_loss == "clip" and kl_inside:
        loss, metrics = grpo_loss(lp, olp, adv, m, ref_logps=ref if p.beta > 0 else None, beta=p.beta, epsilon=p.epsilon,
                                  epsilon_high=p.epsilon_high, loss_type=p.loss_agg, kl_bias_correction=p.kl_bias_correction,
                                  max_completion_length=None)
        clip = metrics["clip_ratio/region_mean"]
    elif p.policy_loss == "clip":
        objective, metrics = ppo_objective(lp, olp, adv, m, epsilon=p.epsilon, epsilon_high=p.epsilon_high,
                                           clip_ratio_c=p.clip_ratio_c, log_ratio_clamp=p.log_ratio_clamp)
        loss = -objective
        clip = metrics["clip_ratio/region_mean"]
    elif p.policy_loss == "gspo":
        per_response = _row_value(adv, m)  # (B,) the advantage is constant over a response's tokens here
        loss, metrics = gspo_loss(lp, olp, per_response, m, epsilon=p.epsilon, epsilon_high=p.epsilon_high)
        clip = metrics["clip_ratio/region_mean"]
    elif p.policy_loss == "cispo":
        loss, metrics = cispo_loss(lp, olp, adv, m, epsilon_max=p.epsilon_high if p.epsilon_high is not None else 5.0)
        clip = metrics["cispo_clip_ratio"]
    else:  # REINFORCE, on-policy: no ratio, so old_logps are not used
        loss = -policy_gradient_surrogate(lp, adv, m)
        clip = 0.0
    if p.beta > 0 and not kl_inside:
        kl = kl_estimate(lp, ref.detach(), p.kl_estimator, mask=m, clamp=p.kl_clamp)  # (B, T), 0 where masked
        kl_term = aggregate_token_loss(kl, m, p.loss_agg)
        loss = loss + p.beta * kl_term
        metrics["kl"] = float(kl_term.detach())
    (grad,) = torch.autograd.grad(loss, lp)
    grad = active_values(grad, m > 0)
    return RecipeResult(p.name, adv.detach(), float(loss.detach()), grad.detach(), float(clip), dict(metrics))


def _row_value(adv: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """The advantage of each response whose advantage is constant over its tokens, (B,)."""
    n = m.sum(-1)
    if bool((n == 0).any()):
        raise ValueError("mask has a response with no active token; a sequence-level loss needs at least one")
    return adv.sum(-1) / n


# ---- preference presets --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreferencePairs:
    """Sequence log-probs of N preference pairs, (N,) each; lengths are needed by SimPO (token counts)."""

    chosen_logps: TensorLike
    rejected_logps: TensorLike
    ref_chosen_logps: TensorLike | None = None
    ref_rejected_logps: TensorLike | None = None
    chosen_lengths: TensorLike | None = None
    rejected_lengths: TensorLike | None = None


@dataclass
class PreferenceResult:
    preset: str
    losses: torch.Tensor  # (N,) per-pair loss
    loss: float  # their mean
    grad_chosen: torch.Tensor  # (N,) ∂loss/∂chosen_logps
    grad_rejected: torch.Tensor  # (N,) ∂loss/∂rejected_logps


def run_preference_preset(preset: Preset | str, pairs: PreferencePairs) -> PreferenceResult:
    """Per-pair losses and the gradient on each response's log-prob for a preference preset (sigmoid DPO, cDPO,
    IPO, SimPO), from :mod:`lab.dpo`. Reference log-probs are required except for SimPO (reference-free)."""
    p = _as_preset(preset, "preference")
    c = as_tensor(pairs.chosen_logps, "chosen_logps").detach().clone().requires_grad_(True)
    r = as_tensor(pairs.rejected_logps, "rejected_logps").detach().clone().to(c.dtype).requires_grad_(True)
    if c.dim() != 1 or c.numel() == 0 or r.shape != c.shape:
        raise ValueError(f"chosen_logps and rejected_logps must be non-empty vectors (N,) of one shape; got {tuple(c.shape)} and {tuple(r.shape)}")
    if p.preference_loss == "simpo":
        if pairs.chosen_lengths is None or pairs.rejected_lengths is None:
            raise ValueError("chosen_lengths and rejected_lengths must be given for SimPO (it normalises by length)")
        losses, _, _ = simpo_loss(c, r, pairs.chosen_lengths, pairs.rejected_lengths, beta=p.pref_beta, gamma=p.simpo_gamma,
                                  label_smoothing=p.label_smoothing)
    else:
        if pairs.ref_chosen_logps is None or pairs.ref_rejected_logps is None:
            raise ValueError(f"ref_chosen_logps and ref_rejected_logps must be given for preset {p.name!r}")
        args = (c, r, pairs.ref_chosen_logps, pairs.ref_rejected_logps)
        if p.preference_loss == "sigmoid":
            losses = dpo_loss(*args, beta=p.pref_beta)[0]
        elif p.preference_loss == "cdpo":
            losses = cdpo_loss(*args, beta=p.pref_beta, label_smoothing=p.label_smoothing)
        else:
            losses = ipo_loss(*args, beta=p.pref_beta)
    loss = losses.mean()
    gc, gr = torch.autograd.grad(loss, (c, r))
    return PreferenceResult(p.name, losses.detach(), float(loss.detach()), gc, gr)


# ---- what differs, and why ------------------------------------------------------------------------------------

_COMPARED = ("advantage", "ddof", "eps", "singleton", "whiten", "kl_in_reward", "policy_loss", "epsilon", "epsilon_high",
             "clip_ratio_c", "log_ratio_clamp", "loss_agg", "beta", "kl_estimator", "kl_clamp", "kl_bias_correction",
             "preference_loss", "pref_beta", "label_smoothing", "simpo_gamma", "gamma", "lam")


@dataclass(frozen=True)
class Difference:
    setting: str  # the Preset field
    values: dict[str, str]  # preset name → its value, as text
    reasons: dict[str, str]  # preset name → its one-line reason (only presets that give one)


def preset_differences(presets: Sequence[Preset | str]) -> list[Difference]:
    """The settings on which ``presets`` disagree, each with every preset's value and one-line reason."""
    ps = [get_preset(x) if isinstance(x, str) else x for x in presets]
    if len(ps) < 2 or not all(isinstance(x, Preset) for x in ps):
        raise ValueError(f"presets must list at least two presets (names or Preset); got {presets!r}")
    kinds = {x.kind for x in ps}
    out = []
    for f in _COMPARED:
        vals = {x.name: getattr(x, f) for x in ps}
        if len({repr(v) for v in vals.values()}) > 1:
            if kinds == {"rl"} and f in ("preference_loss", "pref_beta", "label_smoothing", "simpo_gamma"):
                continue
            out.append(Difference(f, {k: str(v) for k, v in vals.items()},
                                  {x.name: x.reasons[f] for x in ps if f in x.reasons}))
    return out


def differing_quantities(results: Sequence[RecipeResult], atol: float = 1e-9) -> dict[str, bool]:
    """Which computed quantities differ between the results (beyond ``atol``): advantages, loss, grad, clip_fraction."""
    if len(results) < 2:
        raise ValueError(f"results must hold at least two RecipeResults; got {len(results)}")
    if atol < 0 or atol != atol:
        raise ValueError(f"atol must be >= 0; got {atol}")
    a = results[0]
    if not all(isinstance(x, RecipeResult) and x.advantages.shape == a.advantages.shape for x in results):
        raise ValueError("results must be RecipeResults of one batch (advantages of one shape)")
    out = {}
    for q in ("advantages", "grad"):
        out[q] = any(not torch.allclose(getattr(x, q).double(), getattr(a, q).double(), rtol=0, atol=atol) for x in results[1:])
    for q in ("loss", "clip_fraction"):
        out[q] = any(abs(getattr(x, q) - getattr(a, q)) > atol for x in results[1:])
    return out


# ---- building a batch from what a person types (the "Same batch, many recipes" page) ---------------------------

FILLER = -1e4  # what padding positions hold in a batch built here (any filler gives the same numbers)


def make_batch(
    groups: Sequence[Sequence[float]],
    logps: Sequence[Sequence[float]],
    ratios: Sequence[Sequence[float]] | None = None,
    old_logps: Sequence[Sequence[float]] | None = None,
    ref_shift: float = 0.1,
) -> RLBatch:
    """An :class:`RLBatch` from per-group rewards and per-response token log-probs of any lengths.

    ``groups``: one list of rewards per prompt (responses numbered group after group); ``logps``: one list per
    response, its length the response's length (ragged; padded with :data:`FILLER` and masked). The behaviour
    policy is given either as token ``ratios`` ρ = π/π_old (old log-prob = log-prob − log ρ) or as ``old_logps``
    (same lengths); neither means on-policy (ρ = 1). The reference log-probs are the old ones minus
    ``ref_shift`` (a declared, lab-own choice so that KL terms are non-zero; 0 makes π_ref = π_old).
    """
    if not isinstance(groups, (list, tuple)) or not groups or not all(isinstance(g, (list, tuple)) and len(g) > 0 for g in groups):
        raise ValueError(f"groups must be a non-empty list of non-empty reward lists; got {groups!r}")
    rewards = [float(x) for g in groups for x in g]
    ids = [k for k, g in enumerate(groups) for _ in g]
    if not isinstance(logps, (list, tuple)) or len(logps) != len(rewards):
        raise ValueError(f"logps must give one token list per response ({len(rewards)}); got {len(logps) if isinstance(logps, (list, tuple)) else logps!r}")
    if ratios is not None and old_logps is not None:
        raise ValueError("give either ratios or old_logps, not both")
    lengths = [len(row) for row in logps]
    if min(lengths) == 0:
        raise ValueError(f"logps: response {lengths.index(0)} has no token")
    width = max(lengths)
    mask = [[1.0] * n + [0.0] * (width - n) for n in lengths]

    def padded(rows, name):
        if len(rows) != len(lengths) or any(len(r) != n for r, n in zip(rows, lengths)):
            raise ValueError(f"{name} must have one list per response with the lengths of logps {lengths}")
        return torch.tensor([[float(v) for v in r] + [FILLER] * (width - len(r)) for r in rows], dtype=torch.float64)  # (B, T)

    lp = padded(logps, "logps")
    m = torch.tensor(mask, dtype=torch.float64)
    active = m > 0
    check_active(lp, active, "logps", logprob=True)
    if ratios is not None:
        rho = padded(ratios, "ratios")
        check_active(rho, active, "ratios")
        if bool((rho[active] <= 0).any()):
            raise ValueError("ratios must be > 0 at every token (ρ = π/π_old of a sampled token)")
        olp = active_values(lp - torch.log(active_values(rho, active, 1.0)), active, FILLER)
        if bool((olp[active] > 0).any()):  # log π_old = log π − log ρ > 0: a ratio below π(y_t) is impossible
            raise ValueError("ratios: some ρ is below the token's probability π(y_t), which would make π_old(y_t) = π/ρ > 1")
    elif old_logps is not None:
        olp = padded(old_logps, "old_logps")
        check_active(olp, active, "old_logps", logprob=True)
    else:
        olp = lp.clone()
    shift = float(ref_shift)
    if not shift >= 0 or shift == float("inf"):
        raise ValueError(f"ref_shift must be >= 0 and finite; got {ref_shift!r}")
    ref = active_values(olp - shift, active, FILLER)
    return RLBatch(rewards, ids, lp, olp, m, ref_logps=ref)


def masked_rows(values: TensorLike, mask: TensorLike) -> list[list[float | None]]:
    """``values`` (B, T) as lists with ``None`` at masked positions (a table or heatmap shows them blank)."""
    v = as_tensor(values, "values", allow_nan=True)
    if v.dim() != 2:
        raise ValueError(f"values must have shape (B, T); got {tuple(v.shape)}")
    m = as_mask(mask, v, "mask")
    return [[float(x) if a > 0 else None for x, a in zip(row, mrow)] for row, mrow in zip(v.tolist(), m.tolist())]


DEMO_GROUPS = [[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.5]]  # the lab's own example: two prompts, four answers each
DEMO_LOGPS = [[-1.0, -0.5, -2.0], [-0.3, -1.2], [-0.7, -0.9, -1.5, -0.4], [-2.0, -0.1],
              [-1.1, -0.6, -0.2], [-0.4], [-0.8, -0.8, -0.8, -1.0], [-1.5, -0.3, -0.9]]
DEMO_RATIOS = [[1.22, 1.0, 0.61], [0.82, 0.82], [1.0, 1.65, 0.61, 1.0], [0.61, 1.35],
               [0.9, 1.35, 1.35], [1.65], [1.0, 0.74, 1.49, 1.0], [0.61, 1.0, 1.65]]


# ---- how the recipes diverge over a few steps (lab.playground) ------------------------------------------------


def playground_conventions(preset: Preset | str) -> tuple[str | None, dict, list[str]]:
    """``(objective, conventions, not_simulated)``: the part of ``preset`` that :func:`lab.playground.train` can run.

    The playground trains on-policy with one gradient step per batch (μ = 1), so every ratio is 1 when the loss
    is taken: clip ranges, dual-clip and log-ratio clamps cannot act there, and the dynamics differ only through
    the advantages, the aggregation and β. What the playground cannot express is listed in ``not_simulated``;
    ``objective`` is None when the preset's advantage or loss has no playground counterpart.
    """
    p = _as_preset(preset, "rl")
    notes = []
    if p.clip_ratio_c is not None:
        notes.append("dual-clip (inactive on-policy anyway)")
    if p.log_ratio_clamp is not None:
        notes.append("log-ratio clamp (inactive on-policy anyway)")
    if p.beta > 0 and (p.kl_estimator != "k3" or p.kl_clamp is not None or p.kl_bias_correction):
        notes.append("KL estimator / clamp / bias correction (the playground uses plain k3)")
    if p.singleton != "zero":
        notes.append("singleton rule (playground groups are all full)")
    if p.advantage in ("reinforce++", "reinforce++-baseline", "gae") or p.whiten:
        return None, {}, notes + [f"token-level advantages ({p.advantage}{', whitened' if p.whiten else ''}) have no playground counterpart"]
    if p.policy_loss in ("gspo", "cispo"):
        return None, {}, notes + [f"the {p.policy_loss} policy loss has no playground counterpart"]
    if p.loss_agg not in ("grpo", "bnpo", "dr_grpo", "dapo"):
        return None, {}, notes + [f"aggregation {p.loss_agg!r} has no playground counterpart"]
    conv = dict(loss_type=p.loss_agg, beta=p.beta, epsilon=p.epsilon, epsilon_high=p.epsilon_high)
    if p.advantage == "rloo":
        return "rloo", conv, notes
    conv.update(scale="group" if p.advantage == "group" else "none", ddof=p.ddof, eps=p.eps)
    return "grpo", conv, notes  # "none" (REINFORCE with the group mean) equals GRPO with scale "none" at μ = 1


def simulate_presets(names: Sequence[str], task: str = "short_or_long", steps: int = 40, lr: float = 1.0, seed: int = 0,
                     n: int = 16, group_size: int = 4) -> dict[str, tuple[object | None, list[str]]]:
    """Train the playground's tabular sequence policy on ``task`` under each preset's conventions.

    Returns name → ``(PlaygroundRun or None, not_simulated notes)``; all presets use the same ``seed``, so they
    see the same first batch. ``short_or_long`` (responses of length 1 or 3 are right) makes the aggregation
    matter, since responses differ in length.
    """
    from lab.playground import sequence_task, train

    if not isinstance(names, (list, tuple)) or not names:
        raise ValueError(f"names must list at least one preset; got {names!r}")
    out = {}
    for name in names:
        objective, conv, notes = playground_conventions(name)
        if objective is None:
            out[name] = (None, notes)
            continue
        run = train(sequence_task(task), objective, steps, lr, seed=seed, n=n, group_size=group_size, **conv)
        out[name] = (run, notes)
    return out
