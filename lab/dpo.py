"""Direct Preference Optimization: the optimal KL-regularized policy, the reward–policy identity, the DPO loss.

Reference chapter "Direct Preference Optimization" (ftip-003L): log ratios ftip-003M, optimal policy
ftip-003O (Rafailov et al. 2023, §4, eq. 4), reparameterization ftip-003P (eq. 5), preference
probability ftip-003Q (eq. 6), loss ftip-003R (eq. 7), worked example ftip-003S; the three-outcome
example is the overview's DPO section.

Log-probabilities are sequence log-probabilities log π(y|x) = Σ_t log π(y_t | x, y_<t).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from lab._checks import (
    TensorLike,
    as_logprobs,
    as_tensor,
    broadcast_pair,
    check_finite,
    check_pmf,
    check_positive,
    check_probabilities,
    check_same_shape,
)


def _tilted_logits(ref: torch.Tensor, r: torch.Tensor, beta: float) -> torch.Tensor:
    """log π_ref + r/β on the reference's support, −inf off it; the log is taken only of positive
    entries (1 substituted first), so a zero in ``ref_probs`` gives no NaN gradient."""
    check_pmf(ref, "ref_probs")
    check_finite(r, "rewards")
    on = ref > 0
    logits = torch.log(torch.where(on, ref, torch.ones_like(ref))) + r / beta
    if not bool(torch.isfinite(logits.detach()[on]).all()):
        raise ValueError("rewards / beta overflows the dtype; use a larger beta or smaller rewards")
    return torch.where(on, logits, torch.full_like(ref, float("-inf")))


def optimal_policy(ref_probs: TensorLike, rewards: TensorLike, beta: float) -> torch.Tensor:
    """π_r(y) = π_ref(y) exp(r(y)/β) / Z_r [ftip-003O; Rafailov et al. 2023, §4, eq. 4].

    ``ref_probs`` (..., K) a probability vector over K responses (zeros allowed: they stay zero, the
    optimum never leaves the reference's support); ``rewards`` (..., K). Computed as a softmax of
    log π_ref + r/β so that small β does not overflow.
    """
    beta = check_positive(beta, "beta")
    ref, r = broadcast_pair(as_tensor(ref_probs, "ref_probs"), as_tensor(rewards, "rewards"), "ref_probs", "rewards")
    return torch.softmax(_tilted_logits(ref, r, beta), dim=-1)


def log_partition(ref_probs: TensorLike, rewards: TensorLike, beta: float) -> torch.Tensor:
    """log Z_r = log Σ_y π_ref(y) exp(r(y)/β) [ftip-003O], over the last dimension."""
    beta = check_positive(beta, "beta")
    ref, r = broadcast_pair(as_tensor(ref_probs, "ref_probs"), as_tensor(rewards, "rewards"), "ref_probs", "rewards")
    return torch.logsumexp(_tilted_logits(ref, r, beta), dim=-1)


def reward_from_policy(policy_probs: TensorLike, ref_probs: TensorLike, beta: float, log_partition: TensorLike = 0.0) -> torch.Tensor:
    """r(y) = β log(π(y)/π_ref(y)) + β log Z [ftip-003P; Rafailov et al. 2023, §4, eq. 5].

    ``policy_probs`` and ``ref_probs`` broadcast; both must lie in (0, 1] since their logs are taken.
    ``log_partition`` is the prompt-only term β log Z(x) divided by β; it cancels in every pairwise
    difference, which is why DPO never needs it (and why Bradley–Terry scores carry a free offset).
    """
    beta = check_positive(beta, "beta")
    p, q = broadcast_pair(as_tensor(policy_probs, "policy_probs"), as_tensor(ref_probs, "ref_probs"), "policy_probs", "ref_probs")
    check_probabilities(p, "policy_probs")
    check_probabilities(q, "ref_probs")
    lz = as_tensor(log_partition, "log_partition")
    check_finite(lz, "log_partition")
    out = beta * (torch.log(p) - torch.log(q)) + beta * lz.to(p.dtype)
    if not bool(torch.isfinite(out.detach()).all()):
        raise ValueError("beta * log(policy_probs / ref_probs) overflows the dtype; use a smaller beta")
    return out


def _logratio_margin(
    chosen_logps: TensorLike, rejected_logps: TensorLike, ref_chosen_logps: TensorLike, ref_rejected_logps: TensorLike
) -> tuple[torch.Tensor, torch.Tensor]:
    """ℓ(y⁺) and ℓ(y⁻), the reference-relative log likelihoods of Notation ftip-003M, (N,) each."""
    names = ("chosen_logps", "rejected_logps", "ref_chosen_logps", "ref_rejected_logps")
    ts = [as_logprobs(x, n) for x, n in zip((chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps), names)]
    shape = ts[0].shape
    for t, n in zip(ts[1:], names[1:]):
        if t.shape != shape:
            raise ValueError(f"{n} (shape {tuple(t.shape)}) must have the shape of chosen_logps {tuple(shape)}")
    if ts[0].numel() == 0:
        raise ValueError("chosen_logps must contain at least one pair")
    dtype = torch.promote_types(torch.promote_types(ts[0].dtype, ts[1].dtype), torch.promote_types(ts[2].dtype, ts[3].dtype))
    ts = [t.to(dtype) for t in ts]
    lc, lr = ts[0] - ts[2], ts[1] - ts[3]
    if not bool(torch.isfinite((lc - lr).detach()).all()):
        raise ValueError("chosen_logps, rejected_logps and their references are so far apart that the margin overflows")
    return lc, lr


def preference_probability(
    chosen_logps: TensorLike, rejected_logps: TensorLike, ref_chosen_logps: TensorLike, ref_rejected_logps: TensorLike, beta: float = 0.1
) -> torch.Tensor:
    """Pr_θ(y⁺ ≻ y⁻) = σ(β Δ_θ), Δ_θ = ℓ(y⁺) − ℓ(y⁻) [ftip-003Q; Rafailov et al. 2023, §4, eq. 6]."""
    beta = check_positive(beta, "beta")
    lc, lr = _logratio_margin(chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps)
    return torch.sigmoid(beta * (lc - lr))


def dpo_loss(
    chosen_logps: TensorLike,
    rejected_logps: TensorLike,
    ref_chosen_logps: TensorLike,
    ref_rejected_logps: TensorLike,
    beta: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """DPO loss −log σ(β[ℓ(y⁺) − ℓ(y⁻)]) per pair [ftip-003R; Rafailov et al. 2023, §4, eq. 7].

    Inputs (N,) sequence log-probs of the chosen/rejected responses under the policy and the frozen
    reference. Returns ``(losses, chosen_rewards, rejected_rewards)``, each (N,): the per-pair
    sigmoid losses (take ``.mean()`` for the batch loss) and the implicit rewards β·ℓ, detached,
    which TRL logs as ``rewards/chosen`` and ``rewards/rejected`` (see :func:`dpo_metrics`).
    Uses ``logsigmoid``, finite for any margin.
    """
    beta = check_positive(beta, "beta")
    lc, lr = _logratio_margin(chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps)
    losses = -F.logsigmoid(beta * (lc - lr))  # (N,)
    return losses, beta * lc.detach(), beta * lr.detach()


def dpo_gradient_weight(
    chosen_logps: TensorLike, rejected_logps: TensorLike, ref_chosen_logps: TensorLike, ref_rejected_logps: TensorLike, beta: float = 0.1
) -> torch.Tensor:
    """σ(−βΔ_θ): how strongly a pair still pushes the gradient (Rafailov et al. 2023, §4, the gradient
    below eq. 7). Near 1 for a pair the implicit reward orders wrongly, near 0 once it is ordered confidently."""
    beta = check_positive(beta, "beta")
    lc, lr = _logratio_margin(chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps)
    return torch.sigmoid(-beta * (lc - lr))


def dpo_metrics(chosen_rewards: TensorLike, rejected_rewards: TensorLike) -> dict[str, float]:
    """Batch means under TRL's names: ``rewards/chosen``, ``rewards/rejected``, ``rewards/margins``, ``rewards/accuracies``.

    ``chosen_rewards`` and ``rejected_rewards``: (N,) implicit rewards from :func:`dpo_loss`, finite, same shape."""
    chosen_rewards = as_tensor(chosen_rewards, "chosen_rewards", allow_empty=False).detach()
    rejected_rewards = as_tensor(rejected_rewards, "rejected_rewards", allow_empty=False).detach()
    check_same_shape(chosen_rewards, rejected_rewards, "chosen_rewards", "rejected_rewards")
    check_finite(chosen_rewards, "chosen_rewards")
    check_finite(rejected_rewards, "rejected_rewards")
    chosen_rewards, rejected_rewards = broadcast_pair(chosen_rewards, rejected_rewards, "chosen_rewards", "rejected_rewards")
    return {
        "rewards/chosen": float(chosen_rewards.mean()),
        "rewards/rejected": float(rejected_rewards.mean()),
        "rewards/margins": float((chosen_rewards - rejected_rewards).mean()),
        "rewards/accuracies": float((chosen_rewards > rejected_rewards).to(chosen_rewards.dtype).mean()),
    }


# ---- Direct-alignment variants beside DPO's sigmoid loss (issue: "what your framework computes") ----------
# Each takes the same per-pair inputs as dpo_loss and returns per-pair losses (N,); take .mean() for the batch.


def _check_smoothing(value: float, name: str, upper: float) -> float:
    value = float(value)
    if not 0.0 <= value < upper:
        raise ValueError(f"{name} must lie in [0, {upper}); got {value}")
    return value


def _lengths(x: TensorLike | None, like: torch.Tensor, name: str) -> torch.Tensor | None:
    """Completion token counts (N,), each >= 1; None means 'do not length-normalize'."""
    if x is None:
        return None
    t = as_tensor(x, name)
    if not t.is_floating_point():
        t = t.to(like.dtype)
    check_finite(t, name)
    if t.shape != like.shape:
        raise ValueError(f"{name} (shape {tuple(t.shape)}) must have the shape of chosen_logps {tuple(like.shape)}")
    if bool((t < 1).any()) or bool((t != t.round()).any()):
        raise ValueError(f"{name} must be whole token counts >= 1")
    return t.to(like.dtype)


def _smoothed_sigmoid_loss(z: torch.Tensor, eps: float) -> torch.Tensor:
    """−(1−ε) log σ(z) − ε log σ(−z): the sigmoid loss when a label is flipped with probability ε (cDPO, SimPO)."""
    return -(1 - eps) * F.logsigmoid(z) - eps * F.logsigmoid(-z)


def cdpo_loss(
    chosen_logps: TensorLike,
    rejected_logps: TensorLike,
    ref_chosen_logps: TensorLike,
    ref_rejected_logps: TensorLike,
    beta: float = 0.1,
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """Conservative DPO: −(1−ε) log σ(βΔ) − ε log σ(−βΔ) per pair (Mitchell 2023, "A note on DPO with noisy
    preferences"; the same smoothed form as CPO's, Xu et al. 2024, eq. 3, with the reference kept).

    ε = ``label_smoothing`` ∈ [0, 0.5) is the assumed probability that a label is flipped; ε = 0 is DPO
    (ftip-003R). Unlike the sigmoid loss, the minimum is at a finite margin βΔ = log((1−ε)/ε).
    """
    beta = check_positive(beta, "beta")
    eps = _check_smoothing(label_smoothing, "label_smoothing", 0.5)
    lc, lr = _logratio_margin(chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps)
    return _smoothed_sigmoid_loss(beta * (lc - lr), eps)


def robust_dpo_loss(
    chosen_logps: TensorLike,
    rejected_logps: TensorLike,
    ref_chosen_logps: TensorLike,
    ref_rejected_logps: TensorLike,
    beta: float = 0.1,
    label_smoothing: float = 0.1,
) -> torch.Tensor:
    """Robust DPO (rDPO): [−(1−ε) log σ(βΔ) + ε log σ(−βΔ)] / (1 − 2ε) per pair (Chowdhury et al. 2024, §3, eq. 8),
    an unbiased loss under labels flipped with probability ε = ``label_smoothing`` ∈ [0, 0.5). TRL ``loss_type="robust"``."""
    beta = check_positive(beta, "beta")
    eps = _check_smoothing(label_smoothing, "label_smoothing", 0.5)
    lc, lr = _logratio_margin(chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps)
    z = beta * (lc - lr)
    return (-(1 - eps) * F.logsigmoid(z) + eps * F.logsigmoid(-z)) / (1 - 2 * eps)


def hinge_loss(
    chosen_logps: TensorLike,
    rejected_logps: TensorLike,
    ref_chosen_logps: TensorLike,
    ref_rejected_logps: TensorLike,
    beta: float = 0.1,
) -> torch.Tensor:
    """SLiC-style hinge: max(0, 1 − βΔ) per pair (Zhao et al. 2023, SLiC-HF, §2, eq. 1 with the reference log
    ratio; TRL ``loss_type="hinge"``). Pairs ordered by a margin of 1/β give zero loss and zero gradient."""
    beta = check_positive(beta, "beta")
    lc, lr = _logratio_margin(chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps)
    return torch.relu(1 - beta * (lc - lr))


def ipo_loss(
    chosen_logps: TensorLike,
    rejected_logps: TensorLike,
    ref_chosen_logps: TensorLike,
    ref_rejected_logps: TensorLike,
    beta: float = 0.1,
    chosen_lengths: TensorLike | None = None,
    rejected_lengths: TensorLike | None = None,
) -> torch.Tensor:
    """IPO: (h − 1/(2τ))² per pair, h the difference of the log ratios (Azar et al. 2023, §5.2, eq. 17; τ = ``beta``).

    A squared loss regresses the margin to 1/(2τ) instead of pushing it to infinity, so it does not
    overfit deterministic preferences. Convention: with ``chosen_lengths`` / ``rejected_lengths`` (completion
    token counts), each log ratio is divided by its length first, as TRL 1.16 does (``loss_type="ipo"``);
    without them the sequence-level form of the paper is used.
    """
    beta = check_positive(beta, "beta")
    lc, lr = _logratio_margin(chosen_logps, rejected_logps, ref_chosen_logps, ref_rejected_logps)
    n_c, n_r = _lengths(chosen_lengths, lc, "chosen_lengths"), _lengths(rejected_lengths, lc, "rejected_lengths")
    if (n_c is None) != (n_r is None):
        raise ValueError("chosen_lengths and rejected_lengths must be given together (or neither)")
    if n_c is not None:
        lc, lr = lc / n_c, lr / n_r
    return (lc - lr - 1 / (2 * beta)) ** 2


def simpo_loss(
    chosen_logps: TensorLike,
    rejected_logps: TensorLike,
    chosen_lengths: TensorLike,
    rejected_lengths: TensorLike,
    beta: float = 2.0,
    gamma: float = 0.5,
    label_smoothing: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """SimPO: −log σ(β/|y⁺| log π(y⁺) − β/|y⁻| log π(y⁻) − γ) per pair (Meng et al. 2024, §2.2, eq. 6).

    Reference-free and length-normalized: the implicit reward is the *average* token log-probability
    times β, and the target margin γ ≥ 0 asks the chosen response to win by at least γ. ``label_smoothing``
    as in :func:`cdpo_loss` (TRL's CPOTrainer, ``loss_type="simpo"``). Returns ``(losses, chosen_rewards,
    rejected_rewards)``, the rewards β·(average log-prob), detached.
    """
    beta = check_positive(beta, "beta")
    gamma = float(gamma)
    if not (gamma >= 0 and gamma != float("inf")):
        raise ValueError(f"gamma must be >= 0 and finite; got {gamma}")
    eps = _check_smoothing(label_smoothing, "label_smoothing", 0.5)
    c = as_logprobs(chosen_logps, "chosen_logps")
    r = as_logprobs(rejected_logps, "rejected_logps")
    if c.shape != r.shape:
        raise ValueError(f"rejected_logps (shape {tuple(r.shape)}) must have the shape of chosen_logps {tuple(c.shape)}")
    n_c, n_r = _lengths(chosen_lengths, c, "chosen_lengths"), _lengths(rejected_lengths, c, "rejected_lengths")
    rc, rr = beta * c / n_c, beta * r / n_r  # (N,) length-normalized implicit rewards
    z = rc - rr - gamma
    losses = _smoothed_sigmoid_loss(z, eps)
    return losses, rc.detach(), rr.detach()


def orpo_odds_ratio_loss(chosen_avg_logps: TensorLike, rejected_avg_logps: TensorLike, lam: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """ORPO's odds-ratio term: −λ log σ(log odds(y⁺) − log odds(y⁻)) per pair, odds(y) = P(y)/(1 − P(y))
    (Hong et al. 2024, §4, eqs. 4–7; TRL's ORPOTrainer calls λ ``beta``). ORPO adds it to the SFT loss
    on the chosen response; no reference model.

    Inputs are *average* token log-probabilities (ORPO's P(y|x) is the length-normalized likelihood), which
    must be < 0: at P = 1 the odds are infinite. log(1 − P) is computed stably as log(−expm1(log P)).
    Returns ``(losses, log_odds_ratio)``, each (N,).
    """
    lam = check_positive(lam, "lam")
    c = as_logprobs(chosen_avg_logps, "chosen_avg_logps")
    r = as_logprobs(rejected_avg_logps, "rejected_avg_logps")
    if c.shape != r.shape:
        raise ValueError(f"rejected_avg_logps (shape {tuple(r.shape)}) must have the shape of chosen_avg_logps {tuple(c.shape)}")
    for t, name in ((c, "chosen_avg_logps"), (r, "rejected_avg_logps")):
        if bool((t.detach() >= 0).any()):
            raise ValueError(f"{name} must be < 0 (a probability of 1 has infinite odds)")
    log_odds = (c - r) - (torch.log(-torch.expm1(c)) - torch.log(-torch.expm1(r)))  # (N,)
    return -lam * F.logsigmoid(log_odds), log_odds.detach()


# ---------------------------------------------------------------------------------------------------------------
# Functions the pages and notebooks call instead of computing formulas inline.


def log_ratio(logps: TensorLike, ref_logps: TensorLike) -> torch.Tensor:
    """ℓ(y) = log π_θ(y|x) − log π_ref(y|x), the per-response log-ratio DPO compares [ftip-003R; Rafailov et al. 2023, §4, eq. 7].

    ``logps`` and ``ref_logps`` are sequence log-probabilities (finite, <= 0) and broadcast. The
    implicit reward TRL logs as ``rewards/chosen`` is β·ℓ(y⁺).
    """
    lp, rlp = broadcast_pair(as_logprobs(logps, "logps"), as_logprobs(ref_logps, "ref_logps"), "logps", "ref_logps")
    return lp - rlp
