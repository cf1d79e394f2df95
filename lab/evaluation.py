"""Evidence of adaptation gains: paired comparisons, pass@k, selective answering, retention.

Reference: the overview's "Evidence of adaptation gains" and "Behavioral gains and competing
requirements" sections (its sources [5], [48], [51], [55]). The overview states the principles and
gives no numbers: compare checkpoints on matched cases, report the uncertainty of the *paired*
difference (a bootstrap that resamples cases as pairs keeps each case's model-to-model relation;
correlated cases need a coarser sampling unit), report accuracy among answered requests beside
coverage, and measure retention separately from the specialisation gain.

Every function takes per-case scores of checkpoints evaluated on the *same* cases, in the same order.
Plain lists, ints and bools are accepted; bad input raises ``ValueError`` naming the argument.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

import torch

from lab._checks import TensorLike, as_tensor, check_finite


def _scores(x: TensorLike, name: str) -> torch.Tensor:
    """Per-case scores as a float64 vector (N,) with N >= 1."""
    t = as_tensor(x, name)
    if t.dtype == torch.bool or not t.is_floating_point():
        t = t.to(torch.float64)
    check_finite(t, name)
    if t.dim() != 1 or t.numel() == 0:
        raise ValueError(f"{name} must be a non-empty vector of per-case scores; got shape {tuple(t.shape)}")
    return t.detach().to(torch.float64)


def _unit_interval_open(value: float, name: str) -> float:
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie in (0, 1); got {value}")
    return value


@dataclass(frozen=True)
class BootstrapInterval:
    """A mean difference b − a with its percentile bootstrap interval."""

    mean_difference: float  # mean over cases of b_i − a_i
    low: float  # lower percentile bound
    high: float  # upper percentile bound
    confidence: float  # e.g. 0.95
    n_cases: int
    n_units: int  # sampling units resampled: cases, or clusters when cluster= is given
    n_resamples: int

    @property
    def above(self) -> float:
        """high − mean: the upper error-bar length."""
        return self.high - self.mean_difference

    @property
    def below(self) -> float:
        """mean − low: the lower error-bar length."""
        return self.mean_difference - self.low

    @property
    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of 0."""
        return self.low > 0 or self.high < 0


def paired_bootstrap(
    a: TensorLike,
    b: TensorLike,
    n_resamples: int = 10000,
    confidence: float = 0.95,
    seed: int = 0,
    cluster: Sequence[object] | None = None,
) -> BootstrapInterval:
    """Paired bootstrap interval of the mean difference ``b − a`` [overview, "Evidence of adaptation gains", [55]].

    ``a``, ``b`` (N,): per-case scores of the baseline and the candidate on the same N cases.
    Each resample draws N *cases* with replacement and keeps each case's pair (a_i, b_i) together,
    so a case that is hard for both checkpoints stays hard for both; the interval is the percentile
    interval of the resampled mean differences (Efron and Tibshirani 1993, ch. 13).

    ``cluster`` (N,): optional sampling unit per case (e.g. the source document of several questions).
    Then whole clusters are resampled, which widens the interval when cases within a cluster are
    correlated. The mean difference is the per-case mean either way.
    """
    a_t, b_t = _scores(a, "a"), _scores(b, "b")
    if a_t.numel() != b_t.numel():
        raise ValueError(f"a and b must score the same cases; got {a_t.numel()} and {b_t.numel()} cases")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 100:
        raise ValueError(f"n_resamples must be an integer >= 100; got {n_resamples!r}")
    if n_resamples > 1_000_000:
        raise ValueError(f"n_resamples must be <= 1000000; got {n_resamples}")
    confidence = _unit_interval_open(confidence, "confidence")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer; got {seed!r}")
    diff = b_t - a_t  # (N,)
    n = diff.numel()
    gen = torch.Generator().manual_seed(seed)
    if cluster is None:
        idx = torch.randint(0, n, (n_resamples, n), generator=gen)  # (R, N)
        means = diff[idx].mean(-1)  # (R,)
        units = n
    else:
        labels = list(cluster)
        if len(labels) != n:
            raise ValueError(f"cluster must give one label per case ({n}); got {len(labels)}")
        keys = {k: i for i, k in enumerate(dict.fromkeys(labels))}
        ids = torch.tensor([keys[k] for k in labels])  # (N,)
        units = len(keys)
        sums = torch.zeros(units, dtype=torch.float64).index_add_(0, ids, diff)  # (C,)
        counts = torch.zeros(units, dtype=torch.float64).index_add_(0, ids, torch.ones_like(diff))  # (C,)
        idx = torch.randint(0, units, (n_resamples, units), generator=gen)  # (R, C)
        means = sums[idx].sum(-1) / counts[idx].sum(-1)  # (R,) per-case mean of the resampled clusters
    alpha = 1.0 - confidence
    low = torch.quantile(means, alpha / 2).item()
    high = torch.quantile(means, 1 - alpha / 2).item()
    return BootstrapInterval(diff.mean().item(), low, high, confidence, n, units, n_resamples)


def mean_interval(
    scores: TensorLike, n_resamples: int = 10000, confidence: float = 0.95, seed: int = 0
) -> BootstrapInterval:
    """Percentile bootstrap interval of one checkpoint's mean score (unpaired), for comparison with
    :func:`paired_bootstrap`: two separate intervals that overlap can hide a difference that the paired
    interval shows clearly, because the case difficulty they share cancels only in the pairs."""
    s = _scores(scores, "scores")
    return paired_bootstrap(torch.zeros_like(s), s, n_resamples, confidence, seed)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct [Chen et al. 2021, §2.1, eq. 1].

    pass@k = 1 − C(n−c, k) / C(n, k), the probability that k samples drawn without replacement from
    the n contain at least one correct one. Computed as 1 − ∏_{i=n−c+1}^{n} (1 − k/i), which never
    forms the huge binomial coefficients, so it is stable for n in the thousands.
    """
    for value, name in ((n, "n"), (c, "c"), (k, "k")):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be an integer; got {value!r}")
    if n < 1:
        raise ValueError(f"n must be >= 1 (samples drawn); got {n}")
    if not 0 <= c <= n:
        raise ValueError(f"c must lie in [0, n={n}] (correct samples among n); got {c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must lie in [1, n={n}]; got {k}")
    if n - c < k:
        return 1.0  # every k-subset contains a correct sample
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


@dataclass(frozen=True)
class SelectiveMetrics:
    """Coverage and accuracy among answered requests, with the risk–coverage curve."""

    coverage: float  # fraction of requests answered
    selective_accuracy: float  # accuracy among answered requests (nan when none answered)
    overall_accuracy: float  # correct answers over all requests (an abstention counts as not correct)
    thresholds: list[float]  # confidence thresholds of the curve, high to low
    curve_coverage: list[float]  # coverage when answering only at confidence >= threshold
    curve_risk: list[float]  # error rate among those answered (1 − selective accuracy)


def selective_metrics(
    correct: TensorLike, answered: TensorLike, confidence: TensorLike | None = None
) -> SelectiveMetrics:
    """Coverage, accuracy among answered, and the risk–coverage curve [overview, "Behavioral gains …", [5]].

    ``correct`` (N,) 0/1: the answer would be correct; ``answered`` (N,) 0/1: the model answered rather
    than abstained. Fewer wrong answers can just mean fewer answers, so both numbers are reported.
    ``confidence`` (N,): optional score; the curve answers only cases with confidence ≥ t for every
    distinct t (El-Yaniv and Wiener 2010's risk–coverage curve), among the cases that answered.
    """
    c = _scores(correct, "correct")
    ans = _scores(answered, "answered")
    for t, name in ((c, "correct"), (ans, "answered")):
        if not bool(((t == 0) | (t == 1)).all()):
            raise ValueError(f"{name} must contain only 0/1 (or False/True)")
    if c.numel() != ans.numel():
        raise ValueError(f"correct and answered must cover the same cases; got {c.numel()} and {ans.numel()}")
    n = c.numel()
    n_ans = int(ans.sum().item())
    coverage = n_ans / n
    sel_acc = (c * ans).sum().item() / n_ans if n_ans else float("nan")
    overall = (c * ans).sum().item() / n
    thresholds: list[float] = []
    cov: list[float] = []
    risk: list[float] = []
    if confidence is not None:
        conf = _scores(confidence, "confidence")
        if conf.numel() != n:
            raise ValueError(f"confidence must give one score per case ({n}); got {conf.numel()}")
        for t in sorted(set(conf[ans == 1].tolist()), reverse=True):
            keep = (ans == 1) & (conf >= t)
            k = int(keep.sum().item())
            thresholds.append(float(t))
            cov.append(k / n)
            risk.append(1.0 - c[keep].sum().item() / k)
    return SelectiveMetrics(coverage, sel_acc, overall, thresholds, cov, risk)


def minimum_detectable_effect(n: int, sd_diff: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest mean paired difference a two-sided test detects with the given power.

    MDE = (z_{1−α/2} + z_{power}) · sd_diff / √n, the normal approximation for a paired design
    (Cohen 1988, ch. 2). ``sd_diff`` is the standard deviation of the per-case differences b_i − a_i.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"n must be an integer >= 2 (cases); got {n!r}")
    sd = float(sd_diff)
    if not (sd >= 0 and math.isfinite(sd)):
        raise ValueError(f"sd_diff must be >= 0 and finite; got {sd_diff!r}")
    alpha = _unit_interval_open(alpha, "alpha")
    power = _unit_interval_open(power, "power")
    z = NormalDist()
    return (z.inv_cdf(1 - alpha / 2) + z.inv_cdf(power)) * sd / math.sqrt(n)


@dataclass(frozen=True)
class Retention:
    """Old-task score before and after further training."""

    before: float  # mean old-task score of the starting checkpoint
    after: float  # mean old-task score after adaptation
    change: float  # after − before (negative: forgetting)
    retained_fraction: float  # after / before (nan when before is 0)


def retention(before: TensorLike, after: TensorLike) -> Retention:
    """Retention on a held-out old-task set [overview, "Behavioral gains …", catastrophic forgetting, [48]].

    ``before``, ``after`` (N,): per-case old-task scores of the starting and the adapted checkpoint on the
    same cases. A specialisation gain elsewhere says nothing about this number: measure it separately.
    """
    b, a = _scores(before, "before"), _scores(after, "after")
    if b.numel() != a.numel():
        raise ValueError(f"before and after must score the same cases; got {b.numel()} and {a.numel()}")
    mb, ma = b.mean().item(), a.mean().item()
    return Retention(mb, ma, ma - mb, ma / mb if mb != 0 else float("nan"))


BOUNDED_CLAIM = (
    "Checkpoint {candidate_id}, compared with {baseline_id}, changed {metric} by {difference} "
    "({confidence:.0%} paired bootstrap interval {low} to {high}) across {n_cases} independent cases from "
    "{population}, under {conditions}. Retention on {old_task}: {retention_change}. Not assessed: {exclusions}."
)


def bounded_claim(
    candidate_id: str,
    baseline_id: str,
    metric: str,
    interval: BootstrapInterval,
    population: str,
    conditions: str,
    old_task: str,
    retention_result: Retention | None,
    exclusions: str,
) -> str:
    """Fill the overview's bounded-claim template [overview, "Boundaries of an alignment claim", [51][55]]
    with measured values only: the difference and interval from :func:`paired_bootstrap`, the case count,
    and retention from :func:`retention` ("not measured" when absent, never assumed)."""
    for value, name in (
        (candidate_id, "candidate_id"), (baseline_id, "baseline_id"), (metric, "metric"),
        (population, "population"), (conditions, "conditions"), (old_task, "old_task"), (exclusions, "exclusions"),
    ):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} must be a non-empty string")
    if not isinstance(interval, BootstrapInterval):
        raise ValueError("interval must be a BootstrapInterval from paired_bootstrap")
    ret = "not measured" if retention_result is None else f"{retention_result.change:+.3f}"
    return BOUNDED_CLAIM.format(
        candidate_id=candidate_id, baseline_id=baseline_id, metric=metric,
        difference=f"{interval.mean_difference:+.3f}", confidence=interval.confidence,
        low=f"{interval.low:+.3f}", high=f"{interval.high:+.3f}", n_cases=interval.n_cases,
        population=population, conditions=conditions, old_task=old_task, retention_change=ret, exclusions=exclusions,
    )


@dataclass(frozen=True)
class PassAtKCurve:
    """Mean pass@k over cases with a bootstrap interval over cases, for each k."""

    k: list[int]
    mean: list[float]
    low: list[float]
    high: list[float]

    @property
    def above(self) -> list[float]:
        return [h - m for h, m in zip(self.high, self.mean)]

    @property
    def below(self) -> list[float]:
        return [m - lo for m, lo in zip(self.mean, self.low)]


def pass_at_k_curve(
    n: TensorLike, c: TensorLike, ks: Sequence[int] | None = None, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> PassAtKCurve:
    """Mean unbiased pass@k over cases [Chen et al. 2021, §2.1], with a percentile bootstrap interval that
    resamples *cases* (the uncertainty that matters when the case set is a sample of a population).

    ``n`` (N,): samples drawn per case; ``c`` (N,): correct samples per case. Every k must be ≤ min(n);
    ``ks=None`` takes 1, 2, 3, 5, 10, 20, 50, 100 up to min(n), and min(n) itself.
    """
    n_t, c_t = _scores(n, "n"), _scores(c, "c")
    if n_t.numel() != c_t.numel():
        raise ValueError(f"n and c must give one count per case; got {n_t.numel()} and {c_t.numel()}")
    if bool((n_t != n_t.round()).any()) or bool((c_t != c_t.round()).any()):
        raise ValueError("n and c must be whole numbers (sample counts)")
    if bool((c_t < 0).any()) or bool((c_t > n_t).any()) or bool((n_t < 1).any()):
        raise ValueError("c must lie in [0, n] and n must be >= 1 for every case")
    n_min = int(n_t.min().item())
    ks = sorted({k for k in (1, 2, 3, 5, 10, 20, 50, 100) if k <= n_min} | {n_min}) if ks is None else list(ks)
    if not ks:
        raise ValueError("ks must name at least one k")
    per_case = []
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n_min:
            raise ValueError(f"ks must be integers in [1, min(n)={n_min}]; got {k!r}")
        per_case.append([pass_at_k(int(a), int(b), k) for a, b in zip(n_t.tolist(), c_t.tolist())])
    out = PassAtKCurve([], [], [], [])
    for k, vals in zip(ks, per_case):
        iv = mean_interval(vals, n_resamples=n_resamples, confidence=confidence, seed=seed)
        out.k.append(k)
        out.mean.append(iv.mean_difference)
        out.low.append(iv.low)
        out.high.append(iv.high)
    return out


MAX_TABLE_ROWS = 100_000


def read_score_table(text: str, max_rows: int = MAX_TABLE_ROWS) -> dict[str, list[float]]:
    """Per-case scores from CSV text: a header row of column names, then one row per case.

    Every cell must be a finite number (0/1, true/false and yes/no count as numbers), except in a column
    named ``cluster``, which is kept as text. A bad cell raises ``ValueError`` naming its row and column.
    """
    import csv
    import io

    if not isinstance(text, str):
        raise ValueError("text must be CSV text")
    rows = list(csv.reader(io.StringIO(text)))
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if len(rows) < 2:
        raise ValueError("text must have a header row and at least one case")
    if len(rows) - 1 > max_rows:
        raise ValueError(f"text has {len(rows) - 1} cases; at most {max_rows} are accepted")
    header = [h.strip() for h in rows[0]]
    if any(not h for h in header) or len(set(header)) != len(header):
        raise ValueError(f"text's header must name every column once; got {header}")
    words = {"true": 1.0, "false": 0.0, "yes": 1.0, "no": 0.0}
    cols: dict[str, list] = {h: [] for h in header}
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise ValueError(f"text row {i} has {len(row)} cells; the header has {len(header)}")
        for h, cell in zip(header, row):
            cell = cell.strip()
            if h == "cluster":
                cols[h].append(cell)
                continue
            try:
                v = words[cell.lower()] if cell.lower() in words else float(cell)
            except ValueError:
                raise ValueError(f"text row {i}, column {h!r}: {cell[:20]!r} is not a number") from None
            if not math.isfinite(v):
                raise ValueError(f"text row {i}, column {h!r}: {cell[:20]!r} is not finite")
            cols[h].append(v)
    return cols


def synthetic_comparison(n_cases: int = 200, gain: float = 0.08, samples: int = 10, seed: int = 0) -> dict[str, list]:
    """Per-case results of two checkpoints on the same cases (the lab's own illustration, not data).

    Each case has a difficulty shared by both checkpoints, so their scores are correlated: exactly the
    situation where a paired interval is much narrower than two separate ones. Columns: ``baseline`` and
    ``candidate`` (0/1 greedy correctness), ``n`` and ``c_baseline`` / ``c_candidate`` (samples and correct
    samples, for pass@k), ``confidence`` (the candidate's confidence), ``old_before`` / ``old_after``
    (0/1 on an old task, for retention) and ``cluster`` (the source document: 10 cases each).
    """
    if isinstance(n_cases, bool) or not isinstance(n_cases, int) or not 2 <= n_cases <= 10_000:
        raise ValueError(f"n_cases must be an integer in [2, 10000]; got {n_cases!r}")
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= 100:
        raise ValueError(f"samples must be an integer in [1, 100]; got {samples!r}")
    gain = float(gain)
    if not -1.0 <= gain <= 1.0:
        raise ValueError(f"gain must lie in [-1, 1]; got {gain}")
    gen = torch.Generator().manual_seed(seed)
    skill = torch.randn(n_cases, generator=gen, dtype=torch.float64) * 1.5  # (N,) per-case ease, shared
    p_base = torch.sigmoid(skill)
    p_cand = (p_base + gain).clamp(0.0, 1.0)  # the lab's illustrative gain in solve probability
    u = torch.rand(n_cases, generator=gen, dtype=torch.float64)  # common random numbers: paired outcomes
    base = (u < p_base).double()
    cand = (u < p_cand).double()
    draws = torch.rand(n_cases, samples, generator=gen, dtype=torch.float64)
    c_base = (draws < p_base.unsqueeze(1)).sum(1).double()
    c_cand = (draws < p_cand.unsqueeze(1)).sum(1).double()
    conf = (p_cand + 0.15 * torch.randn(n_cases, generator=gen, dtype=torch.float64)).clamp(0.0, 1.0)
    old_u = torch.rand(n_cases, generator=gen, dtype=torch.float64)
    old_before = (old_u < 0.8).double()
    old_after = (old_u < 0.74).double()  # some forgetting
    return {
        "baseline": base.tolist(), "candidate": cand.tolist(), "n": [float(samples)] * n_cases,
        "c_baseline": c_base.tolist(), "c_candidate": c_cand.tolist(), "confidence": conf.tolist(),
        "old_before": old_before.tolist(), "old_after": old_after.tolist(),
        "cluster": [f"doc{i // 10}" for i in range(n_cases)],
    }


def abstain_below(confidence: TensorLike, threshold: float) -> torch.Tensor:
    """An abstaining variant: answer (1) when confidence ≥ threshold, abstain (0) otherwise."""
    conf = _scores(confidence, "confidence")
    t = float(threshold)
    if not math.isfinite(t):
        raise ValueError(f"threshold must be finite; got {threshold}")
    return (conf >= t).double()
