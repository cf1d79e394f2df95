"""KL divergence, entropy and the per-token KL estimators used in RLHF objectives.

Reference: Kullback–Leibler divergence ftip-006X; how it enters alignment objectives ftip-006Y
(Rafailov et al. 2023, §3, eq. 3). The sampled estimators k1, k2, k3 are Schulman's "Approximating
KL divergence" (2020); k3 is the per-token KL in GRPO (Shao et al. 2024, §4.1.2, eq. 4) and TRL.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import torch

from lab._checks import (
    TensorLike,
    active_values,
    as_mask,
    as_tensor,
    broadcast_pair,
    check_active,
    check_choice,
    check_finite,
    check_pmf,
    check_positive,
)

KLKind = Literal["k1", "k2", "k3", "abs", "k3+"]


def kl_divergence(p: TensorLike, q: TensorLike) -> torch.Tensor:
    """D_KL(p ‖ q) = Σ_y p(y) log(p(y)/q(y)) over the last dimension [ftip-006X].

    Conventions from the definition: 0·log(0/q) = 0, and the value is +inf when p(y) > 0 = q(y)
    (support mismatch). The order matters: this is the forward divergence of p relative to q.
    ``p`` and ``q`` (..., K) must be probability vectors; returns (...,).
    Logs are taken only of positive entries (1 is substituted first), so zeros give no NaN gradient.
    """
    pt, qt = broadcast_pair(as_tensor(p, "p"), as_tensor(q, "q"), "p", "q")
    check_pmf(pt, "p")
    check_pmf(qt, "q")
    on_p, on_q = pt > 0, qt > 0
    log_p = torch.log(active_values(pt, on_p, 1.0))
    log_q = torch.log(active_values(qt, on_q, 1.0))
    terms = torch.where(on_p, pt * (log_p - log_q), torch.zeros_like(pt))  # (..., K)
    terms = torch.where(on_p & ~on_q, torch.full_like(pt, float("inf")), terms)  # support mismatch
    return terms.sum(-1)


def entropy(p: TensorLike) -> torch.Tensor:
    """Shannon entropy H(p) = −Σ p log p in nats, with 0 log 0 = 0 [ftip-003G]. ``p`` (..., K) → (...,)."""
    pt = as_tensor(p, "p")
    check_pmf(pt, "p")
    on = pt > 0
    return -torch.where(on, pt * torch.log(active_values(pt, on, 1.0)), torch.zeros_like(pt)).sum(-1)


def entropy_from_logits(logits: TensorLike) -> torch.Tensor:
    """Entropy of softmax(logits) along the last dimension, (..., V) → (...,); as TRL's ``entropy_from_logits``.

    A logit of −inf is a token with probability exactly 0 (top-k / top-p masking) and contributes
    0·log 0 = 0; its log-probability is replaced before the product, so neither value nor gradient
    is NaN. NaN or +inf logits, and a row whose logits are all −inf, raise ``ValueError``.
    """
    x = as_tensor(logits, "logits")
    if x.dim() == 0 or x.shape[-1] == 0:
        raise ValueError(f"logits must have shape (..., V) with V >= 1; got {tuple(x.shape)}")
    if bool((x.detach() == float("inf")).any()):
        raise ValueError("logits must not contain +inf")
    on = x.detach() > float("-inf")  # tokens with positive probability
    if not bool(on.any(-1).all()):
        raise ValueError("logits have a row that is all -inf (no token has positive probability)")
    logp = torch.log_softmax(x, dim=-1)  # −inf exactly where the logit is −inf
    safe = active_values(logp, on, 0.0)
    return -torch.where(on, safe.exp() * safe, torch.zeros_like(safe)).sum(-1)


def kl_estimate(
    logp: TensorLike,
    ref_logp: TensorLike,
    kind: KLKind = "k3",
    mask: TensorLike | None = None,
    clamp: float | None = None,
    float32: bool = False,
) -> torch.Tensor:
    """Per-token sampled estimate of KL(π_θ ‖ π_ref) from log-probs of tokens sampled from π_θ.

    With d = log π_ref − log π_θ (the log of r = π_ref/π_θ):

    - ``"k1"`` = −d: unbiased, high variance, can be negative;
    - ``"k2"`` = d²/2: biased, low variance, always >= 0;
    - ``"k3"`` = e^d − d − 1: unbiased and always >= 0 (GRPO's and TRL's per-token KL);
    - ``"abs"`` = |d| (verl's "abs" penalty);
    - ``"k3+"``: the value of k3 with the gradient of k2, a straight-through form (verl's "low_var_kl+"):
      k3's gradient e^d − 1 grows exponentially with d, k2's gradient d does not.

    Framework conventions, off by default: ``clamp`` bounds the estimate to [−clamp, clamp] (verl clamps
    its k3 at ±10; TRL does not), and ``float32=True`` computes in float32 whatever the input dtype
    (verl upcasts bf16 log-probs first), returning float32.

    k3 is evaluated as ``expm1(d) − d`` so it stays accurate (and exactly 0) when d → 0.
    ``logp`` and ``ref_logp`` broadcast; returns their broadcast shape. ``mask`` (that shape, bool or
    0/1, optional): masked positions return 0 and may hold anything (fillers, ±inf, NaN); d is set to 0
    there before the exponential. Active entries must be finite log-probabilities (<= 0), and e^d
    must not overflow the dtype.
    """
    check_choice(kind, "kind", ("k1", "k2", "k3", "abs", "k3+"))
    if clamp is not None:
        clamp = check_positive(clamp, "clamp")
    if not isinstance(float32, bool):
        raise ValueError(f"float32 must be True or False; got {float32!r}")
    lp, rlp = broadcast_pair(as_tensor(logp, "logp", allow_nan=True), as_tensor(ref_logp, "ref_logp", allow_nan=True), "logp", "ref_logp")
    if float32:
        lp, rlp = lp.float(), rlp.float()
    m = as_mask(mask, lp, "mask", allow_empty=True)
    active = m > 0
    check_active(lp, active, "logp", logprob=True)
    check_active(rlp, active, "ref_logp", logprob=True)
    d = active_values(rlp, active) - active_values(lp, active)  # 0 at masked positions
    if kind == "k1":
        out = -d
    elif kind == "k2":
        out = 0.5 * d * d
    elif kind == "abs":
        out = d.abs()
    else:
        out = torch.expm1(d) - d
        if not bool(torch.isfinite(out.detach()).all()):
            raise ValueError("ref_logp - logp is so large at some position that exp(ref_logp - logp) overflows (k3)")
        if kind == "k3+":
            k2 = 0.5 * d * d
            out = k2 + (out - k2).detach()  # value of k3, gradient of k2
    return out if clamp is None else torch.clamp(out, -clamp, clamp)


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


class KLEstimators(NamedTuple):
    """The sampled estimators k1, k2, k3 of KL(π ‖ π_ref) over a finite set of responses (see :func:`kl_estimators`)."""

    values: torch.Tensor  # (..., 3, K) k1, k2, k3 of each response y if it were the sample; 0 where π(y) = 0 (never sampled)
    means: torch.Tensor  # (..., 3) E_{y∼π}[k1], E_{y∼π}[k2], E_{y∼π}[k3], exact (a π-weighted sum, no sampling)


def kl_estimators(policy: TensorLike, ref_probs: TensorLike) -> KLEstimators:
    """Per-response values and exact expectations of k1, k2, k3 [ftip-006X; Schulman 2020, "Approximating KL divergence"].

    ``policy`` π and ``ref_probs`` π_ref: probability vectors over K responses (..., K). For a response
    y sampled from π, with r = π_ref(y)/π(y): k1 = −log r, k2 = (log r)²/2, k3 = (r − 1) − log r, the
    values :func:`kl_estimate` gives for one sampled token. A response with π(y) = 0 is never sampled:
    its values are 0 and it adds nothing to the means.

    E[k1] equals KL(π ‖ π_ref) (unbiased) though single values are negative wherever π(y) < π_ref(y);
    k2 and k3 are never negative; E[k3] = KL − (the reference's mass where π = 0), so k3 is unbiased
    only when π_ref puts no mass outside π's support. Support mismatch (π(y) > 0 = π_ref(y)): that
    response's values and all three means are +inf, as the KL is.
    """
    p = as_tensor(policy, "policy")
    if not p.is_floating_point():
        p = p.to(torch.float64)
    q = as_tensor(ref_probs, "ref_probs")
    if not q.is_floating_point():
        q = q.to(p.dtype)
    p, q = broadcast_pair(p, q, "policy", "ref_probs")
    check_pmf(p, "policy")
    check_pmf(q, "ref_probs")
    sampled = p > 0  # (..., K) responses π can produce
    finite = sampled & (q > 0)
    one = torch.ones_like(p)
    logp = torch.where(sampled, p, one).log()  # (..., K) log π, 0 where never sampled
    ref_logp = torch.where(finite, q, one).log()
    vals = torch.stack([kl_estimate(logp, ref_logp, k, mask=finite) for k in ("k1", "k2", "k3")], dim=-2)  # (..., 3, K)
    mismatch = (sampled & (q == 0)).unsqueeze(-2).expand_as(vals)  # π samples what π_ref forbids
    vals = torch.where(mismatch, torch.full_like(vals, float("inf")), vals)
    means = torch.where(sampled.unsqueeze(-2), p.unsqueeze(-2) * vals, torch.zeros_like(vals)).sum(-1)  # (..., 3)
    return KLEstimators(vals, means)
