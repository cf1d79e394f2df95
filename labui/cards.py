"""Misconception cards on a page: ``lab.misconceptions.diagnose`` finds the pattern, this draws it."""

from __future__ import annotations

from typing import Iterable

import streamlit as st


def show_cards(cards: Iterable, where=None) -> None:
    """Each card as an ``st.info`` box: bold title, the explanation, the numbers that triggered it, a link to the page."""
    for c in cards:
        (where or st).info(f"**{c.title}**\n\n{c.explanation}\n\n*Seen here:* {c.evidence}. [More on the {c.page} page](/{c.page})",
                           icon="💡")
