"""Blind preferences: two configurations' lists side by side, sides hidden and drawn at random per query; people
say which answers better; the verdict is B's share of the decisive queries with its exact interval, per rater and
pooled. Kept beside the judgments (`store`), scored by `verdict`."""

from workbench.evaluation.preference import PreferenceCounts, PreferenceVerdict, decisive_needed, fleiss_kappa
from workbench.preferences.session import (
    CHOICES,
    UNDO,
    Choice,
    ChoiceRow,
    PreferenceSession,
    Preferred,
    ShownLists,
    standing_choices,
)
from workbench.preferences.store import PreferenceStore, open_preference_store
from workbench.preferences.verdict import preference_verdict

__all__ = [
    "CHOICES",
    "UNDO",
    "Choice",
    "ChoiceRow",
    "PreferenceCounts",
    "PreferenceSession",
    "PreferenceStore",
    "PreferenceVerdict",
    "Preferred",
    "ShownLists",
    "decisive_needed",
    "fleiss_kappa",
    "open_preference_store",
    "preference_verdict",
    "standing_choices",
]
