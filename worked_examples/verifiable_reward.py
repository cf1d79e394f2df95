"""The verifiable reward with alpha = 10 [ftip-0049]."""

from lab.rlvr import ExactAnswerVerifier, verifiable_reward

ID = "verifiable-reward"
FTIP = "ftip-0049"
SOURCE = "definitions ftip-0049 (Lambert et al. 2024, §6, eq. 8: alpha = 10)"
INPUTS = {"prompt": "2 + 2 =", "answer": "4", "responses": ["4", "5"], "alpha": 10.0}
EXPECTED = [10, 0]
TOLERANCE = 0


def compute() -> list[float]:
    v = ExactAnswerVerifier("strip")
    d = [v.verify(INPUTS["prompt"], r, answer=INPUTS["answer"]).decision for r in INPUTS["responses"]]
    return verifiable_reward(d, INPUTS["alpha"]).tolist()


def explain() -> str:
    return f"correct '4' -> alpha = {compute()[0]:g}; incorrect '5' -> {compute()[1]:g}"
