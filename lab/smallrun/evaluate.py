"""Evaluate small-run checkpoints case by case, on the same held-out cases, for honest comparisons.

Reference: the overview's "Evidence of adaptation gains" (matched comparisons, paired intervals, retention)
and "Proxy optimization and reward failures" (best-of-N against a learned proxy). The statistics live in
``lab.evaluation`` and ``lab.proxy``; this module produces their per-case inputs from real checkpoints.

Read top to bottom: listing a runs directory's checkpoints → loading one (strict, manifest-checked) →
``evaluate_checkpoint`` (greedy 0/1 per case, the greedy answer's mean token log-prob as confidence, and
n seeded samples per case → correct counts for pass@k) → ``paired_cases`` (refuses two evaluations that are
not on the same cases) → ``best_of_n_with_proxy`` (N_max samples per prompt once, a reward model scores
them, ``lab.proxy.best_of_n_measured`` picks).

Conventions: cases are ``Task.heldout(n_cases)`` in its fixed order (prompts chosen by a hash, never seen in
training); sampling uses ``lab.smallrun.engine.sample`` with a ``torch.Generator`` seeded by ``seed``; the
reward model scores ``prompt + completion + eos``, the text a policy's completion is trained as
(``engine.Codec.right_pad``), read at the last real token.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import torch

from lab.smallrun import rundir
from lab.smallrun.tasks import VERIFIER_KINDS, get_task

DEFAULT_MAX_NEW_TOKENS = 8  # RunConfig's default; used when a checkpoint has no run_config.json beside it
REWARD_MODEL_ALGORITHMS = ("rm",)  # runs whose checkpoints are reward models (a score head), not policies


# ----------------------------------------------------------------------------- listing checkpoints


@dataclass(frozen=True)
class CheckpointInfo:
    """One complete checkpoint of a run, for a picker."""

    run: str  # run name under the runs directory; the base stage is "<run>/base"
    label: str  # "final" or "step N"
    step: Optional[int]  # training step of the weights (from the manifest)
    path: str  # the checkpoint directory
    algorithm: str  # from run_config.json ("sft", "dpo", "grpo", "rm", ...)
    task: str  # from run_config.json

    @property
    def is_reward_model(self) -> bool:
        """A reward-model checkpoint (scores text) rather than a policy (writes it)."""
        return self.algorithm in REWARD_MODEL_ALGORITHMS


def _read_config(run: Path) -> Optional[dict]:
    try:
        cfg = json.loads((run / "run_config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return cfg if isinstance(cfg, dict) else None


def _run_checkpoints(run: Path, name: str) -> list[CheckpointInfo]:
    cfg = _read_config(run)
    if cfg is None or not rundir.RunDir.is_lab_run(run):
        return []
    algo, task = str(cfg.get("algorithm", "?")), str(cfg.get("task", "?"))
    out = []
    for ck in rundir.complete_checkpoints(run):
        step = int(rundir.CKPT_RE.match(ck.name).group(1))
        out.append(CheckpointInfo(name, f"step {step}", step, str(ck), algo, task))
    fin = run / rundir.FINAL
    m = rundir.read_manifest(fin) if fin.is_dir() else None
    if m is not None:
        out.append(CheckpointInfo(name, "final", m.get("step") if isinstance(m.get("step"), int) else None, str(fin), algo, task))
    return out


def list_checkpoints(runs_dir: str | Path) -> list[CheckpointInfo]:
    """Every complete checkpoint of the lab runs under ``runs_dir`` (and of their base stage, as "<run>/base"):
    runs sorted by name, checkpoints oldest first, ``final`` last. A missing ``runs_dir`` has none; a directory
    without the lab's marker or run_config.json is skipped (never read as a run)."""
    if not isinstance(runs_dir, (str, Path)):
        raise ValueError(f"runs_dir must be a path; got {type(runs_dir).__name__}")
    root = Path(runs_dir)
    if root.exists() and not root.is_dir():
        raise ValueError(f"runs_dir: {root} is not a directory")
    if not root.is_dir():
        return []
    out: list[CheckpointInfo] = []
    for run in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        out += _run_checkpoints(run, run.name)
        if (run / "base").is_dir():
            out += _run_checkpoints(run / "base", f"{run.name}/base")
    return out


def default_pair(checkpoints: Sequence[CheckpointInfo], run: str) -> tuple[Optional[CheckpointInfo], Optional[CheckpointInfo]]:
    """(baseline, candidate) for ``run``: its base stage's final vs its own final, when they exist; otherwise its
    oldest vs its newest checkpoint (None where the run has none)."""
    if not isinstance(run, str):
        raise ValueError(f"run must be a run name (a string); got {type(run).__name__}")
    checkpoints = list(checkpoints)
    if not all(isinstance(c, CheckpointInfo) for c in checkpoints):
        raise ValueError("checkpoints must be CheckpointInfo records from list_checkpoints")
    own = [c for c in checkpoints if c.run == run]
    base = [c for c in checkpoints if c.run == f"{run}/base" and c.label == "final"]
    cand = next((c for c in own if c.label == "final"), own[-1] if own else None)
    if base:
        return base[0], cand
    return (own[0] if own else None), cand


# ----------------------------------------------------------------------------- loading


def _checkpoint_dir(path: str | Path, name: str) -> Path:
    if not isinstance(path, (str, Path)):
        raise ValueError(f"{name} must be a path to a checkpoint directory; got {type(path).__name__}")
    p = Path(path)
    if not p.is_dir():
        raise ValueError(f"{name}: {p} is not a directory")
    if not (p / "config.json").is_file():
        raise ValueError(f"{name}: {p} is not a checkpoint directory (no config.json)")
    if rundir.read_manifest(p) is not None:
        problems = rundir.check_files(p)
        if problems:
            raise ValueError(f"{name}: {problems[0]}")
    return p


def checkpoint_fingerprint(path: str | Path) -> str:
    """The checkpoint's weights SHA-256 from its manifest (cheap: nothing is loaded), or the SHA-256 of its
    weights file when it has no manifest. A cache key that changes whenever the weights do."""
    p = _checkpoint_dir(path, "path")
    m = rundir.read_manifest(p)
    if m is not None and isinstance(m.get("weights_sha256"), str):
        return m["weights_sha256"]
    files = sorted(p.glob("*.safetensors")) + sorted(p.glob("*.bin"))
    if not files:
        raise ValueError(f"path: {p} holds no weights file")
    return rundir.sha256_file(files[0])


def checkpoint_config(path: str | Path) -> dict:
    """The run_config.json of the run a checkpoint belongs to (``final/`` → its run, ``checkpoints/step-N`` → its
    run), or {} for a bare checkpoint."""
    if not isinstance(path, (str, Path)):
        raise ValueError(f"path must be a path to a checkpoint directory; got {type(path).__name__}")
    p = Path(path)
    for run in (p.parent, p.parent.parent):
        cfg = _read_config(run)
        if cfg is not None:
            return cfg
    return {}


def load_policy(path: str | Path, device: str = "cpu"):
    """``(model, tokenizer)`` of a policy checkpoint, strictly (``rundir.load_pretrained_strict``: no missing or
    unexpected tensors, weights hash equal to the manifest's); errors name ``path``."""
    p = _checkpoint_dir(path, "path")
    try:
        model, tok = rundir.load_pretrained_strict(p)
    except ValueError as exc:
        raise ValueError(f"path: {exc}") from None
    return model.to(device).eval(), tok


def load_reward_model(path: str | Path, device: str = "cpu"):
    """``(model, tokenizer)`` of a reward-model checkpoint: a ``GPT2ForSequenceClassification`` (or any
    sequence-classification model) with ``num_labels == 1``, loaded strictly (``rewardmodel.load_reward_model``),
    weights hash equal to the manifest's; errors name ``reward_model``."""
    from transformers import AutoTokenizer

    from lab.smallrun.rewardmodel import load_reward_model as load_scalar_head

    p = _checkpoint_dir(path, "reward_model")
    model = load_scalar_head(str(p))  # strict: no missing, unexpected or mismatched tensors; frozen, eval mode
    if model.config.num_labels != 1:
        raise ValueError(f"reward_model: {p} has num_labels = {model.config.num_labels}; a reward model has one score (num_labels = 1)")
    m = rundir.read_manifest(p)
    if m is not None and m.get("weights_sha256") and rundir.weights_sha256(model) != m["weights_sha256"]:
        raise ValueError(f"reward_model: {p}: the weights' SHA-256 differs from its manifest")
    try:
        tok = AutoTokenizer.from_pretrained(p, local_files_only=True)
    except Exception as exc:
        raise ValueError(f"reward_model: cannot load the tokenizer saved in {p} ({type(exc).__name__})") from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model.to(device).eval(), tok


# ----------------------------------------------------------------------------- per-case evaluation


@dataclass(frozen=True)
class CaseEvaluation:
    """One checkpoint scored on a task's held-out cases, case by case in a fixed order."""

    path: str  # the checkpoint directory
    weights_sha256: str  # of the loaded weights
    task: str  # the task whose held-out cases were scored
    verifier: str  # "exact" or "hackable"
    prompts: list[str]  # (N,) the cases, in Task.heldout order
    answers: list[str]  # (N,) reference answers
    greedy: list[str]  # (N,) greedy completions
    correct: list[int]  # (N,) 0/1: greedy completion accepted by the verifier
    confidence: list[float]  # (N,) mean token log-prob of the greedy completion (eos included)
    n_samples: int  # sampled completions per case (0: none drawn)
    sample_correct: list[int]  # (N,) accepted samples per case, for pass@k (empty when n_samples = 0)
    seed: int
    temperature: float
    max_new_tokens: int
    pass_at: dict = field(default_factory=dict)  # k → mean unbiased pass@k over cases, for the ks asked

    @property
    def accuracy(self) -> float:
        """Greedy accuracy over the cases."""
        return sum(self.correct) / len(self.correct)

    @property
    def n_cases(self) -> int:
        return len(self.prompts)


def _check_int(v, name: str, low: int, high: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}]; got {v!r}")
    return v


def _check_fits(model, codec, prompts: list[str], max_new_tokens: int) -> None:
    limit = getattr(model.config, "n_positions", None) or getattr(model.config, "max_position_embeddings", None)
    longest = max(len(codec.ids(p)) for p in prompts)
    if limit is not None and longest + max_new_tokens > limit:
        raise ValueError(f"max_new_tokens: a prompt of {longest} tokens plus {max_new_tokens} new tokens exceeds the model's "
                         f"context of {limit} positions")


@torch.no_grad()
def _task_of(cfg: dict, task, path: Path):
    """The task to score on: ``task``, or (None) the one the checkpoint's run trained on."""
    if task is None:
        task = cfg.get("task")
        if not isinstance(task, str):
            raise ValueError(f"task: {path} has no run_config.json naming its task; pass task= explicitly")
    if not isinstance(task, str):
        raise ValueError(f"task must be a task name (a string); got {type(task).__name__}")
    return get_task(task)


def _sampling(cfg: dict, t, n_cases: int, seed, temperature, max_new_tokens, verifier, batch_rows):
    """Checked sampling options shared by the evaluations → ``(temperature, max_new_tokens, batch_rows, cases)``;
    ``max_new_tokens=None`` takes the run's setting, ``cases`` are the first ``n_cases`` held-out cases of ``t``."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer; got {seed!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not math.isfinite(temperature):
        raise ValueError(f"temperature must be a finite number; got {temperature!r}")
    temperature = float(temperature)
    if not 0.0 < temperature <= 10.0:
        raise ValueError(f"temperature must lie in (0, 10]; got {temperature}")
    if max_new_tokens is None:
        max_new_tokens = cfg.get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS)
    max_new_tokens = _check_int(max_new_tokens, "max_new_tokens", 1, 512)
    if verifier not in VERIFIER_KINDS:
        raise ValueError(f"verifier must be one of {list(VERIFIER_KINDS)}; got {verifier!r}")
    batch_rows = _check_int(batch_rows, "batch_rows", 1, 100_000)
    cases = t.heldout(n_cases)
    if len(cases) < n_cases:
        raise ValueError(f"n_cases: the {t.name} task has only {len(cases)} distinct held-out prompts; got n_cases = {n_cases}")
    return temperature, max_new_tokens, batch_rows, cases


def evaluate_checkpoint(
    path: str | Path,
    task: Optional[str] = None,
    n_cases: int = 100,
    n_samples: int = 8,
    ks: Sequence[int] = (),
    seed: int = 0,
    temperature: float = 1.0,
    max_new_tokens: Optional[int] = None,
    verifier: str = "exact",
    device: str = "cpu",
    batch_rows: int = 512,
) -> CaseEvaluation:
    """Score a checkpoint on the first ``n_cases`` held-out cases of ``task`` [overview, "Evidence of adaptation gains"].

    ``task=None`` takes the task the checkpoint's run trained on (run_config.json); another built-in task measures
    retention. Greedy decoding gives the 0/1 correctness and the confidence (mean token log-prob of the greedy
    completion, eos included, at temperature 1); ``n_samples`` completions per case at ``temperature``, drawn with a
    generator seeded by ``seed``, give the correct counts for pass@k. ``ks``: pass@k values to report (each ≤
    ``n_samples``). ``max_new_tokens=None`` takes the run's setting (8 without one).
    """
    from lab.evaluation import pass_at_k
    from lab.smallrun.engine import Codec, sample

    p = _checkpoint_dir(path, "path")
    cfg = checkpoint_config(p)
    t = _task_of(cfg, task, p)
    n_cases = _check_int(n_cases, "n_cases", 1, 5000)
    n_samples = _check_int(n_samples, "n_samples", 0, 1000)
    ks = list(ks)
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"ks must hold integers >= 1; got {k!r}")
        if k > n_samples:
            raise ValueError(f"ks: pass@{k} needs n_samples >= {k} (n >= k); got n_samples = {n_samples}")
    temperature, max_new_tokens, batch_rows, cases = _sampling(cfg, t, n_cases, seed, temperature, max_new_tokens, verifier, batch_rows)

    model, tok = load_policy(p, device)
    codec = Codec(tok, torch.device(device))
    prompts, answers = [e.prompt for e in cases], [e.answer for e in cases]
    _check_fits(model, codec, prompts, max_new_tokens)
    ver = t.verifier(verifier)

    greedy, confidence = [], []
    for i in range(0, len(prompts), batch_rows):
        ids, mask, lp = sample(model, codec, prompts[i : i + batch_rows], max_new_tokens, greedy=True)  # (B, T) each
        greedy += codec.decode(ids, mask)
        m = mask.double()
        confidence += ((lp.double() * m).sum(-1) / m.sum(-1)).tolist()  # mean log-prob of the tokens it wrote
    correct = [ver.verify(q, y, answer=a).decision for q, y, a in zip(prompts, greedy, answers)]

    sample_correct: list[int] = []
    if n_samples:
        gen = torch.Generator().manual_seed(seed)
        rows = [(j, q) for j, q in enumerate(prompts) for _ in range(n_samples)]  # members of a case contiguous
        counts = [0] * len(prompts)
        for i in range(0, len(rows), batch_rows):
            chunk = rows[i : i + batch_rows]
            ids, mask, _ = sample(model, codec, [q for _, q in chunk], max_new_tokens, temperature, gen)
            for (j, q), y in zip(chunk, codec.decode(ids, mask)):
                counts[j] += ver.verify(q, y, answer=answers[j]).decision
        sample_correct = counts
    pass_at = {k: sum(pass_at_k(n_samples, c, k) for c in sample_correct) / len(sample_correct) for k in ks}
    return CaseEvaluation(str(p), rundir.weights_sha256(model), t.name, verifier, prompts, answers, greedy, correct,
                          confidence, n_samples, sample_correct, seed, temperature, max_new_tokens, pass_at)


def paired_cases(a: CaseEvaluation, b: CaseEvaluation) -> tuple[list[int], list[int]]:
    """The two greedy 0/1 vectors, after checking that ``a`` and ``b`` scored the same cases in the same order
    with the same verifier (a paired comparison is meaningless otherwise)."""
    for v, name in ((a, "a"), (b, "b")):
        if not isinstance(v, CaseEvaluation):
            raise ValueError(f"{name} must be a CaseEvaluation from evaluate_checkpoint; got {type(v).__name__}")
    if a.task != b.task:
        raise ValueError(f"b was evaluated on task {b.task!r}, a on {a.task!r}: a paired comparison needs the same task")
    if a.verifier != b.verifier:
        raise ValueError(f"b was scored with the {b.verifier!r} verifier, a with {a.verifier!r}")
    if a.prompts != b.prompts:
        raise ValueError(f"b scored different cases from a ({b.n_cases} vs {a.n_cases}, or another order); evaluate both on the same n_cases")
    return list(a.correct), list(b.correct)


# ----------------------------------------------------------------------------- best-of-N with a learned proxy


@torch.no_grad()
def reward_scores(model, tokenizer, prompts: Sequence[str], completions: Sequence[str], batch_rows: int = 512) -> list[float]:
    """The reward model's score of each (prompt, completion), encoded exactly as the reward model was trained and as
    the training runs score their samples: prompt and completion tokenized apart, eos appended, the score read at
    the last real token (``rewardmodel.score_texts``). (B,) floats."""
    from lab.smallrun.decoding import Codec
    from lab.smallrun.rewardmodel import score_texts

    if len(prompts) != len(completions):
        raise ValueError(f"prompts and completions must pair up; got {len(prompts)} and {len(completions)}")
    codec = Codec(tokenizer, next(model.parameters()).device)
    return score_texts(model, codec, list(prompts), list(completions), batch=batch_rows).float().tolist()


@dataclass(frozen=True)
class BestOfNProxy:
    """Best-of-N with a learned proxy on real samples: the measured curve and what produced it."""

    curve: object  # lab.proxy.MeasuredBestOfN
    policy: str
    reward_model: str
    task: str
    n_cases: int
    n_max: int
    seed: int
    temperature: float
    proxy_scores: list[list[float]]  # (P, N_max)
    gold_scores: list[list[int]]  # (P, N_max) verifier 0/1


@torch.no_grad()
def best_of_n_with_proxy(
    policy: str | Path,
    reward_model: str | Path,
    task: Optional[str] = None,
    n_cases: int = 50,
    n_max: int = 64,
    ns: Optional[Sequence[int]] = None,
    seed: int = 0,
    temperature: float = 1.0,
    max_new_tokens: Optional[int] = None,
    verifier: str = "exact",
    n_resamples: int = 2000,
    confidence: float = 0.95,
    device: str = "cpu",
    batch_rows: int = 512,
) -> BestOfNProxy:
    """Best-of-N against a learned reward model on the tiny policy [overview, "Proxy optimization …"; Gao et al. 2022, §2.2].

    Samples ``n_max`` completions per held-out prompt *once* (seeded), scores each with the reward model (proxy)
    and the task's verifier (gold), then for every N in ``ns`` (default 1, 2, 4, … up to ``n_max``) picks the
    proxy-best of the first N (``lab.proxy.best_of_n_measured``): the proxy score of the pick can keep rising
    while its gold accuracy stalls or falls. Intervals resample prompts; KL is the analytic log N − (N−1)/N.
    """
    from lab.proxy import best_of_n_measured
    from lab.smallrun.engine import Codec, sample

    pol = _checkpoint_dir(policy, "policy")
    _checkpoint_dir(reward_model, "reward_model")
    cfg = checkpoint_config(pol)
    t = _task_of(cfg, task, pol)
    n_cases = _check_int(n_cases, "n_cases", 1, 5000)
    n_max = _check_int(n_max, "n_max", 1, 4096)
    if ns is not None:
        for k in ns:
            if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n_max:
                raise ValueError(f"ns must hold integers in [1, n_max={n_max}]; got {k!r}")
    temperature, max_new_tokens, batch_rows, cases = _sampling(cfg, t, n_cases, seed, temperature, max_new_tokens, verifier, batch_rows)

    model, tok = load_policy(pol, device)
    rm, rm_tok = load_reward_model(reward_model, device)
    codec = Codec(tok, torch.device(device))
    _check_fits(model, codec, [e.prompt for e in cases], max_new_tokens)
    ver = t.verifier(verifier)
    gen = torch.Generator().manual_seed(seed)
    rows = [e for e in cases for _ in range(n_max)]  # (P·N_max,) the samples of a prompt contiguous, in drawing order
    texts: list[str] = []
    for i in range(0, len(rows), batch_rows):
        ids, mask, _ = sample(model, codec, [e.prompt for e in rows[i : i + batch_rows]], max_new_tokens, temperature, gen)
        texts += codec.decode(ids, mask)
    proxy = reward_scores(rm, rm_tok, [e.prompt for e in rows], texts, batch_rows)
    gold = [ver.verify(e.prompt, y, answer=e.answer).decision for e, y in zip(rows, texts)]
    P = torch.tensor(proxy, dtype=torch.float64).view(n_cases, n_max)  # (P, N_max)
    G = torch.tensor(gold, dtype=torch.float64).view(n_cases, n_max)
    curve = best_of_n_measured(P, G, ns, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return BestOfNProxy(curve, str(pol), str(reward_model), t.name, n_cases, n_max, seed, temperature,
                        P.tolist(), [[int(v) for v in r] for r in G.tolist()])


# ----------------------------------------------------------------------------- a comparison table for lab.evaluation


def comparison_table(a: CaseEvaluation, b: CaseEvaluation, old_a: Optional[CaseEvaluation] = None,
                     old_b: Optional[CaseEvaluation] = None) -> dict[str, list]:
    """Per-case columns of two checkpoints on the same cases, in the form ``lab.evaluation`` and the Compare page
    read (the columns of ``lab.evaluation.synthetic_comparison``): ``baseline`` / ``candidate`` (greedy 0/1),
    ``n`` / ``c_baseline`` / ``c_candidate`` (samples and correct samples, when both drew the same number),
    ``confidence`` (the candidate's per-token geometric-mean probability of its greedy answer, exp of the mean
    token log-prob, in (0, 1]), and ``old_before`` / ``old_after`` (greedy 0/1 of a and b on another task's cases,
    for retention) when ``old_a`` and ``old_b`` are given."""
    import math

    base, cand = paired_cases(a, b)
    table: dict[str, list] = {"baseline": [float(v) for v in base], "candidate": [float(v) for v in cand]}
    if a.n_samples and a.n_samples == b.n_samples:
        table["n"] = [float(a.n_samples)] * a.n_cases
        table["c_baseline"] = [float(c) for c in a.sample_correct]
        table["c_candidate"] = [float(c) for c in b.sample_correct]
    table["confidence"] = [math.exp(c) for c in b.confidence]
    if (old_a is None) != (old_b is None):
        raise ValueError("old_a and old_b must both be given (retention needs both checkpoints on the other task) or both be None")
    if old_a is not None:
        for v, name in ((old_a, "old_a"), (old_b, "old_b")):
            if not isinstance(v, CaseEvaluation):
                raise ValueError(f"{name} must be a CaseEvaluation from evaluate_checkpoint; got {type(v).__name__}")
        if old_a.task == a.task:
            raise ValueError(f"old_a must be evaluated on another task than {a.task!r} (retention is measured elsewhere)")
        before, after = paired_cases(old_a, old_b)
        table["old_before"] = [float(v) for v in before]
        table["old_after"] = [float(v) for v in after]
    return table


# ----------------------------------------------------------------------------- command line


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m lab.smallrun.evaluate case PATH`` prints a checkpoint's held-out accuracy, pass@k and confidence;
    ``python -m lab.smallrun.evaluate bon --policy P --reward-model R --seeds 0,1,2,3,4`` prints best-of-N with the
    learned proxy per N: the proxy and gold score of the pick, mean and min–max over the sampling seeds."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m lab.smallrun.evaluate", description=main.__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("case", help="score one checkpoint on a task's held-out cases")
    c.add_argument("path")
    c.add_argument("--task", default=None)
    c.add_argument("--n-cases", type=int, default=100)
    c.add_argument("--samples", type=int, default=8)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--verifier", default="exact", choices=VERIFIER_KINDS)
    b = sub.add_parser("bon", help="best-of-N with a learned reward model")
    b.add_argument("--policy", required=True)
    b.add_argument("--reward-model", required=True)
    b.add_argument("--task", default=None)
    b.add_argument("--n-cases", type=int, default=50)
    b.add_argument("--n-max", type=int, default=64)
    b.add_argument("--seeds", default="0,1,2,3,4")
    b.add_argument("--verifier", default="exact", choices=VERIFIER_KINDS)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    try:
        if args.cmd == "case":
            ks = [k for k in (1, 2, 4, 8, 16, 32) if k <= args.samples]
            e = evaluate_checkpoint(args.path, args.task, args.n_cases, args.samples, ks, args.seed, verifier=args.verifier)
            print(f"{e.path}  task {e.task}  {e.n_cases} held-out cases  verifier {e.verifier}")
            print(f"greedy accuracy {e.accuracy:.3f}  mean confidence (token log-prob) {sum(e.confidence) / e.n_cases:.3f}")
            for k, v in e.pass_at.items():
                print(f"pass@{k} {v:.3f}  (from {e.n_samples} samples per case, seed {e.seed})")
        else:
            seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
            curves = [best_of_n_with_proxy(args.policy, args.reward_model, args.task, args.n_cases, args.n_max, seed=s,
                                           verifier=args.verifier).curve for s in seeds]
            print(f"best-of-N, {args.n_cases} held-out prompts, {args.n_max} samples each; seeds {seeds}: mean [min, max] over seeds")
            print(f"{'N':>4} {'√KL':>6} {'proxy of pick':>28} {'gold accuracy of pick':>28}")
            for i, n in enumerate(curves[0].n):
                pv, gv = [cv.proxy[i] for cv in curves], [cv.gold[i] for cv in curves]
                print(f"{n:>4} {curves[0].d[i]:>6.3f} {sum(pv) / len(pv):>10.3f} [{min(pv):>6.3f}, {max(pv):>6.3f}]"
                      f" {sum(gv) / len(gv):>10.3f} [{min(gv):>6.3f}, {max(gv):>6.3f}]")
    except ValueError as exc:
        print(f"error: {exc}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
