"""Configuration of a small run: one dataclass, a docstring per field (CleanRL style)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
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
    device: str = "auto"
    """"auto" picks cuda, then mps, then cpu; or name one."""
    threads: int = 0
    """CPU threads for torch; 0 picks deliberately: 1 on CPU (tiny models run several times faster on one thread)."""
    bf16: bool = True
    """Use bf16 autocast on CUDA devices that support it (ignored on CPU)."""

    def __post_init__(self) -> None:
        if self.algorithm not in ("sft", "dpo", "grpo"):
            raise ValueError(f"algorithm must be sft, dpo or grpo; got {self.algorithm!r}")
        d = ALGORITHM_DEFAULTS[self.algorithm]
        for name in ("steps", "lr", "batch_size"):  # resolved once, so the stored config says what ran
            if getattr(self, name) is None:
                setattr(self, name, d[name])
        if self.model_size not in MODEL_SIZES:
            raise ValueError(f"model_size must be one of {list(MODEL_SIZES)}; got {self.model_size!r}")
        for name in ("steps", "batch_size", "max_new_tokens", "eval_every", "eval_size", "save_every", "group_size", "num_iterations", "dpo_candidates", "dpo_pairs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1; got {getattr(self, name)}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0; got {self.lr}")
        if self.beta <= 0:
            raise ValueError(f"beta must be > 0; got {self.beta}")
        if self.group_size < 2:
            raise ValueError(f"group_size must be >= 2; got {self.group_size}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0; got {self.temperature}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})
