"""Post-Training Lab web app: `./lab.sh app` (or `streamlit run app.py`).

Builds the navigation over the files in pages/, grouped by chapter of the reference.
"""

import streamlit as st
import torch

torch.set_num_threads(1)  # tiny tensors: one thread is faster and keeps the page responsive

st.set_page_config(page_title="Post-Training Lab", page_icon="🧪", layout="wide")

PAGES = {
    "Start": [st.Page("pages/home.py", title="Home", icon="🏠", default=True)],
}

st.navigation(PAGES).run()
