"""RLOO: REINFORCE with a leave-one-out baseline over the same groups as GRPO (lab.grpo.rloo_advantages).

Ahmadian et al. 2024, "Back to Basics: Revisiting REINFORCE Style Optimization for Learning from Human Feedback
in LLMs", §3.2: each of the k completions of a prompt is baselined by the mean reward of the other k − 1,
A_i = r_i − (Σ_j r_j − r_i)/(k − 1); no division by the group's std (TRL's ``RLOOTrainer`` default,
``normalize_advantages=False``). Everything else is GRPO's body (sampling, verifier reward, clipped objective
aggregated by ``loss_type``, μ iterations). Note: TRL's ``RLOOTrainer`` clips a sequence-level ratio; here the
token-level objective of ``lab.grpo.grpo_loss`` is kept, so that the advantage rule is the only difference.
"""

from __future__ import annotations

import torch

from lab.grpo import rloo_advantages
from lab.smallrun.algos.grpo import GRPO


class RLOO(GRPO):
    name = "rloo"

    def advantages(self, rewards: torch.Tensor) -> tuple[torch.Tensor, dict]:
        adv = rloo_advantages(rewards, self.cfg.group_size)  # (N,), each group sums to 0
        baseline = rewards - adv  # (N,) the leave-one-out mean each sample is compared with
        return adv, {"rloo/baseline_mean": float(baseline.mean()), "rloo/advantage_abs_mean": float(adv.abs().mean())}
