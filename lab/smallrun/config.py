"""Configuration of a small run: one dataclass, a docstring per field (CleanRL style)."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

MODEL_SIZES = {
    # name: (n_layer, n_head, n_embd)
    "tiny": (2, 4, 64),
    "small": (3, 4, 96),
    "medium": (4, 4, 128),
}


ALGORITHM_DEFAULTS = {
    # defaults that learn visibly within a minute or two on a 2-core CPU (measured; see README)
    "sft": {"steps": 300, "lr": 2e-3, "batch_size": 64},
    "dpo": {"steps": 150, "lr": 5e-4, "batch_size": 32},
    "grpo": {"steps": 200, "lr": 3e-4, "batch_size": 16},
}


@dataclass
class RunConfig:
    algorithm: str = "sft"
    """Trainer: "sft", "dpo" or "grpo"."""
    task: str = "reversal"
    """Built-in toy task (addition, reversal, sorting); it also supplies the verifier and the held-out set."""
    data: Optional[str] = None
    """Optional JSONL training file in TRL's format for the algorithm (sft: prompt/completion or messages;
    dpo: prompt/chosen/rejected; grpo: prompt/answer). Validated before anything trains."""
    steps: Optional[int] = None
    """Optimizer steps of this stage; None picks the algorithm's default (sft 300, dpo 150, grpo 200)."""
    seed: int = 0
    """Seeds model initialisation, data order and sampling; each step's data depends only on (seed, step)."""
    lr: Optional[float] = None
    """Peak learning rate of AdamW; None picks the algorithm's default (sft 2e-3, dpo 5e-4, grpo 3e-4)."""
    warmup_steps: int = 50
    """Linear warm-up steps, then constant."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Gradient-norm clipping threshold (0 disables)."""
    batch_size: Optional[int] = None
    """SFT: examples per step (default 64); DPO: pairs per step (32); GRPO: prompts per step, each sampled
    group_size times (16). None picks the default."""
    model: Optional[str] = None
    """A local causal-LM checkpoint directory to start from (with its tokenizer); None builds a fresh tiny GPT-2."""
    model_size: str = "small"
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
    scale: str = "group"
    """GRPO advantage scaling: group, batch or none (lab.grpo.group_advantages)."""
    loss_type: str = "dapo"
    """GRPO aggregation: grpo, bnpo, dr_grpo or dapo (lab.grpo.grpo_loss)."""
    kl_beta: float = 0.0
    """GRPO coefficient of the k3 KL to the frozen starting policy (0: no reference model is kept)."""
    num_iterations: int = 1
    """GRPO μ: optimizer steps per sampled batch, with the behaviour log-probs stored at sampling time."""
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

    def __post_init__(self) -> None:
        """Validate every field before anything is created or trained: one ``ValueError`` naming the field."""
        if self.algorithm not in ("sft", "dpo", "grpo"):
            raise ValueError(f"algorithm must be sft, dpo or grpo; got {self.algorithm!r}")
        d = ALGORITHM_DEFAULTS[self.algorithm]
        for name in ("steps", "lr", "batch_size"):  # resolved once, so the stored config says what ran
            if getattr(self, name) is None:
                setattr(self, name, d[name])
        from lab.smallrun.tasks import TASKS

        choices = {"task": list(TASKS), "model_size": list(MODEL_SIZES), "scale": ["group", "batch", "none"],
                   "loss_type": ["grpo", "bnpo", "dr_grpo", "dapo"]}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}; got {getattr(self, name)!r}")
        ints = {"steps": 1, "batch_size": 1, "max_new_tokens": 1, "eval_every": 1, "eval_size": 1, "save_every": 1, "group_size": 2,
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
        for name in ("lr", "beta", "temperature"):
            if real(name) <= 0:
                raise ValueError(f"{name} must be > 0; got {getattr(self, name)}")
        for name in ("weight_decay", "max_grad_norm", "kl_beta"):
            if real(name) < 0:
                raise ValueError(f"{name} must be >= 0; got {getattr(self, name)}")
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


# ----------------------------------------------------------------------------- the environment: checked before anything is created


def context_length(model_config: dict) -> Optional[int]:
    """The model's maximum sequence length from its config.json (GPT-2: n_positions; others: max_position_embeddings)."""
    for k in ("n_positions", "max_position_embeddings", "n_ctx", "seq_length"):
        v = model_config.get(k)
        if isinstance(v, int) and v > 0:
            return v
    return None


def read_model_config(path: str) -> dict:
    """``config.json`` of a local checkpoint directory, or a one-line ``ValueError`` naming ``model``."""
    p = Path(path)
    if not p.is_dir():
        raise ValueError(f"model: {path} is not a directory (a local checkpoint directory is needed; nothing is downloaded)")
    f = p / "config.json"
    if not f.is_file():
        raise ValueError(f"model: {path} has no config.json (not a transformers checkpoint directory)")
    try:
        cfg = json.loads(f.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"model: {f} is not valid JSON ({getattr(exc, 'msg', None) or exc.reason})") from None
    if not isinstance(cfg, dict) or "model_type" not in cfg:
        raise ValueError(f"model: {f} is not a model config (no model_type)")
    weights = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
    if not any((p / w).is_file() for w in weights):
        raise ValueError(f"model: {path} has no weights file (none of {', '.join(weights)}); a broken or partial copy?")
    return cfg


def check_device(name: str):
    """The torch device for ``name``, refusing devices this machine does not have (one line, naming ``device``)."""
    import torch

    if name == "auto":
        from lab.smallrun.engine import pick_device

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
        records, lines = load_jsonl_lines(cfg.data, {"sft": "sft", "dpo": "preference", "grpo": "rl"}[cfg.algorithm])
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
    if ctx is not None:
        gen = cfg.max_new_tokens
        if records is not None:
            from lab.smallrun.data import sft_pairs

            if cfg.algorithm == "sft":
                lens = [(i, count(p) + count(c) + 1) for i, (p, c) in zip(lines, sft_pairs(records))]
                what = "prompt + completion + eos"
            elif cfg.algorithm == "dpo":
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
