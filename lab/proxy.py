"""Proxy optimization and reward failures: best-of-N, over-optimization curves, length drift.

Reference: the overview's "Proxy optimization and reward failures" section (its sources [13], [38],
[44], [45]). A proxy is a measurable stand-in for the goal; optimizing it harder can raise the proxy
while the independently assessed ("gold") score peaks and falls. The overview states this without
numbers; the formulas below are from Gao, Schulman and Hilton 2022, "Scaling Laws for Reward Model
Overoptimization" (§2–3), and every number the lab shows with them is the lab's own illustration.

Conventions: d = √KL(π ‖ π_init) in nats^½ is the "distance" axis Gao et al. plot against. Best-of-N
draws N samples *with replacement* from the starting policy and keeps the highest-proxy one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Sequence

import torch

from lab._checks import TensorLike, as_tensor, check_finite, check_pmf, check_positive
from lab.dpo import optimal_policy
from lab.kl import kl_divergence


def _vector(x: TensorLike, name: str) -> torch.Tensor:
    t = as_tensor(x, name)
    if not t.is_floating_point():
        t = t.to(torch.float64)
    check_finite(t, name)
    if t.dim() != 1 or t.numel() == 0:
        raise ValueError(f"{name} must be a non-empty vector; got shape {tuple(t.shape)}")
    return t.detach().to(torch.float64)


def _check_n(n: int, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{name} must be an integer >= 1; got {n!r}")
    return n


def best_of_n_kl(n: int) -> float:
    """KL(π_BoN ‖ π_init) = log N − (N−1)/N for best-of-N with a continuous score
    [Gao et al. 2022, §2.2; derived in Stiennon et al. 2020, App. G.3].

    Why: the pick's quantile u = F(score) has density N·u^{N−1}, so the KL is E[log(N·u^{N−1})] =
    log N + (N−1)·E[log u] = log N − (N−1)/N. Ties in the score make the true KL smaller.
    """
    n = _check_n(n)
    return math.log(n) - (n - 1) / n


def best_of_n_distribution(proxy: TensorLike, n: int) -> torch.Tensor:
    """Exact probability that each of M equally likely candidates is the best-of-N pick.

    ``proxy`` (M,): the proxy score of each candidate of the starting policy (each drawn with
    probability 1/M). With candidates ranked by proxy (rank j = 1 … M, ties share their block), the
    pick is at rank ≤ j with probability (j/M)^N, so P(rank j) = (j/M)^N − ((j−1)/M)^N; tied candidates
    split their block's probability equally. Returns (M,) in the input order.
    """
    p = _vector(proxy, "proxy")
    n = _check_n(n)
    m = p.numel()
    values, inverse = torch.unique(p, sorted=True, return_inverse=True)  # ascending distinct scores
    counts = torch.bincount(inverse, minlength=values.numel()).to(torch.float64)  # (U,)
    upper = torch.cumsum(counts, 0) / m  # P(score <= value)
    lower = upper - counts / m
    block = upper.pow(n) - lower.pow(n)  # (U,) probability that the pick has this score
    return (block / counts)[inverse]


@dataclass(frozen=True)
class BestOfNCurve:
    """Expected proxy and gold score of the best-of-N pick, for each N."""

    n: list[int]
    kl: list[float]  # analytic log N − (N−1)/N
    kl_exact: list[float]  # exact KL of the pick's distribution over the M candidates (≤ analytic with ties)
    proxy: list[float]  # expected proxy score of the pick
    gold: list[float]  # expected gold score of the pick

    @property
    def d(self) -> list[float]:
        """√KL of each N (analytic), Gao et al.'s horizontal axis."""
        return [math.sqrt(k) for k in self.kl]


def best_of_n_curve(proxy: TensorLike, gold: TensorLike, ns: Sequence[int]) -> BestOfNCurve:
    """Best-of-N selection with a proxy and a gold score [overview, "Proxy optimization …", [44]].

    ``proxy``, ``gold`` (M,): scores of M equally likely samples of the starting policy (one prompt).
    For each N, the expected proxy and gold score of the proxy-chosen sample, exactly (no sampling):
    more candidates always raise the expected proxy score; the gold score need not follow.
    """
    p, g = _vector(proxy, "proxy"), _vector(gold, "gold")
    if p.numel() != g.numel():
        raise ValueError(f"proxy and gold must score the same samples; got {p.numel()} and {g.numel()}")
    ns = [_check_n(k, "ns") for k in ns]
    if not ns:
        raise ValueError("ns must name at least one N")
    uniform = torch.full_like(p, 1.0 / p.numel())
    out = BestOfNCurve([], [], [], [], [])
    for k in ns:
        w = best_of_n_distribution(p, k)
        out.n.append(k)
        out.kl.append(best_of_n_kl(k))
        out.kl_exact.append(kl_divergence(w, uniform).item())
        out.proxy.append((w * p).sum().item())
        out.gold.append((w * g).sum().item())
    return out


GaoForm = Literal["bon", "rl"]


def gao_gold_score(d: TensorLike, alpha: float, beta: float, form: GaoForm = "bon") -> torch.Tensor:
    """Gold reward against d = √KL [Gao et al. 2022, §3, eq. 1–2], measured from the initial policy's score.

    ``"bon"``: R(d) = d (α − β d); ``"rl"``: R(d) = d (α − β log d) (with R(0) = 0).
    """
    x = as_tensor(d, "d")
    if not x.is_floating_point():
        x = x.to(torch.float64)
    check_finite(x, "d")
    if bool((x < 0).any()):
        raise ValueError("d must be >= 0 (a square root of a KL divergence)")
    for v, name in ((alpha, "alpha"), (beta, "beta")):
        if not math.isfinite(float(v)):
            raise ValueError(f"{name} must be finite; got {v}")
    if form == "bon":
        return x * (alpha - beta * x)
    if form == "rl":
        safe = torch.where(x > 0, x, torch.ones_like(x))  # d·log d → 0 as d → 0
        return torch.where(x > 0, x * (alpha - beta * torch.log(safe)), torch.zeros_like(x))
    raise ValueError(f"form must be one of ['bon', 'rl']; got {form!r}")


def fit_gao(d: TensorLike, gold: TensorLike, form: GaoForm = "bon") -> tuple[float, float]:
    """Least-squares α, β of :func:`gao_gold_score` to measured (d, gold − gold_at_d=0) points.

    Both forms are linear in (α, β): R = α·d − β·d² (bon) or R = α·d − β·d·log d (rl), so the fit is an
    ordinary least-squares solve. Needs at least two points with d > 0 (and, for ``"rl"``, d ≠ 1 somewhere).
    """
    x, y = _vector(d, "d"), _vector(gold, "gold")
    if x.numel() != y.numel():
        raise ValueError(f"d and gold must have the same length; got {x.numel()} and {y.numel()}")
    if bool((x < 0).any()):
        raise ValueError("d must be >= 0 (a square root of a KL divergence)")
    if form not in ("bon", "rl"):
        raise ValueError(f"form must be one of ['bon', 'rl']; got {form!r}")
    pos = x > 0
    if int(pos.sum()) < 2:
        raise ValueError("d must contain at least two points with d > 0 to fit two parameters")
    xp, yp = x[pos], y[pos]
    second = xp * xp if form == "bon" else xp * torch.log(xp)
    design = torch.stack([xp, -second], dim=1)  # (P, 2)
    if torch.linalg.matrix_rank(design).item() < 2:
        raise ValueError("d must take at least two distinct informative values (the fit is underdetermined)")
    sol = torch.linalg.lstsq(design, yp.unsqueeze(1)).solution.flatten()
    return sol[0].item(), sol[1].item()


@dataclass(frozen=True)
class OveroptimizationCurve:
    """The KL-regularized optimum of a proxy, swept over the optimization strength 1/β."""

    strength: list[float]  # 1/β: larger means optimizing the proxy harder
    kl: list[float]  # KL(π_β ‖ π_init), nats
    d: list[float]  # √KL
    proxy: list[float]  # E_π[proxy]
    gold: list[float]  # E_π[gold]

    @property
    def peak_index(self) -> int:
        return max(range(len(self.gold)), key=self.gold.__getitem__)

    def gao_fit(self, form: "GaoForm" = "rl") -> tuple[float, float, list[float]]:
        """Fit Gao et al.'s form to the gold gain over the first point; returns (α, β, fitted gold scores)."""
        base = self.gold[0]
        alpha, beta = fit_gao(self.d, [g - base for g in self.gold], form)
        return alpha, beta, [base + v for v in gao_gold_score(self.d, alpha, beta, form).tolist()]


def synthetic_proxy(gold: TensorLike, feature: TensorLike, bias: float, noise: TensorLike | None = None) -> torch.Tensor:
    """A proxy = gold + bias · feature (+ noise): a scorer with *structured* error, e.g. one that also
    pays for length. The lab's own illustration of a proxy with an exploitable direction."""
    g, f = _vector(gold, "gold"), _vector(feature, "feature")
    if g.numel() != f.numel():
        raise ValueError(f"gold and feature must have the same length; got {g.numel()} and {f.numel()}")
    if not math.isfinite(float(bias)):
        raise ValueError(f"bias must be finite; got {bias}")
    p = g + float(bias) * f
    if noise is not None:
        e = _vector(noise, "noise")
        if e.numel() != g.numel():
            raise ValueError(f"noise must have the length of gold ({g.numel()}); got {e.numel()}")
        p = p + e
    return p


def overoptimization_curve(
    init_probs: TensorLike, proxy: TensorLike, gold: TensorLike, strengths: Sequence[float]
) -> OveroptimizationCurve:
    """Optimize a proxy with the KL-regularized objective and watch the gold score.

    For each strength s = 1/β, the optimum π_β ∝ π_init · exp(proxy/β) (``lab.dpo.optimal_policy``,
    ftip-003O) is what RL with a KL penalty converges to; as s grows, E[proxy] rises monotonically while
    E[gold] can peak and fall: Goodhart's law in closed form [overview, "Proxy optimization …", [44][45]].
    """
    p, g = _vector(proxy, "proxy"), _vector(gold, "gold")
    init = _vector(init_probs, "init_probs")
    if not (p.numel() == g.numel() == init.numel()):
        raise ValueError(
            f"init_probs, proxy and gold must cover the same responses; got {init.numel()}, {p.numel()}, {g.numel()}"
        )
    check_pmf(init, "init_probs")
    out = OveroptimizationCurve([], [], [], [], [])
    for s in strengths:
        s = check_positive(s, "strengths")
        pi = optimal_policy(init, p, 1.0 / s)
        kl = max(kl_divergence(pi, init).item(), 0.0)  # rounding can give -1e-17
        out.strength.append(s)
        out.kl.append(kl)
        out.d.append(math.sqrt(kl))
        out.proxy.append((pi * p).sum().item())
        out.gold.append((pi * g).sum().item())
    return out


@dataclass(frozen=True)
class LengthDrift:
    """How much a preference margin tracks response length."""

    slope: float  # margin change per unit of length difference (OLS)
    intercept: float
    correlation: float  # Pearson correlation of margin and length difference (nan if either is constant)


def length_drift(margin: TensorLike, length_difference: TensorLike) -> LengthDrift:
    """Preference margin against response length [overview, "Proxy optimization …", [38]; Park et al. 2024].

    ``margin`` (N,): e.g. DPO's implicit reward margin of chosen over rejected; ``length_difference`` (N,):
    len(chosen) − len(rejected). A large positive slope means the objective pays for length itself.
    """
    y, x = _vector(margin, "margin"), _vector(length_difference, "length_difference")
    if x.numel() != y.numel():
        raise ValueError(f"margin and length_difference must have the same length; got {y.numel()} and {x.numel()}")
    if x.numel() < 2:
        raise ValueError("margin must hold at least two pairs to fit a slope")
    xc, yc = x - x.mean(), y - y.mean()
    sxx = (xc * xc).sum().item()
    # A constant x (max == min) has no slope; compare exactly, not sxx == 0 (float noise).
    if x.max().item() == x.min().item():
        raise ValueError("length_difference must vary across pairs to fit a slope")
    slope = (xc * yc).sum().item() / sxx
    syy = (yc * yc).sum().item()
    corr = (xc * yc).sum().item() / math.sqrt(sxx * syy) if y.max().item() != y.min().item() else float("nan")
    return LengthDrift(slope, y.mean().item() - slope * x.mean().item(), corr)


@dataclass(frozen=True)
class SyntheticExperiment:
    """A synthetic proxy/gold world and its over-optimization curve (the lab's own illustration)."""

    quality: torch.Tensor  # (M,) what the gold score pays for
    feature: torch.Tensor  # (M,) a nuisance direction, e.g. length, centred at 0
    proxy: torch.Tensor  # (M,) quality + bias · feature
    gold: torch.Tensor  # (M,) quality − harm · feature
    curve: OveroptimizationCurve

    def at(self, strength: float) -> OveroptimizationCurve:
        """The same world optimized at one strength 1/β (a one-point curve)."""
        init = torch.full_like(self.proxy, 1.0 / self.proxy.numel())
        return overoptimization_curve(init, self.proxy, self.gold, [strength])


def synthetic_experiment(
    n_responses: int = 2000,
    bias: float = 0.5,
    harm: float = 0.5,
    seed: int = 0,
    strengths: Sequence[float] | None = None,
) -> SyntheticExperiment:
    """A proxy that rises while the gold score peaks and falls, in milliseconds (the lab's own setup).

    M responses of a starting policy (uniform over them) have a bounded quality q ~ U(−√3, √3) and a
    heavy-tailed nuisance feature f ~ Exp(1) − 1 (think "extra length"). The gold score is
    q − harm·f; the proxy is q + bias·f, so it also pays for f. Mild optimization selects high q
    (both scores rise); strong optimization reaches the tail where f dominates, so the proxy keeps
    rising while gold falls. With the defaults the gold peak is near d = √KL ≈ 0.6–0.85 (seeds 0–9).
    """
    n = _check_n(n_responses, "n_responses")
    if n < 2 or n > 100_000:
        raise ValueError(f"n_responses must lie in [2, 100000]; got {n}")
    for v, name in ((bias, "bias"), (harm, "harm")):
        if not math.isfinite(float(v)):
            raise ValueError(f"{name} must be finite; got {v}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer; got {seed!r}")
    if strengths is None:
        strengths = [0.05 * 1.4**i for i in range(25)]
    gen = torch.Generator().manual_seed(seed)
    q = (torch.rand(n, generator=gen, dtype=torch.float64) * 2 - 1) * math.sqrt(3)  # (M,) unit variance
    f = torch.empty(n, dtype=torch.float64).exponential_(1.0, generator=gen) - 1.0  # (M,) mean 0
    gold = q - float(harm) * f
    prox = synthetic_proxy(q, f, float(bias))
    init = torch.full((n,), 1.0 / n, dtype=torch.float64)
    return SyntheticExperiment(q, f, prox, gold, overoptimization_curve(init, prox, gold, strengths))


def paired_length_drift(scores: TensorLike, feature: TensorLike) -> LengthDrift:
    """:func:`length_drift` over disjoint pairs (response i against response i + M/2): the score margin of
    each pair against its feature difference. For a linear score the slope is the score's pay per unit of
    feature, which is how the page contrasts a proxy with the gold score."""
    s, f = _vector(scores, "scores"), _vector(feature, "feature")
    if s.numel() != f.numel():
        raise ValueError(f"scores and feature must have the same length; got {s.numel()} and {f.numel()}")
    half = s.numel() // 2
    if half < 2:
        raise ValueError("scores must hold at least four responses (two pairs)")
    return length_drift(s[:half] - s[half : 2 * half], f[:half] - f[half : 2 * half])


# ----------------------------------------------------------------------------- measured curves (small runs)


@dataclass(frozen=True)
class MeasuredBestOfN:
    """Best-of-N measured on sampled completions: the proxy and gold score of the proxy's pick, per N,
    each with a percentile bootstrap interval over prompts."""

    n: list[int]
    kl: list[float]  # analytic log N − (N−1)/N (continuous proxy; ties make the true KL smaller)
    proxy: list[float]  # mean over prompts of the chosen sample's proxy score
    proxy_low: list[float]
    proxy_high: list[float]
    gold: list[float]  # mean over prompts of the chosen sample's gold score (e.g. the verifier's 0/1)
    gold_low: list[float]
    gold_high: list[float]
    n_prompts: int
    n_max: int  # samples drawn per prompt

    @property
    def d(self) -> list[float]:
        """√KL of each N (analytic)."""
        return [math.sqrt(k) for k in self.kl]

    @property
    def proxy_above(self) -> list[float]:
        """Upper error-bar lengths of the proxy curve."""
        return [h - m for h, m in zip(self.proxy_high, self.proxy)]

    @property
    def proxy_below(self) -> list[float]:
        return [m - lo for m, lo in zip(self.proxy, self.proxy_low)]

    @property
    def gold_above(self) -> list[float]:
        """Upper error-bar lengths of the gold curve."""
        return [h - m for h, m in zip(self.gold_high, self.gold)]

    @property
    def gold_below(self) -> list[float]:
        return [m - lo for m, lo in zip(self.gold, self.gold_low)]


def best_of_n_measured(
    proxy: TensorLike, gold: TensorLike, ns: Sequence[int] | None = None,
    n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0,
) -> MeasuredBestOfN:
    """Best-of-N over samples drawn once [overview, "Proxy optimization …", [44]; Gao et al. 2022, §2.2].

    ``proxy``, ``gold`` (P, M): scores of M samples of each of P prompts, in drawing order. For each N the pick
    is the proxy-best of the *first* N samples (the first of tied maxima), so every N reuses the same draws and
    the curve is monotone in what the proxy sees. ``ns=None`` takes 1, 2, 4, … up to M. Intervals resample
    prompts (``lab.evaluation.mean_interval``).
    """
    from lab.evaluation import mean_interval

    p, g = as_tensor(proxy, "proxy"), as_tensor(gold, "gold")
    p = p.to(torch.float64) if p.dtype == torch.bool or not p.is_floating_point() else p.detach().to(torch.float64)
    g = g.to(torch.float64) if g.dtype == torch.bool or not g.is_floating_point() else g.detach().to(torch.float64)
    check_finite(p, "proxy")
    check_finite(g, "gold")
    if p.dim() != 2 or p.numel() == 0:
        raise ValueError(f"proxy must be a non-empty (prompts, samples) matrix; got shape {tuple(p.shape)}")
    if g.shape != p.shape:
        raise ValueError(f"gold must have the shape of proxy {tuple(p.shape)}; got {tuple(g.shape)}")
    n_prompts, n_max = p.shape
    if ns is None:
        ns = [2**i for i in range(n_max.bit_length()) if 2**i <= n_max]
    ns = [_check_n(k, "ns") for k in ns]
    if not ns:
        raise ValueError("ns must name at least one N")
    if max(ns) > n_max:
        raise ValueError(f"ns must not exceed the samples drawn per prompt ({n_max}); got N = {max(ns)}")
    out = MeasuredBestOfN([], [], [], [], [], [], [], [], n_prompts, n_max)
    rows = torch.arange(n_prompts)
    for k in ns:
        pick = p[:, :k].argmax(-1)  # (P,) first maximum among the first k samples
        chosen_p, chosen_g = p[rows, pick], g[rows, pick]  # (P,)
        ip = mean_interval(chosen_p, n_resamples=n_resamples, confidence=confidence, seed=seed)
        ig = mean_interval(chosen_g, n_resamples=n_resamples, confidence=confidence, seed=seed)
        out.n.append(k)
        out.kl.append(best_of_n_kl(k))
        out.proxy.append(ip.mean_difference)
        out.proxy_low.append(ip.low)
        out.proxy_high.append(ip.high)
        out.gold.append(ig.mean_difference)
        out.gold_low.append(ig.low)
        out.gold_high.append(ig.high)
    return out


@dataclass(frozen=True)
class RunCurves:
    """Proxy and gold curves of a small run, read from its ledger (complete lines only)."""

    run: str  # the run directory
    algorithm: str
    eval_steps: list[int]  # steps of the eval records
    gold: list[float]  # eval/accuracy: the task's verifier, greedy on held-out prompts
    proxy: list[float]  # eval/proxy_reward: mean reward-model score of the same completions (nan where absent)
    eval_d: list[float]  # √KL of whole completions at each evaluation, where logged (nan otherwise); see run_curves
    steps: list[int]  # steps of the step records
    reward: list[float]  # the reward trained on (the proxy, with a reward model)
    reward_verifier: list[float]  # reward/verifier on the same samples (nan where absent)
    kl: list[float]  # the step's sequence-level KL to the reference, PPO's objective/kl (nan where absent)

    @property
    def has_proxy(self) -> bool:
        """True when at least one eval record carries eval/proxy_reward."""
        return any(v == v for v in self.proxy)

    @property
    def d(self) -> list[float]:
        """√KL per step record (nan where absent; a slightly negative k3 estimate counts as 0)."""
        return [math.sqrt(max(k, 0.0)) if k == k else float("nan") for k in self.kl]

    def gao_fit(self, form: GaoForm = "rl") -> tuple[list[float], list[float], float, float, list[float]]:
        """Gao et al.'s form fitted to the measured gold accuracy against √KL [Gao et al. 2022, §3, eq. 2 for RL]:
        ``(d, gold, α, β, fitted gold)`` over the eval records that have a sequence-level KL (``eval_d``). The gain is
        measured from the first such record's gold accuracy. Raises ``ValueError`` when fewer than three have one."""
        pts = [(d, g) for d, g in zip(self.eval_d, self.gold) if d == d and g == g]
        if len(pts) < 3:
            raise ValueError(f"run_dir: {self.run} has a sequence-level KL at {len(pts)} evaluations; Gao's fit needs at "
                             "least 3 (runs against --reward-model or the hackable checker log eval/kl; PPO logs objective/kl)")
        d, gold = [p[0] for p in pts], [p[1] for p in pts]
        alpha, beta = fit_gao(d, [g - gold[0] for g in gold], form)
        fitted = [gold[0] + v for v in gao_gold_score(d, alpha, beta, form).tolist()]
        return d, gold, alpha, beta, fitted


def _ledger_number(rec: dict, key: str) -> float:
    v = rec.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return float("nan")
    return float(v)


def run_curves(run_dir: str) -> RunCurves:
    """Steps, proxy reward and gold accuracy of a small run (``lab.smallrun``) from its ledger.

    - Eval records give ``eval/accuracy`` (gold) and ``eval/proxy_reward`` (proxy).
    - Step records give ``reward``, ``reward/verifier`` and ``objective/kl`` where logged.
    - d = √KL at each evaluation comes from the eval record's ``eval/kl``: the sequence-level KL to the starting
      policy, logged by runs against a proxy. Failing that it comes from the same step's ``objective/kl`` (PPO, also
      sequence-level), and step 0 counts as 0. GRPO's ``kl`` (a per-token mean of k3, logged only with
      ``--kl-beta``) is a different quantity and is not used.
    - A step or evaluation that appears twice, because a resume after a crash replayed it, counts once: the last
      record wins, as on the run charts.

    Only complete lines are read, so a run still writing its last line is fine. ``run_dir`` must be a lab run
    directory with a ledger.
    """
    from pathlib import Path

    from lab.smallrun.rundir import LEDGER, ChainLedger, RunDir

    if not isinstance(run_dir, (str, Path)):
        raise ValueError(f"run_dir must be a path; got {type(run_dir).__name__}")
    path = Path(run_dir)
    if not path.is_dir() or not RunDir.is_lab_run(path):
        raise ValueError(f"run_dir: {path} is not a lab run directory (no .lab-run marker)")
    if not (path / LEDGER).is_file():
        raise ValueError(f"run_dir: {path} has no {LEDGER}")
    records, _ = ChainLedger(path / LEDGER).read()
    config = next((r.get("config", {}) for r in records if r.get("type") == "config"), {})
    def last_per_step(kind: str) -> list[dict]:  # a replayed step's last record, in step order
        by_step = {r["step"]: r for r in records if r.get("type") == kind and isinstance(r.get("step"), int)}
        return [by_step[k] for k in sorted(by_step)]

    steps_rec, evals = last_per_step("step"), last_per_step("eval")
    kl_at = {r["step"]: _ledger_number(r, "objective/kl") for r in steps_rec}
    eval_kl = [_ledger_number(r, "eval/kl") if "eval/kl" in r else kl_at.get(r["step"], 0.0 if r["step"] == 0 else float("nan"))
               for r in evals]  # step 0 is the start: KL 0
    return RunCurves(
        run=str(path), algorithm=str(config.get("algorithm", "")),
        eval_steps=[r["step"] for r in evals],
        gold=[_ledger_number(r, "eval/accuracy") for r in evals],
        proxy=[_ledger_number(r, "eval/proxy_reward") for r in evals],
        eval_d=[math.sqrt(max(k, 0.0)) if k == k else float("nan") for k in eval_kl],
        steps=[r["step"] for r in steps_rec],
        reward=[_ledger_number(r, "reward") for r in steps_rec],
        reward_verifier=[_ledger_number(r, "reward/verifier") for r in steps_rec],
        kl=[_ledger_number(r, "objective/kl") for r in steps_rec],
    )


def proxy_runs(runs_dir: str) -> list[str]:
    """Names of the runs under ``runs_dir`` whose ledger's eval records carry ``eval/proxy_reward`` (trained against a
    reward model or the hackable checker), sorted. A missing ``runs_dir`` has none."""
    from pathlib import Path

    if not isinstance(runs_dir, (str, Path)):
        raise ValueError(f"runs_dir must be a path; got {type(runs_dir).__name__}")
    root = Path(runs_dir)
    if not root.is_dir():
        return []
    out = []
    for p in sorted(root.iterdir()):
        try:
            if (p / "ledger.jsonl").is_file() and run_curves(str(p)).has_proxy:
                out.append(p.name)
        except ValueError:  # not a lab run, or a ledger line that is not JSON: not listed
            continue
    return out
