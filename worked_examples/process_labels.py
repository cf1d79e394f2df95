"""Terminal and process labels on the same four-step trace [ftip-0041]."""

from lab.feedback import EXAMPLE_ANSWER, EXAMPLE_PROBLEM, EXAMPLE_STEPS, is_online_measurable, label_trace

ID = "process-labels"
FTIP = "ftip-0041"
SOURCE = "definitions ftip-0041 (Lightman et al. 2023, §2.5–2.6)"
INPUTS = {"problem": EXAMPLE_PROBLEM, "steps": list(EXAMPLE_STEPS), "final_answer": "19", "target": EXAMPLE_ANSWER}
EXPECTED = [1, 1, 1, 0, 1]
TOLERANCE = 0


def compute() -> list[float]:
    out, proc = label_trace("trace-1", INPUTS["steps"], INPUTS["final_answer"], INPUTS["target"])
    return [out.value] + [p.value for p in proc]


def explain() -> str:
    out, proc = label_trace("trace-1", INPUTS["steps"], INPUTS["final_answer"], INPUTS["target"])
    _, hind = label_trace("trace-1", INPUTS["steps"], INPUTS["final_answer"], INPUTS["target"], reviewer_hindsight=True)
    rows = [f"step {p.step}: {s!r} -> f{p.step} = {int(p.value)}; online at step {p.step}: checker "
            f"{is_online_measurable(p, p.step)}, hindsight reviewer {is_online_measurable(h, h.step)}"
            for p, h, s in zip(proc, hind, INPUTS["steps"])]
    return f"{INPUTS['problem']} final answer 19 -> f_out = {int(out.value)} (online at step 4: {is_online_measurable(out, 4)})\n" + "\n".join(rows)
