"""Reference index: every ftip tag with its name, lab functions, pages and notebooks (generated from the code)."""

import streamlit as st

from lab.tags import build_index
from labui import header, route_through_app

route_through_app(__file__)  # deep links on a fresh server: see labui.route_through_app

header(
    "Reference index",
    "all tags",
    "the same table as docs/TAGS.md, built from the code on every load",
    "Pages and notebooks cite the reference as `[ftip-XXXX]`. Look a tag up here to find its name, the `lab` function "
    "that implements it (file and line), and every page, notebook and worked example that uses it.",
)
query = st.text_input("filter by tag or words (e.g. 004D, advantage)", key="tags_filter")
only_used = st.checkbox("only tags the lab uses", value=True, key="tags_used")
entries = build_index()
needle = query.strip().lower()
shown = [e for e in entries
         if (not only_used or e.functions or e.pages or e.notebooks or e.worked_examples)
         and (not needle or needle in e.tag.lower() or needle in e.name.lower())]
if not shown:
    st.info("No tag matches; clear the filter or untick “only tags the lab uses”.")
for e in shown:
    st.markdown(f"**{e.tag}** · {e.kind} · {e.name}")
    parts = []
    if e.functions:
        parts.append("lab: " + ", ".join(e.functions))
    if e.pages:
        parts.append("pages: " + ", ".join(f"`{p}`" for p in e.pages))
    if e.notebooks:
        parts.append("notebooks: " + ", ".join(f"`{n}`" for n in e.notebooks))
    if e.worked_examples:
        parts.append("worked examples: " + ", ".join(f"`{w}`" for w in e.worked_examples))
    st.caption(" · ".join(parts) or "not used by the lab yet")
