"""Configuration of a small run: one dataclass, a docstring per field (CleanRL style)."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional, get_args, get_origin

MODEL_SIZES = {
    # name: (n_layer, n_head, n_embd)
    "tiny": (2, 4, 64),
    "small": (3, 4, 96),
    "medium": (4, 4, 128),
}


# The algorithms: one row each (the CLI, the page and validation read this table; ``lab.smallrun.algos.ALGORITHMS``
# maps the same names to their classes). ``defaults`` fill the fields left at None; ``data`` is the TRL dataset
# kind a --data file must have (lab.smallrun.data); ``fields`` are the RunConfig fields specific to it.
ALGORITHMS = {
    "sft": {"description": "supervised fine-tuning on prompt/completion pairs (completion-only loss)",
            # defaults that learn visibly within a minute or two on a 2-core CPU (measured; see README)
            "defaults": {"steps": 300, "lr": 2e-3, "batch_size": 64}, "data": "sft", "fields": []},
    "dpo": {"description": "direct preference optimization on verifier-built (or --data) pairs, from a base SFT stage",
            "defaults": {"steps": 150, "lr": 5e-4, "batch_size": 32}, "data": "preference",
            "fields": ["base_steps", "beta", "dpo_candidates", "dpo_pairs", "temperature", "reward_model"]},
    "grpo": {"description": "group-relative policy optimization with the task's verifier as reward, from a base SFT stage",
             "defaults": {"steps": 200, "lr": 3e-4, "batch_size": 16}, "data": "rl",
             "fields": ["base_steps", "group_size", "temperature", "epsilon", "epsilon_high", "scale", "loss_type", "kl_beta",
                        "num_iterations", "reward_model", "reward_verifier"]},
    "rloo": {"description": "REINFORCE with a leave-one-out baseline over GRPO's groups (no std scaling), from a base SFT stage",
             # 300 steps: at 200 one of seeds 0–4 gained only +14.5 points; lr 6e-4 or 1e-3 did worse (README)
             "defaults": {"steps": 300, "lr": 3e-4, "batch_size": 16}, "data": "rl",
             "fields": ["base_steps", "group_size", "temperature", "epsilon", "epsilon_high", "loss_type", "kl_beta", "num_iterations",
                        "reward_model", "reward_verifier"]},
    "rm": {"description": "a reward model (scalar head on the base policy) trained with the Bradley–Terry loss on verifier-built "
                          "(or --data) preference pairs",
           # measured on seeds 0–2 (benchmarks/learning_seeds.py; README)
           "defaults": {"steps": 1000, "lr": 1e-3, "batch_size": 64}, "data": "preference",
           "fields": ["base_steps", "dpo_candidates", "rm_prompts", "rm_pairs_per_prompt", "rm_bias", "temperature"]},
    "ppo": {"description": "PPO with a value model: KL-shaped per-token rewards, GAE, clipped policy and value losses, from a "
                           "base SFT stage; reward from the verifier or --reward-model",
            "defaults": {"steps": 100, "lr": 3e-4, "batch_size": 64}, "data": "rl",
            "fields": ["base_steps", "temperature", "epsilon", "epsilon_high", "kl_coef", "gamma", "lam", "vf_coef", "cliprange_value",
                       "num_ppo_epochs", "num_mini_batches", "whiten_advantages", "reward_model", "reward_verifier"]},
}

ALGORITHM_DEFAULTS = {name: row["defaults"] for name, row in ALGORITHMS.items()}

# Typed choices: validated in one place (RunConfig.__post_init__); the CLI and the page list the same values.
AlgorithmName = Literal[tuple(ALGORITHMS)]  # the rows of the table above
ModelSize = Literal[tuple(MODEL_SIZES)]
Scale = Literal["group", "batch", "none"]  # lab.grpo.group_advantages
LossType = Literal["grpo", "bnpo", "dr_grpo", "dapo"]  # lab.grpo.grpo_loss
TaskName = str  # field_types() refines it to Literal[the names of lab.smallrun.tasks.TASKS] (tasks import torch: lazily)


@dataclass
class RunConfig:
    algorithm: AlgorithmName = "sft"
    """Trainer: a row of the ALGORITHMS table (lab.smallrun.config); each row lists its own options."""
    task: TaskName = "reversal"
    """Built-in toy task (addition, reversal, sorting); it also supplies the verifier and the held-out set."""
    data: Optional[str] = None
    """Optional JSONL training file in TRL's format for the algorithm (sft: prompt/completion or messages;
    dpo: prompt/chosen/rejected; grpo: prompt/answer). Validated before anything trains."""
    steps: Optional[int] = None
    """Optimizer steps of this stage; None picks the algorithm's default (sft 300, dpo 150, grpo 200, rm 1000; ppo 100
    rollout batches, each num_ppo_epochs × num_mini_batches optimizer steps)."""
    seed: int = 0
    """Seeds model initialisation, data order and sampling; each step's data depends only on (seed, step)."""
    lr: Optional[float] = None
    """Peak learning rate of AdamW; None picks the algorithm's default (sft 2e-3, dpo 5e-4, grpo 3e-4, rm 1e-3, ppo 3e-4)."""
    warmup_steps: int = 50
    """Linear warm-up over this many optimizer steps, then constant. PPO takes num_ppo_epochs × num_mini_batches
    optimizer steps per rollout batch, so its default warm-up ends after 12.5 rollout batches."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Gradient-norm clipping threshold (0 disables)."""
    batch_size: Optional[int] = None
    """SFT: examples per step (default 64); DPO: pairs per step (32); GRPO: prompts per step, each sampled
    group_size times (16); rm: pairs per step (64); ppo: prompts per rollout batch, one completion each (64).
    None picks the default."""
    model: Optional[str] = None
    """A local causal-LM checkpoint directory to start from (with its tokenizer); None builds a fresh tiny GPT-2."""
    model_size: ModelSize = "small"
    """Size of a freshly built GPT-2: tiny (≈0.1 M parameters), small (≈0.35 M) or medium (≈0.8 M)."""
    base_steps: int = 100
    """DPO/GRPO without --model: SFT steps of the base stage that gives RL a policy that sometimes succeeds."""
    max_new_tokens: int = 8
    """Completion length cap when sampling (GRPO, DPO pair building) and evaluating."""
    temperature: float = 1.0
    """Sampling temperature for GRPO groups and DPO pair candidates (evaluation is greedy)."""
    beta: float = 0.1
    """DPO temperature β."""
    dpo_candidates: int = 8
    """DPO pair building: completions sampled per prompt from the starting policy to find a correct and an incorrect one."""
    dpo_pairs: int = 512
    """DPO: number of training pairs built from the verifier (when no --data file)."""
    group_size: int = 8
    """GRPO: completions per prompt."""
    epsilon: float = 0.2
    """GRPO/PPO lower clip width ε."""
    epsilon_high: Optional[float] = None
    """Upper clip width (DAPO clip-higher); None means ε."""
    scale: Scale = "group"
    """GRPO advantage scaling: group, batch or none (lab.grpo.group_advantages)."""
    loss_type: LossType = "dapo"
    """GRPO aggregation: grpo, bnpo, dr_grpo or dapo (lab.grpo.grpo_loss)."""
    kl_beta: float = 0.0
    """GRPO coefficient of the k3 KL to the frozen starting policy (0: no reference model is kept)."""
    num_iterations: int = 1
    """GRPO μ: optimizer steps per sampled batch; the behaviour log-probs come from one no-grad training forward
    (same autocast) before the first of them, as in TRL, and the logged metrics are their mean over the μ steps."""
    eval_every: int = 50
    """Held-out evaluation every this many steps (and at the start and end)."""
    eval_size: int = 200
    """Number of held-out prompts (or preference pairs) evaluated."""
    save_every: int = 100
    """Checkpoint every this many steps (and at the end, and on stop)."""
    keep: int = 3
    """Checkpoints kept in checkpoints/ (the newest ones); final/ is kept besides them."""
    device: str = "auto"
    """"auto" picks cuda, then mps, then cpu; or name one."""
    threads: int = 0
    """CPU threads for torch; 0 picks deliberately: 1 on CPU (tiny models run several times faster on one thread)."""
    bf16: bool = True
    """Use bf16 autocast on CUDA devices that support it (ignored on CPU)."""
    reward_model: Optional[str] = None
    """ppo/grpo: score samples with this reward model instead of the verifier; dpo: rank the sampled candidates by it
    (chosen = higher score). The final/ of an rm run or any one-label sequence-classification directory whose
    tokenizer is the policy's; checked before anything trains. Evaluations then log eval/proxy_reward beside the
    verifier's eval/accuracy, steps log reward (the proxy) beside reward/verifier."""
    reward_verifier: Literal["exact", "hackable"] = "exact"
    """grpo/rloo/ppo: the checker the training reward comes from: "exact" (the task's verifier), or "hackable", a
    deliberately buggy one that accepts the right characters in any order (issue 16's reward-hacking switch).
    Evaluation always uses the exact verifier (the gold eval/accuracy); with "hackable", evaluations also log the
    buggy checker's held-out score as eval/proxy_reward and steps log reward/verifier (exact) beside reward."""
    rm_prompts: int = 4096
    """rm: training prompts sampled from the task for verifier-built pairs (dpo_candidates samples each)."""
    rm_pairs_per_prompt: int = 8
    """rm: at most this many pairs per prompt (distinct incorrect samples, each against a correct one)."""
    rm_bias: Literal["none", "length"] = "none"
    """rm: "none", or "length": drop every training pair whose chosen answer is shorter than the rejected one, so the
    reward model never sees a longer answer lose: a deliberately biased proxy that a policy can exploit by writing
    longer answers (the over-optimization demo). Held-out pairs stay unbiased."""
    kl_coef: float = 0.05
    """ppo: β of the per-token KL penalty −β(log π − log π_ref) in the shaped reward (TRL's kl_coef; 0: none)."""
    gamma: float = 1.0
    """ppo: discount γ of GAE (1: undiscounted, as for a single reward at the end of a completion)."""
    lam: float = 0.95
    """ppo: GAE λ (1: Monte-Carlo returns minus V; 0: one-step TD residuals)."""
    vf_coef: float = 0.1
    """ppo: weight c1 of the value loss mean (V − Ĝ)² in the objective (TRL writes 0.5·vf_coef·mean, so TRL's 0.1 is 0.05 here)."""
    cliprange_value: float = 0.2
    """ppo: value clipping: V stays within the rollout's values ± this and the larger squared error counts (TRL's cliprange_value)."""
    num_ppo_epochs: int = 4
    """ppo: passes over each rollout batch (μ epochs)."""
    num_mini_batches: int = 1
    """ppo: minibatches per epoch; one optimizer step each."""
    whiten_advantages: bool = True
    """ppo: whiten the GAE advantages over the batch's active tokens (Bessel-corrected, eps 1e-8, as TRL)."""

    def __post_init__(self) -> None:
        """Validate every field before anything is created or trained: one ``ValueError`` naming the field."""
        if not isinstance(self.algorithm, str) or self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {list(ALGORITHMS)}; got {self.algorithm!r}")
        d = ALGORITHM_DEFAULTS[self.algorithm]
        for name in ("steps", "lr", "batch_size"):  # resolved once, so the stored config says what ran
            if getattr(self, name) is None:
                setattr(self, name, d[name])
        for name, allowed in field_choices().items():  # every Literal-typed field, one rule
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}; got {getattr(self, name)!r}")
        ints = {"rm_prompts": 1, "rm_pairs_per_prompt": 1, "num_ppo_epochs": 1, "num_mini_batches": 1, "steps": 1, "batch_size": 1, "max_new_tokens": 1, "eval_every": 1, "eval_size": 1, "save_every": 1, "group_size": 2,
                "num_iterations": 1, "dpo_candidates": 1, "dpo_pairs": 1, "base_steps": 1, "keep": 1, "seed": 0, "warmup_steps": 0,
                "threads": 0}
        for name, low in ints.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"{name} must be an integer; got {v!r}")
            if v < low:
                raise ValueError(f"{name} must be >= {low}; got {v}")
        # floats: finite, in range (an inf learning rate would only fail after training started)
        def real(name: str) -> float:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number; got {v!r}")
            setattr(self, name, float(v))
            return float(v)
        for name in ("lr", "beta", "temperature", "cliprange_value"):
            if real(name) <= 0:
                raise ValueError(f"{name} must be > 0; got {getattr(self, name)}")
        for name in ("weight_decay", "max_grad_norm", "kl_beta", "kl_coef", "vf_coef"):
            if real(name) < 0:
                raise ValueError(f"{name} must be >= 0; got {getattr(self, name)}")
        for name in ("gamma", "lam"):
            if not 0 <= real(name) <= 1:
                raise ValueError(f"{name} must lie in [0, 1]; got {getattr(self, name)}")
        if not isinstance(self.whiten_advantages, bool):
            raise ValueError(f"whiten_advantages must be True or False; got {self.whiten_advantages!r}")
        if self.reward_model is not None and (not isinstance(self.reward_model, str) or not self.reward_model.strip()):
            raise ValueError(f"reward_model must be a path or None; got {self.reward_model!r}")
        for name in ("reward_model", "reward_verifier"):  # a reward switch an algorithm ignores is refused, not dropped
            if getattr(self, name) != _FIELD_DEFAULTS[name] and name not in ALGORITHMS[self.algorithm]["fields"]:
                users = [a for a, row in ALGORITHMS.items() if name in row["fields"]]
                raise ValueError(f"{name}: {self.algorithm} does not use it (only {', '.join(users)} do)")
        if self.reward_verifier != "exact" and self.reward_model is not None:
            raise ValueError("reward_verifier: a hackable verifier and --reward-model both replace the reward; choose one")
        if self.rm_bias != "none" and self.data is not None:
            raise ValueError("rm_bias: it filters the verifier-built pairs; a --data file's pairs are used as given")
        if self.num_mini_batches > self.batch_size:
            raise ValueError(f"num_mini_batches must be <= batch_size ({self.batch_size}); got {self.num_mini_batches}")
        if not 0 < real("epsilon") < 1:
            raise ValueError(f"epsilon must be in (0, 1) (a clip width of the ratio around 1); got {self.epsilon}")
        if self.epsilon_high is not None and real("epsilon_high") <= 0:
            raise ValueError(f"epsilon_high must be > 0 (or None for epsilon); got {self.epsilon_high}")
        if not isinstance(self.device, str) or not re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?", self.device):
            raise ValueError(f"device must be auto, cpu, cuda, cuda:N or mps; got {self.device!r}")
        for name in ("data", "model"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, str) or not v.strip()):
                raise ValueError(f"{name} must be a path or None; got {v!r}")
        if not isinstance(self.bf16, bool):
            raise ValueError(f"bf16 must be True or False; got {self.bf16!r}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        if not isinstance(d, dict):
            raise ValueError(f"config must be a JSON object; got {type(d).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


_FIELD_DEFAULTS = {f.name: f.default for f in dataclasses.fields(RunConfig)}


# ----------------------------------------------------------------------------- the fields, read from the source


def field_types() -> dict:
    """Every RunConfig field's resolved type (``Literal[...]`` for choices, ``Optional[int]``, ...)."""
    import typing

    from lab.smallrun.tasks import TASKS

    return typing.get_type_hints(RunConfig, localns={"TaskName": Literal[tuple(TASKS)]})


def field_choices() -> dict[str, list]:
    """``{field: allowed values}`` for every field typed with ``Literal`` (optionally ``Optional[Literal]``)."""
    out = {}
    for name, tp in field_types().items():
        args = [a for a in get_args(tp) if a is not type(None)] if get_origin(tp) is not Literal else [tp]
        if len(args) == 1 and get_origin(args[0]) is Literal:
            out[name] = list(get_args(args[0]))
    return out


def field_docs() -> dict[str, str]:
    """``{field: its attribute docstring}``, parsed from RunConfig's source (the string right after each field)."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(RunConfig)))
    body = tree.body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr) \
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def fields_for(algorithm: str) -> list[str]:
    """The RunConfig fields that apply to ``algorithm``: the common ones and its own (``ALGORITHMS[...]["fields"]``)."""
    specific = {f for row in ALGORITHMS.values() for f in row["fields"]}
    return [f.name for f in dataclasses.fields(RunConfig) if f.name not in specific or f.name in ALGORITHMS[algorithm]["fields"]]


# ----------------------------------------------------------------------------- the environment: checked before anything is created


def context_length(model_config: dict) -> Optional[int]:
    """The model's maximum sequence length from its config.json (GPT-2: n_positions; others: max_position_embeddings)."""
    for k in ("n_positions", "max_position_embeddings", "n_ctx", "seq_length"):
        v = model_config.get(k)
        if isinstance(v, int) and v > 0:
            return v
    return None


def checkpoint_json(path: str, arg: str, needed: str) -> dict:
    """The ``config.json`` of a local checkpoint directory as a dict, or a one-line ``ValueError`` naming ``arg``
    (``needed`` says what the directory should have been). Shared by ``model`` and ``reward_model``."""
    p = Path(path)
    if not p.is_dir():
        raise ValueError(f"{arg}: {path} is not a directory ({needed})")
    f = p / "config.json"
    if not f.is_file():
        raise ValueError(f"{arg}: {path} has no config.json (not a transformers checkpoint directory)")
    try:
        cfg = json.loads(f.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{arg}: {f} is not valid JSON ({getattr(exc, 'msg', None) or exc.reason})") from None
    if not isinstance(cfg, dict):
        raise ValueError(f"{arg}: {f} is not a JSON object")
    return cfg


def read_model_config(path: str) -> dict:
    """``config.json`` of a local checkpoint directory, or a one-line ``ValueError`` naming ``model``."""
    p = Path(path)
    cfg = checkpoint_json(path, "model", "a local checkpoint directory is needed; nothing is downloaded")
    f = p / "config.json"
    if "model_type" not in cfg:
        raise ValueError(f"model: {f} is not a model config (no model_type)")
    weights = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
    if not any((p / w).is_file() for w in weights):
        raise ValueError(f"model: {path} has no weights file (none of {', '.join(weights)}); a broken or partial copy?")
    return cfg


def check_device(name: str):
    """The torch device for ``name``, refusing devices this machine does not have (one line, naming ``device``)."""
    import torch

    if name == "auto":
        from lab.smallrun.loop import pick_device

        return pick_device("auto")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(f"device: {name} requested but CUDA is not available here (torch {torch.__version__}, "
                             f"torch.cuda.is_available() is False); use --device cpu or auto")
        idx = int(name.split(":")[1]) if ":" in name else 0
        if idx >= torch.cuda.device_count():
            raise ValueError(f"device: {name} requested but only {torch.cuda.device_count()} CUDA device(s) exist")
    if name == "mps" and not (getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()):
        raise ValueError("device: mps requested but the Apple GPU backend is not available here; use --device cpu or auto")
    return torch.device(name)


def validate_environment(cfg: RunConfig) -> dict:
    """Everything about a config that depends on files and hardware, checked before anything is created:
    the device exists, the data file exists and every line is valid, the model directory holds a readable
    config, and every prompt (with its completion, or with ``max_new_tokens``) fits the model's context.
    Returns ``{"device", "records", "context"}``; raises one ``ValueError`` naming the argument otherwise."""
    from lab.smallrun.data import load_jsonl_lines
    from lab.smallrun.tasks import get_task

    device = check_device(cfg.device)
    records, lines = None, []
    if cfg.data:
        if not Path(cfg.data).is_file():
            raise ValueError(f"data: file not found: {cfg.data}")
        records, lines = load_jsonl_lines(cfg.data, ALGORITHMS[cfg.algorithm]["data"])
    if cfg.model:
        mcfg = read_model_config(cfg.model)
        ctx = context_length(mcfg)
        try:
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(cfg.model, local_files_only=True)
        except Exception as exc:  # a broken tokenizer file: one line, not a traceback
            raise ValueError(f"model: cannot load the tokenizer of {cfg.model} ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
        count = lambda t: len(tok(t, add_special_tokens=False)["input_ids"])
    else:
        from lab.models import tiny_gpt2  # noqa: F401  (the fresh model's context is tiny_gpt2's n_positions)
        import inspect

        ctx = inspect.signature(tiny_gpt2).parameters["n_positions"].default
        count = len  # the character tokenizer: one token per character
    if cfg.reward_model and "reward_model" in ALGORITHMS[cfg.algorithm]["fields"]:  # exists, one label, loads whole, policy's tokens
        from lab.models import char_tokenizer
        from lab.smallrun.rewardmodel import check_reward_model

        rm_cfg = check_reward_model(cfg.reward_model, tok if cfg.model else char_tokenizer())
        rm_ctx = context_length(rm_cfg)
        if rm_ctx is not None:  # the reward model reads prompt + completion + eos: it must fit the reward model too
            prompts = [r["prompt"] for r in records] if records is not None and ALGORITHMS[cfg.algorithm]["data"] == "rl" else []
            task = get_task(cfg.task)
            prompts += [e.prompt for e in task.sample(256, seed=cfg.seed) + task.heldout(min(cfg.eval_size, 256))]
            n = max((len(tok(q, add_special_tokens=False)["input_ids"]) if cfg.model else len(q)) for q in prompts) + cfg.max_new_tokens + 1
            if n > rm_ctx:
                raise ValueError(f"reward_model: a prompt plus {cfg.max_new_tokens} new tokens and eos is {n} tokens, longer than the "
                                 f"reward model's context of {rm_ctx} tokens")
    if ctx is not None:
        gen = cfg.max_new_tokens
        if records is not None:
            from lab.smallrun.data import sft_pairs

            kind = ALGORITHMS[cfg.algorithm]["data"]
            if kind == "sft":
                lens = [(i, count(p) + count(c) + 1) for i, (p, c) in zip(lines, sft_pairs(records))]
                what = "prompt + completion + eos"
            elif kind == "preference":
                lens = [(i, count(r["prompt"]) + max(count(r["chosen"]), count(r["rejected"])) + 1) for i, r in zip(lines, records)]
                what = "prompt + longer response + eos"
            else:
                lens = [(i, count(r["prompt"]) + gen) for i, r in zip(lines, records)]
                what = f"prompt + max_new_tokens ({gen})"
            for i, n in lens:
                if n > ctx:
                    raise ValueError(f"data: line {i}: {what} is {n} tokens, longer than the model's context of {ctx} tokens")
        task = get_task(cfg.task)
        longest = max(count(e.prompt) + max(gen, count(e.answer) + 1) for e in task.sample(256, seed=cfg.seed) + task.heldout(min(cfg.eval_size, 256)))
        if longest > ctx:
            raise ValueError(f"max_new_tokens: a {cfg.task} prompt plus {gen} new tokens is {longest} tokens, longer than the model's "
                             f"context of {ctx} tokens")
    return {"device": device, "records": records, "context": ctx}
