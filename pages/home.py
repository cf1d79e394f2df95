"""Home: what the lab is for, the chapter map, notebooks and small runs."""

import streamlit as st

import worked_examples
from lab.course import CHAPTERS, duration_text
from labui import page_link, route_through_app

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app


def course_map() -> None:
    """The course in order, from lab.course: prerequisites, what each chapter answers, time, notebook.
    Chapter names are in-tab links (``labui.page_link``), so answers given on one page still count on the next."""
    st.markdown(f"**The course** (about {duration_text()}), in order:")
    widths = [0.4, 2.2, 2, 4, 0.9, 2.4]
    for col, head in zip(st.columns(widths), ["#", "chapter", "after", "answers", "time", "notebook"]):
        col.markdown(f"**{head}**")
    titles = {c.key: c.title for c in CHAPTERS}
    for i, c in enumerate(CHAPTERS, start=1):
        num, chapter, after, answers, minutes, nb = st.columns(widths)
        num.markdown(str(i))
        page_link(chapter, c.key, c.title)
        after.markdown(", ".join(titles[p] for p in c.prerequisites) or "—")
        answers.markdown(" ".join(c.questions))
        minutes.markdown(f"{c.minutes} min")
        nb.markdown(f"`{c.notebook.split('/')[-1]}`" if c.notebook else "—")


st.title("Post-Training Lab")
st.markdown(
    """
Compute LLM post-training instead of only reading about it. Every number on these pages comes from
the tested library in `lab/`, the same code the notebooks and the tests call. Change an input and
watch the losses, probabilities and advantages move. Each page shows its formula, the tag of the
definition in the reference (`definitions-and-worked-examples.txt`) and the paper it comes from, and
has a button that loads the reference's worked example and puts the stated value beside the computed one
(where the reference gives a construction without numbers, the page says the numbers are the lab's own).
"""
)
course_map()
st.markdown(
    """
**Notebooks**: `.venv/bin/jupyter lab notebooks/` opens one notebook per chapter, built on the same library.

**Small runs from a terminal**: `.venv/bin/python -m lab.smallrun grpo --out runs/my-grpo` (SFT, reward model `rm`, DPO, GRPO, RLOO, PPO; `--help` lists every option with its description).

**From a terminal**: `python -m worked_examples --explain` recomputes every worked example of the reference (and says where the lab supplied its own numbers).
"""
)


@st.cache_data(show_spinner="recomputing the worked examples (one runs in the sandbox)…")
def example_table() -> list[dict]:
    return [{"id": r["id"], "ftip": r["ftip"], "computed": ", ".join(f"{x:.4g}" for x in r["computed"]),
             "expected": ", ".join(f"{x:.4g}" for x in r["expected"]), "expected values from": worked_examples.STATED_BY[r["kind"]],
             "ok": "yes" if r["ok"] else "MISMATCH"} for r in worked_examples.run_all()]


st.subheader("Worked examples, recomputed by the library")
st.caption("\"expected values from\": reference = an Example of the reference states them; lab's own illustration = the "
           "reference gives the construction without numbers and the lab chose the inputs; definition + lab's inputs = a "
           "Definition applied to inputs the lab chose.")
st.dataframe(example_table(), hide_index=True, width="stretch")
