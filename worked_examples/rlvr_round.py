"""One response-level RLVR round: exact verification, then centred group credit [ftip-004M]."""

from lab.grpo import group_advantages
from lab.rlvr import ExactAnswerVerifier

ID = "rlvr-round"
FTIP = "ftip-004M"
NOTE = "the reference states the rewards' mean 2/3 and the credit; the question and the three responses are the lab's own"
SOURCE = "definitions ftip-004M (Lambert et al. 2024, §6; Shao et al. 2024, §4.1.2)"
INPUTS = {"prompt": "What is 7 + 5?", "answer": "12", "responses": ["7 + 5 = 12", "7 + 5 = 13", "The answer is 12"], "parser": "last_integer"}
EXPECTED = [1 / 3, -2 / 3, 1 / 3]
TOLERANCE = 1e-12


def evidence():
    v = ExactAnswerVerifier(INPUTS["parser"])
    return [v.verify(INPUTS["prompt"], r, answer=INPUTS["answer"]) for r in INPUTS["responses"]]


def compute() -> list[float]:
    rewards = [e.decision for e in evidence()]
    return group_advantages(rewards, group_size=len(rewards), scale="none").tolist()


def explain() -> str:
    ev = evidence()
    lines = [f"{e.response!r}: parsed {e.output['parsed']!r} -> decision {e.decision}" for e in ev]
    return "\n".join(lines) + f"\nmean reward 2/3; centred credit r_i - mean = {[round(a, 4) for a in compute()]} (a proposal, not yet an accepted update)"
