"""KL divergence, entropy and the per-token KL estimators used in RLHF objectives.

Reference: Kullback–Leibler divergence ftip-006X; how it enters alignment objectives ftip-006Y
(Rafailov et al. 2023, §3, eq. 3). The sampled estimators k1, k2, k3 are Schulman's "Approximating
KL divergence" (2020); k3 is the per-token KL in GRPO (Shao et al. 2024, §4.1.2, eq. 4) and TRL.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import torch

from lab._checks import TensorLike, as_tensor, broadcast_pair, check_choice, check_finite, check_pmf

KLKind = Literal["k1", "k2", "k3"]


def kl_divergence(p: TensorLike, q: TensorLike) -> torch.Tensor:
    """D_KL(p ‖ q) = Σ_y p(y) log(p(y)/q(y)) over the last dimension [ftip-006X].

    Conventions from the definition: 0·log(0/q) = 0, and the value is +inf when p(y) > 0 = q(y)
    (support mismatch). The order matters: this is the forward divergence of p relative to q.
    ``p`` and ``q`` (..., K) must be probability vectors; returns (...,).
    """
    pt, qt = broadcast_pair(as_tensor(p, "p"), as_tensor(q, "q"), "p", "q")
    check_pmf(pt, "p")
    check_pmf(qt, "q")
    terms = torch.where(pt > 0, pt * (torch.log(pt) - torch.log(qt)), torch.zeros_like(pt))  # (..., K)
    return terms.sum(-1)


def entropy(p: TensorLike) -> torch.Tensor:
    """Shannon entropy H(p) = −Σ p log p in nats, with 0 log 0 = 0 [ftip-003G]. ``p`` (..., K) → (...,)."""
    pt = as_tensor(p, "p")
    check_pmf(pt, "p")
    return -torch.where(pt > 0, pt * torch.log(pt), torch.zeros_like(pt)).sum(-1)


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of softmax(logits) along the last dimension, (..., V) → (...,); as TRL's ``entropy_from_logits``."""
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(-1)


def kl_estimate(logp: TensorLike, ref_logp: TensorLike, kind: KLKind = "k3") -> torch.Tensor:
    """Per-token sampled estimate of KL(π_θ ‖ π_ref) from log-probs of tokens sampled from π_θ.

    With d = log π_ref − log π_θ (the log of r = π_ref/π_θ):

    - ``"k1"`` = −d: unbiased, high variance, can be negative;
    - ``"k2"`` = d²/2: biased, low variance, always >= 0;
    - ``"k3"`` = e^d − d − 1: unbiased and always >= 0 (GRPO's and TRL's per-token KL).

    k3 is evaluated as ``expm1(d) − d`` so it stays accurate (and exactly 0) when d → 0.
    ``logp`` and ``ref_logp`` broadcast; returns their broadcast shape.
    """
    check_choice(kind, "kind", ("k1", "k2", "k3"))
    lp, rlp = broadcast_pair(as_tensor(logp, "logp"), as_tensor(ref_logp, "ref_logp"), "logp", "ref_logp")
    check_finite(lp.detach(), "logp")
    check_finite(rlp.detach(), "ref_logp")
    d = rlp - lp
    if kind == "k1":
        return -d
    if kind == "k2":
        return 0.5 * d * d
    return torch.expm1(d) - d


# ---------------------------------------------------------------------------------------------------------------
# Functions the pages and notebooks call instead of computing formulas inline.


def log_probabilities(probs: TensorLike, name: str = "probs") -> torch.Tensor:
    """log p for probabilities p ∈ (0, 1]; a ``ValueError`` naming ``name`` otherwise (0 has no finite log).

    The boundary where a learner's probability becomes a log-probability: pages and notebooks call
    this instead of ``math.log`` so that a 0, a 1.5 or a NaN gets the same clear message everywhere.
    """
    from lab._checks import check_probabilities

    p = as_tensor(probs, name)
    if not p.is_floating_point():
        p = p.to(torch.float64)
    check_probabilities(p, name)
    return torch.log(p)


class KLRegularizedObjective(NamedTuple):
    """The three numbers of ftip-003C for one prompt: objective = expected_reward − β·kl."""

    objective: torch.Tensor  # (...,) E_π[r] − β·KL(π ‖ π_ref); −inf on support mismatch
    expected_reward: torch.Tensor  # (...,) E_{y∼π}[r(y)]
    kl: torch.Tensor  # (...,) KL(π ‖ π_ref) in nats; +inf on support mismatch


def kl_regularized_objective(policy: TensorLike, ref_probs: TensorLike, rewards: TensorLike, beta: float) -> KLRegularizedObjective:
    """E_{y∼π}[r(y)] − β·D_KL(π ‖ π_ref) for one prompt [ftip-003C; Rafailov et al. 2023, §3, eq. 3].

    ``policy``, ``ref_probs``: probability vectors over K responses (..., K); ``rewards`` (..., K) finite;
    ``beta`` > 0 (the definition's coefficient). Uses the forward KL of :func:`kl_divergence`, so a
    policy that puts mass where the reference has none gets KL = +inf and objective = −inf (the
    definition requires π ≪ π_ref). A response with π(y) = 0 contributes 0 to E_π[r].
    The objective is maximised by ``lab.dpo.optimal_policy(ref_probs, rewards, beta)``, where it equals
    β·log Z (ftip-003O).
    """
    from lab._checks import check_positive

    beta = check_positive(beta, "beta")
    p = as_tensor(policy, "policy")
    r = as_tensor(rewards, "rewards")
    if not p.is_floating_point():
        p = p.to(torch.float64)
    if not r.is_floating_point():
        r = r.to(p.dtype)
    p, r = broadcast_pair(p, r, "policy", "rewards")
    check_pmf(p, "policy")
    check_finite(r, "rewards")
    ref = as_tensor(ref_probs, "ref_probs")
    if not ref.is_floating_point():
        ref = ref.to(p.dtype)
    p_b, ref = broadcast_pair(p, ref, "policy", "ref_probs")
    check_pmf(ref, "ref_probs")
    kl = kl_divergence(p_b, ref)  # (...,)
    expected = torch.where(p > 0, p * r, torch.zeros_like(p)).sum(-1)  # (...,)
    objective = expected - beta * kl
    return KLRegularizedObjective(objective, expected, kl)
