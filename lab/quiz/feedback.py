"""Predictions for the outcome-vs-process feedback chapter [ftip-003Z, ftip-0041, ftip-004F]; answers from lab.feedback and lab.grpo."""

from lab.feedback import EXAMPLE_ANSWER, EXAMPLE_STEPS, is_online_measurable, label_trace
from lab.grpo import group_advantages, length_mask, token_advantages
from lab.quiz import Question

_STEPS = ("step 1", "step 2", "step 3", "step 4")


def _faulty_step() -> str:
    _, proc = label_trace("r", list(EXAMPLE_STEPS), EXAMPLE_ANSWER, "19")
    wrong = [k for k, p in enumerate(proc) if p.value == 0.0]
    return _STEPS[wrong[0]]


def _outcome_credit_sign() -> str:
    # response 1 reaches 19 (reward 1) through the faulty step; response 2 answers 20 (reward 0); 4 tokens each
    adv = group_advantages([1.0, 0.0], 2, eps=1e-4)
    credit = token_advantages(adv, length_mask([4, 4]))  # (2, 4): one advantage per response, on every token
    v = float(credit[0, 1])  # a token of response 1's faulty step
    return "positive" if v > 0 else ("negative" if v < 0 else "zero")


def _hindsight_online() -> str:
    _, proc = label_trace("r", list(EXAMPLE_STEPS), EXAMPLE_ANSWER, "19", reviewer_hindsight=True)
    return "yes" if is_online_measurable(proc[0], 1) else "no"


QUESTIONS = [
    Question(
        "feedback-faulty-step", "feedback",
        "Compute 3 × 4 + 5 + 2. A response writes: step 1 '3 × 4 = 12', step 2 '12 + 5 = 17', step 3 '17 + 2 = 18', "
        "step 4 'correction: 17 + 2 = 19, so the answer is 19'. Which step gets process label 0?",
        _faulty_step, choices=_STEPS,
        explanation="Only step 3 is false (17 + 2 is 19, not 18); the checker labels each step by itself. The outcome "
                    "label is 1 anyway because the final answer is right: the two kinds of label disagree "
                    "[ftip-0041].",
    ),
    Question(
        "feedback-outcome-credit-sign", "feedback",
        "A group of two: response 1 reaches the right answer through a faulty step (reward 1), response 2 ends wrong "
        "(reward 0). Under outcome-only GRPO, what sign of credit does a token of response 1's *faulty* step get?",
        _outcome_credit_sign, choices=("positive", "zero", "negative"),
        explanation="Positive: outcome credit is one number per response, shared by every token, so the faulty step "
                    "is reinforced along with the good ones. Likewise every step of a wrong response, correct or not, "
                    "gets the same negative credit. Only process labels can tell the steps apart [ftip-004F].",
    ),
    Question(
        "feedback-hindsight-online", "feedback",
        "The process labels come from a reviewer who read the whole response first. Can the learner use step 1's "
        "label online, at step 1?",
        _hindsight_online, choices=("yes", "no"),
        explanation="No: a label is online-measurable at step t only if it was computed from what existed at step t. "
                    "A hindsight reviewer's label has the same value but exists only after the ending [ftip-003Z].",
    ),
]
