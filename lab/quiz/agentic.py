"""Predictions for the agentic chapter [ftip-0059, ftip-005A, ftip-005B]; answers from lab.replay."""

from lab.kl import log_probabilities
from lab.quiz import Question
from lab.replay import CurrentPolicy, DynamicGradientGate, RolloutRecord, annotate

# gradient energies E_n of successive proposals: accepted increments 1, 1.5, 0.5 give μ = 1 and s = 0.5 (sample std),
# the declared statistics of ftip-005B; the values are the lab's own
_HISTORY = [0.0, 1.0, 2.5, 3.0]


def _gate(*energies: float) -> str:
    gate = DynamicGradientGate(z_threshold=2.0, window=8, min_history=3, ddof=1)
    d = None
    for e in _HISTORY + list(energies):
        d = gate.decide(e)
    return "accepted" if d.accepted else "rejected"


def _replay_ratio() -> float:
    lp_b, lp_c = float(log_probabilities(0.25, "behaviour")), float(log_probabilities(0.5, "current"))
    rec = RolloutRecord("r-1", "q", "stamp-behaviour", ("action",), (lp_b,), ("evidence",), collected_at=0)
    return float(annotate(rec, CurrentPolicy("stamp-current", lambda r: [lp_c]), update_index=3, prior_uses=2).ratios[0])


QUESTIONS = [
    Question(
        "agentic-gate-spike", "agentic",
        "A gradient gate with z* = 2 has accepted gradient energies 0, 1, 2.5, 3 (increments 1, 1.5, 0.5: μ = 1, "
        "s = 0.5). The next proposal has energy 5.5 (increment 2.5). Accepted or rejected?",
        lambda: _gate(5.5), choices=("accepted", "rejected"),
        explanation="Z = (2.5 − 1)/0.5 = 3 > z* = 2, so the gate discards the gradient before the optimizer step; "
                    "parameters and Adam moments stay as they were, but the proposal's compute is spent "
                    "[ftip-005B, ftip-006D].",
    ),
    Question(
        "agentic-gate-ratchet", "agentic",
        "The same gate (z* = 2; accepted energies 0, 1, 2.5, 3) has just rejected a proposal of energy 5.5. The next "
        "proposal has energy 5.6, only 0.1 above the rejected one. Accepted or rejected?",
        lambda: _gate(5.5, 5.6), choices=("accepted", "rejected"),
        explanation="Rejected: the lab measures each increment against the last *accepted* energy (3), not the last "
                    "proposal, so the increment is 2.6 and Z = 3.2. While the energy keeps drifting upward, every "
                    "later proposal is compared with the same old level and the rejections cascade. That is why the "
                    "demo series rejects so many proposals at a low z*; the reference states the Z-score on the "
                    "change in squared norm without fixing this detail, so it is a declared convention here.",
    ),
    Question(
        "agentic-replay-ratio", "agentic",
        "A stored rollout chose an action with behaviour probability 0.25; the current policy gives it 0.5. "
        "What importance ratio ρ does the replay annotation compute? (within ±0.001)",
        _replay_ratio, tolerance=1e-3,
        explanation="ρ = π_current/π_behaviour = 0.5/0.25 = 2, computed as exp(log 0.5 − log 0.25). With ε = 0.2 it "
                    "lies outside [0.8, 1.2], so the annotation marks it clipped; the stored record itself is never "
                    "changed [ftip-0059].",
    ),
]
