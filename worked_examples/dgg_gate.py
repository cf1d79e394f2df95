"""Two proposed updates under a DGG-style gate, with a real Adam optimizer [ftip-005B]."""

import copy

import torch

from lab.replay import DynamicGradientGate, gate_zscore

ID = "dgg-gate"
FTIP = "ftip-005B"
SOURCE = "definitions ftip-005B (Miao et al. 2026, §5, Alg. 1)"
INPUTS = {"mu": 1.0, "s": 0.5, "z_threshold": 2.0, "increments": {"A": 1.5, "B": 2.5}}
EXPECTED = [1, 3, 1, 0]
TOLERANCE = 1e-9


def gated_updates() -> dict:
    """Run both proposals through a real gate and Adam; report each decision and whether state was untouched."""
    torch.manual_seed(0)
    head = torch.nn.Parameter(torch.randn(4, 4, dtype=torch.float64))
    opt = torch.optim.Adam([head], lr=0.1)
    gate = DynamicGradientGate(z_threshold=INPUTS["z_threshold"], window=3, min_history=3)
    # gradient energies 0, 0.5, 1.5, 3.0: increments 0.5, 1.0, 1.5 with mean 1 and sample std 0.5, the declared window
    for energy in (0.0, 0.5, 1.5, 3.0):
        head.grad = torch.full_like(head, (energy / head.numel()) ** 0.5)
        gate.step(opt, head)
    out = {}
    for name, inc in INPUTS["increments"].items():  # each proposal is judged from the same starting state
        g = copy.deepcopy(gate)
        h = torch.nn.Parameter(head.detach().clone())
        o = torch.optim.Adam([h], lr=0.1)
        o.load_state_dict(copy.deepcopy(opt.state_dict()))
        before_p, before_s = h.detach().clone(), {k: v.clone() for k, v in o.state[h].items()}
        h.grad = torch.full_like(h, ((3.0 + inc) / h.numel()) ** 0.5)  # gradient energy 3.0 + increment
        d = g.step(o, h)
        untouched = torch.equal(h.detach(), before_p) and all(torch.equal(o.state[h][k], v) for k, v in before_s.items())
        out[name] = (d, untouched)
    return out


def compute() -> list[float]:
    res = gated_updates()
    (da, _), (db, _) = res["A"], res["B"]
    assert abs(da.z - gate_zscore(INPUTS["increments"]["A"], INPUTS["mu"], INPUTS["s"])) < 1e-9
    return [da.z, db.z, int(da.accepted), int(db.accepted)]


def explain() -> str:
    res = gated_updates()
    (da, _), (db, untouched) = res["A"], res["B"]
    return (f"A: increment {da.increment:.2f}, window mean {da.mu:.2f}, std {da.s:.2f} -> Z = {da.z:.2f}, committed (Adam step)\n"
            f"B: increment {db.increment:.2f} -> Z = {db.z:.2f} > 2, rejected before Adam; parameters and Adam moments bit-identical: {untouched}")
