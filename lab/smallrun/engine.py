"""Compatibility module: the small-run engine now lives in ``decoding`` (sampling), ``loop`` (the training loop),
``algos`` (one module per algorithm) and ``pipeline`` (stages, ``SmallRun``). Existing imports keep working."""

from lab.smallrun.decoding import Codec, HFDecoder, completion_logps, make_decoder, sample
from lab.smallrun.loop import pick_device, pick_threads, step_seed, versions
from lab.smallrun.pipeline import SmallRun

__all__ = ["SmallRun", "Codec", "HFDecoder", "sample", "completion_logps", "make_decoder", "step_seed", "pick_device",
           "pick_threads", "versions"]
