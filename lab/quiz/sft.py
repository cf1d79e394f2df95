"""Predictions for the SFT chapter [ftip-002F, ftip-002G, ftip-002H]; answers from lab.sft."""

import torch

from lab.quiz import Question
from lab.sft import Segment, loss_mask, sft_loss

# two answers in one batch: a short one (1 token, −log p = 2) and a long one (4 tokens, −log p = 0.5 each)
_NLL = torch.tensor([[2.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5]], dtype=torch.float64)
_MASK = torch.tensor([[1, 0, 0, 0], [1, 1, 1, 1]])


def _loss(normalization: str) -> float:
    return float(sft_loss(-_NLL, _MASK, normalization))


def _larger() -> str:
    tok, seq = _loss("token"), _loss("sequence")
    if abs(tok - seq) <= 1e-12:
        return "equal"
    return "token mean" if tok > seq else "sequence mean"


def _first_turn_supervised() -> str:
    chat = [Segment("user", ["USER", "add", "2", "3"]), Segment("assistant", ["5", "END"]),
            Segment("user", ["USER", "times", "4"]), Segment("assistant", ["2", "0", "END"])]
    batch = loss_mask([chat], "completion")
    return "yes" if float(batch.loss_mask[0, 4]) > 0 else "no"  # position 4: the first answer's "5"


QUESTIONS = [
    Question(
        "sft-token-mean", "sft",
        "One batch, two answers: a short one of 1 token with −log p = 2, and a long one of 4 tokens with −log p = 0.5 "
        "each. What is the SFT loss with token normalization (mean over all supervised tokens of the batch)?",
        lambda: _loss("token"), tolerance=1e-3,
        explanation="Token normalization divides the sum 2 + 4·0.5 = 4 by the 5 supervised tokens: 0.8. The sequence mean "
                    "averages per answer first, (2 + 0.5)/2 = 1.25, so the short answer's bad token weighs four times more "
                    "there (answers within 0.001 count).",
    ),
    Question(
        "sft-which-larger", "sft",
        "Same batch (short answer: 1 token, −log p = 2; long answer: 4 tokens, −log p = 0.5 each). Which is larger: "
        "the token-mean loss or the sequence-mean loss?",
        _larger, choices=("token mean", "sequence mean", "equal"),
        explanation="The sequence mean (1.25) exceeds the token mean (0.8): per-example averaging gives the 1-token answer as "
                    "much weight as the 4-token one, while the token mean lets the long answer's many easy tokens dominate.",
    ),
    Question(
        "sft-completion-first-turn", "sft",
        "A two-turn chat: USER add 2 3 → ASSISTANT 5 END → USER times 4 → ASSISTANT 2 0 END. With the "
        "'completion' loss mask, is the first assistant answer (5 END) supervised?",
        _first_turn_supervised, choices=("yes", "no"),
        explanation="No: 'completion' supervises only the last assistant turn; the earlier answer stays as context (it is "
                    "attended to, but its tokens earn no loss). The 'assistant' mask would supervise both turns.",
    ),
]
