"""Post-Training Lab web app: `./lab.sh app` (or `streamlit run app.py --server.fileWatcherType none`).

Builds the navigation over the files in pages/, grouped by chapter of the reference.
"""

import streamlit as st
import torch

torch.set_num_threads(1)  # tiny tensors: one thread is faster and keeps the page responsive

st.set_page_config(page_title="Post-Training Lab", page_icon="🧪", layout="wide")
st.session_state["_lab_app_ran"] = True  # pages check this: see labui.route_through_app

PAGES = {
    "Start": [st.Page("pages/home.py", title="Home", icon="🏠", default=True)],
    "Demonstrations and preferences": [
        st.Page("pages/sft.py", title="SFT and loss masks", icon="📝"),
        st.Page("pages/preferences.py", title="Preferences and reward models", icon="⚖️"),
    ],
    "Reinforcement learning": [
        st.Page("pages/returns.py", title="Returns and advantages", icon="📈"),
        st.Page("pages/ppo.py", title="PPO clipping", icon="✂️"),
        st.Page("pages/kl_optimal.py", title="KL and the optimal policy", icon="🎯"),
    ],
    "Preference optimization": [st.Page("pages/dpo.py", title="DPO", icon="🔁")],
    "Verifiable rewards": [
        st.Page("pages/grpo.py", title="GRPO and RLVR", icon="👥"),
        st.Page("pages/feedback.py", title="Outcome vs process feedback", icon="🪜"),
    ],
    "Agents and replay": [st.Page("pages/agentic.py", title="Agentic training and replay", icon="🤖")],
    "Train a model": [st.Page("pages/smallrun.py", title="Small runs", icon="🏋️")],
    "Credit assignment": [st.Page("pages/credit.py", title="Credit assignment", icon="🧩")],
}

st.navigation(PAGES).run()
