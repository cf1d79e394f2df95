"""A sign-invariant checkpoint-trajectory forecast [ftip-006B]."""

import torch

from lab.replay import forecast_checkpoint, rank_one_projectors

ID = "sign-invariant-forecast"
FTIP = "ftip-006B"
NOTE = ("the reference states that the projectors do not change when (u, v) becomes (-u, -v); the vectors (seed 0) "
        "are the lab's own and the expected 0 is that statement as a number")
SOURCE = "definitions ftip-006B, ftip-0069 (Chen et al. 2026, §4, §5.1)"
INPUTS = {"seed": 0, "shape": (6, 4)}
EXPECTED = [0]
TOLERANCE = 0


def _uv():
    g = torch.Generator().manual_seed(INPUTS["seed"])
    return torch.randn(INPUTS["shape"][0], generator=g, dtype=torch.float64), torch.randn(INPUTS["shape"][1], generator=g, dtype=torch.float64)


def compute() -> list[float]:
    u, v = _uv()
    Pu, Pv = rank_one_projectors(u, v)
    Nu, Nv = rank_one_projectors(-u, -v)
    return [float(torch.maximum((Pu - Nu).abs().max(), (Pv - Nv).abs().max()))]


def explain() -> str:
    u, v = _uv()
    deltas = [k * torch.outer(u, v) for k in (1.0, 1.5, 2.0)]  # a steadily growing rank-one direction
    f = forecast_checkpoint(deltas, rank=1)
    err = float((f.predicted_delta - 2.5 * torch.outer(u, v)).abs().max())
    return (f"max |P(u,v) - P(-u,-v)| = {compute()[0]:g}; rank-1 share of each delta {[round(e, 3) for e in f.explained]}; "
            f"linear forecast of the next delta is off by {err:.2e}")
