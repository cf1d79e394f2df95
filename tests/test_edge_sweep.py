"""Generated edge-case sweep over every public function of the formula modules (issue 10 §1).

For each public function of lab.sft, lab.preference, lab.rl, lab.kl, lab.ppo, lab.dpo and lab.grpo
(enumerated with ``inspect``: a new public function without an entry in SPECS fails
``test_every_public_function_is_swept``) the sweep builds near-degenerate calls:

- the plain call with lists, float64 and float32 tensors, integer and boolean tensors;
- NaN, +inf and -inf at an active position of every numeric argument;
- empty inputs and mismatched shapes;
- masked positions holding 0, -1e4, -100, -inf, +inf or NaN (value and gradient must not change);
- near-constant groups (equal values plus float noise 1e-17 .. 1e-9) and huge logits (1e4).

Each call must end in a ``ValueError`` whose message names one of the expected arguments, or in a
result equal to a reference computed independently here in plain Python float64 (``math`` and exact
``fractions``, no torch). The sweep counts silent NaN, silent wrong values, unrelated exceptions
(anything but ValueError, or a message naming no argument) and refusals of valid input; all must be 0.
"""

from __future__ import annotations

import inspect
import math
import re
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

import pytest
import torch

import lab.dpo
import lab.grpo
import lab.kl
import lab.ppo
import lab.preference
import lab.rl
import lab.sft
from lab.preference import Comparison, Observation
from lab.sft import Segment
from tests.edge_sweep_page_functions import spec_page_functions

MODULES = (lab.sft, lab.preference, lab.rl, lab.kl, lab.ppo, lab.dpo, lab.grpo)
NAN, INF = float("nan"), float("inf")
FILLERS = (0.0, -1e4, -100.0, -INF, INF, NAN)
NOISE = (1e-17, 1e-15, 1e-12, 1e-9)


def public_functions() -> dict[str, Callable]:
    out = {}
    for mod in MODULES:
        for name, obj in inspect.getmembers(mod, inspect.isfunction):
            if not name.startswith("_") and obj.__module__ == mod.__name__:
                out[f"{mod.__name__}.{name}"] = obj
    return out


# ---------------------------------------------------------------- the case record and the checker


@dataclass
class Raises:
    """The call must raise ValueError naming one of ``names``."""

    names: tuple[str, ...]


@dataclass
class Case:
    fn: str
    label: str
    kwargs: dict
    expect: Any  # a reference value, Raises, or a predicate (callable on the projected result)
    rtol: float = 1e-9
    atol: float = 1e-10
    grad: tuple[str, list] | None = None  # (argument, masked index tuples): gradient finite and 0 there
    allow_empty: bool = False  # an all-empty call may also return an empty result


def to_py(x):
    """Project results onto plain Python: tensors → lists, dataclasses → their fields, tuples kept."""
    if isinstance(x, torch.Tensor):
        return x.detach().double().tolist()
    if isinstance(x, (tuple, list)):
        return tuple(to_py(v) for v in x) if isinstance(x, tuple) else [to_py(v) for v in x]  # NamedTuples → tuples
    if isinstance(x, dict):
        return {k: to_py(v) for k, v in x.items()}
    if isinstance(x, lab.grpo.DynamicSamplingResult):
        return {"kept": x.kept_groups, "dropped": x.dropped_groups, "keep": to_py(x.keep_mask)}
    if isinstance(x, lab.sft.MaskedBatch):
        return {"tokens": x.tokens, "roles": x.roles, "attn": to_py(x.attention_mask), "loss": to_py(x.loss_mask)}
    if isinstance(x, Observation):
        return (x.prompt, x.chosen, x.rejected, x.judge, x.weight)
    return x


def has_nan(x) -> bool:
    if isinstance(x, float):
        return x != x
    if isinstance(x, (list, tuple)):
        return any(has_nan(v) for v in x)
    if isinstance(x, dict):
        return any(has_nan(v) for v in x.values())
    return False


def close(got, want, rtol, atol) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and set(got) == set(want) and all(close(got[k], want[k], rtol, atol) for k in want)
    if isinstance(want, (list, tuple)):
        return isinstance(got, (list, tuple)) and len(got) == len(want) and all(close(g, w, rtol, atol) for g, w in zip(got, want))
    if isinstance(want, float) or isinstance(got, float):
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            return False
        got, want = float(got), float(want)
        if math.isinf(want) or math.isinf(got):
            return got == want
        return abs(got - want) <= atol + rtol * abs(want)
    return got == want


def empty_result(x) -> bool:
    if isinstance(x, torch.Tensor):
        return x.numel() == 0
    if isinstance(x, tuple):
        return all(empty_result(v) for v in x)
    return False


def names_argument(msg: str, names) -> bool:
    return any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", msg) for n in names)


def scalar_of(out):
    """A scalar to differentiate: the sum of the first tensor output."""
    if isinstance(out, torch.Tensor):
        return out.sum()
    for v in out:
        if isinstance(v, torch.Tensor) and v.requires_grad:
            return v.sum()
    return None


def run_case(fn: Callable, case: Case, tally: dict, failures: list) -> None:
    kwargs = dict(case.kwargs)
    if case.grad is not None:
        arg = case.grad[0]
        kwargs[arg] = kwargs[arg].detach().clone().requires_grad_(True)
    try:
        out = fn(**kwargs)
    except ValueError as exc:
        msg = str(exc)
        if isinstance(case.expect, Raises):
            if names_argument(msg, case.expect.names):
                tally["value_error_named"] += 1
            else:
                tally["unrelated_exception"] += 1
                failures.append(f"{case.fn} [{case.label}]: ValueError names none of {case.expect.names}: {msg}")
        else:
            tally["refused_valid"] += 1
            failures.append(f"{case.fn} [{case.label}]: refused valid input: {msg}")
        return
    except Exception as exc:  # noqa: BLE001 - the point is to count these
        tally["unrelated_exception"] += 1
        failures.append(f"{case.fn} [{case.label}]: {type(exc).__name__}: {exc}")
        return
    got = to_py(out)
    if has_nan(got):
        tally["silent_nan"] += 1
        failures.append(f"{case.fn} [{case.label}]: silent NaN: {got}")
        return
    if isinstance(case.expect, Raises):
        if case.allow_empty and empty_result(out):
            tally["ok"] += 1
            return
        tally["silent_wrong"] += 1
        failures.append(f"{case.fn} [{case.label}]: returned {got} instead of a ValueError naming {case.expect.names}")
        return
    ok = case.expect(got) if callable(case.expect) else close(got, case.expect, case.rtol, case.atol)
    if not ok:
        tally["silent_wrong"] += 1
        failures.append(f"{case.fn} [{case.label}]: got {got}, reference {case.expect}")
        return
    if case.grad is not None:
        s = scalar_of(out)
        if s is not None:
            s.backward()
            g = kwargs[case.grad[0]].grad
            g = torch.zeros(()) if g is None else g
            if not bool(torch.isfinite(g).all()) or any(g.numel() and g[idx].item() != 0.0 for idx in case.grad[1]):
                tally["silent_nan" if bool(torch.isnan(g).any()) else "silent_wrong"] += 1
                failures.append(f"{case.fn} [{case.label}]: gradient at masked positions {g.tolist()}")
                return
    tally["ok"] += 1


# ---------------------------------------------------------------- generic variant generator


def t64(x):
    return torch.tensor(x, dtype=torch.float64)


def t32(x):
    return torch.tensor(x, dtype=torch.float32)


def round32(x):
    return torch.tensor(x, dtype=torch.float32).double().tolist()


def positions(x, prefix=()):
    """Index tuples of every leaf of a nested list."""
    if isinstance(x, list):
        out = []
        for i, v in enumerate(x):
            out += positions(v, prefix + (i,))
        return out
    return [prefix]


def set_at(x, idx, value):
    if not idx:
        return value
    y = list(x)
    y[idx[0]] = set_at(x[idx[0]], idx[1:], value)
    return y


def get_at(x, idx):
    for i in idx:
        x = x[i]
    return x


def numeric(
    fn: str,
    base: dict,
    ref: Callable[..., Any],
    floats: tuple[str, ...],
    mask: str | None = None,
    maskable: tuple[str, ...] = (),
    ok_values: dict | None = None,
    ints: dict | None = None,
    extra_bases: list | None = None,
    grad: str | None = None,
    mismatch: tuple[str, ...] | None = None,
    empty: bool = True,
    mask_can_be_empty: bool = False,
    f32: bool = True,
) -> list[Case]:
    """Variants of one numeric call. ``base`` holds Python lists; ``ref(**base)`` is the reference.

    ``floats``: the numeric arguments to convert and corrupt; ``mask``/``maskable``: the mask argument
    and the arguments whose masked positions may hold anything; ``ok_values``: {arg: values} that are
    legitimate at an active position (e.g. -inf logits), for which the reference is computed too.
    """
    ok_values = ok_values or {}
    cases: list[Case] = []
    names = tuple(floats) + ((mask,) if mask else ())

    def add(label, kw, expect, **k):
        cases.append(Case(fn, label, kw, expect, **k))

    for bi, b in enumerate([base] + list(extra_bases or [])):
        want = ref(**b)
        add(f"lists#{bi}", dict(b), want)
        add(f"f64#{bi}", {k: (t64(v) if k in floats else v) for k, v in b.items()}, want)
        if f32:
            b32 = {k: (round32(v) if k in floats else v) for k, v in b.items()}
            try:
                want32 = ref(**b32)
            except (OverflowError, ValueError):
                want32 = None
            if want32 is not None:
                add(f"f32#{bi}", {k: (t32(v) if k in floats else v) for k, v in b.items()}, want32, rtol=2e-5, atol=2e-5)
    for k, v in (ints or {}).items():
        kw = dict(base, **{k: v})
        want = ref(**kw)
        add(f"int-tensor {k}", dict(base, **{k: torch.tensor(v)}), want)
        flat = [get_at(v, p) for p in positions(v)]
        if all(x in (0, 1) for x in flat):
            add(f"bool-tensor {k}", dict(base, **{k: torch.tensor(v).bool()}), want)
    # NaN / inf at an active position of every numeric argument
    active_idx = None
    if mask:
        active_idx = next(p for p in positions(base[mask]) if get_at(base[mask], p) == 1)
    for k in floats:
        idx = active_idx if (active_idx is not None and k in maskable) else positions(base[k])[0]
        if isinstance(base[k], (int, float)):
            idx = ()
        for bad in (NAN, INF, -INF):
            kw = dict(base, **{k: t64(set_at(base[k], idx, bad))})
            if bad in ok_values.get(k, ()):
                try:
                    want = ref(**dict(base, **{k: set_at(base[k], idx, bad)}))
                except ValueError:
                    want = Raises((k,))
                add(f"{bad} in {k}", kw, want)
            else:
                add(f"{bad} in {k}", kw, Raises((k,) + ((mask,) if mask else ())))
    # masked fillers: value and gradient unchanged
    if mask:
        masked = [p for p in positions(base[mask]) if get_at(base[mask], p) == 0]
        want = ref(**base)
        for dt, tt, rt in ((torch.float64, t64, 1e-9), (torch.float32, t32, 2e-5)):
            if dt == torch.float32 and not f32:
                continue
            want_dt = want if dt == torch.float64 else ref(**{k: (round32(v) if k in floats else v) for k, v in base.items()})
            for filler in FILLERS:
                kw = dict(base)
                for k in maskable:
                    v = base[k]
                    for p in masked:
                        v = set_at(v, p, filler)
                    kw[k] = tt(v)
                for k in floats:
                    if k not in maskable:
                        kw[k] = tt(base[k])
                kw[mask] = torch.tensor(base[mask]).bool()
                add(f"masked {filler} {dt}", kw, want_dt, rtol=rt, atol=rt, grad=(grad, masked) if grad else None)
        add("mask int tensor", dict(base, **{mask: torch.tensor(base[mask])}), want)
        add("mask float list", dict(base, **{mask: [[float(x) for x in r] for r in base[mask]] if isinstance(base[mask][0], list) else [float(x) for x in base[mask]]}), want)
        add("mask holds 2", dict(base, **{mask: set_at(base[mask], active_idx, 2)}), Raises((mask,)))
        add("mask holds NaN", dict(base, **{mask: set_at(base[mask], active_idx, NAN)}), Raises((mask,)))
        zeros = base[mask]
        for p in positions(zeros):
            zeros = set_at(zeros, p, 0)
        if not mask_can_be_empty:
            add("mask all zero", dict(base, **{mask: zeros}), Raises((mask,)))
    # empty and mismatched shapes
    if empty:
        add("empty", dict(base, **{k: [] for k in floats}), Raises(names), allow_empty=True)
    for k in (mismatch if mismatch is not None else (floats if len(names) > 1 else ())):
        v = base[k]
        if isinstance(v, list) and v:
            longer = [row + [row[-1]] for row in v] if isinstance(v[0], list) else v + [v[-1]]
            add(f"mismatched {k}", dict(base, **{k: longer}), Raises(names))
    add("string input", dict(base, **{floats[0]: "abc"}), Raises((floats[0],)))
    return cases


# ---------------------------------------------------------------- independent Python references


def lse(xs):
    fin = [x for x in xs if x != -INF]
    m = max(fin)
    return m + math.log(sum(math.exp(x - m) for x in fin))


def sigmoid(x):
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def log_sigmoid(x):
    return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))


def k3(d):
    return math.expm1(d) - d


def ref_token_logprobs(logits, labels, ignore_index=None):
    out = []
    for rows, labs in zip(logits, labels):
        out.append([0.0 if y == ignore_index else row[y] - lse(row) for row, y in zip(rows, labs)])
    if any(o == -INF for r in out for o in r):
        raise ValueError("logits")
    return out


def ref_sft_weights(mask, normalization="token"):
    n = sum(sum(r) for r in mask)
    if normalization == "token":
        return [[m / n for m in r] for r in mask]
    if normalization == "sum":
        return [[float(m) for m in r] for r in mask]
    return [[m / (len(mask) * sum(r)) for m in r] for r in mask]


def ref_sft_loss(token_logps, mask, normalization="token"):
    w = ref_sft_weights(mask, normalization)
    return -sum(wi * x for wr, xr, mr in zip(w, token_logps, mask) for wi, x, m in zip(wr, xr, mr) if m)


def ref_returns(rewards, gamma):
    g, out = 0.0, []
    for r in reversed(rewards):
        g = r + gamma * g
        out.append(g)
    return out[::-1]


def ref_td(rewards, values, gamma, next_value=0.0):
    nxt = list(values[1:]) + [next_value]
    return [r + gamma * vn - v for r, v, vn in zip(rewards, values, nxt)]


def ref_gae(rewards, values, gamma, lam, next_value=0.0):
    d = ref_td(rewards, values, gamma, next_value)
    a, out = 0.0, []
    for x in reversed(d):
        a = x + gamma * lam * a
        out.append(a)
    adv = out[::-1]
    return (adv, [x + v for x, v in zip(adv, values)])


def ref_pg(logp, advantages, mask=None):
    mask = mask or [1] * len(logp)
    return sum(l * a for l, a, m in zip(logp, advantages, mask) if m) / sum(mask)


def ref_kl(p, q):
    if any(pi > 0 and qi == 0 for pi, qi in zip(p, q)):
        return INF
    return sum(pi * math.log(pi / qi) for pi, qi in zip(p, q) if pi > 0)


def ref_entropy(p):
    return -sum(x * math.log(x) for x in p if x > 0)


def ref_entropy_logits(logits):
    out = []
    for row in logits:
        z = lse(row)
        out.append(-sum(math.exp(x - z) * (x - z) for x in row if x != -INF))
    return out


def ref_kl_estimate(logp, ref_logp, kind="k3", mask=None, clamp=None, float32=False):
    mask = mask or [1] * len(logp)
    out = []
    for l, r, m in zip(logp, ref_logp, mask):
        d = (r - l) if m else 0.0
        v = -d if kind == "k1" else 0.5 * d * d if kind == "k2" else abs(d) if kind == "abs" else k3(d)
        out.append(v if clamp is None else max(-clamp, min(clamp, v)))
    return out


def clip(x, lo, hi):
    return min(max(x, lo), hi)


def ref_clipped(ratio, advantages, epsilon=0.2, epsilon_high=None):
    hi = epsilon if epsilon_high is None else epsilon_high
    return [min(r * a, clip(r, 1 - epsilon, 1 + hi) * a) for r, a in zip(ratio, advantages)]


def ref_clip_fractions(ratio, advantages, mask=None, epsilon=0.2, epsilon_high=None):
    hi = 1 + (epsilon if epsilon_high is None else epsilon_high)
    lo = 1 - epsilon
    rows = [(r, a) for r, a, m in zip(ratio, advantages, mask or [1] * len(ratio)) if m]
    low = sum(1 for r, a in rows if r < lo and a < 0) / len(rows)
    high = sum(1 for r, a in rows if r > hi and a > 0) / len(rows)
    return {"clip_ratio/low_mean": low, "clip_ratio/high_mean": high, "clip_ratio/region_mean": low + high}


def ref_ppo(logp, old_logp, advantages, mask, epsilon=0.2, epsilon_high=None, values=None, value_targets=None, c1=0.5,
            entropy=None, c2=0.0, clip_ratio_c=None, old_values=None, value_clip=None, log_ratio_clamp=None):
    hi = epsilon if epsilon_high is None else epsilon_high
    act = [(b, t) for b in range(len(mask)) for t in range(len(mask[0])) if mask[b][t]]
    n = len(act)
    lim = log_ratio_clamp if log_ratio_clamp is not None else INF
    lr = {bt: clip(logp[bt[0]][bt[1]] - old_logp[bt[0]][bt[1]], -lim, lim) for bt in act}
    ratio = {bt: math.exp(lr[bt]) for bt in act}
    A = {bt: advantages[bt[0]][bt[1]] for bt in act}
    terms = {bt: min(ratio[bt] * A[bt], clip(ratio[bt], 1 - epsilon, 1 + hi) * A[bt]) for bt in act}
    dual = 0
    if clip_ratio_c is not None:
        for bt in act:
            if A[bt] < 0 and terms[bt] < clip_ratio_c * A[bt]:
                terms[bt], dual = clip_ratio_c * A[bt], dual + 1
    surr = sum(terms.values()) / n
    obj = surr
    metrics = {"objective/clipped_surrogate": surr}
    if values is not None:
        sq = {(b, t): (values[b][t] - value_targets[b][t]) ** 2 for b, t in act}
        if value_clip is not None:
            sqc = {(b, t): (old_values[b][t] + clip(values[b][t] - old_values[b][t], -value_clip, value_clip) - value_targets[b][t]) ** 2
                   for b, t in act}
            metrics["vf_clipfrac"] = sum(1 for bt in act if sqc[bt] > sq[bt]) / n
            sq = {bt: max(sq[bt], sqc[bt]) for bt in act}
        vl = sum(sq.values()) / n
        obj -= c1 * vl
        metrics["loss/value"] = vl
    if entropy is not None:
        h = sum(entropy[b][t] for b, t in act) / n
        obj += c2 * h
        metrics["entropy"] = h
    lo_, hi_ = 1 - epsilon, 1 + hi
    low = sum(1 for bt in act if ratio[bt] < lo_ and A[bt] < 0) / n
    high = sum(1 for bt in act if ratio[bt] > hi_ and A[bt] > 0) / n
    metrics.update({"clip_ratio/low_mean": low, "clip_ratio/high_mean": high, "clip_ratio/region_mean": low + high})
    metrics["clipfrac"] = sum(1 for bt in act if not lo_ <= ratio[bt] <= hi_) / n
    if clip_ratio_c is not None:
        metrics["pg_clipfrac_lower"] = dual / n
    metrics["approx_kl"] = sum(k3(lr[bt]) for bt in act) / n
    return (obj, metrics)


def ref_kl_shaped(score, logp, ref_logp, beta, mask=None, per_token=False):
    if not isinstance(logp[0], list):
        return [s - beta * (l - r) for s, l, r in zip(score, logp, ref_logp)]
    mask = mask or [[1] * len(r) for r in logp]
    if not per_token:
        return [s - beta * sum(l - r for l, r, m in zip(lr, rr, mr) if m) for s, lr, rr, mr in zip(score, logp, ref_logp, mask)]
    out = []
    for s, lr, rr, mr in zip(score, logp, ref_logp, mask):
        row = [-beta * (l - r) if m else 0.0 for l, r, m in zip(lr, rr, mr)]
        last = max(i for i, m in enumerate(mr) if m)
        row[last] += s
        out.append(row)
    return out


def ref_optimal(ref_probs, rewards, beta):
    z = ref_log_partition(ref_probs, rewards, beta)
    return [math.exp(math.log(p) + r / beta - z) if p > 0 else 0.0 for p, r in zip(ref_probs, rewards)]


def ref_log_partition(ref_probs, rewards, beta):
    return lse([math.log(p) + r / beta if p > 0 else -INF for p, r in zip(ref_probs, rewards)])


def ref_dpo_parts(c, r, rc, rr, beta):
    lc = [a - b for a, b in zip(c, rc)]
    lr = [a - b for a, b in zip(r, rr)]
    return lc, lr, [beta * (x - y) for x, y in zip(lc, lr)]


def exact_group(xs, ddof):
    """(centred, std) of a group in exact rational arithmetic (only the sqrt rounds)."""
    fx = [Fraction(x) for x in xs]
    mu = sum(fx) / len(fx)
    dev = [x - mu for x in fx]
    scale = max(abs(d) for d in dev) or Fraction(1)
    var = sum((d / scale) ** 2 for d in dev) / (len(fx) - ddof)
    return dev, float(scale) * math.sqrt(float(var)), mu


def ref_group_advantages(rewards, group_size, scale="group", ddof=1, eps=1e-4, zero_std="zero"):
    groups = [rewards[i:i + group_size] for i in range(0, len(rewards), group_size)]
    out = []
    batch_sd = exact_group(rewards, ddof)[1]
    for g in groups:
        dev, sd, _ = exact_group(g, ddof)
        if max(g) == min(g):
            out += [0.0] * len(g)
            continue
        if scale == "none":
            out += [float(d) for d in dev]
        else:
            s = sd if scale == "group" else batch_sd
            out += [float(d) / (s + eps) for d in dev]
    return out


def ref_group_stats(rewards, group_size, ddof=1):
    groups = [rewards[i:i + group_size] for i in range(0, len(rewards), group_size)]
    stats = [exact_group(g, ddof) for g in groups]
    return ([float(s[2]) for s in stats], [s[1] for s in stats])


def ref_dynamic(rewards, group_size, target_groups=None):
    groups = [rewards[i:i + group_size] for i in range(0, len(rewards), group_size)]
    kept = [i for i, g in enumerate(groups) if max(g) > min(g)]
    dropped = [i for i, g in enumerate(groups) if max(g) == min(g)]
    if target_groups is not None:
        dropped = sorted(dropped + kept[target_groups:])
        kept = kept[:target_groups]
    return {"kept": kept, "dropped": dropped, "keep": [1.0 if i // group_size in kept else 0.0 for i in range(len(rewards))]}


def ref_overlong(lengths, max_length, buffer, penalty=1.0):
    start = max_length - buffer
    return [0.0 if L <= start else (start - L) / buffer * penalty if L <= max_length else -penalty for L in lengths]


def ref_aggregate(per_token_loss, mask, loss_type="grpo", max_completion_length=None, num_items_in_batch=None, drop_empty_rows=False):
    rows = [[x for x, m in zip(xr, mr) if m] for xr, mr in zip(per_token_loss, mask)]
    total = sum(sum(r) for r in rows)
    kept = [r for r in rows if r]
    if loss_type == "grpo":
        return sum(sum(r) / len(r) for r in kept) / len(kept)
    if loss_type == "seq-mean-token-sum":
        return sum(sum(r) for r in kept) / len(kept)
    if loss_type == "seq-mean-token-sum-norm":
        return total / (max_completion_length or len(per_token_loss[0]))
    if loss_type == "bnpo":
        return total / sum(len(r) for r in rows)
    if loss_type == "dr_grpo":
        return total / (len(rows) * (max_completion_length or len(per_token_loss[0])))
    return total / (num_items_in_batch or sum(len(r) for r in rows))


def ref_grpo(logps, old_logps, advantages, mask, ref_logps=None, beta=0.0, epsilon=0.2, epsilon_high=None, loss_type="grpo",
             max_completion_length=None, kl_bias_correction=False, num_items_in_batch=None):
    hi = epsilon if epsilon_high is None else epsilon_high
    per, kls, lows, highs = [], [], [], []
    for b in range(len(mask)):
        row = []
        for t in range(len(mask[0])):
            if not mask[b][t]:
                row.append(0.0)
                continue
            A = advantages[b][t] if isinstance(advantages[b], list) else advantages[b]
            rho = math.exp(logps[b][t] - old_logps[b][t])
            x = -min(rho * A, clip(rho, 1 - epsilon, 1 + hi) * A)
            if ref_logps is not None:
                kl = k3(ref_logps[b][t] - logps[b][t]) * (rho if kl_bias_correction else 1.0)
                kls.append(kl)
                x += beta * kl
            lows.append(1.0 if rho < 1 - epsilon and A < 0 else 0.0)
            highs.append(1.0 if rho > 1 + hi and A > 0 else 0.0)
            row.append(x)
        per.append(row)
    loss = ref_aggregate(per, mask, loss_type, max_completion_length, num_items_in_batch)
    n = len(lows)
    metrics = {"clip_ratio/low_mean": sum(lows) / n, "clip_ratio/high_mean": sum(highs) / n,
               "clip_ratio/region_mean": (sum(lows) + sum(highs)) / n}
    if ref_logps is not None:
        metrics["kl"] = sum(kls) / n
    return (loss, metrics)


def ref_process(step_rewards, step_ends, length, ddof=1, eps=0.0, zero_std="zero"):
    flat = [x for r in step_rewards for x in r]
    if max(flat) == min(flat):
        norm = [0.0] * len(flat)
    else:
        dev, sd, _ = exact_group(flat, ddof)
        norm = [float(d) / (sd + eps) for d in dev]
    out, k = [], 0
    for es in step_ends:
        row = [0.0] * length
        for j, e in enumerate(es):
            for t in range(e + 1):
                row[t] += norm[k + j]
        k += len(es)
        out.append(row)
    return out


# ---------------------------------------------------------------- per-function specs


def near_constant_groups(fn_name, make_kwargs, ref, group_size=3):
    """Equal groups plus float noise; exact 0 where max == min, the exact-fraction reference elsewhere."""
    cases = []
    for base in (0.1, 1.0, -3.7, 1e4):
        for noise in NOISE:
            patterns = ([0, 0, 0], [0, 1, 0], [1, -1, 0], [0, 0, 1])
            r = [base + p * noise for pat in patterns for p in pat]
            kw = make_kwargs(r)
            cases.append(Case(fn_name, f"near-constant {base}+{noise}", kw, ref(**kw), rtol=1e-9, atol=1e-12))
            kw = make_kwargs(torch.tensor(r, dtype=torch.float32))
            r32 = round32(r)
            cases.append(Case(fn_name, f"near-constant f32 {base}+{noise}", kw, ref(**make_kwargs(r32)), rtol=1e-4, atol=1e-6))
    return cases


def spec_sft():
    L = [[[0.5, -1.0, 2.0, 0.0], [1.0, 1.0, -3.0, 0.2], [0.0, 0.1, 0.2, 0.3]],
         [[2.0, 0.0, 0.0, 0.0], [-1.0, 3.0, 1.0, 0.5], [0.3, 0.3, 0.3, 0.3]]]
    labels = [[0, 2, 3], [1, 1, 0]]
    huge = [[[1e4, -1e4, 0.0, 1e4], [-1e4, 0.0, 0.0, 0.0], [1e4, 1e4, 1e4, 1e4]]]
    minus_inf = [[[0.0, -INF, 1.0, -INF], [-INF, -INF, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0]]]
    tl = numeric("lab.sft.token_logprobs", {"logits": L, "labels": labels}, ref_token_logprobs, ("logits",),
                 extra_bases=[{"logits": huge, "labels": [[0, 2, 3]]}, {"logits": minus_inf, "labels": [[2, 3, 1]]}],
                 ok_values={"logits": (-INF,)}, mismatch=())
    tl += [
        Case("lab.sft.token_logprobs", "label on a -inf logit", {"logits": minus_inf, "labels": [[1, 3, 1]]}, Raises(("logits",))),
        Case("lab.sft.token_logprobs", "ignored garbage rows", {"logits": t64(set_at(set_at(L, (0, 1, 0), NAN), (0, 1, 2), INF)),
                                                                "labels": [[0, -100, 3], [1, 1, 0]], "ignore_index": -100},
             ref_token_logprobs(L, [[0, -100, 3], [1, 1, 0]], -100), grad=("logits", [(0, 1, 0), (0, 1, 2)])),
        Case("lab.sft.token_logprobs", "label out of range", {"logits": L, "labels": [[0, 4, 3], [1, 1, 0]]}, Raises(("labels",))),
        Case("lab.sft.token_logprobs", "fractional label", {"logits": L, "labels": [[0, 1.5, 3], [1, 1, 0]]}, Raises(("labels",))),
        Case("lab.sft.token_logprobs", "labels shape", {"logits": L, "labels": [[0, 1], [1, 1]]}, Raises(("labels",))),
        Case("lab.sft.token_logprobs", "int labels tensor", {"logits": t32(L), "labels": torch.tensor(labels, dtype=torch.int32)},
             ref_token_logprobs(round32(L), labels), rtol=2e-5, atol=2e-5),
    ]
    sh = [
        Case("lab.sft.shift_for_next_token", "lists", {"logits": L, "input_ids": labels},
             ([[r[0], r[1]] for r in L], [r[1:] for r in labels])),
        Case("lab.sft.shift_for_next_token", "mismatch", {"logits": L, "input_ids": [[0, 1], [1, 1]]}, Raises(("logits", "input_ids"))),
        Case("lab.sft.shift_for_next_token", "one token", {"logits": [[[0.0, 1.0]]], "input_ids": [[1]]}, Raises(("input_ids",))),
        Case("lab.sft.shift_for_next_token", "empty", {"logits": [], "input_ids": []}, Raises(("logits", "input_ids"))),
    ]
    ex = [[Segment("user", ["a", "b"]), Segment("assistant", ["c"])], [Segment("user", ["d"]), Segment("assistant", ["e", "f"])]]
    lm = [
        Case("lab.sft.loss_mask", "completion", {"examples": ex},
             {"tokens": [["a", "b", "c"], ["d", "e", "f"]], "roles": [["user", "user", "assistant"], ["user", "assistant", "assistant"]],
              "attn": [[1.0] * 3, [1.0] * 3], "loss": [[0.0, 0.0, 1.0], [0.0, 1.0, 1.0]]}),
        Case("lab.sft.loss_mask", "no examples", {"examples": []}, Raises(("examples",))),
        Case("lab.sft.loss_mask", "bad mode", {"examples": ex, "mode": "prompt"}, Raises(("mode",))),
        Case("lab.sft.loss_mask", "no assistant", {"examples": [[Segment("user", ["a"])]]}, Raises(("examples",))),
    ]
    mask = [[1, 1, 0], [0, 1, 1]]
    w = []
    for norm in ("token", "sequence", "sum"):
        w += numeric("lab.sft.sft_token_weights", {"mask": mask, "normalization": norm}, ref_sft_weights, ("mask",),
                     ints={"mask": mask}, mismatch=())
    w = [c for c in w if not c.label.startswith(("inf", "-inf"))] + [
        Case("lab.sft.sft_token_weights", f"{v} in mask", {"mask": [[1, v]]}, Raises(("mask",))) for v in (INF, -INF, 2.0, 0.5)]
    w += [Case("lab.sft.sft_token_weights", "all zero", {"mask": [[0, 0]]}, Raises(("mask",))),
          Case("lab.sft.sft_token_weights", "bad normalization", {"mask": mask, "normalization": "mean"}, Raises(("normalization",)))]
    lp = [[-1.0, -0.5, -2.0], [-0.1, -3.0, -0.7]]
    sl = []
    for norm in ("token", "sequence", "sum"):
        sl += numeric("lab.sft.sft_loss", {"token_logps": lp, "mask": mask, "normalization": norm}, ref_sft_loss, ("token_logps",),
                      mask="mask", maskable=("token_logps",), ints={"token_logps": [[-1, 0, -2], [-3, -1, 0]]}, grad="token_logps")
    sl.append(Case("lab.sft.sft_loss", "positive log-prob", {"token_logps": [[0.5, -1.0, -1.0]], "mask": [[1, 1, 0]]}, Raises(("token_logps",))))
    return tl + sh + lm + w + sl


def spec_preference():
    c = [Comparison("x", "A", "B", "j1", "a"), Comparison("x", "A", "B", "j2", "a"), Comparison("x", "A", "B", "j3", "b"),
         Comparison("x", "A", "B", "j4", "tie")]
    to = [
        Case("lab.preference.to_observations", "split", {"comparisons": c, "ties": "split"},
             [("x", "A", "B", "j1", 1.0), ("x", "A", "B", "j2", 1.0), ("x", "B", "A", "j3", 1.0), ("x", "A", "B", "j4", 0.5),
              ("x", "B", "A", "j4", 0.5)]),
        Case("lab.preference.to_observations", "tie raises", {"comparisons": c}, Raises(("ties",))),
        Case("lab.preference.to_observations", "bad policy", {"comparisons": c, "ties": "coin"}, Raises(("ties",))),
        Case("lab.preference.to_observations", "empty", {"comparisons": []}, []),
    ]
    bt = numeric("lab.preference.bradley_terry_probability", {"r_chosen": [0.5, -1.0, 3.0], "r_rejected": [0.0, 2.0, 3.0]},
                 lambda r_chosen, r_rejected: [sigmoid(a - b) for a, b in zip(r_chosen, r_rejected)], ("r_chosen", "r_rejected"),
                 ints={"r_chosen": [1, 0, 1]}, extra_bases=[{"r_chosen": [1e4, -1e4], "r_rejected": [-1e4, 1e4]}])
    rm = numeric("lab.preference.reward_model_loss", {"r_chosen": [0.5, -1.0, 3.0], "r_rejected": [0.0, 2.0, 3.0]},
                 lambda r_chosen, r_rejected: -sum(log_sigmoid(a - b) for a, b in zip(r_chosen, r_rejected)) / len(r_chosen),
                 ("r_chosen", "r_rejected"), ints={"r_chosen": [1, 0, 1]},
                 extra_bases=[{"r_chosen": [1e4, -1e4], "r_rejected": [-1e4, 1e4]}])
    rm += numeric("lab.preference.reward_model_loss", {"r_chosen": [0.5, -1.0], "r_rejected": [0.0, 2.0], "margin": [1.0, 0.5]},
                  lambda r_chosen, r_rejected, margin: -sum(log_sigmoid(a - b - m) for a, b, m in zip(r_chosen, r_rejected, margin)) / 2,
                  ("r_chosen", "r_rejected", "margin"), empty=False)
    d = math.log(2) / 2
    fit = [
        Case("lab.preference.fit_bradley_terry", "2:1", {"comparisons": c[:3]}, {"A": d, "B": -d}),
        Case("lab.preference.fit_bradley_terry", "split tie", {"comparisons": c, "ties": "split"},
             {"A": math.log(2.5 / 1.5) / 2, "B": -math.log(2.5 / 1.5) / 2}),
        Case("lab.preference.fit_bradley_terry", "separable", {"comparisons": c[:2]}, Raises(("l2", "comparisons"))),
        Case("lab.preference.fit_bradley_terry", "nan l2", {"comparisons": c[:3], "l2": NAN}, Raises(("l2",))),
        Case("lab.preference.fit_bradley_terry", "zero tol", {"comparisons": c[:3], "tol": 0.0}, Raises(("tol",))),
        Case("lab.preference.fit_bradley_terry", "no iterations", {"comparisons": c[:3], "max_iter": 0}, Raises(("max_iter",))),
        Case("lab.preference.fit_bradley_terry", "empty", {"comparisons": []}, Raises(("comparisons",))),
        Case("lab.preference.fit_bradley_terry", "nan weight",
             {"comparisons": [Observation("x", "A", "B", "j", NAN), Observation("x", "B", "A", "j")]}, Raises(("comparisons",))),
        Case("lab.preference.fit_bradley_terry", "bad anchor", {"comparisons": c[:3], "normalization": "anchor", "anchor": "Z"},
             Raises(("anchor",))),
    ]
    cyc = [Comparison("x", "A", "B", "j", "a"), Comparison("x", "B", "C", "j", "a"), Comparison("x", "C", "A", "j", "a")]
    fc = [
        Case("lab.preference.find_preference_cycle", "cycle", {"comparisons": cyc}, lambda got: sorted(got) == ["A", "B", "C"]),
        Case("lab.preference.find_preference_cycle", "none", {"comparisons": c}, None),
        Case("lab.preference.find_preference_cycle", "empty", {"comparisons": []}, None),
    ]
    return to + bt + rm + fit + fc


def spec_rl():
    r = [1.0, 0.0, -2.0, 0.5]
    v = [0.2, 0.4, -0.1, 0.0]
    out = []
    for gamma in (0.0, 0.9, 1.0):
        out += numeric("lab.rl.discounted_returns", {"rewards": r, "gamma": gamma}, ref_returns, ("rewards",),
                       ints={"rewards": [1, 1, 1]}, extra_bases=[{"rewards": [1e300, 1e300], "gamma": gamma}], f32=False)
    out += [Case("lab.rl.discounted_returns", "gamma > 1", {"rewards": r, "gamma": 1.5}, Raises(("gamma",))),
            Case("lab.rl.discounted_returns", "gamma nan", {"rewards": r, "gamma": NAN}, Raises(("gamma",))),
            Case("lab.rl.discounted_returns", "gamma string", {"rewards": r, "gamma": "0.9"}, Raises(("gamma",)))]
    out += numeric("lab.rl.advantage_from_baseline", {"returns": r, "baseline": v}, lambda returns, baseline: [a - b for a, b in zip(returns, baseline)],
                   ("returns", "baseline"), ints={"returns": [1, 0, 2, 3]})
    out += numeric("lab.rl.td_residuals", {"rewards": r, "values": v, "gamma": 0.45}, ref_td, ("rewards", "values"),
                   ints={"rewards": [1, 0, 1, 1], "values": [0, 1, 0, 1]})
    out += [Case("lab.rl.td_residuals", "next_value inf", {"rewards": r, "values": v, "gamma": 0.9, "next_value": INF}, Raises(("next_value",)))]
    out += numeric("lab.rl.gae", {"rewards": r, "values": v, "gamma": 0.9, "lam": 0.95}, ref_gae, ("rewards", "values"),
                   ints={"rewards": [1, 0, 1, 1], "values": [0, 1, 0, 1]})
    out += [Case("lab.rl.gae", "lam > 1", {"rewards": r, "values": v, "gamma": 0.9, "lam": 2.0}, Raises(("lam",)))]
    lp = [-1.0, -0.2, -3.0]
    out += numeric("lab.rl.likelihood_ratio", {"logp": lp, "behavior_logp": [-1.5, -0.2, -1.0]},
                   lambda logp, behavior_logp: [math.exp(a - b) for a, b in zip(logp, behavior_logp)], ("logp", "behavior_logp"),
                   ints={"logp": [-1, 0, -3]})
    out += [Case("lab.rl.likelihood_ratio", "overflow", {"logp": [0.0], "behavior_logp": [-1e4]}, Raises(("logp", "behavior_logp"))),
            Case("lab.rl.likelihood_ratio", "positive", {"logp": [0.5], "behavior_logp": [-1.0]}, Raises(("logp",)))]
    out += numeric("lab.rl.policy_gradient_surrogate", {"logp": [-1.0, -0.2, -3.0, -0.5], "advantages": [1.0, -2.0, 0.5, 3.0],
                                                       "mask": [1, 1, 0, 1]}, ref_pg, ("logp", "advantages"), mask="mask",
                   maskable=("logp", "advantages"), ints={"advantages": [1, 0, 1, 1]}, grad="logp")
    return out


def spec_kl():
    p, q = [0.2, 0.5, 0.3], [0.1, 0.6, 0.3]
    out = numeric("lab.kl.kl_divergence", {"p": p, "q": q}, ref_kl, ("p", "q"),
                  extra_bases=[{"p": [1.0, 0.0, 0.0], "q": q}, {"p": p, "q": [0.5, 0.5, 0.0]}, {"p": [0.5, 0.5, 0.0], "q": [0.5, 0.5, 0.0]}],
                  ints={"p": [1, 0, 0]}, f32=False)
    out += [Case("lab.kl.kl_divergence", "not a pmf", {"p": [0.5, 0.6, 0.0], "q": q}, Raises(("p",))),
            Case("lab.kl.kl_divergence", "negative", {"p": p, "q": [1.1, -0.1, 0.0]}, Raises(("q",))),
            Case("lab.kl.kl_divergence", "float noise pmf", {"p": [1 / 3] * 3, "q": [0.1, 0.2, 0.7]}, ref_kl([1 / 3] * 3, [0.1, 0.2, 0.7]))]
    out += numeric("lab.kl.entropy", {"p": p}, ref_entropy, ("p",), extra_bases=[{"p": [1.0, 0.0, 0.0]}], ints={"p": [0, 1, 0]}, f32=False)
    logits = [[0.5, -1.0, 2.0], [1e4, -1e4, 0.0], [0.0, -INF, 1.0]]
    out += numeric("lab.kl.entropy_from_logits", {"logits": logits}, ref_entropy_logits, ("logits",), ok_values={"logits": (-INF,)},
                   ints={"logits": [[1, 0, 2]]})
    out += [Case("lab.kl.entropy_from_logits", "all -inf row", {"logits": [[-INF, -INF]]}, Raises(("logits",))),
            Case("lab.kl.entropy_from_logits", "grad through -inf", {"logits": t64([[0.0, -INF, 1.0]])}, ref_entropy_logits([[0.0, -INF, 1.0]]),
                 grad=("logits", [(0, 1)]))]
    lp, rp = [-1.0, -0.2, -3.0, -0.5], [-1.5, -0.1, -1.0, -0.5]
    for kind in ("k1", "k2", "k3"):
        out += numeric("lab.kl.kl_estimate", {"logp": lp, "ref_logp": rp, "kind": kind, "mask": [1, 1, 0, 1]}, ref_kl_estimate,
                       ("logp", "ref_logp"), mask="mask", maskable=("logp", "ref_logp"), ints={"logp": [-1, 0, -3, -1]}, grad="logp",
                       mask_can_be_empty=True)
        out += numeric("lab.kl.kl_estimate", {"logp": lp, "ref_logp": rp, "kind": kind}, ref_kl_estimate, ("logp", "ref_logp"))
    for kind in ("abs", "k3+"):
        out += numeric("lab.kl.kl_estimate", {"logp": lp, "ref_logp": rp, "kind": kind, "mask": [1, 1, 0, 1]}, ref_kl_estimate,
                       ("logp", "ref_logp"), mask="mask", maskable=("logp", "ref_logp"), grad="logp", mask_can_be_empty=True)
    for kind in ("k1", "k3", "k3+"):
        out += numeric("lab.kl.kl_estimate", {"logp": [-1.0, -20.0, -0.1, -3.0], "ref_logp": [-2.0, -0.5, -9.0, -3.0], "kind": kind,
                                              "clamp": 10.0}, ref_kl_estimate, ("logp", "ref_logp"))
    out += [Case("lab.kl.kl_estimate", "float32 from float64", {"logp": lp, "ref_logp": rp, "float32": True},
                 lambda got: close(got, ref_kl_estimate(round32(lp), round32(rp)), 2e-5, 2e-5)),
            Case("lab.kl.kl_estimate", "clamp 0", {"logp": lp, "ref_logp": rp, "clamp": 0.0}, Raises(("clamp",))),
            Case("lab.kl.kl_estimate", "float32 not bool", {"logp": lp, "ref_logp": rp, "float32": "yes"}, Raises(("float32",)))]
    out += [Case("lab.kl.kl_estimate", "overflow", {"logp": [-1e4], "ref_logp": [0.0]}, Raises(("logp", "ref_logp"))),
            Case("lab.kl.kl_estimate", "bad kind", {"logp": lp, "ref_logp": rp, "kind": "k4"}, Raises(("kind",)))]
    return out


def spec_ppo():
    out = []
    for eh in (None, 0.3):
        out += numeric("lab.ppo.clipped_surrogate", {"ratio": [1.2, 0.5, 1.0, 3.0, 0.0], "advantages": [1.0, -2.0, 0.5, -1.0, 2.0],
                                                    "epsilon": 0.1, "epsilon_high": eh}, ref_clipped, ("ratio", "advantages"),
                       ints={"ratio": [1, 0, 1, 2, 0], "advantages": [1, -1, 0, 1, 1]})
    out += [Case("lab.ppo.clipped_surrogate", "negative ratio", {"ratio": [-0.1], "advantages": [1.0]}, Raises(("ratio",))),
            Case("lab.ppo.clipped_surrogate", "epsilon 1", {"ratio": [1.0], "advantages": [1.0], "epsilon": 1.0}, Raises(("epsilon",))),
            Case("lab.ppo.clipped_surrogate", "epsilon_high nan", {"ratio": [1.0], "advantages": [1.0], "epsilon_high": NAN},
                 Raises(("epsilon_high",)))]
    out += numeric("lab.ppo.clip_fractions", {"ratio": [1.2, 0.5, 1.0, 3.0], "advantages": [1.0, -2.0, 0.5, 1.0], "mask": [1, 1, 0, 1],
                                             "epsilon": 0.1, "epsilon_high": 0.3}, ref_clip_fractions, ("ratio", "advantages"),
                   mask="mask", maskable=("ratio", "advantages"))
    lp = [[-1.0, -0.5, -2.0], [-0.3, -0.7, -1.1]]
    old = [[-1.2, -0.4, -2.0], [-0.3, -0.9, -1.0]]
    adv = [[1.0, -2.0, 0.5], [0.3, -0.1, 2.0]]
    base = {"logp": lp, "old_logp": old, "advantages": adv, "mask": [[1, 1, 0], [1, 1, 1]], "epsilon": 0.1, "epsilon_high": 0.3,
            "values": [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], "value_targets": [[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]], "c1": 0.5,
            "entropy": [[0.5, 0.6, 0.7], [0.8, 0.9, 1.0]], "c2": 0.01}
    out += numeric("lab.ppo.ppo_objective", base, ref_ppo, ("logp", "old_logp", "advantages", "values", "value_targets", "entropy"),
                   mask="mask", maskable=("logp", "old_logp", "advantages", "values", "value_targets", "entropy"), grad="logp",
                   ints={"advantages": [[1, -1, 0], [0, 2, 1]]})
    out += [Case("lab.ppo.ppo_objective", "rho=1.2 eps=.1 eps_high=.3",
                 {"logp": [[math.log(1.2) - 1]], "old_logp": [[-1.0]], "advantages": [[1.0]], "epsilon": 0.1, "epsilon_high": 0.3},
                 ref_ppo([[math.log(1.2) - 1]], [[-1.0]], [[1.0]], [[1]], 0.1, 0.3)),
            Case("lab.ppo.ppo_objective", "overflow", {"logp": [[0.0]], "old_logp": [[-1e4]], "advantages": [[-1.0]]},
                 Raises(("logp", "old_logp"))),
            Case("lab.ppo.ppo_objective", "values alone", {"logp": lp, "old_logp": old, "advantages": adv, "values": lp},
                 Raises(("values",)))]
    # framework conventions: dual-clip, value clipping, log-ratio clamp (issue 17)
    far = dict(base, old_logp=[[-4.0, -0.4, -2.0], [-0.3, -3.9, -1.0]])  # ratios e^3 and e^3.2 on A > 0 / A < 0 tokens
    conv = dict(far, clip_ratio_c=3.0, old_values=[[0.3, -0.2, 0.0], [0.1, 0.45, 0.9]], value_clip=0.1, log_ratio_clamp=3.1)
    out += numeric("lab.ppo.ppo_objective", conv, ref_ppo,
                   ("logp", "old_logp", "advantages", "values", "value_targets", "entropy", "old_values"), mask="mask",
                   maskable=("logp", "old_logp", "advantages", "values", "value_targets", "entropy", "old_values"), grad="logp")
    out += [Case("lab.ppo.ppo_objective", "clip_ratio_c 1", dict(base, clip_ratio_c=1.0), Raises(("clip_ratio_c",))),
            Case("lab.ppo.ppo_objective", "value_clip alone", dict(base, value_clip=0.2), Raises(("value_clip", "old_values"))),
            Case("lab.ppo.ppo_objective", "log_ratio_clamp nan", dict(base, log_ratio_clamp=NAN), Raises(("log_ratio_clamp",))),
            Case("lab.ppo.ppo_objective", "clamp rescues overflow", {"logp": [[0.0]], "old_logp": [[-1e4]], "advantages": [[-1.0]],
                                                                    "log_ratio_clamp": 20.0},
                 ref_ppo([[0.0]], [[-1e4]], [[-1.0]], [[1]], log_ratio_clamp=20.0), rtol=1e-9, atol=1e-6)]
    ks = {"score": [1.0, -0.5], "logp": lp, "ref_logp": old, "beta": 0.1, "mask": [[1, 1, 0], [1, 1, 1]]}
    for per_token in (False, True):
        out += numeric("lab.ppo.kl_shaped_reward", dict(ks, per_token=per_token), ref_kl_shaped, ("score", "logp", "ref_logp"),
                       mask="mask", maskable=("logp", "ref_logp"), mismatch=("score",), mask_can_be_empty=not per_token)
    out += numeric("lab.ppo.kl_shaped_reward", {"score": [1.0, -0.5], "logp": [-3.0, -1.0], "ref_logp": [-2.0, -1.5], "beta": 0.1},
                   ref_kl_shaped, ("score", "logp", "ref_logp"), ints={"score": [1, 0]})
    out += [Case("lab.ppo.kl_shaped_reward", "beta 0", dict(ks, beta=0.0), Raises(("beta",)))]
    return out


def spec_dpo():
    ref, r = [0.5, 0.3, 0.2], [1.0, 0.0, -1.0]
    out = []
    for beta in (0.1, 1.0, 1e-3):
        out += numeric("lab.dpo.optimal_policy", {"ref_probs": ref, "rewards": r, "beta": beta}, ref_optimal, ("ref_probs", "rewards"),
                       extra_bases=[{"ref_probs": [0.5, 0.5, 0.0], "rewards": r, "beta": beta}], ints={"rewards": [1, 0, 1]}, f32=False)
        out += numeric("lab.dpo.log_partition", {"ref_probs": ref, "rewards": r, "beta": beta}, ref_log_partition, ("ref_probs", "rewards"),
                       extra_bases=[{"ref_probs": [0.5, 0.5, 0.0], "rewards": r, "beta": beta}], ints={"rewards": [1, 0, 1]}, f32=False)
    out += [Case("lab.dpo.optimal_policy", "beta tiny overflow", {"ref_probs": ref, "rewards": [1e300, 0.0, 0.0], "beta": 1e-300},
                 Raises(("rewards", "beta"))),
            Case("lab.dpo.log_partition", "inf reward", {"ref_probs": ref, "rewards": [INF, 0.0, 0.0], "beta": 1.0}, Raises(("rewards",)))]
    out += numeric("lab.dpo.reward_from_policy", {"policy_probs": [0.6, 0.4], "ref_probs": [0.5, 0.5], "beta": 0.5, "log_partition": 0.2},
                   lambda policy_probs, ref_probs, beta, log_partition: [beta * math.log(p / q) + beta * log_partition
                                                                         for p, q in zip(policy_probs, ref_probs)],
                   ("policy_probs", "ref_probs", "log_partition"), f32=False)
    out += [Case("lab.dpo.reward_from_policy", "zero prob", {"policy_probs": [1.0, 0.0], "ref_probs": [0.5, 0.5], "beta": 0.5},
                 Raises(("policy_probs",)))]
    base = {"chosen_logps": [-5.0, -3.0, -10.0], "rejected_logps": [-6.0, -2.0, -10.0], "ref_chosen_logps": [-5.5, -3.0, -9.0],
            "ref_rejected_logps": [-5.5, -2.5, -9.0], "beta": 0.1}
    names = ("chosen_logps", "rejected_logps", "ref_chosen_logps", "ref_rejected_logps")
    huge = dict(base, chosen_logps=[-1.0, -1e4, -2.0], rejected_logps=[-1e4, -1.0, -2.0])

    def pp(beta, **kw):
        return [sigmoid(m) for m in ref_dpo_parts(*(kw[n] for n in names), beta)[2]]

    def dl(beta, **kw):
        lc, lr, m = ref_dpo_parts(*(kw[n] for n in names), beta)
        return ([-log_sigmoid(x) for x in m], [beta * x for x in lc], [beta * x for x in lr])

    def gw(beta, **kw):
        return [sigmoid(-m) for m in ref_dpo_parts(*(kw[n] for n in names), beta)[2]]

    ints = {"chosen_logps": [-5, -3, -10]}
    out += numeric("lab.dpo.preference_probability", base, pp, names, extra_bases=[huge], ints=ints)
    out += numeric("lab.dpo.dpo_loss", base, dl, names, extra_bases=[huge], ints=ints)
    out += numeric("lab.dpo.dpo_gradient_weight", base, gw, names, extra_bases=[huge], ints=ints)
    out += [Case("lab.dpo.dpo_loss", "positive log-prob", dict(base, chosen_logps=[1.0, -1.0, -1.0]), Raises(("chosen_logps",))),
            Case("lab.dpo.dpo_loss", "beta nan", dict(base, beta=NAN), Raises(("beta",)))]

    # direct-alignment variants (issue 17)
    def cd(beta, label_smoothing, **kw):
        m = ref_dpo_parts(*(kw[n] for n in names), beta)[2]
        e = label_smoothing
        return [-(1 - e) * log_sigmoid(x) - e * log_sigmoid(-x) for x in m]

    def rb(beta, label_smoothing, **kw):
        m = ref_dpo_parts(*(kw[n] for n in names), beta)[2]
        e = label_smoothing
        return [(-(1 - e) * log_sigmoid(x) + e * log_sigmoid(-x)) / (1 - 2 * e) for x in m]

    def hg(beta, **kw):
        return [max(0.0, 1 - x) for x in ref_dpo_parts(*(kw[n] for n in names), beta)[2]]

    def ip(beta, chosen_lengths=None, rejected_lengths=None, **kw):
        lc, lr, _ = ref_dpo_parts(*(kw[n] for n in names), beta)
        if chosen_lengths is not None:
            lc = [a / n for a, n in zip(lc, chosen_lengths)]
            lr = [a / n for a, n in zip(lr, rejected_lengths)]
        return [(a - b - 1 / (2 * beta)) ** 2 for a, b in zip(lc, lr)]

    smooth = dict(base, label_smoothing=0.1)
    out += numeric("lab.dpo.cdpo_loss", smooth, cd, names, extra_bases=[dict(huge, label_smoothing=0.3)], ints=ints)
    out += numeric("lab.dpo.robust_dpo_loss", smooth, rb, names, extra_bases=[dict(huge, label_smoothing=0.3)], ints=ints)
    out += numeric("lab.dpo.hinge_loss", base, hg, names, extra_bases=[huge], ints=ints)
    out += numeric("lab.dpo.ipo_loss", base, ip, names, extra_bases=[huge], ints=ints)
    lengths = dict(base, chosen_lengths=[3.0, 1.0, 7.0], rejected_lengths=[2.0, 5.0, 1.0])
    out += numeric("lab.dpo.ipo_loss", lengths, ip, names + ("chosen_lengths", "rejected_lengths"),
                   ints={"chosen_lengths": [3, 1, 7]})
    out += [Case("lab.dpo.cdpo_loss", "smoothing 0.5", dict(base, label_smoothing=0.5), Raises(("label_smoothing",))),
            Case("lab.dpo.robust_dpo_loss", "smoothing nan", dict(base, label_smoothing=NAN), Raises(("label_smoothing",))),
            Case("lab.dpo.ipo_loss", "one length", dict(base, chosen_lengths=[1.0, 1.0, 1.0]), Raises(("chosen_lengths",))),
            Case("lab.dpo.ipo_loss", "zero length", dict(lengths, chosen_lengths=[0.0, 1.0, 1.0]), Raises(("chosen_lengths",)))]

    def sp(chosen_logps, rejected_logps, chosen_lengths, rejected_lengths, beta, gamma, label_smoothing):
        rc = [beta * c / n for c, n in zip(chosen_logps, chosen_lengths)]
        rr = [beta * r / n for r, n in zip(rejected_logps, rejected_lengths)]
        z = [a - b - gamma for a, b in zip(rc, rr)]
        e = label_smoothing
        return ([-(1 - e) * log_sigmoid(x) - e * log_sigmoid(-x) for x in z], rc, rr)

    sbase = {"chosen_logps": [-5.0, -3.0, -10.0], "rejected_logps": [-6.0, -2.0, -10.0], "chosen_lengths": [5.0, 2.0, 4.0],
             "rejected_lengths": [3.0, 2.0, 4.0], "beta": 2.0, "gamma": 0.5, "label_smoothing": 0.0}
    out += numeric("lab.dpo.simpo_loss", sbase, sp, ("chosen_logps", "rejected_logps", "chosen_lengths", "rejected_lengths"),
                   extra_bases=[dict(sbase, chosen_logps=[-1e-12, -1e4, -2.0], label_smoothing=0.2, gamma=0.0)],
                   ints={"chosen_logps": [-5, -3, -10], "chosen_lengths": [5, 2, 4]})
    out += [Case("lab.dpo.simpo_loss", "gamma -1", dict(sbase, gamma=-1.0), Raises(("gamma",))),
            Case("lab.dpo.simpo_loss", "gamma inf", dict(sbase, gamma=INF), Raises(("gamma",)))]

    def orr(chosen_avg_logps, rejected_avg_logps, lam):
        lo = [(c - r) - (math.log(-math.expm1(c)) - math.log(-math.expm1(r))) for c, r in zip(chosen_avg_logps, rejected_avg_logps)]
        return ([-lam * log_sigmoid(x) for x in lo], lo)

    obase = {"chosen_avg_logps": [-0.5, -2.0, -1e-6], "rejected_avg_logps": [-1.5, -0.1, -1e-6], "lam": 0.1}
    out += numeric("lab.dpo.orpo_odds_ratio_loss", obase, orr, ("chosen_avg_logps", "rejected_avg_logps"),
                   extra_bases=[dict(obase, chosen_avg_logps=[-1e4, -1e-12, -30.0])], ints={"chosen_avg_logps": [-1, -2, -3]})
    out += [Case("lab.dpo.orpo_odds_ratio_loss", "probability one", dict(obase, chosen_avg_logps=[0.0, -1.0, -1.0]),
                 Raises(("chosen_avg_logps",))),
            Case("lab.dpo.orpo_odds_ratio_loss", "lam 0", dict(obase, lam=0.0), Raises(("lam",)))]

    def dm(chosen_rewards, rejected_rewards):
        n = len(chosen_rewards)
        return {"rewards/chosen": sum(chosen_rewards) / n, "rewards/rejected": sum(rejected_rewards) / n,
                "rewards/margins": sum(a - b for a, b in zip(chosen_rewards, rejected_rewards)) / n,
                "rewards/accuracies": sum(1.0 for a, b in zip(chosen_rewards, rejected_rewards) if a > b) / n}

    out += numeric("lab.dpo.dpo_metrics", {"chosen_rewards": [0.5, -0.1, 0.0], "rejected_rewards": [0.2, 0.3, 0.0]}, dm,
                   ("chosen_rewards", "rejected_rewards"), ints={"chosen_rewards": [1, 0, 0]})
    return out



def ref_seq_log_ratio(logps, old_logps, mask):
    out = []
    for b in range(len(mask)):
        act = [t for t in range(len(mask[b])) if mask[b][t]]
        out.append(sum(logps[b][t] - old_logps[b][t] for t in act) / len(act))
    return out


def ref_gspo(logps, old_logps, advantages, mask, epsilon=3e-4, epsilon_high=4e-4):
    hi = epsilon if epsilon_high is None else epsilon_high
    terms, clipped = [], 0
    for ls, A in zip(ref_seq_log_ratio(logps, old_logps, mask), advantages):
        s = math.exp(ls)
        terms.append(-min(s * A, clip(s, 1 - epsilon, 1 + hi) * A))
        clipped += (s < 1 - epsilon and A < 0) or (s > 1 + hi and A > 0)
    return (sum(terms) / len(terms), {"clip_ratio/region_mean": clipped / len(terms),
                                      "sequence_ratio/mean": sum(math.exp(x) for x in ref_seq_log_ratio(logps, old_logps, mask)) / len(terms)})


def ref_cispo(logps, old_logps, advantages, mask, epsilon_max=5.0, num_items_in_batch=None):
    total, n, clipped = 0.0, 0, 0
    for b in range(len(mask)):
        for t in range(len(mask[b])):
            if not mask[b][t]:
                continue
            A = advantages[b][t] if isinstance(advantages[b], list) else advantages[b]
            rho = math.exp(logps[b][t] - old_logps[b][t])
            total += -min(rho, epsilon_max) * A * logps[b][t]
            n += 1
            clipped += rho > epsilon_max and A > 0
    return (total / (num_items_in_batch or n), {"cispo_clip_ratio": clipped / n})


def ref_whiten(advantages, mask, shift_mean=True, ddof=1, eps=1e-8):
    act = [(b, t) for b in range(len(mask)) for t in range(len(mask[b])) if mask[b][t]]
    vals = [advantages[b][t] for b, t in act]
    mu = math.fsum(vals) / len(vals)
    if max(vals) == min(vals):
        return [[(0.0 if shift_mean else advantages[b][t]) if mask[b][t] else 0.0 for t in range(len(mask[b]))] for b in range(len(mask))]
    var = math.fsum((v - mu) ** 2 for v in vals) / (len(vals) - ddof)
    d = math.sqrt(var + eps)
    return [[((advantages[b][t] - mu) if shift_mean else advantages[b][t]) / d if mask[b][t] else 0.0 for t in range(len(mask[b]))]
            for b in range(len(mask))]


def ref_reinforce_pp(rewards, mask, kl=None, kl_coef=0.0, group_size=None, ddof=1, eps=1e-8):
    r = list(rewards)
    if group_size is not None:
        r = ref_group_advantages(r, group_size, scale="none")
    ret = []
    for b in range(len(mask)):
        row = []
        for t in range(len(mask[b])):
            to_go = sum(kl[b][u] for u in range(t, len(mask[b])) if mask[b][u]) if kl is not None else 0.0
            row.append(r[b] - kl_coef * to_go)
        ret.append(row)
    return ref_whiten(ret, mask, True, ddof, eps)


def ref_uneven(rewards, group_ids, scale="group", ddof=1, eps=1e-4, zero_std="zero", singleton="zero"):
    out = [0.0] * len(rewards)
    groups = {}
    for i, g in enumerate(group_ids):
        groups.setdefault(g, []).append(i)
    batch = exact_group(rewards, ddof)[1] if len(rewards) > ddof else 0.0
    for idx in groups.values():
        if len(idx) == 1:
            if singleton == "raw":
                out[idx[0]] = rewards[idx[0]] / (1 + eps) if scale != "none" else rewards[idx[0]]
            continue
        xs = [rewards[i] for i in idx]
        centred, std, _ = exact_group(xs, ddof)
        centred = [float(c) for c in centred]
        if max(xs) == min(xs) or scale == "none":
            vals = [0.0 if max(xs) == min(xs) else c for c in centred]
        else:
            d = (std if scale == "group" else batch) + eps
            vals = [c / d for c in centred]
        for i, v in zip(idx, vals):
            out[i] = v
    return out


def ref_rloo(rewards, group_size):
    out = []
    for i in range(0, len(rewards), group_size):
        g = [Fraction(x) for x in rewards[i:i + group_size]]
        out += [float(sum(x - y for y in g) / (group_size - 1)) for x in g]
    return out


def spec_grpo_conventions():
    out = []
    out += numeric("lab.grpo.rloo_advantages", {"rewards": [1.0, 0.0, 0.5, 0.2, 0.2, 0.9], "group_size": 3}, ref_rloo, ("rewards",),
                   ints={"rewards": [1, 0, 1, 0, 0, 1]})
    out += near_constant_groups("lab.grpo.rloo_advantages", lambda x: {"rewards": x, "group_size": 3}, ref_rloo)
    out += [Case("lab.grpo.rloo_advantages", "group_size 1", {"rewards": [1.0, 2.0], "group_size": 1}, Raises(("group_size",))),
            Case("lab.grpo.rloo_advantages", "group_size 4 of 6", {"rewards": [1.0] * 6, "group_size": 4}, Raises(("group_size",)))]
    for scale in ("group", "batch", "none"):
        for ddof in (0, 1):
            kw = {"rewards": [1.0, 0.0, 5.0, 2.0, 2.0, 0.3, 0.3], "group_ids": ["a", "b", "a", "c", "b", "d", "d"], "scale": scale, "ddof": ddof}
            out += numeric("lab.grpo.uneven_group_advantages", kw, ref_uneven, ("rewards",), ints={"rewards": [1, 0, 5, 2, 2, 0, 0]})
            out += numeric("lab.grpo.uneven_group_advantages", dict(kw, singleton="raw"), ref_uneven, ("rewards",))
            for noise in NOISE:
                x = [0.1, 0.1 + noise, 0.1, 7.0, 7.0]
                k2 = {"rewards": x, "group_ids": [0, 0, 0, 1, 1], "scale": scale, "ddof": ddof}
                out.append(Case("lab.grpo.uneven_group_advantages", f"near-constant +{noise} {scale} {ddof}", k2, ref_uneven(**k2),
                                rtol=1e-6, atol=1e-9))
    out += [Case("lab.grpo.uneven_group_advantages", "ids mismatch", {"rewards": [1.0, 2.0], "group_ids": [0]}, Raises(("group_ids",))),
            Case("lab.grpo.uneven_group_advantages", "singleton raise", {"rewards": [1.0, 2.0, 3.0], "group_ids": [0, 0, 1], "singleton": "raise"},
                 Raises(("group_ids", "singleton")))]
    lp = [[-1.0, -0.5, -2.0], [-0.3, -0.7, -1.1]]
    old = [[-1.2, -0.4, -2.0], [-0.3, -0.9, -1.0]]
    gm = [[1, 1, 0], [1, 1, 1]]
    out += numeric("lab.grpo.sequence_log_ratio", {"logps": lp, "old_logps": old, "mask": gm}, ref_seq_log_ratio, ("logps", "old_logps"),
                   mask="mask", maskable=("logps", "old_logps"), grad="logps", mismatch=("logps", "old_logps"))
    for eps, hi in ((3e-4, 4e-4), (0.05, 0.2)):
        base = {"logps": lp, "old_logps": old, "advantages": [1.0, -0.5], "mask": gm, "epsilon": eps, "epsilon_high": hi}
        out += numeric("lab.grpo.gspo_loss", base, ref_gspo, ("logps", "old_logps", "advantages"), mask="mask",
                       maskable=("logps", "old_logps"), grad="logps", mismatch=("logps", "old_logps"))
    for cap in (1.05, 5.0):
        for adv in ([1.0, -0.5], [[1.0, -2.0, 0.5], [0.3, -0.1, 2.0]]):
            base = {"logps": lp, "old_logps": old, "advantages": adv, "mask": gm, "epsilon_max": cap}
            out += numeric("lab.grpo.cispo_loss", base, ref_cispo, ("logps", "old_logps", "advantages"), mask="mask",
                           maskable=("logps", "old_logps") + (("advantages",) if isinstance(adv[0], list) else ()), grad="logps",
                           mismatch=("logps", "old_logps"))
    a = [[1.0, 2.0, 9.0], [3.0, 4.0, 5.0]]
    for shift in (True, False):
        for ddof in (0, 1):
            out += numeric("lab.grpo.whiten_advantages", {"advantages": a, "mask": gm, "shift_mean": shift, "ddof": ddof}, ref_whiten,
                           ("advantages",), mask="mask", maskable=("advantages",), grad="advantages", ints={"advantages": [[1, 2, 9], [3, 4, 5]]})
    for base_v in (0.1, 1.0, -3.7):
        for noise in NOISE:
            x = [[base_v, base_v + noise, 7.0], [base_v, base_v, base_v]]
            out.append(Case("lab.grpo.whiten_advantages", f"near-constant {base_v}+{noise}", {"advantages": x, "mask": gm},
                            ref_whiten(x, gm), rtol=1e-6, atol=1e-9))
    m = [[1, 1, 0], [1, 1, 1], [1, 0, 0], [1, 1, 1]]
    kl = [[0.1, 0.2, 0.0], [0.0, 0.05, 0.3], [0.2, 0.0, 0.0], [0.1, 0.1, 0.1]]
    for gs in (None, 2):
        base = {"rewards": [1.0, 0.0, 0.5, 0.25], "mask": m, "kl": kl, "kl_coef": 0.5, "group_size": gs}
        out += numeric("lab.grpo.reinforce_pp_advantages", base, ref_reinforce_pp, ("rewards", "kl"), mask="mask", maskable=("kl",),
                       ints={"rewards": [1, 0, 1, 1]}, mismatch=("kl",))
    for noise in NOISE:
        r = [0.3, 0.3 + noise, 0.3, 0.3]
        out.append(Case("lab.grpo.reinforce_pp_advantages", f"near-constant +{noise}", {"rewards": r, "mask": m},
                        ref_reinforce_pp(r, m), rtol=1e-6, atol=1e-9))
    return out


def spec_grpo():
    out = []
    r = [1.0, 0.0, 0.5, 0.2, 0.2, 0.9]
    for scale in ("group", "batch", "none"):
        for ddof in (0, 1):
            for eps in (0.0, 1e-4):
                kw = {"rewards": r, "group_size": 3, "scale": scale, "ddof": ddof, "eps": eps}
                out += numeric("lab.grpo.group_advantages", kw, ref_group_advantages, ("rewards",), ints={"rewards": [1, 0, 1, 0, 0, 1]})
                out += near_constant_groups("lab.grpo.group_advantages", lambda x, kw=kw: dict(kw, rewards=x), ref_group_advantages)
    out += [Case("lab.grpo.group_advantages", "bool tensor", {"rewards": torch.tensor([True, False, True, False]), "group_size": 2},
                 ref_group_advantages([1.0, 0.0, 1.0, 0.0], 2)),
            Case("lab.grpo.group_advantages", "raise", {"rewards": [0.1] * 3, "group_size": 3, "zero_std": "raise"}, Raises(("rewards",))),
            Case("lab.grpo.group_advantages", "batch raise", {"rewards": [0.1] * 6, "group_size": 3, "scale": "batch", "zero_std": "raise"},
                 Raises(("rewards",))),
            Case("lab.grpo.group_advantages", "group_size 1", {"rewards": r, "group_size": 1}, Raises(("group_size",))),
            Case("lab.grpo.group_advantages", "group_size float", {"rewards": r, "group_size": 3.0}, Raises(("group_size",))),
            Case("lab.grpo.group_advantages", "group_size 4", {"rewards": r, "group_size": 4}, Raises(("group_size",))),
            Case("lab.grpo.group_advantages", "2-D", {"rewards": [r], "group_size": 3}, Raises(("rewards",))),
            Case("lab.grpo.group_advantages", "huge spread", {"rewards": [-1e308, 1e308], "group_size": 2}, Raises(("rewards",))),
            Case("lab.grpo.group_advantages", "eps nan", {"rewards": r, "group_size": 3, "eps": NAN}, Raises(("eps",)))]
    for ddof in (0, 1):
        out += numeric("lab.grpo.group_stats", {"rewards": r, "group_size": 3, "ddof": ddof}, ref_group_stats, ("rewards",),
                       ints={"rewards": [1, 0, 1, 0, 0, 1]})
        out += near_constant_groups("lab.grpo.group_stats", lambda x, ddof=ddof: {"rewards": x, "group_size": 3, "ddof": ddof}, ref_group_stats)
    out += [Case("lab.grpo.group_stats", "ddof 2", {"rewards": r, "group_size": 3, "ddof": 2}, Raises(("ddof",)))]
    out += numeric("lab.grpo.dynamic_sampling", {"rewards": r, "group_size": 3}, ref_dynamic, ("rewards",), ints={"rewards": [1, 1, 1, 0, 0, 1]})
    out += near_constant_groups("lab.grpo.dynamic_sampling", lambda x: {"rewards": x, "group_size": 3}, ref_dynamic)
    out += [Case("lab.grpo.dynamic_sampling", "target", {"rewards": r, "group_size": 3, "target_groups": 1}, ref_dynamic(r, 3, 1)),
            Case("lab.grpo.dynamic_sampling", "too few", {"rewards": [0.1] * 6, "group_size": 3, "target_groups": 1}, Raises(("target_groups",))),
            Case("lab.grpo.dynamic_sampling", "target 0", {"rewards": r, "group_size": 3, "target_groups": 0}, Raises(("target_groups",)))]
    out += numeric("lab.grpo.overlong_penalty", {"lengths": [0.0, 10.0, 14.0, 16.0, 20.0], "max_length": 16, "buffer": 4, "penalty": 0.5},
                   ref_overlong, ("lengths",), ints={"lengths": [0, 10, 14, 16, 20]})
    out += [Case("lab.grpo.overlong_penalty", "negative length", {"lengths": [-1], "max_length": 16, "buffer": 4}, Raises(("lengths",))),
            Case("lab.grpo.overlong_penalty", "buffer 0", {"lengths": [1], "max_length": 16, "buffer": 0}, Raises(("buffer",))),
            Case("lab.grpo.overlong_penalty", "max_length float", {"lengths": [1], "max_length": 16.0, "buffer": 4}, Raises(("max_length",)))]
    x = [[1.0, 2.0, 3.0], [4.0, -1.0, 0.5]]
    mask = [[1, 1, 0], [1, 0, 1]]
    for lt, kw in (("grpo", {}), ("bnpo", {}), ("dr_grpo", {"max_completion_length": 5}), ("dapo", {"num_items_in_batch": 7}), ("dapo", {})):
        out += numeric("lab.grpo.aggregate_token_loss", dict({"per_token_loss": x, "mask": mask, "loss_type": lt}, **kw), ref_aggregate,
                       ("per_token_loss",), mask="mask", maskable=("per_token_loss",), grad="per_token_loss",
                       mask_can_be_empty=lt == "dr_grpo" or "num_items_in_batch" in kw)
    for lt in ("seq-mean-token-sum", "seq-mean-token-sum-norm"):
        out += numeric("lab.grpo.aggregate_token_loss", {"per_token_loss": x, "mask": mask, "loss_type": lt}, ref_aggregate,
                       ("per_token_loss",), mask="mask", maskable=("per_token_loss",), grad="per_token_loss",
                       mask_can_be_empty=lt == "seq-mean-token-sum-norm")
    for lt in ("grpo", "seq-mean-token-sum"):
        kw = {"per_token_loss": x, "mask": [[1, 1, 0], [0, 0, 0]], "loss_type": lt, "drop_empty_rows": True}
        out += [Case("lab.grpo.aggregate_token_loss", f"drop empty row {lt}", kw, ref_aggregate(**kw)),
                Case("lab.grpo.aggregate_token_loss", f"empty row {lt}", dict(kw, drop_empty_rows=False), Raises(("mask",))),
                Case("lab.grpo.aggregate_token_loss", f"all rows empty {lt}", dict(kw, mask=[[0, 0, 0], [0, 0, 0]]), Raises(("mask",)))]
    out += [Case("lab.grpo.aggregate_token_loss", "drop_empty_rows not bool", {"per_token_loss": x, "mask": mask, "drop_empty_rows": 1},
                 Raises(("drop_empty_rows",)))]
    out += [Case("lab.grpo.aggregate_token_loss", "empty row grpo", {"per_token_loss": x, "mask": [[1, 1, 0], [0, 0, 0]]}, Raises(("mask",))),
            Case("lab.grpo.aggregate_token_loss", "num_items nan", {"per_token_loss": x, "mask": mask, "loss_type": "dapo",
                                                                     "num_items_in_batch": NAN}, Raises(("num_items_in_batch",))),
            Case("lab.grpo.aggregate_token_loss", "max_completion_length short", {"per_token_loss": x, "mask": mask, "loss_type": "dr_grpo",
                                                                                  "max_completion_length": 2}, Raises(("max_completion_length",)))]
    lp = [[-1.0, -0.5, -2.0], [-0.3, -0.7, -1.1]]
    old = [[-1.2, -0.4, -2.0], [-0.3, -0.9, -1.0]]
    ref = [[-1.1, -0.6, -1.0], [-0.2, -0.8, -1.0]]
    gm = [[1, 1, 0], [1, 1, 1]]
    for lt in ("grpo", "bnpo", "dr_grpo", "dapo"):
        for adv in ([1.0, -0.5], [[1.0, -2.0, 0.5], [0.3, -0.1, 2.0]]):
            base = {"logps": lp, "old_logps": old, "advantages": adv, "mask": gm, "ref_logps": ref, "beta": 0.04, "epsilon": 0.1,
                    "epsilon_high": 0.3, "loss_type": lt, "kl_bias_correction": lt == "dapo"}
            maskable = ("logps", "old_logps", "ref_logps") + (("advantages",) if isinstance(adv[0], list) else ())
            out += numeric("lab.grpo.grpo_loss", base, ref_grpo, ("logps", "old_logps", "ref_logps", "advantages"), mask="mask",
                           maskable=maskable, grad="logps", mismatch=("logps", "old_logps", "ref_logps"))
    out += [Case("lab.grpo.grpo_loss", "overflow", {"logps": [[0.0]], "old_logps": [[-1e4]], "advantages": [-1.0], "mask": [[1]]},
                 Raises(("logps", "old_logps"))),
            Case("lab.grpo.grpo_loss", "1-D logps", {"logps": [-1.0], "old_logps": [-1.0], "advantages": [1.0], "mask": [1]}, Raises(("logps",))),
            Case("lab.grpo.grpo_loss", "advantages shape", {"logps": lp, "old_logps": old, "advantages": [1.0, 2.0, 3.0], "mask": gm},
                 Raises(("advantages",))),
            Case("lab.grpo.grpo_loss", "beta without ref", {"logps": lp, "old_logps": old, "advantages": [1.0, 2.0], "mask": gm, "beta": 0.1},
                 Raises(("ref_logps",)))]
    pa = {"step_rewards": [[1.0, 0.0], [0.5]], "step_ends": [[1, 3], [2]], "length": 5}
    for ddof in (0, 1):
        for eps in (0.0, 1e-4):
            out += [Case("lab.grpo.process_advantages", f"lists {ddof} {eps}", dict(pa, ddof=ddof, eps=eps), ref_process(**pa, ddof=ddof, eps=eps))]
            for base_r in (0.1, 1.0, -3.7):
                for noise in NOISE:
                    for pat in ([0, 0, 0], [0, 1, 0], [1, -1, 0]):
                        sr = [[base_r + pat[0] * noise, base_r + pat[1] * noise], [base_r + pat[2] * noise]]
                        kw = dict(pa, step_rewards=sr, ddof=ddof, eps=eps)
                        out.append(Case("lab.grpo.process_advantages", f"near-constant {base_r}+{noise} {pat}", kw, ref_process(**kw),
                                        rtol=1e-9, atol=1e-12))
    out += [Case("lab.grpo.process_advantages", "int rewards", dict(pa, step_rewards=[[1, 0], [1]]), ref_process([[1.0, 0.0], [1.0]], pa["step_ends"], 5)),
            Case("lab.grpo.process_advantages", "nan reward", dict(pa, step_rewards=[[NAN, 0.0], [0.5]]), Raises(("step_rewards",))),
            Case("lab.grpo.process_advantages", "inf reward", dict(pa, step_rewards=[[INF, 0.0], [0.5]]), Raises(("step_rewards",))),
            Case("lab.grpo.process_advantages", "zero spread raise", dict(pa, step_rewards=[[0.1, 0.1], [0.1]], zero_std="raise"),
                 Raises(("step_rewards",))),
            Case("lab.grpo.process_advantages", "float end", dict(pa, step_ends=[[1.5, 3], [2]]), Raises(("step_ends",))),
            Case("lab.grpo.process_advantages", "end beyond", dict(pa, step_ends=[[1, 5], [2]]), Raises(("step_ends",))),
            Case("lab.grpo.process_advantages", "mismatch", dict(pa, step_ends=[[1], [2]]), Raises(("step_rewards", "step_ends"))),
            Case("lab.grpo.process_advantages", "empty", dict(pa, step_rewards=[], step_ends=[]), Raises(("step_rewards", "step_ends"))),
            Case("lab.grpo.process_advantages", "length 0", dict(pa, length=0), Raises(("length",)))]
    out += spec_grpo_conventions()
    return out


SPECS = {"lab.sft": spec_sft, "lab.preference": spec_preference, "lab.rl": spec_rl, "lab.kl": spec_kl, "lab.ppo": spec_ppo,
         "lab.dpo": spec_dpo, "lab.grpo": spec_grpo, "lab.pages": lambda: spec_page_functions(Case, Raises)}


def all_cases() -> list[Case]:
    out = []
    for spec in SPECS.values():
        out += spec()
    return out


def test_every_public_function_is_swept():
    swept = {c.fn for c in all_cases()}
    missing = sorted(set(public_functions()) - swept)
    assert not missing, f"public functions without sweep cases (add them to tests/test_edge_sweep.py): {missing}"
    unknown = sorted(swept - set(public_functions()))
    assert not unknown, f"sweep cases for functions that do not exist: {unknown}"


def test_edge_sweep_has_no_silent_nan_wrong_value_or_unrelated_exception():
    fns = public_functions()
    tally = {"ok": 0, "value_error_named": 0, "silent_nan": 0, "silent_wrong": 0, "unrelated_exception": 0, "refused_valid": 0}
    failures: list[str] = []
    t0 = time.perf_counter()
    cases = all_cases()
    for case in cases:
        run_case(fns[case.fn], case, tally, failures)
    print(f"\nedge sweep: {len(cases)} calls over {len({c.fn for c in cases})} functions in {time.perf_counter() - t0:.1f} s: {tally}")
    for f in failures[:40]:
        print("  ", f)
    assert len(cases) > 1000
    assert (tally["silent_nan"], tally["silent_wrong"], tally["unrelated_exception"], tally["refused_valid"]) == (0, 0, 0, 0), "\n".join(failures[:40])


# ---------------------------------------------------------------- lab.kl.kl_estimators (issue 13, KL page)


def ref_kl_estimators(policy, ref_probs):
    """Plain-Python float64: per-response k1, k2, k3 (0 where π = 0, inf on support mismatch) and their π-weighted sums."""
    vals = [[], [], []]
    for p, q in zip(policy, ref_probs):
        if p == 0:
            ks = (0.0, 0.0, 0.0)
        elif q == 0:
            ks = (INF, INF, INF)
        else:
            lr = math.log(q) - math.log(p)  # log r, r = π_ref/π
            ks = (-lr, lr * lr / 2, math.expm1(lr) - lr)
        for row, k in zip(vals, ks):
            row.append(k)
    means = [math.fsum(p * k for p, k in zip(policy, row) if p > 0) if all(k < INF for p, k in zip(policy, row) if p > 0) else INF
             for row in vals]
    return (vals, means)


def spec_kl_estimators():
    P, Q = [0.3, 0.2, 0.5], [0.4, 0.4, 0.2]
    out = numeric("lab.kl.kl_estimators", {"policy": P, "ref_probs": Q}, ref_kl_estimators, ("policy", "ref_probs"),
                  extra_bases=[{"policy": [1.0, 0.0, 0.0], "ref_probs": Q}, {"policy": P, "ref_probs": [0.5, 0.5, 0.0]},
                               {"policy": [0.5, 0.5, 0.0], "ref_probs": [0.5, 0.5, 0.0]}],
                  ints={"policy": [1, 0, 0]}, f32=False)
    for noise in NOISE:  # near-equal distributions: every estimate ≈ 0, never NaN
        b = {"policy": [0.5 + noise, 0.5 - noise], "ref_probs": [0.5, 0.5]}
        out.append(Case("lab.kl.kl_estimators", f"near-equal {noise}", b, ref_kl_estimators(**b), atol=1e-12))
    out += [Case("lab.kl.kl_estimators", "not a pmf", {"policy": [0.5, 0.6, 0.0], "ref_probs": Q}, Raises(("policy",))),
            Case("lab.kl.kl_estimators", "negative ref", {"policy": P, "ref_probs": [1.1, -0.1, 0.0]}, Raises(("ref_probs",))),
            Case("lab.kl.kl_estimators", "scalar", {"policy": 1.0, "ref_probs": 1.0}, Raises(("policy",))),
            Case("lab.kl.kl_estimators", "text", {"policy": "abc", "ref_probs": Q}, Raises(("policy",)))]
    return out


SPECS["lab.kl.estimators"] = spec_kl_estimators


# ---------------------------------------------------------------- lab.rl.explained_variance, lab.ppo.ppo_advantages (issue 12, ppo)


def ref_explained_variance(values, returns, mask=None, if_constant=NAN):
    m = mask if mask is not None else [1] * len(returns)
    v = [float(x) for x, k in zip(values, m) if k]
    g = [float(x) for x, k in zip(returns, m) if k]
    if max(g) == min(g):
        return if_constant
    mean = lambda xs: math.fsum(xs) / len(xs)
    var = lambda xs: math.fsum((x - mean(xs)) ** 2 for x in xs) / len(xs)
    return 1.0 - var([a - b for a, b in zip(g, v)]) / var(g)


def ref_ppo_advantages(scores, logp, ref_logp, values, mask, kl_coef=0.05, gamma=1.0, lam=0.95, whiten=True, ddof=1, eps=1e-8):
    R, A, G = [], [], []
    for s, lp, rlp, v, m in zip(scores, logp, ref_logp, values, mask):
        last = max(t for t, k in enumerate(m) if k)
        r = [(-kl_coef * (a - b) if k else 0.0) for a, b, k in zip(lp, rlp, m)]
        r[last] += float(s)
        vv = [float(x) if k else 0.0 for x, k in zip(v, m)]
        adv, _ = ref_gae(r, vv, gamma, lam)
        adv = [a if k else 0.0 for a, k in zip(adv, m)]
        R.append(r)
        A.append(adv)
        G.append([(a + x) if k else 0.0 for a, x, k in zip(adv, vv, m)])
    if whiten:
        act = [a for row, mr in zip(A, mask) for a, k in zip(row, mr) if k]
        if max(act) == min(act):
            A = [[0.0] * len(row) for row in A]
        else:
            mu = math.fsum(act) / len(act)
            var = math.fsum((a - mu) ** 2 for a in act) / (len(act) - ddof)
            A = [[((a - mu) / math.sqrt(var + eps)) if k else 0.0 for a, k in zip(row, mr)] for row, mr in zip(A, mask)]
    return (R, A, G)


def spec_rmppo():
    v, g = [0.1, 0.5, -0.2, 0.9], [0.0, 1.0, 0.0, 2.0]
    out = numeric("lab.rl.explained_variance", {"values": v, "returns": g, "mask": [1, 1, 0, 1]}, ref_explained_variance,
                  ("values", "returns"), mask="mask", maskable=("values", "returns"), ints={"returns": [0, 1, 1, 2]})
    out += numeric("lab.rl.explained_variance", {"values": v, "returns": g}, ref_explained_variance, ("values", "returns"))
    for noise in NOISE:  # near-constant returns: a finite number (never NaN); exactly constant: if_constant
        b = {"values": [0.5, 0.5, 0.5], "returns": [0.5, 0.5 + noise, 0.5 - noise], "if_constant": 0.0}
        out.append(Case("lab.rl.explained_variance", f"near-constant {noise}", b, ref_explained_variance(**b), rtol=1e-6, atol=1e-6))
    out += [Case("lab.rl.explained_variance", "constant returns", {"values": v, "returns": [1.0] * 4, "if_constant": 0.0}, 0.0),
            Case("lab.rl.explained_variance", "perfect", {"values": g, "returns": g}, 1.0),
            Case("lab.rl.explained_variance", "if_constant text", {"values": v, "returns": g, "if_constant": "x"}, Raises(("if_constant",)))]
    lp = [[-1.0, -0.5, -2.0], [-0.3, -0.7, -1.1]]
    rlp = [[-1.2, -0.4, -2.0], [-0.3, -0.9, -1.0]]
    base = {"scores": [1.0, 0.0], "logp": lp, "ref_logp": rlp, "values": [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]],
            "mask": [[1, 1, 0], [1, 1, 1]], "kl_coef": 0.1, "gamma": 1.0, "lam": 0.95}
    for whiten in (True, False):
        out += numeric("lab.ppo.ppo_advantages", dict(base, whiten=whiten), ref_ppo_advantages, ("scores", "logp", "ref_logp", "values"),
                       mask="mask", maskable=("logp", "ref_logp", "values"), ints={"scores": [1, 0]}, mismatch=("logp", "values"))
    for extra in ({"kl_coef": 0.0}, {"gamma": 0.9, "lam": 0.0}, {"lam": 1.0, "ddof": 0}):
        b = dict(base, **extra)
        out.append(Case("lab.ppo.ppo_advantages", f"{extra}", b, ref_ppo_advantages(**b)))
    for noise in NOISE:  # near-equal advantages everywhere: whitening stays finite
        b = dict(base, scores=[0.5, 0.5 + noise], kl_coef=0.0, values=[[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]])
        out.append(Case("lab.ppo.ppo_advantages", f"near-constant {noise}", b, lambda got: not has_nan(got)))
    out += [Case("lab.ppo.ppo_advantages", "kl_coef < 0", dict(base, kl_coef=-0.1), Raises(("kl_coef",))),
            Case("lab.ppo.ppo_advantages", "lam 2", dict(base, lam=2.0), Raises(("lam",))),
            Case("lab.ppo.ppo_advantages", "hole in mask", dict(base, mask=[[1, 0, 1], [1, 1, 1]]), Raises(("mask",))),
            Case("lab.ppo.ppo_advantages", "empty row", dict(base, mask=[[0, 0, 0], [1, 1, 1]]), Raises(("mask",))),
            Case("lab.ppo.ppo_advantages", "whiten text", dict(base, whiten="yes"), Raises(("whiten",))),
            Case("lab.ppo.ppo_advantages", "1-D logp", dict(base, logp=[-1.0, -2.0]), Raises(("logp",))),
            Case("lab.ppo.ppo_advantages", "scores shape", dict(base, scores=[1.0, 0.0, 2.0]), Raises(("scores",)))]
    return out


SPECS["lab.rmppo"] = spec_rmppo
