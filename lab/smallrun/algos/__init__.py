"""Small-run algorithms: one module each, the same small interface (``base.Algorithm``).

``ALGORITHMS`` maps the name used by ``RunConfig.algorithm`` (and the CLI) to the class; ``config.ALGORITHMS``
holds the matching description, defaults and options (it imports no torch, so the page reads it cheaply).
"""

from lab.smallrun.algos.base import Algorithm
from lab.smallrun.algos.dpo import DPO
from lab.smallrun.algos.grpo import GRPO
from lab.smallrun.algos.rloo import RLOO
from lab.smallrun.algos.sft import SFT
from lab.smallrun.algos.rm import RewardModel
from lab.smallrun.algos.ppo import PPO

ALGORITHMS: dict[str, type[Algorithm]] = {"sft": SFT, "dpo": DPO, "grpo": GRPO, "rloo": RLOO}

__all__ = ["ALGORITHMS", "Algorithm", "SFT", "DPO", "GRPO", "RLOO"]
ALGORITHMS.update({"rm": RewardModel, "ppo": PPO})
__all__ += ["RewardModel", "PPO"]

