"""Small runs: train a tiny GPT-2 with SFT, DPO or GRPO using the library's own losses.

``python -m lab.smallrun {sft,dpo,grpo} --task addition --steps N --out runs/NAME [--resume] [--keep K]``
``python -m lab.smallrun verify runs/NAME``  (hash-chained ledger, checkpoints against manifests and policy stamps)

Run directories (marker, lock, ledger, checkpoints, final/) are handled by ``lab.smallrun.rundir``.
"""

from lab.smallrun.config import RunConfig
from lab.smallrun.engine import SmallRun, pick_device, sample
from lab.smallrun.tasks import TASKS, get_task

__all__ = ["RunConfig", "SmallRun", "TASKS", "get_task", "pick_device", "sample"]
