"""The small interface every small-run algorithm has (CleanRL-like: one short body per objective).

The loop (``lab.smallrun.loop.Loop``) owns everything generic: the run directory, the optimizer and its
schedule, checkpoints, resume, evaluation, the step loop. An algorithm owns its models, its data and its loss:

- ``prepare(ctx, resume)``: build or load its model(s) through ``ctx.load_policy()`` / ``ctx.frozen_copy()``,
  its reference and its data (``resume``: reload what it wrote in ``ctx.out`` instead of rebuilding it);
- ``step(step) -> (metrics, samples | None)``: one training step that calls ``ctx.optimize(loss)`` once or
  more; metrics are named as TRL names them; ``samples`` (a dict, or None) is shown beside the charts;
- ``evaluate(greedy) -> dict``: its extra held-out metrics (``eval/...``); the loop adds greedy exact match
  ``eval/accuracy`` itself when ``greedy_eval`` is true (it decodes ``self.policy`` once) and passes those
  completions as ``greedy`` (a list of (Example, text), or None), so a proxy scores the same texts without a
  second decode;
- ``trained() -> {name: module}``: what the checkpoint holds, the main module first (saved with
  ``save_pretrained``, so it loads with plain transformers; further modules, e.g. a value model, are saved
  beside it as ``NAME.safetensors`` + ``NAME.config.json``);
- ``parameters()``: what AdamW optimizes (default: every trainable parameter of ``trained()``);
- ``state_dict()`` / ``load_state_dict(d)``: any algorithm state a resume needs beyond weights and optimizer
  (tensors, numbers, strings, lists, dicts only: the checkpoint is read with ``weights_only=True``).

Declared per class: ``name``, ``metric`` (the headline eval key of the summary), ``needs_base_stage`` (start from
a base SFT stage when no ``--model`` is given), ``greedy_eval``.
"""

from __future__ import annotations

from typing import Optional

import torch


class Algorithm:
    name: str = ""
    metric: str = "eval/accuracy"
    needs_base_stage: bool = False
    greedy_eval: bool = True

    policy: torch.nn.Module  # set by prepare(); the module greedy evaluation decodes

    def prepare(self, ctx, resume: bool) -> None:
        raise NotImplementedError

    def step(self, step: int) -> tuple[dict, Optional[dict]]:
        raise NotImplementedError

    def evaluate(self, greedy: Optional[list] = None) -> dict:
        return {}

    def trained(self) -> dict[str, torch.nn.Module]:
        return {"model": self.policy}

    def parameters(self) -> list[torch.nn.Parameter]:
        seen, out = set(), []
        for mod in self.trained().values():
            for p in mod.parameters():
                if p.requires_grad and id(p) not in seen:  # tied weights once
                    seen.add(id(p))
                    out.append(p)
        return out

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass
