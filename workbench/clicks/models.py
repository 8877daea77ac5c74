"""Click models: what a log of impressions (the ids shown, in order, and the ids clicked) says about each (query,
document) pair's relevance, corrected for where it was shown.

- COEC, clicks over expected clicks: a pair's clicks divided by the clicks an average result would have had at the
  positions it was shown (each position's click-through rate over the whole log). 1 is average; 2 twice as
  clicked as its positions explain.
- PBM, the position-based model (Craswell et al. 2008; Chuklin, Markov and de Rijke, "Click Models for Web
  Search", 2015): a click happens when the result is examined (probability γ of its position) and attractive
  (probability α of the pair), fitted by expectation-maximisation. α is the pair's estimate.

Both are kept with how many impressions each pair had: few impressions, a noisy estimate. `simulate_clicks` draws
clicks from a known PBM (the tests' ground truth, and the sizing of an online test).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel

from workbench.clicks.impressions import Impression

CLICK_MODEL_TITLES: dict[str, str] = {"coec": "COEC", "pbm": "position-based model (EM)"}
MAX_POSITIONS = 50  # positions past this are not counted: almost nobody examines them, and they only add noise
EM_ITERATIONS = 200
EM_TOLERANCE = 1e-7


class PairEstimate(BaseModel):
    """A click model's estimate for one (query, document) pair."""

    query: str
    doc_id: str
    impressions: int
    clicks: int
    estimate: float


class ClickFit(BaseModel):
    """A click model fitted to a log: each pair's estimate, and per position the click-through rate (COEC) or the
    examination probability (PBM)."""

    model: str
    impressions: int
    positions: list[float]
    pairs: list[PairEstimate]
    iterations: int = 0


def _rows(impressions: Sequence[Impression]) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray, np.ndarray]:
    """(pair keys, pair index, position index from 0, click 0/1) for every shown result within MAX_POSITIONS."""
    keys: dict[tuple[str, str], int] = {}
    pair_index: list[int] = []
    positions: list[int] = []
    clicks: list[int] = []
    for impression in impressions:
        for position, doc in enumerate(impression.shown[:MAX_POSITIONS]):
            pair_index.append(keys.setdefault((impression.query, doc), len(keys)))
            positions.append(position)
            clicks.append(doc in impression.clicked)
    return (
        list(keys),
        np.asarray(pair_index, dtype=np.int64),
        np.asarray(positions, dtype=np.int64),
        np.asarray(clicks, dtype=np.float64),
    )


def _pairs(
    keys: list[tuple[str, str]], index: np.ndarray, clicks: np.ndarray, estimate: np.ndarray
) -> list[PairEstimate]:
    shown = np.bincount(index, minlength=len(keys))
    clicked = np.bincount(index, weights=clicks, minlength=len(keys))
    return [
        PairEstimate(query=q, doc_id=d, impressions=int(shown[i]), clicks=int(clicked[i]), estimate=float(estimate[i]))
        for i, (q, d) in enumerate(keys)
    ]


def coec(impressions: Sequence[Impression]) -> ClickFit:
    """Clicks over expected clicks for every pair shown: Σ clicks / Σ CTR(position shown), the CTR of a position
    being all clicks there over all results shown there."""
    keys, index, position, click = _rows(impressions)
    shown_at = np.bincount(position, minlength=1)
    ctr = np.bincount(position, weights=click, minlength=1) / np.maximum(shown_at, 1)
    expected = np.bincount(index, weights=ctr[position], minlength=len(keys))
    clicked = np.bincount(index, weights=click, minlength=len(keys))
    estimate = np.divide(clicked, expected, out=np.zeros_like(clicked), where=expected > 0)
    return ClickFit(
        model="coec",
        impressions=len(impressions),
        positions=[float(x) for x in ctr],
        pairs=_pairs(keys, index, click, estimate),
    )


def pbm(impressions: Sequence[Impression], iterations: int = EM_ITERATIONS) -> ClickFit:
    """The position-based model by EM. For a result shown at position p and not clicked, the posterior that it
    was attractive is α(1 − γ_p) / (1 − αγ_p) and that it was examined γ_p(1 − α) / (1 − αγ_p); a click means both.
    α of a pair and γ of a position are the means of those posteriors over their rows, until they move less than
    EM_TOLERANCE."""
    keys, index, position, click = _rows(impressions)
    alpha = np.full(len(keys), 0.5)
    gamma = np.full(int(position.max()) + 1 if len(position) else 1, 0.5)
    per_pair = np.maximum(np.bincount(index, minlength=len(keys)), 1)
    per_position = np.maximum(np.bincount(position, minlength=len(gamma)), 1)
    done = 0
    while done < iterations:
        done += 1
        a, g = alpha[index], gamma[position]
        unclicked = 1 - click
        denominator = np.maximum(1 - a * g, 1e-12)
        attractive = click + unclicked * a * (1 - g) / denominator
        examined = click + unclicked * g * (1 - a) / denominator
        new_alpha = np.bincount(index, weights=attractive, minlength=len(keys)) / per_pair
        new_gamma = np.bincount(position, weights=examined, minlength=len(gamma)) / per_position
        moved = max(np.abs(new_alpha - alpha).max(initial=0.0), np.abs(new_gamma - gamma).max(initial=0.0))
        alpha, gamma = new_alpha, new_gamma
        if moved < EM_TOLERANCE:
            break
    return ClickFit(
        model="pbm", impressions=len(impressions), positions=[float(x) for x in gamma],
        pairs=_pairs(keys, index, click, alpha), iterations=done,
    )  # fmt: skip


def fit_click_model(model: str, impressions: Sequence[Impression]) -> ClickFit:
    """The named click model (CLICK_MODELS) fitted to the impressions."""
    return coec(impressions) if model == "coec" else pbm(impressions)


def grade_of(estimate: float, cuts: Sequence[float]) -> int:
    """A grade on the workbench's scale from an estimate: how many of the (ascending) cut-points it reaches."""
    return sum(estimate >= cut for cut in cuts)


def examination(positions: int, decay: float = 1.0) -> list[float]:
    """A PBM's examination probabilities 1 / p^decay for positions 1..positions."""
    return [1 / (p**decay) for p in range(1, positions + 1)]


def simulate_clicks(
    lists: Mapping[str, Sequence[Sequence[str]]],
    grades: Mapping[str, Mapping[str, int]],
    examined: Sequence[float],
    attractiveness: Mapping[int, float],
    seed: int = 0,
) -> list[Impression]:
    """Clicks drawn from a known PBM: for each query, one impression per list given (each a ranking shown once);
    a result at position p is clicked with probability examined[p] × attractiveness[its grade] (unjudged: grade
    0), independently."""
    rng = np.random.default_rng(seed)
    impressions = []
    for number, (query, shown_lists) in enumerate(lists.items()):
        judged = grades.get(query, {})
        for shown in shown_lists:
            shown = tuple(shown)
            chance = [
                (examined[p] if p < len(examined) else 0.0) * attractiveness.get(judged.get(doc, 0), 0.0)
                for p, doc in enumerate(shown)
            ]
            draws = rng.random(len(shown))
            clicked = frozenset(doc for doc, c, r in zip(shown, chance, draws, strict=True) if r < c)
            impressions.append(Impression(query=query, shown=shown, clicked=clicked, session=f"s{number}"))
    return impressions
