"""Small runs: train a tiny GPT-2 with SFT, DPO, GRPO or RLOO using the library's own losses.

``python -m lab.smallrun ALGORITHM --task addition --steps N --out runs/NAME [--resume] [--keep K]`` (``--help``
lists every RunConfig field; ``lab.smallrun.config.ALGORITHMS`` lists the algorithms)
``python -m lab.smallrun verify runs/NAME``  (hash-chained ledger, checkpoints against manifests and policy stamps)

Layout: ``decoding`` (one sampling loop, two decoders) → ``loop`` (the training loop, no algorithm code) →
``algos/`` (one module per algorithm) → ``pipeline`` (``SmallRun``: base SFT stage, then the main stage).
Run directories (marker, lock, ledger, checkpoints, final/) are handled by ``lab.smallrun.rundir``.
"""

from lab.smallrun.config import RunConfig
from lab.smallrun.decoding import sample
from lab.smallrun.loop import pick_device
from lab.smallrun.pipeline import SmallRun
from lab.smallrun.tasks import TASKS, get_task

__all__ = ["RunConfig", "SmallRun", "TASKS", "get_task", "pick_device", "sample"]
