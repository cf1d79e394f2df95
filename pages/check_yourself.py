"""Check yourself: every prediction question of the course, with this session's score per chapter."""

import streamlit as st

from lab.course import CHAPTERS
from lab.quiz import for_chapter
from labui import route_through_app
from labui.predict import ask_chapter, score_by_chapter

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

st.title("Check yourself")
st.markdown("Every predict-then-reveal question of the course in one place. Commit to an answer first; the lab then "
            "computes the answer from the stated inputs. Your score is kept for this browser session only.")
table = st.empty()  # filled after the questions, so a commit in this run is already counted
for c in CHAPTERS:
    if for_chapter(c.key):
        st.subheader(c.title)
        ask_chapter(c.key)
scores = score_by_chapter()
rows = [{"chapter": c.title, "questions": len(for_chapter(c.key)), "answered": scores.get(c.key, (0, 0))[1],
         "right": scores.get(c.key, (0, 0))[0]} for c in CHAPTERS]
table.dataframe(rows, hide_index=True, width="stretch", key="cy_scores")
