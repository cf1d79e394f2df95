"""Policy playground: a tiny exact policy trained step by step under any of the lab's objectives.

Two policies small enough to enumerate every response:

- :class:`Bandit`, a softmax over K responses with a reward each (tabular logits by default, or a
  log-linear policy with shared features, where moving one response moves the others);
- :class:`SequencePolicy`, tabular logits per prefix over a small vocabulary, 2–4 tokens long, with a
  sequence-level (verifier) reward or per-step rewards; optionally token 0 ends the sequence (EOS), so
  responses have different lengths.

:func:`train` runs ``steps`` updates of plain gradient descent on the parameters. The objectives are
the lab's own functions, never re-implemented here: REINFORCE (``lab.rl.policy_gradient_surrogate``,
``discounted_returns``, ``gae``), PPO (``lab.rl.likelihood_ratio``, ``lab.ppo.clipped_surrogate``,
``clip_fractions``), GRPO (``lab.grpo.group_advantages``,
``grpo_loss``), RLOO (``lab.grpo.rloo_advantages``), DPO (``lab.dpo.dpo_loss``) and the KL-regularized
objective E_π[r] − β KL(π‖π_ref) (``lab.kl.kl_divergence`` in exact mode, ``lab.ppo.kl_shaped_reward`` in
sampled mode) [ftip-0036, ftip-003E, ftip-003F, ftip-004D, ftip-004J, ftip-003O, ftip-003R, ftip-006Y].

Two modes. ``exact=True`` takes the expected gradient by enumerating responses (or, for the group
objectives, every possible group), weighting each by its probability under the behaviour policy; the
weight enters as a positive factor on the advantage, which every objective here is homogeneous in.
``exact=False`` draws a seeded sample of n responses, so the variance of the estimator shows.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, fields, replace
from typing import Callable, Literal, Sequence

import torch

from lab._checks import _range_ok, as_tensor, check_choice, check_closed_unit, check_finite, check_nonnegative, check_pmf
from lab.dpo import dpo_loss, dpo_metrics
from lab.grpo import _grpo_loss_validated, aggregate_token_loss, group_advantages, grpo_loss, rloo_advantages
from lab.kl import kl_divergence
from lab.ppo import _clip_bounds, _clip_fractions, _clipped_surrogate, clip_fractions, clipped_surrogate, kl_shaped_reward
from lab.rl import (
    _advantage_from_baseline,
    _likelihood_ratio,
    _policy_gradient_surrogate,
    advantage_from_baseline,
    discounted_returns,
    gae,
    likelihood_ratio,
    policy_gradient_surrogate,
)

Objective = Literal["reinforce", "ppo", "grpo", "rloo", "dpo", "kl_regularized"]
OBJECTIVES: tuple[str, ...] = ("reinforce", "ppo", "grpo", "rloo", "dpo", "kl_regularized")
MAX_ENUMERATED_GROUP_MEMBERS = 40_000  # exact group objectives enumerate N**group_size groups


# ---------------------------------------------------------------------------------------------- policies


@dataclass(frozen=True)
class Bandit:
    """A softmax policy over K responses, each with a reward (a one-step episode).

    Logits are ``log(init_probs) + features @ θ`` with θ starting at 0. With ``features=None`` the
    features are the identity (tabular: one free logit per response). A (K, d) feature matrix gives
    a log-linear policy whose d parameters are shared, as an LLM's are.
    """

    rewards: Sequence[float]
    init_probs: Sequence[float] | None = None  # starting policy; default uniform
    ref_probs: Sequence[float] | None = None  # reference for KL and DPO; default init_probs
    features: Sequence[Sequence[float]] | None = None  # (K, d); default identity (tabular)
    chosen: int = 0  # the DPO pair: index of the preferred response
    rejected: int = 1  # index of the dispreferred response
    labels: Sequence[str] | None = None  # names of the responses for plots; default y1 … yK


@dataclass(frozen=True)
class SequencePolicy:
    """Tabular logits per prefix over ``vocab`` tokens, ``length`` tokens long (2–4).

    ``reward``: a function of the token tuple (a verifier: the sequence-level reward, credited at the
    last token) or ``step_reward``: a function (tokens, t) → reward of step t. With ``eos=True`` token 0
    ends the response (it is emitted and then nothing follows), so responses have lengths 1 … ``length``.
    Every prefix starts with uniform logits, so the reference (the starting policy) is uniform per prefix.
    """

    vocab: int = 2
    length: int = 3
    reward: Callable[[tuple[int, ...]], float] | None = None
    step_reward: Callable[[tuple[int, ...], int], float] | None = None
    eos: bool = False
    chosen: tuple[int, ...] | None = None  # the DPO pair, as token tuples
    rejected: tuple[int, ...] | None = None
    alphabet: str = "abcd"  # token names for labels; with eos, token 0 is shown as "."


@dataclass
class _Space:
    """Everything the trainer needs, enumerated once: responses, their tokens, prefixes and rewards."""

    labels: list[str]
    n_params: tuple[int, ...]
    logits_fn: Callable[[torch.Tensor], torch.Tensor]  # θ → per-state logits (S, V)
    state: torch.Tensor  # (N, T) long: index of the state (prefix) each token is chosen in
    token: torch.Tensor  # (N, T) long: the token chosen
    mask: torch.Tensor  # (N, T) float: 1 for real tokens
    step_rewards: torch.Tensor  # (N, T) reward of each step (verifier reward on the last token)
    next_state: torch.Tensor  # (N, T) long: state after the token, -1 at the end
    num_states: int
    chosen: int | None
    rejected: int | None
    theta0: torch.Tensor = field(default_factory=lambda: torch.zeros(0))
    _flat: torch.Tensor | None = None
    _gather: bool = True  # False when the flat gather is the identity (the bandit: one token per response, in order)
    _masked: bool = True  # False when every token is real (multiplying by the all-ones mask changes nothing)
    rewards: torch.Tensor = field(init=False)  # (N,) sequence reward
    lengths: torch.Tensor = field(init=False)  # (N,) tokens per response

    def __post_init__(self) -> None:
        self.rewards = self.step_rewards.sum(-1)
        self.lengths = self.mask.sum(-1)
        self._masked = not bool((self.mask > 0).all())

    def token_logps(self, theta: torch.Tensor) -> torch.Tensor:
        """(N, T) log π(token | prefix), 0 at masked positions."""
        logp = torch.log_softmax(self.logits_fn(theta), dim=-1)  # (S, V)
        if self._flat is None:  # one flat gather: its backward is far cheaper than 2-D advanced indexing
            self._flat = (self.state * logp.shape[-1] + self.token).flatten()
            self._gather = not (self._flat.numel() == logp.numel() and bool((self._flat == torch.arange(logp.numel())).all()))
        # skipping an identity gather and a multiplication by ones leaves values and gradients bit for bit the same
        out = (logp.flatten().index_select(0, self._flat) if self._gather else logp).view(self.mask.shape)
        return out * self.mask if self._masked else out


def _bandit_space(b: Bandit) -> _Space:
    r = as_tensor(list(b.rewards), "rewards")
    check_finite(r, "rewards")
    if r.dim() != 1 or r.numel() < 2:
        raise ValueError(f"rewards must list at least 2 responses (a (K,) vector); got shape {tuple(r.shape)}")
    K = r.numel()
    p0 = torch.full((K,), 1.0 / K, dtype=torch.float64) if b.init_probs is None else as_tensor(list(b.init_probs), "init_probs")
    if p0.shape != (K,):
        raise ValueError(f"init_probs must have one entry per response ({K}); got shape {tuple(p0.shape)}")
    check_pmf(p0, "init_probs")
    if not bool((p0 > 0).all()):
        raise ValueError("init_probs must be > 0 for every response (a softmax policy never reaches 0)")
    if b.features is None:
        phi = torch.eye(K, dtype=torch.float64)
    else:
        phi = as_tensor([list(row) for row in b.features], "features")
        check_finite(phi, "features")
        if phi.dim() != 2 or phi.shape[0] != K:
            raise ValueError(f"features must be a (K, d) matrix with K = {K} rows; got shape {tuple(phi.shape)}")
    base = torch.log(p0 / p0.sum())
    if b.features is None:
        # tabular: θ is one (1, K) row of free logits, logits = base + θ (the same numbers as base + I·θ, with
        # three fewer autograd nodes per step: no matrix-vector product, no reshape)
        base_row = base.unsqueeze(0)  # (1, K)
        logits_fn, theta0 = (lambda th: base_row + th), torch.zeros(1, K, dtype=torch.float64)
    else:
        logits_fn, theta0 = (lambda th: (base + phi @ th).unsqueeze(0)), torch.zeros(phi.shape[1], dtype=torch.float64)
    for name, idx in (("chosen", b.chosen), ("rejected", b.rejected)):
        if not isinstance(idx, int) or not 0 <= idx < K:
            raise ValueError(f"{name} must be a response index in [0, {K}); got {idx!r}")
    if b.chosen == b.rejected:
        raise ValueError("chosen and rejected must be different responses")
    labels = list(b.labels) if b.labels is not None else [f"y{i + 1}" for i in range(K)]
    if len(labels) != K:
        raise ValueError(f"labels must name each of the {K} responses")
    return _Space(
        labels=labels,
        n_params=tuple(theta0.shape),
        logits_fn=logits_fn,  # θ → (1, K): one state
        state=torch.zeros(K, 1, dtype=torch.long),
        token=torch.arange(K).unsqueeze(-1),
        mask=torch.ones(K, 1, dtype=torch.float64),
        step_rewards=r.unsqueeze(-1),
        next_state=torch.full((K, 1), -1, dtype=torch.long),
        num_states=1,
        chosen=b.chosen,
        rejected=b.rejected,
        theta0=theta0,
    )


def _sequence_space(s: SequencePolicy) -> _Space:
    if not isinstance(s.vocab, int) or not 2 <= s.vocab <= 4:
        raise ValueError(f"vocab must be an integer in [2, 4]; got {s.vocab!r}")
    if not isinstance(s.length, int) or not 2 <= s.length <= 4:
        raise ValueError(f"length must be an integer in [2, 4]; got {s.length!r}")
    if (s.reward is None) == (s.step_reward is None):
        raise ValueError("give exactly one of reward (a sequence-level verifier) or step_reward (per-step rewards)")
    V, L = s.vocab, s.length
    seqs: list[tuple[int, ...]] = []
    for toks in itertools.product(range(V), repeat=L):
        if s.eos and 0 in toks:
            end = toks.index(0)
            if any(t != 0 for t in toks[end + 1 :]):
                continue  # after EOS nothing follows: keep one canonical padding
            seqs.append(toks[: end + 1])
        else:
            seqs.append(toks)
    prefixes: dict[tuple[int, ...], int] = {}
    for q in seqs:
        for t in range(len(q)):
            prefixes.setdefault(q[:t], len(prefixes))
    N = len(seqs)
    state = torch.zeros(N, L, dtype=torch.long)
    token = torch.zeros(N, L, dtype=torch.long)
    mask = torch.zeros(N, L, dtype=torch.float64)
    nxt = torch.full((N, L), -1, dtype=torch.long)
    rew = torch.zeros(N, L, dtype=torch.float64)
    for i, q in enumerate(seqs):
        for t in range(len(q)):
            state[i, t], token[i, t], mask[i, t] = prefixes[q[:t]], q[t], 1.0
            if t + 1 < len(q):
                nxt[i, t] = prefixes[q[: t + 1]]
            rew[i, t] = float(s.step_reward(q, t)) if s.step_reward is not None else 0.0
        if s.reward is not None:
            rew[i, len(q) - 1] = float(s.reward(q))
    check_finite(rew, "reward")
    names = (["."] + list(s.alphabet[: V - 1])) if s.eos else list(s.alphabet[:V])
    labels = ["".join(names[t] for t in q) for q in seqs]

    def find(q, name):
        if q is None:
            return None
        q = tuple(q)
        if q not in seqs:
            raise ValueError(f"{name} {q!r} is not a response of this policy")
        return seqs.index(q)

    c, r = find(s.chosen, "chosen"), find(s.rejected, "rejected")
    if c is not None and c == r:
        raise ValueError("chosen and rejected must be different responses")
    S = len(prefixes)
    return _Space(
        labels=labels,
        n_params=(S, V),
        logits_fn=lambda th: th,  # (S, V) tabular logits per prefix, zero = uniform
        state=state,
        token=token,
        mask=mask,
        step_rewards=rew,
        next_state=nxt,
        num_states=S,
        chosen=c,
        rejected=r,
        theta0=torch.zeros(S, V, dtype=torch.float64),
    )


def build_space(policy: Bandit | SequencePolicy) -> _Space:
    """Enumerate a policy's responses (used by :func:`train` and by pages that label plots)."""
    if isinstance(policy, Bandit):
        return _bandit_space(policy)
    if isinstance(policy, SequencePolicy):
        return _sequence_space(policy)
    raise ValueError(f"policy must be a Bandit or a SequencePolicy; got {type(policy).__name__}")


# ---------------------------------------------------------------------------------------------- conventions


@dataclass(frozen=True)
class Conventions:
    """Every choice an objective leaves open, with its default. Pass any of them to :func:`train` by name."""

    n: int = 16
    """Responses sampled per step (sampled mode). For GRPO and RLOO: groups × group_size."""
    group_size: int = 4
    """Members per group for GRPO and RLOO (k >= 2)."""
    baseline: Literal["none", "mean", "value"] = "none"
    """REINFORCE/PPO/KL-regularized baseline: none; the batch mean of sequence returns (in exact mode: the
    expected return); or the value V(prefix) of each token's state (exact, plus ``value_noise``)."""
    advantage: Literal["return", "gae"] = "return"
    """REINFORCE/PPO advantage: reward-to-go minus the baseline, or GAE with the (noisy) value (ftip-003E)."""
    gamma: float = 1.0
    """Discount γ in [0, 1] for returns and GAE."""
    lam: float = 1.0
    """GAE's λ in [0, 1]: 1 = Monte-Carlo return − V (unbiased, high variance), 0 = one-step TD residual."""
    value_noise: float = 0.0
    """Std of the Gaussian error added to the exact value V(prefix) (fixed per ``value_seed``)."""
    value_seed: int = 0
    """Seed of the value error (separate from the sampling seed, so the error is one fixed function)."""
    epochs: int | None = None
    """μ: gradient steps on one sampled batch. Default 4 for PPO, 1 otherwise."""
    clip: bool = True
    """PPO: clipped surrogate (True) or the unclipped importance-weighted surrogate ρ·A (False)."""
    epsilon: float = 0.2
    """Clip width ε (lower; and upper unless ``epsilon_high``)."""
    epsilon_high: float | None = None
    """Upper clip width (DAPO clip-higher, ftip-004H); default ``epsilon``."""

    @property
    def clip_band(self) -> tuple[float, float]:
        """(1 − ε, 1 + ε_high): the ratio band inside which PPO's objective is unclipped."""
        return _clip_bounds(self.epsilon, self.epsilon_high)
    scale: Literal["group", "batch", "none"] = "group"
    """GRPO advantage scaling (see lab.grpo.group_advantages)."""
    ddof: int = 1
    """GRPO std divisor: 1 = sample std (TRL), 0 = population std."""
    eps: float = 1e-4
    """GRPO std stabiliser (added to the std)."""
    zero_std: Literal["zero", "raise"] = "zero"
    """GRPO zero-spread group policy."""
    loss_type: Literal["grpo", "bnpo", "dr_grpo", "dapo"] = "grpo"
    """GRPO/RLOO token aggregation (ftip-004J)."""
    beta: float | None = None
    """KL weight β. Default 0.1 for kl_regularized and DPO, 0 (no KL term) for GRPO."""


def _conventions(objective: str, kw: dict) -> Conventions:
    names = {f.name for f in fields(Conventions)}
    unknown = sorted(set(kw) - names)
    if unknown:
        raise ValueError(f"unknown convention(s) {unknown}; known: {sorted(names)}")
    c = replace(Conventions(), **kw)
    if c.epochs is None:
        c = replace(c, epochs=4 if objective == "ppo" else 1)
    if c.beta is None:
        c = replace(c, beta=0.1 if objective in ("kl_regularized", "dpo") else 0.0)
    for name in ("n", "group_size", "epochs"):
        v = getattr(c, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive integer; got {v!r}")
    if objective in ("grpo", "rloo"):
        if c.group_size < 2:
            raise ValueError(f"group_size must be >= 2 (a group needs a comparison); got {c.group_size}")
        if c.n % c.group_size:
            raise ValueError(f"n ({c.n}) must be a multiple of group_size ({c.group_size})")
    if not isinstance(c.clip, bool):
        raise ValueError(f"clip must be True or False; got {c.clip!r}")
    check_choice(c.baseline, "baseline", ("none", "mean", "value"))
    check_choice(c.advantage, "advantage", ("return", "gae"))
    check_choice(c.loss_type, "loss_type", ("grpo", "bnpo", "dr_grpo", "dapo"))
    check_closed_unit(c.gamma, "gamma")
    check_closed_unit(c.lam, "lam")
    check_nonnegative(c.value_noise, "value_noise")
    check_nonnegative(c.beta, "beta")
    if objective in ("kl_regularized", "dpo") and not c.beta > 0:
        raise ValueError(f"beta must be > 0 for {objective}; got {c.beta}")
    return c


# ---------------------------------------------------------------------------------------------- result


@dataclass
class PlaygroundRun:
    """What :func:`train` saw at every step. Lists hold one entry per step; tensors are detached."""

    labels: list[str]  # response names
    probs: torch.Tensor  # (steps + 1, N) probability of every response, before each step and at the end
    ref_probs: torch.Tensor  # (N,) the reference policy
    rewards: torch.Tensor  # (N,) sequence reward of every response
    lengths: torch.Tensor  # (N,) tokens per response
    loss: torch.Tensor  # (steps,) the loss at the start of each step (first epoch)
    kl: torch.Tensor  # (steps + 1,) exact KL(π ‖ π_ref) over responses
    expected_reward: torch.Tensor  # (steps + 1,) E_π[r]
    grad_norm: torch.Tensor  # (steps,) ‖∇θ loss‖ at the first epoch
    ratios: list[torch.Tensor | None]  # PPO/GRPO/RLOO: (epochs, B) ratio π_θ/π_old of each batch response, seen by each epoch
    advantages: list[torch.Tensor]  # advantages used: (B,) or (B, T); exact mode: unweighted, per enumerated response
    samples: list[torch.Tensor | None]  # (B,) indices of the sampled responses (None in exact mode)
    advantage_targets: list[torch.Tensor | None]  # (B, T) Q(s_t, a_t) − V̂(s_t) for advantage="gae"/"value" baselines
    cells: torch.Tensor  # (N, T) id of the state-action pair (prefix, token) of each response token, -1 after the end
    response_weights: list[torch.Tensor | None]  # GRPO/RLOO: (B,) weight of each response's tokens in the aggregated loss
    metrics: list[dict[str, float]]  # objective diagnostics under TRL's names (clip_ratio/*, rewards/*, approx_kl …)
    conventions: Conventions

    @property
    def steps(self) -> int:
        return int(self.loss.numel())


# ---------------------------------------------------------------------------------------------- helpers


def _reward_to_go(sp: _Space, gamma: float) -> torch.Tensor:
    """(N, T) discounted reward-to-go from each token of every response, 0 after the end (fixed: rewards never change)."""
    return discounted_returns(sp.step_rewards, gamma) * sp.mask


def _values(sp: _Space, seq_probs: torch.Tensor, gamma: float, rtg: torch.Tensor | None = None) -> torch.Tensor:
    """Exact V^π(prefix) (S,) = E[Σ discounted future rewards | prefix], by enumeration."""
    rtg = _reward_to_go(sp, gamma) if rtg is None else rtg  # (N, T)
    w = seq_probs.unsqueeze(-1) * sp.mask  # (N, T)
    num = torch.zeros(sp.num_states, dtype=torch.float64).index_add_(0, sp.state.flatten(), (w * rtg).flatten())
    den = torch.zeros(sp.num_states, dtype=torch.float64).index_add_(0, sp.state.flatten(), w.flatten())
    return num / den.clamp_min(1e-300)


def _state_values(sp: _Space, V: torch.Tensor, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token V(s_t) and V(s_{t+1}) (0 after the end) for responses ``idx``: (B, T) each."""
    v_now = V[sp.state[idx]] * sp.mask[idx]
    nxt = sp.next_state[idx]
    v_next = torch.where(nxt >= 0, V[nxt.clamp_min(0)], torch.zeros_like(v_now))
    return v_now, v_next


def _advantages(sp: _Space, c: Conventions, idx: torch.Tensor, seq_probs: torch.Tensor, exact: bool, gen_value: torch.Tensor,
                rtg: torch.Tensor | None = None, rtg_ok: bool = False):
    """REINFORCE/PPO per-token advantages (B, T) for responses ``idx`` and the GAE bias target.

    ``rtg``: :func:`_reward_to_go` computed once per run (rows are independent, so its rows are bit for bit
    the returns of the sampled rows); ``rtg_ok``: it passed a finiteness test."""
    rtg = _reward_to_go(sp, c.gamma) if rtg is None else rtg
    G = rtg if exact else rtg.index_select(0, idx)  # (B, T) reward-to-go (exact: idx lists every response in order)
    target = None
    if c.advantage == "gae" or c.baseline == "value":
        r = sp.step_rewards[idx]  # (B, T)
        m = sp.mask[idx]
        V_true = _values(sp, seq_probs, c.gamma, rtg)
        V_hat = V_true + c.value_noise * gen_value
        v_now, v_next = _state_values(sp, V_hat, idx)
        _, v_next_true = _state_values(sp, V_true, idx)
        # the quantity λ = 1 estimates without bias when V̂(s_t) is the baseline: Q(s_t, a_t) − V̂(s_t)
        target = (r + c.gamma * v_next_true - v_now) * m
        if c.advantage == "gae":
            adv, _ = gae(r, v_now, c.gamma, c.lam)  # values after the end are 0: terminal
            return adv * m, target
        return advantage_from_baseline(G, v_now) * m, target
    if c.baseline == "mean":
        b = float((seq_probs * sp.rewards).sum()) if exact else G[:, 0].mean()
        # the returns are tested once per run (rtg_ok), the baseline here; otherwise the public function decides
        adv = _advantage_from_baseline(G, b) if rtg_ok and math.isfinite(float(b)) else advantage_from_baseline(G, b)
        # × the mask zeroes what follows a response's end; with every token real it is × 1 (no bit changes): skipped
        return (adv * (sp.mask if exact else sp.mask.index_select(0, idx)) if sp._masked else adv), target
    return G, target


def _logps_ok(tok: torch.Tensor) -> bool:
    """Sufficient test that every (N, T) log-prob passes the lab's log-prob checks: finite and <= 0 everywhere.

    When it holds, any rows picked from ``tok`` pass ``check_active``/``as_logprobs`` too, so a trainer may call
    the unchecked cores; when it fails, the trainer calls the public function, which decides (and raises)."""
    return _range_ok(tok.detach(), True)


def _finite(t: torch.Tensor) -> bool:
    """Sufficient test that ``t`` is finite (a sum is finite only when every term is)."""
    return math.isfinite(float(t.sum()))


def _sample(probs: torch.Tensor, n: int, gen: torch.Generator) -> torch.Tensor:
    return torch.multinomial(probs.detach().float(), n, replacement=True, generator=gen)


def _enumerate_groups(N: int, g: int) -> torch.Tensor:
    if N**g > MAX_ENUMERATED_GROUP_MEMBERS // g:
        raise ValueError(
            f"exact mode enumerates every group: {N}**{g} groups is too many; use exact=False or a smaller group_size/policy"
        )
    return torch.cartesian_prod(*[torch.arange(N)] * g).reshape(-1, g) if g > 1 else torch.arange(N).unsqueeze(-1)


def _response_weights(mask: torch.Tensor, loss_type: str, T: int) -> torch.Tensor:
    """Weight of each response's tokens in the aggregated loss: ∂loss/∂(per-token loss), summed per response."""
    x = torch.ones_like(mask, requires_grad=True)
    aggregate_token_loss(x, mask, loss_type, T).backward()
    return (x.grad * mask).sum(-1)


# ---------------------------------------------------------------------------------------------- train


def draws_samples(objective: str, exact: bool) -> bool:
    """True when :func:`train` draws from its ``seed``: sampled mode, except DPO (offline, it never samples).

    Where it is False the run does not depend on the seed (a page may cache it across seeds)."""
    check_choice(objective, "objective", OBJECTIVES)
    if not isinstance(exact, bool):
        raise ValueError(f"exact must be True or False; got {exact!r}")
    return not exact and objective != "dpo"


def train(
    policy: Bandit | SequencePolicy,
    objective: Objective,
    steps: int,
    lr: float,
    seed: int = 0,
    exact: bool = False,
    **conventions,
) -> PlaygroundRun:
    """Train ``policy`` for ``steps`` gradient-descent steps of size ``lr`` on ``objective``.

    ``objective``: ``"reinforce"``, ``"ppo"``, ``"grpo"``, ``"rloo"``, ``"dpo"`` or ``"kl_regularized"``.
    ``conventions``: any field of :class:`Conventions` (n, group_size, baseline, advantage, gamma, lam,
    value_noise, epochs, clip, epsilon, epsilon_high, scale, ddof, eps, zero_std, loss_type, beta).
    Deterministic for a given ``seed``. DPO is offline: it trains on the policy's (chosen, rejected)
    pair against the reference and never samples, so ``exact`` does not change it.
    Returns a :class:`PlaygroundRun`.
    """
    check_choice(objective, "objective", OBJECTIVES)
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise ValueError(f"steps must be an integer >= 0; got {steps!r}")
    lr = check_nonnegative(lr, "lr")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed must be an integer; got {seed!r}")
    if not isinstance(exact, bool):
        raise ValueError(f"exact must be True or False; got {exact!r}")
    c = _conventions(objective, conventions)
    sp = build_space(policy)
    if objective == "dpo" and (sp.chosen is None or sp.rejected is None):
        raise ValueError("policy must name a chosen and a rejected response for DPO")
    if exact and objective in ("grpo", "rloo") and c.beta > 0:
        raise ValueError("beta must be 0 for exact GRPO/RLOO (the KL term is not linear in the advantage); use exact=False")

    gen = torch.Generator().manual_seed(seed)
    gen_value = torch.randn(sp.num_states, generator=torch.Generator().manual_seed(c.value_seed), dtype=torch.float64)
    theta = sp.theta0.clone().requires_grad_(True)
    N, T = sp.mask.shape
    ref_tok = sp.token_logps(sp.theta0).detach()  # (N, T) the reference is the starting policy
    ref_seq = ref_tok.sum(-1)
    if isinstance(policy, Bandit) and policy.ref_probs is not None:
        rp = as_tensor(list(policy.ref_probs), "ref_probs")
        if rp.shape != (N,):
            raise ValueError(f"ref_probs must have one entry per response ({N}); got shape {tuple(rp.shape)}")
        check_pmf(rp, "ref_probs")
        if not bool((rp > 0).all()):
            raise ValueError("ref_probs must be > 0 for every response")
        ref_seq = torch.log(rp)
        ref_tok = ref_seq.unsqueeze(-1)
    ref_probs = ref_seq.exp()
    groups = _enumerate_groups(N, c.group_size) if exact and objective in ("grpo", "rloo") else None

    probs_hist: list[torch.Tensor] = []
    loss_hist, gn_hist = [], []
    ratios, advs, samples, targets, rweights, metrics = [], [], [], [], [], []

    # Everything that does not change between steps is computed once (same calls, same values): the
    # reward-to-go of every response, and for exact group objectives the groups' members, masks, rewards
    # and advantages (only the probability of drawing each group moves with the policy).
    all_idx = torch.arange(N)
    rtg = _reward_to_go(sp, c.gamma) if objective in ("reinforce", "ppo") else None
    rtg_ok = rtg is not None and _finite(rtg)
    ref_ok = _logps_ok(ref_tok)  # the reference is fixed: tested once

    def bounds() -> tuple[float, float] | None:
        """(1 − ε, 1 + ε_high), validated at the first loss as the public functions validate it; None when
        ε is invalid: the fast path then gives way to the public function, which raises in its own order."""
        if not clip_bounds:
            try:
                clip_bounds.append(_clip_bounds(c.epsilon, c.epsilon_high))
            except ValueError:
                return None
        return clip_bounds[0]

    clip_bounds: list[tuple[float, float]] = []
    mask_sum = sp.mask.sum()
    batch_ones = None if sp._masked else torch.ones(c.n, T, dtype=sp.mask.dtype)  # every sampled batch's mask, all tokens real
    batch_ones_sum = None if batch_ones is None else batch_ones.sum()
    if groups is not None:
        x_members = groups.flatten()  # (G·g,)
        x_m = sp.mask[x_members]  # (G·g, T)
        x_r = sp.rewards[x_members]
        if objective == "grpo":
            x_adv = group_advantages(x_r, c.group_size, c.scale, c.ddof, c.eps, c.zero_std)
        else:
            x_adv = rloo_advantages(x_r, c.group_size)
        G_count = groups.shape[0]
        x_m_sum, x_tok_per_group = x_m.sum(), x_m.view(G_count, c.group_size, T).sum((1, 2))  # (), (G,)
        x_ref = ref_tok[x_members]

    for step in range(steps + 1):
        tok = sp.token_logps(theta)  # (N, T)
        old_tok = tok.detach()
        pi_old = old_tok.sum(-1).exp()  # (N,) sequence probabilities π_old(y)
        probs_hist.append(pi_old)
        if step == steps:
            break
        ratio_rows: list[torch.Tensor] | None = None
        target = None
        weights_resp = None
        sample_idx = None
        info: dict[str, float] = {}

        if objective == "dpo":
            c_, r_ = sp.chosen, sp.rejected

            def loss_fn(tok_now):
                s = tok_now.sum(-1)
                losses, cr, rr = dpo_loss(s[c_ : c_ + 1], s[r_ : r_ + 1], ref_seq[c_ : c_ + 1], ref_seq[r_ : r_ + 1], c.beta)
                return losses.mean(), dpo_metrics(cr, rr)

            adv_used = torch.zeros(0)

        elif objective == "kl_regularized":
            if exact:

                def loss_fn(tok_now):
                    p = tok_now.sum(-1).exp()  # (N,)
                    kl = kl_divergence(p, ref_probs)
                    return -((p * sp.rewards).sum() - c.beta * kl), {"kl": float(kl.detach())}

                adv_used = sp.rewards.clone()
            else:
                sample_idx = _sample(pi_old, c.n, gen)
                m = sp.mask[sample_idx]
                shaped = kl_shaped_reward(sp.rewards[sample_idx], old_tok[sample_idx], ref_tok[sample_idx], c.beta, m)
                adv_used = shaped - shaped.mean() if c.baseline != "none" else shaped  # (B,)
                a_tok = adv_used.unsqueeze(-1).expand(m.shape)  # (B, T)

                def loss_fn(tok_now):
                    return -policy_gradient_surrogate(tok_now[sample_idx], a_tok, m), {}

        elif objective in ("reinforce", "ppo"):
            idx = all_idx if exact else _sample(pi_old, c.n, gen)
            sample_idx = None if exact else idx
            adv_used, target = _advantages(sp, c, idx, pi_old, exact, gen_value, rtg, rtg_ok)  # (B, T)
            # the batch's mask and its number of active tokens: fixed in exact mode, and in sampled mode when every
            # token is real (all ones); otherwise the sampled rows
            m, m_sum = (sp.mask, mask_sum) if exact else (batch_ones, batch_ones_sum) if batch_ones is not None else (None, None)
            if m is None:
                m = sp.mask.index_select(0, idx)
                m_sum = m.sum()
            # exact: weight each enumerated response by π_old(y); the factor (active tokens) turns the
            # masked mean of the objective, Σ(·)/Σm, into the expectation Σ_y π_old(y) Σ_t (·). Sampled: weight 1,
            # and × 1 changes no bit, so the advantages are used as they are
            a_eff = adv_used * (pi_old.unsqueeze(-1) * m_sum) if exact else adv_used

            def pick(tok_now):  # the batch's rows; in exact mode the batch is every response, in order
                # index_select: the same rows as tok_now[idx], with a cheaper backward (duplicates summed in the same order)
                return tok_now if exact else tok_now.index_select(0, idx)

            # Validation: the lab's public functions check every input on every call. Here the advantages and
            # the mask are fixed for the step, so they are tested once per step; the log-probs move every epoch
            # and are tested every epoch (finite and <= 0 over all of tok_now, hence over any rows of it). Where
            # a test fails, the public function runs instead and decides, with its own error message.
            adv_ok = _finite(a_eff)
            # with every token real the selection of active positions is skipped (None: same values, same gradient)
            active = (m > 0) if sp._masked else None

            if objective == "reinforce":

                def loss_fn(tok_now):
                    if adv_ok and _logps_ok(tok_now):
                        return -_policy_gradient_surrogate(pick(tok_now), a_eff, active, m_sum), {}
                    return -policy_gradient_surrogate(pick(tok_now), a_eff, m), {}

            else:
                ratio_rows = []
                tok_ratios: list[torch.Tensor] = []
                old_b = pick(old_tok)  # (B, T) behaviour log-probs, fixed over the epochs

                def loss_fn(tok_now):
                    lp = pick(tok_now)
                    rho = _likelihood_ratio(lp, old_b) if adv_ok and _logps_ok(tok_now) else None
                    if rho is None or not _finite(rho.detach()):
                        rho = likelihood_ratio(lp, old_b)  # (B, T) per-token ratio (1 at masked positions: log-prob 0 − 0)
                    tok_ratios.append(rho.detach())  # (B, T); the sequence ratio is its product over tokens
                    if c.clip:  # PPO's L^CLIP per token [ftip-003F]; diagnostics once per step, over all epochs
                        # ρ here is finite and >= 0 (an exp), A finite: the checks of clipped_surrogate hold
                        b = bounds() if adv_ok else None
                        surrogate = _clipped_surrogate(rho, a_eff, *b) if b else clipped_surrogate(rho, a_eff, c.epsilon, c.epsilon_high)
                    else:  # L^CPI (Schulman et al. 2017, eq. 6): the importance-weighted surrogate, no clip
                        surrogate = rho * a_eff
                    # with every token real, × m is × 1: skipped (same value, same gradient)
                    return -(surrogate * m if sp._masked else surrogate).sum() / m_sum, {}

        else:  # grpo, rloo
            if exact:
                members, m, adv_used = x_members, x_m, x_adv.clone()
                group_p = pi_old[groups].prod(-1)  # (G,) probability of drawing that group (ordered)
            else:
                members = _sample(pi_old, c.n, gen)
                sample_idx = members
                r = sp.rewards.index_select(0, members)
                if objective == "grpo":
                    adv_used = group_advantages(r, c.group_size, c.scale, c.ddof, c.eps, c.zero_std)
                else:
                    adv_used = rloo_advantages(r, c.group_size)
                m = sp.mask.index_select(0, members)
            B = members.numel()
            if exact:
                # weight each enumerated group by its probability, scaled so that the aggregate over all
                # groups equals Σ_G P(G)·loss(G): per-token weight P(G)·(normaliser of the batch)/(normaliser of G)
                wg = group_p * x_m_sum / x_tok_per_group if c.loss_type in ("bnpo", "dapo") else group_p * G_count
                w_tok = wg.repeat_interleave(c.group_size).unsqueeze(-1) * m  # (B, T)
                a_eff = adv_used.unsqueeze(-1) * w_tok
            else:
                a_eff = adv_used.unsqueeze(-1).expand(B, T)
            weights_resp = m  # (B, T) mask; turned into response weights after the loop, in one backward pass
            ratio_rows = []
            ref_b = (x_ref if exact else ref_tok.index_select(0, members)) if c.beta > 0 else None
            old_b = old_tok.index_select(0, members)

            # validated as in the REINFORCE/PPO branch: the advantages and the reference once per step (the mask is
            # built by the space: 0/1, a token in every row), the log-probs every epoch; otherwise grpo_loss decides
            adv_ok = _finite(a_eff) and (ref_b is None or ref_ok)
            active = (m > 0) if sp._masked else None

            def loss_fn(tok_now):
                lp = tok_now.index_select(0, members)  # the rows of tok_now[members], with a cheaper backward
                out = None
                b = bounds() if adv_ok and _logps_ok(tok_now) else None
                if b:
                    loss, met, rho = _grpo_loss_validated(lp, old_b, a_eff, m, active, *b, c.loss_type, T, ref_b, c.beta)
                    out = (loss, met) if _finite(rho.detach()) else None
                if out is None:
                    # a masked position holds log-prob 0 (probability 1): the ratio there is 1, never inf
                    out = grpo_loss(lp, old_b, a_eff, m, ref_b, c.beta, c.epsilon, c.epsilon_high, c.loss_type, T)
                ratio_rows.append((lp.detach() - old_b).sum(-1).exp())
                return out

        for epoch in range(c.epochs):
            tok_now = tok if epoch == 0 else sp.token_logps(theta)
            loss, met = loss_fn(tok_now)
            (grad,) = torch.autograd.grad(loss, theta)
            if epoch == 0:
                loss_hist.append(loss.detach())
                gn_hist.append(torch.linalg.vector_norm(grad))  # what grad.norm() computes, without its Python wrapper
                info = dict(met)
            with torch.no_grad():
                theta -= lr * grad
        if objective == "ppo":
            # TRL/CleanRL log clip fractions over every epoch of the batch
            rr = torch.stack(tok_ratios)  # (μ, B, T)
            ratio_rows = rr.prod(-1)  # (μ, B): π_θ(y)/π_old(y) per epoch, masked tokens contribute 1
            b = bounds() if adv_ok else None
            if b:  # every ratio in rr passed a finiteness test in its epoch (an exp, so >= 0), the advantages theirs
                # the core broadcasts (B, T) against (μ, B, T); μ·Σm active positions (an exact count)
                info = _clip_fractions(rr, a_eff, active, m_sum * len(tok_ratios), *b)
            else:
                a_rr, m_rr = a_eff.expand_as(rr[0]).unsqueeze(0).expand_as(rr), m.expand_as(rr)
                info = clip_fractions(rr, a_rr, m_rr, c.epsilon, c.epsilon_high)
        ratios.append(ratio_rows if isinstance(ratio_rows, torch.Tensor) else torch.stack(ratio_rows) if ratio_rows else None)
        advs.append(adv_used.detach())
        samples.append(sample_idx)
        targets.append(target)
        rweights.append(weights_resp)
        metrics.append(info)

    if objective in ("grpo", "rloo") and steps > 0:
        # each step's aggregation is linear in its per-token losses: ∂(Σ_s loss_s)/∂x_s gives every step's weights at once.
        # The weights depend only on the step's mask, so each distinct mask is aggregated once (same numbers:
        # each x_s receives ∂loss_s/∂x_s alone, whatever else is summed)
        keys = [(tuple(mk.shape), mk.numpy().tobytes()) for mk in rweights]
        distinct = dict(zip(keys, rweights))
        xs = {k: torch.ones_like(mk, requires_grad=True) for k, mk in distinct.items()}
        sum(aggregate_token_loss(xs[k], mk, c.loss_type, T) for k, mk in distinct.items()).backward()
        w = {k: (xs[k].grad * mk).sum(-1) for k, mk in distinct.items()}
        rweights = [w[k].clone() for k in keys]
    probs = torch.stack(probs_hist)  # (steps + 1, N)
    probs = probs / probs.sum(-1, keepdim=True)  # rounding: a softmax product sums to 1 within ~1e-16
    return PlaygroundRun(
        labels=sp.labels,
        probs=probs,
        ref_probs=ref_probs,
        rewards=sp.rewards,
        lengths=sp.lengths,
        loss=torch.stack(loss_hist) if loss_hist else torch.zeros(0, dtype=torch.float64),
        kl=kl_divergence(probs, ref_probs.expand_as(probs)),
        expected_reward=probs @ sp.rewards,
        grad_norm=torch.stack(gn_hist) if gn_hist else torch.zeros(0, dtype=torch.float64),
        ratios=ratios,
        advantages=advs,
        samples=samples,
        advantage_targets=targets,
        cells=torch.where(sp.mask > 0, sp.state * sp.logits_fn(sp.theta0).shape[-1] + sp.token, torch.full_like(sp.state, -1)),
        response_weights=rweights,
        metrics=metrics,
        conventions=c,
    )


# ---------------------------------------------------------------------------------------------- analysis


def total_variation(p: torch.Tensor, q: torch.Tensor) -> float:
    """TV(p, q) = ½ Σ |p − q| over the last dimension (the distance of the convergence phenomenon)."""
    pt, qt = as_tensor(p, "p"), as_tensor(q, "q")
    if pt.shape != qt.shape:
        raise ValueError(f"p (shape {tuple(pt.shape)}) and q (shape {tuple(qt.shape)}) must have the same shape")
    return float(0.5 * (pt - qt).abs().sum(-1).max())


def advantage_bias_variance(runs: Sequence[PlaygroundRun], step: int = 0) -> tuple[float, float]:
    """Bias² and variance of the advantage estimates of several seeded runs (same policy, same value error).

    Each cell is one state-action pair (prefix s_t, token a_t). Its error is Â_t − (Q(s_t, a_t) − V̂(s_t));
    pooled over every run's samples at ``step``: bias² = visit-weighted mean over cells of (mean error)²,
    variance = visit-weighted mean over cells of the error's variance within the cell. Their sum is the MSE.
    """
    if not runs:
        raise ValueError("runs must hold at least one run")
    errs: dict[tuple[int, int], list[float]] = {}
    for run in runs:
        if run.samples[step] is None or run.advantage_targets[step] is None:
            raise ValueError("runs must be sampled (exact=False) with advantage='gae' or baseline='value'")
        idx, adv, tgt = run.samples[step], run.advantages[step], run.advantage_targets[step]
        cells = run.cells[idx]  # (B, T) state-action id, -1 after the end
        err = (adv - tgt).tolist()
        for b, row in enumerate(cells.tolist()):
            for t, cell in enumerate(row):
                if cell >= 0:
                    errs.setdefault(cell, []).append(err[b][t])
    total = sum(len(v) for v in errs.values())
    bias2 = sum(len(v) * (sum(v) / len(v)) ** 2 for v in errs.values()) / total
    var = sum(sum((e - sum(v) / len(v)) ** 2 for e in v) for v in errs.values()) / total
    return bias2, var


def length_weights(lengths: Sequence[int], loss_type: str, max_completion_length: int | None = None) -> torch.Tensor:
    """Weight each response gets in GRPO's aggregated loss, for a batch of responses of these lengths.

    ∂loss/∂(per-token loss) summed over each response's tokens, from ``lab.grpo.aggregate_token_loss``:
    "grpo" gives every response 1/B, "bnpo"/"dapo" give L_i/ΣL, "dr_grpo" L_i/(B·L_max) [ftip-004J].
    """
    L = as_tensor(list(lengths), "lengths")
    if L.dim() != 1 or L.numel() == 0 or not bool((L >= 1).all()) or not bool((L == L.round()).all()):
        raise ValueError(f"lengths must be a non-empty list of integers >= 1; got {list(lengths)}")
    T = int(L.max()) if max_completion_length is None else int(max_completion_length)
    if T < int(L.max()):
        raise ValueError(f"max_completion_length ({T}) must be >= the longest response ({int(L.max())})")
    mask = (torch.arange(T).unsqueeze(0) < L.unsqueeze(-1)).to(torch.float64)  # (B, T)
    return _response_weights(mask, loss_type, T)


# ---------------------------------------------------------------------------------------------- presets


def dpo_three_outcome_bandit() -> Bandit:
    """The reference's three-outcome DPO example as a policy (overview, "Direct preference optimization" [37]).

    The reference gives two constructed distributions, π_ref = (0.40, 0.40, 0.20) over (chosen,
    rejected, other) and π = (0.30, 0.20, 0.50), β = 1. The lab's own construction: a log-linear policy
    with one shared parameter whose feature is the direction log(π/π_ref) between them, so θ = 1 is the
    reference's second distribution and DPO's gradient moves along that line: chosen and rejected share
    the parameter, the rejected falls faster, and mass moves to the third outcome.
    """
    ref = [0.40, 0.40, 0.20]
    target = [0.30, 0.20, 0.50]
    feat = [[math.log(t / r)] for t, r in zip(target, ref)]
    return Bandit(rewards=[1.0, 0.0, 0.0], init_probs=ref, features=feat, chosen=0, rejected=1,
                  labels=["chosen y⁺", "rejected y⁻", "other"])


def gae_sweep(
    policy: SequencePolicy, lams: Sequence[float], seeds: Sequence[int] = range(6), n: int = 64, value_noise: float = 0.5, gamma: float = 1.0
) -> dict[str, list[float]]:
    """Bias² and variance of GAE advantages (:func:`advantage_bias_variance`) for each λ, over seeded samples
    of the starting policy (lr 0: nothing trains, only the estimator is measured) [ftip-003E]."""
    bias2, var = [], []
    for lam in lams:
        runs = [train(policy, "reinforce", 1, 0.0, seed=int(s), n=n, advantage="gae", lam=float(lam), gamma=gamma, value_noise=value_noise) for s in seeds]
        b, v = advantage_bias_variance(runs)
        bias2.append(b)
        var.append(v)
    return {"lam": [float(x) for x in lams], "bias2": bias2, "variance": var}


# ---------------------------------------------------------------------------------------------- page catalogue

#: Objective variants the Dynamics page offers: name → (objective, conventions it fixes).
VARIANTS: dict[str, tuple[str, dict]] = {
    "REINFORCE": ("reinforce", {"baseline": "none"}),
    "REINFORCE + baseline": ("reinforce", {"baseline": "mean"}),
    "PPO (clipped)": ("ppo", {"clip": True, "baseline": "mean"}),
    "PPO (no clip)": ("ppo", {"clip": False, "baseline": "mean"}),
    "PPO (clip-higher 0.28)": ("ppo", {"clip": True, "epsilon_high": 0.28, "baseline": "mean"}),
    "GRPO": ("grpo", {}),
    "GRPO (bnpo)": ("grpo", {"loss_type": "bnpo"}),
    "GRPO (dr_grpo)": ("grpo", {"loss_type": "dr_grpo"}),
    "GRPO (dapo)": ("grpo", {"loss_type": "dapo"}),
    "RLOO": ("rloo", {}),
    "DPO": ("dpo", {}),
    "KL-regularized": ("kl_regularized", {}),
}

#: Sequence-policy tasks (rewards are lab content, not page code): name → (description, reward kwargs factory).
SEQUENCE_TASKS: dict[str, str] = {
    "count": "verifier: reward = number of 'a' tokens",
    "all_a": "verifier: reward 1 only for the response made of 'a' only",
    "short_or_long": "verifier with EOS: reward 1 for the 1-token answer '.' and for the full-length 'aaaa…'",
    "constant": "every response earns 1 (no signal)",
    "steps": "per-step rewards: +1 for 'a' at odd steps, −0.5 at even steps (for GAE)",
}


def sequence_task(name: str, vocab: int = 2, length: int = 3) -> SequencePolicy:
    """A :class:`SequencePolicy` for one of :data:`SEQUENCE_TASKS` (token 1 is 'a')."""
    check_choice(name, "task", tuple(SEQUENCE_TASKS))
    a = 1
    if name == "count":
        return SequencePolicy(vocab, length, reward=lambda q: float(q.count(a)), chosen=(a,) * length, rejected=(0,) * length)
    if name == "all_a":
        return SequencePolicy(vocab, length, reward=lambda q: float(all(t == a for t in q)), chosen=(a,) * length, rejected=(0,) * length)
    if name == "short_or_long":
        return SequencePolicy(vocab, length, eos=True, reward=lambda q: 1.0 if q in ((0,), (a,) * length) else 0.0,
                              chosen=(a,) * length, rejected=(0,))
    if name == "constant":
        return SequencePolicy(vocab, length, reward=lambda q: 1.0, chosen=(a,) * length, rejected=(0,) * length)
    return SequencePolicy(vocab, length, step_reward=lambda q, t: float(q[t] == a) * (1.0 if t % 2 else -0.5),
                          chosen=(a,) * length, rejected=(0,) * length)


def nearest_choice(probs: torch.Tensor, candidates: dict[str, torch.Tensor]) -> str:
    """The name of the candidate distribution closest to ``probs`` in total variation."""
    return min(candidates, key=lambda k: total_variation(probs, candidates[k]))


@dataclass(frozen=True)
class Preset:
    """One phenomenon of the Dynamics page: a setup, a question asked before it plays, and how lab answers it."""

    title: str
    explanation: str  # two sentences
    question: str
    choices: tuple[str, ...] | None  # None: a numeric answer
    setup: dict  # the page's widget values
    answer: Callable[[dict], str | float]  # runs by variant name (and the setup) → the correct choice or number
    tolerance: float = 0.0


def _kl_answer(runs: dict) -> str:
    run = runs["KL-regularized"]
    beta = run.conventions.beta
    best = torch.zeros_like(run.rewards)
    best[int(run.rewards.argmax())] = 1.0
    return nearest_choice(run.probs[-1], {
        "all mass on the best response": best,
        "the reference reweighted by exp(r/β), normalised": optimal_policy_of(run, beta),
        "back where it started (the reference)": run.ref_probs,
    })


def optimal_policy_of(run: PlaygroundRun, beta: float) -> torch.Tensor:
    """lab.dpo.optimal_policy for the run's reference and rewards."""
    from lab.dpo import optimal_policy

    return optimal_policy(run.ref_probs, run.rewards, beta)


def _ppo_answer(runs: dict) -> str:
    r = runs["PPO (clipped)"].ratios[0][:, 0]
    return "it stops just past 1 + ε" if float(r[-1] - r[-2]) == 0.0 else "it keeps growing, like the unclipped one"


def _dpo_answer(runs: dict) -> str:
    p = runs["DPO"].probs[:, 0]
    return "it falls" if float(p[-1]) < float(p[0]) else "it rises"


def _nosignal_answer(runs: dict) -> str:
    run = runs["GRPO"]
    moved = total_variation(run.probs[-1], run.probs[0])
    return "not at all" if moved == 0.0 else ("a little" if moved < 0.05 else "a lot")


def _length_answer(runs: dict) -> float:
    w = length_weights([1, 4], "bnpo")
    return float(w[1] / w[0])


def _gae_answer(runs: dict) -> str:
    s = gae_sweep(sequence_task("steps", 2, 4), [1.0, 0.0])
    return "it falls" if s["variance"][1] < s["variance"][0] else "it rises"


PRESETS: dict[str, Preset] = {
    "kl": Preset(
        "KL-regularized convergence",
        "Maximising E[r] − β·KL(π‖π_ref) by exact gradient ascent drives the policy to a fixed point. "
        "That point is the closed-form optimum π_ref·exp(r/β)/Z [ftip-003O], not the greedy best response.",
        "With β = 0.5, where does the policy end up after 200 exact steps?",
        ("all mass on the best response", "the reference reweighted by exp(r/β), normalised", "back where it started (the reference)"),
        dict(policy="bandit", rewards="1, 0.5, 0", init="0.2, 0.3, 0.5", variants=["KL-regularized"], exact=True, steps=200, lr=2.0, beta=0.5),
        _kl_answer,
    ),
    "ppo": Preset(
        "PPO trust region",
        "PPO reuses one sampled batch for several epochs; the clipped surrogate gives zero gradient to a "
        "positive-advantage action once its ratio passes 1 + ε [ftip-003F]. Without the clip the same batch keeps pushing the ratio up.",
        "Twelve epochs on one batch with ε = 0.2: what happens to the rewarded action's ratio under clipping?",
        ("it stops just past 1 + ε", "it keeps growing, like the unclipped one"),
        dict(policy="bandit", rewards="1, 0", init="0.5, 0.5", variants=["PPO (clipped)", "PPO (no clip)"], exact=True, steps=1, lr=0.5, epochs=12),
        _ppo_answer,
    ),
    "dpo": Preset(
        "DPO's falling chosen probability",
        "DPO only rewards the margin between chosen and rejected relative to the reference [ftip-003R]. "
        "When the two share parameters, the rejected response can fall faster than the chosen one, and mass moves to a third outcome (the overview's three-outcome example: 0.40 → 0.30, loss 0.693 → 0.511).",
        "The DPO loss falls every step. What happens to the chosen response's probability?",
        ("it rises", "it falls"),
        dict(policy="dpo3", variants=["DPO"], exact=True, steps=40, lr=0.5, beta=1.0),
        _dpo_answer,
    ),
    "nosignal": Preset(
        "No signal, no update",
        "GRPO's advantage is a reward minus its group mean [ftip-004D]: when every member of a group earns the same, every advantage is zero. "
        "Whatever the scaling, std divisor or loss type, the gradient is then exactly zero.",
        "Every response earns reward 1. How far does GRPO move the policy in 20 steps?",
        ("not at all", "a little", "a lot"),
        dict(policy="sequence", task="constant", variants=["GRPO", "GRPO (bnpo)", "GRPO (dr_grpo)"], exact=False, steps=20, lr=1.0),
        _nosignal_answer,
    ),
    "length": Preset(
        "Length weighting",
        "GRPO's loss types aggregate token losses differently [ftip-004J]: 'grpo' averages within each response, so every response counts the same; "
        "'bnpo'/'dapo' average over all tokens, so a long response counts in proportion to its length, and 'dr_grpo' divides by a constant.",
        "Under 'bnpo', how many times the weight of a 1-token response does a 4-token response get?",
        None,
        dict(policy="sequence", task="short_or_long", length=4, variants=["GRPO", "GRPO (bnpo)", "GRPO (dr_grpo)"], exact=False, steps=30, lr=1.0),
        _length_answer,
        0.01,
    ),
    "gae": Preset(
        "GAE bias and variance",
        "GAE mixes n-step estimates with weight λ [ftip-003E]: λ = 1 uses the sampled return (no bias from the value estimate, high variance), "
        "λ = 0 the one-step TD residual (low variance, biased by the value error).",
        "With a noisy value estimate, what happens to the variance of the advantage as λ goes from 1 to 0?",
        ("it falls", "it rises", "it stays the same"),
        dict(policy="sequence", task="steps", length=4, variants=["REINFORCE", "PPO (clipped)"], exact=False, steps=30, lr=0.5,
             advantage="gae", lam=0.5, value_noise=0.5),
        _gae_answer,
    ),
}
