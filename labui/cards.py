"""Misconception cards on a page: ``lab.misconceptions.diagnose`` finds the pattern, this draws it."""

from __future__ import annotations

from typing import Iterable

import streamlit as st

from labui import page_link


def show_cards(cards: Iterable, where=None) -> None:
    """Each card as an ``st.info`` box: bold title, the explanation, the numbers that triggered it; then a link to the
    page that explains it, in the same tab (``labui.page_link``)."""
    for c in cards:
        box = (where or st).container()
        box.info(f"**{c.title}**\n\n{c.explanation}\n\n*Seen here:* {c.evidence}.", icon="💡")
        page_link(box, c.page, f"More on the {c.page} page")
