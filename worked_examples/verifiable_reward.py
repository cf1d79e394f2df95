"""Definition ftip-0049 (the verifiable reward) applied to two responses the lab chose, with alpha = 10.

ftip-0049 is a Definition, not a worked example: it defines R_ver = alpha if v(x, y) = 1 else 0 and cites
alpha = 10 from Lambert et al. 2024 (§6, the paragraph after eq. 8). The prompt "2 + 2 =" and the responses
"4" and "5" are the lab's own; [10, 0] follows from the definition.
"""

from lab.rlvr import ExactAnswerVerifier, verifiable_reward

ID = "verifiable-reward"
FTIP = "ftip-0049"
KIND = "definition"
NOTE = "ftip-0049 is a Definition (alpha = 10 from Tülu 3); the prompt and responses are the lab's own"
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
