"""The course: chapters in order, with prerequisites, the questions each answers, time, page and notebook.

The home page draws its course map from :data:`CHAPTERS`, and every page's Previous / Next links come from
:func:`neighbours`, so the order lives in one place. KL and the optimal policy come before PPO because
PPO's KL-shaped reward uses them. Times are the lab's own estimates for working through the page and its
notebook once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Chapter:
    key: str  # the page's url path (its file name without .py)
    title: str
    page: str  # pages/<key>.py
    notebook: str | None  # notebooks/<file>.ipynb
    prerequisites: tuple[str, ...]  # keys of earlier chapters
    questions: tuple[str, ...]  # what the chapter answers
    minutes: int


CHAPTERS: tuple[Chapter, ...] = (
    Chapter("sft", "SFT and loss masks", "pages/sft.py", "notebooks/01_sft_and_loss_masks.ipynb", (),
            ("Which tokens does supervised fine-tuning learn from?", "Why do token and sequence averaging weigh long answers differently?"), 25),
    Chapter("preferences", "Preferences and reward models", "pages/preferences.py", "notebooks/02_preferences_and_reward_models.ipynb", ("sft",),
            ("How does a Bradley–Terry model turn comparisons into scores?", "What can a scalar reward not represent?"), 30),
    Chapter("returns", "Returns and advantages", "pages/returns.py", "notebooks/03_returns_values_gae.ipynb", (),
            ("What is an advantage, and why subtract a baseline?", "How does GAE's λ trade bias against variance?"), 30),
    Chapter("kl_optimal", "KL and the optimal policy", "pages/kl_optimal.py", "notebooks/04_kl_rlhf_ppo.ipynb", ("returns",),
            ("What policy maximizes reward minus β·KL?", "How does β trade reward against staying near the reference?"), 25),
    Chapter("ppo", "PPO clipping", "pages/ppo.py", "notebooks/04_kl_rlhf_ppo.ipynb", ("returns", "kl_optimal"),
            ("When does clipping stop the gradient?", "How is the reward shaped with a per-token KL penalty?"), 30),
    Chapter("dpo", "DPO", "pages/dpo.py", "notebooks/05_dpo.ipynb", ("preferences", "kl_optimal"),
            ("How does DPO train on preferences without a reward model?", "Why can the chosen response lose probability?"), 30),
    Chapter("feedback", "Outcome vs process feedback", "pages/feedback.py", "notebooks/06_outcome_and_process_feedback.ipynb", ("returns",),
            ("What do step labels add over a final-answer check?", "Which feedback can be measured online?"), 20),
    Chapter("grpo", "GRPO and RLVR", "pages/grpo.py", "notebooks/07_rlvr_grpo_dapo.ipynb", ("ppo", "feedback"),
            ("How do group-relative advantages replace a value function?", "What do DAPO's four changes fix?"), 40),
    Chapter("dynamics", "Dynamics", "pages/dynamics.py", "notebooks/10_dynamics.ipynb", ("ppo", "dpo", "grpo"),
            ("What do these objectives do over many steps, not one?", "Why can PPO's clip not stop every overshoot?"), 30),
    Chapter("credit", "Credit assignment", "pages/credit.py", "notebooks/11_credit_assignment.ipynb", ("feedback", "grpo"),
            ("Which steps deserve a good final score?", "What evidence does each credit mechanism need, and what can it not tell?"), 40),
    Chapter("agentic", "Agentic training and replay", "pages/agentic.py", "notebooks/08_agentic_training_and_replay.ipynb", ("grpo",),
            ("What must a sandbox and an action serializer guarantee?", "When may an old rollout be replayed?"), 35),
    Chapter("proxies", "Proxies and over-optimization", "pages/proxies.py", "notebooks/12_proxies_and_evaluation.ipynb", ("kl_optimal",),
            ("Why does optimizing a proxy harder eventually hurt?", "How far from the start is best-of-N?"), 20),
    Chapter("compare", "Compare checkpoints", "pages/compare.py", "notebooks/12_proxies_and_evaluation.ipynb", ("proxies",),
            ("Why pair the cases when comparing two checkpoints?", "What does a bounded claim say, and what not?"), 20),
    Chapter("smallrun", "Small runs", "pages/smallrun.py", "notebooks/09_small_run.ipynb", ("sft", "dpo", "grpo"),
            ("Do these losses train a real (tiny) model?", "What do the metrics look like while it learns?"), 30),
)


def chapter(key: str) -> Chapter:
    for c in CHAPTERS:
        if c.key == key:
            return c
    raise ValueError(f"key must name a chapter of the course; got {key!r}")


def neighbours(key: str) -> tuple[Chapter | None, Chapter | None]:
    """The chapters before and after ``key`` in course order (None at either end)."""
    keys = [c.key for c in CHAPTERS]
    i = keys.index(chapter(key).key)
    return (CHAPTERS[i - 1] if i > 0 else None, CHAPTERS[i + 1] if i + 1 < len(CHAPTERS) else None)


def total_minutes() -> int:
    return sum(c.minutes for c in CHAPTERS)


def duration_text() -> str:
    """The whole course's time as 'H h M min'."""
    m = total_minutes()
    return f"{m // 60} h {m % 60} min"
