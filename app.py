"""Post-Training Lab web app: `./lab.sh app` (or `streamlit run app.py --server.fileWatcherType none`).

Builds the navigation over the files in pages/, grouped by chapter, in the course order of ``lab.course``.
"""

import streamlit as st
import torch

import lab.playground  # noqa: F401  (the libraries every page uses, imported before the freeze below)
import labui

torch.set_num_threads(1)  # tiny tensors: one thread is faster and keeps the page responsive
labui.freeze_startup_objects()  # once per server, before any page runs: no full garbage collection over the libraries

st.set_page_config(page_title="Post-Training Lab", page_icon="🧪", layout="wide")
st.session_state["_lab_app_ran"] = True  # pages check this: see labui.route_through_app

PAGES = {
    "Start": [
        st.Page("pages/home.py", title="Home", icon="🏠", default=True),
        st.Page("pages/reference_index.py", title="Reference index", icon="🔎"),
        st.Page("pages/check_yourself.py", title="Check yourself", icon="✅"),
    ],
    "Demonstrations and preferences": [
        st.Page("pages/sft.py", title="SFT and loss masks", icon="📝"),
        st.Page("pages/preferences.py", title="Preferences and reward models", icon="⚖️"),
    ],
    "Reinforcement learning": [
        st.Page("pages/returns.py", title="Returns and advantages", icon="📈"),
        st.Page("pages/kl_optimal.py", title="KL and the optimal policy", icon="🎯"),
        st.Page("pages/ppo.py", title="PPO clipping", icon="✂️"),
    ],
    "Preference optimization": [st.Page("pages/dpo.py", title="DPO", icon="🔁")],
    "Verifiable rewards": [
        st.Page("pages/feedback.py", title="Outcome vs process feedback", icon="🪜"),
        st.Page("pages/grpo.py", title="GRPO and RLVR", icon="👥"),
        st.Page("pages/dynamics.py", title="Dynamics", icon="🎢"),
        st.Page("pages/recipes.py", title="Same batch, many recipes", icon="🧪"),
    ],
    "Credit assignment": [
        st.Page("pages/credit.py", title="Credit assignment", icon="🧩"),
        st.Page("pages/credit_quiz.py", title="Credit-assignment quiz", icon="❓", url_path="credit_quiz"),
    ],
    "Agents and replay": [st.Page("pages/agentic.py", title="Agentic training and replay", icon="🤖")],
    "Proxies and evaluation": [
        st.Page("pages/proxies.py", title="Proxies and over-optimization", icon="🎭"),
        st.Page("pages/compare.py", title="Compare checkpoints", icon="📏"),
    ],
    "Train a model": [st.Page("pages/smallrun.py", title="Small runs", icon="🏋️")],
}

st.navigation(PAGES, expanded=True).run()  # all chapters visible (the projector toggle shares the sidebar)
