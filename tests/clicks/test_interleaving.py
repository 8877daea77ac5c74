"""Team-draft interleaving worked by hand (Radlinski, Kurup and Joachims 2008), the analysis' interval against a
binomial computed by hand, the sizing against a closed form on a toy case, and the log's analysis from the CLI."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import beta

from workbench.cli import main
from workbench.clicks.impressions import Impression
from workbench.clicks.interleaving import (
    analyse,
    credit,
    impressions_for_power,
    simulate_interleaving,
    team_draft,
)
from workbench.clicks.online import analyse_interleaving_log
from workbench.errors import InputError


class Coins:
    """The coin tosses team draft asks for, in order (each below 0.5 lets A pick first)."""

    def __init__(self, *tosses: float) -> None:
        self.tosses = list(tosses)

    def random(self) -> float:
        return self.tosses.pop(0)


def test_team_draft_by_hand() -> None:
    # A = a1 a2 a3, B = b1 a1 b2. Even picks, toss 0.3: A takes a1. A has more: B takes b1. Even, toss 0.7: B takes
    # its next not shown, b2 (a1 is). Now every result of B is shown: the draft stops (the paper's loop runs while
    # both rankings have one left), though A still has a2 and a3.
    merged = team_draft(["a1", "a2", "a3"], ["b1", "a1", "b2"], Coins(0.3, 0.7))
    assert merged == Impression(query="", shown=("a1", "b1", "b2"), teams=("A", "B", "B"))
    # Toss 0.9 first: B takes b1, then A a1, toss 0.1: A a2, B b2 (a1 shown), toss 0.6: B has nothing left.
    assert team_draft(["a1", "a2", "a3"], ["b1", "a1", "b2"], Coins(0.9, 0.1, 0.6)).shown == ("b1", "a1", "a2", "b2")
    # Cut at a length; identical rankings share every document, each credited to whichever team drafted it.
    cut = team_draft(["x", "y", "z"], ["x", "y", "z"], Coins(0.2, 0.2), length=2)
    assert cut == Impression(query="", shown=("x", "y"), teams=("A", "B"))


def test_credit_counts_clicks_per_team() -> None:
    merged = Impression(query="q", shown=("a1", "b1", "b2", "a2"), teams=("A", "B", "B", "A"))

    def clicked(*ids: str) -> Impression:
        return replace(merged, clicked=frozenset(ids))

    assert credit(clicked("b1", "a2")) == "tie"
    assert credit(clicked("b2")) == "B" and credit(clicked("a1", "a2", "b1")) == "A"
    assert credit(clicked()) == "none" and credit(clicked("elsewhere")) == "none"


def test_the_analysis_against_a_binomial_by_hand() -> None:
    outcomes = ["B"] * 15 + ["A"] * 5 + ["tie"] * 3 + ["none"] * 7
    result = analyse(outcomes, a="first stage", b="reranked")
    # Two-sided p: 2 * P(X >= 15 | n = 20, 1/2) = 2 * (C(20,15) + ... + C(20,20)) / 2^20.
    tail = sum(math.comb(20, k) for k in range(15, 21))
    assert tail == 15504 + 4845 + 1140 + 190 + 20 + 1
    assert result.p_value == pytest.approx(2 * tail / 2**20)
    # Clopper-Pearson: the beta quantiles at 2.5 % of Beta(15, 6) and 97.5 % of Beta(16, 5).
    assert result.ci_low == pytest.approx(beta.ppf(0.025, 15, 6)) and result.ci_high == pytest.approx(
        beta.ppf(0.975, 16, 5)
    )
    assert (result.wins, result.losses, result.ties, result.no_clicks, result.preference) == (15, 5, 3, 7, 0.75)
    assert result.direction == "helps" and result.words().startswith("reranked helps against first stage: reranked is")
    even = analyse(["B"] * 6 + ["A"] * 4)
    assert even.direction == "none" and even.words().startswith("Not measurable yet")
    assert even.impressions_needed is not None and f"about {even.impressions_needed - 10:,} more" in even.words()
    assert analyse(["none"] * 4).words().startswith("Not measurable yet: no impression decided")


def test_impressions_for_power_by_the_closed_form() -> None:
    # p = 0.3 / 0.5 = 0.6: ((1.959964 * 0.5 + 0.841621 * sqrt(0.24)) / 0.1)^2 = 193.85 decisive impressions, over a
    # decisive share of 0.5: 387.7 -> 388.
    assert impressions_for_power(0.3, 0.2) == 388
    assert impressions_for_power(0.25, 0.25) is None and impressions_for_power(0.0, 0.0) is None


def test_the_sizing_simulation_on_a_toy_case_with_a_closed_form() -> None:
    # A = n r, B = r n; only r attracts (always), position 1 is always examined, position 2 half the time. A first
    # (half the impressions): n then r, r is B's at position 2: a win half the time. B first: r at the top, B's: a
    # win. p_win = 0.5 * 0.5 + 0.5 = 0.75, no loss, no tie; a sign test needs 1.96^2 / 0.75 = 5.12 -> 6.
    size = simulate_interleaving(
        {"q": (["n", "r"], ["r", "n"])}, {"q": {"r": 1}}, [1.0, 0.5], {0: 0.0, 1: 1.0}, impressions_per_query=20_000
    )
    assert size.p_win == pytest.approx(0.75, abs=0.015) and size.p_loss == 0 and size.p_tie == 0
    assert size.impressions_needed == math.ceil(1.959964**2 / size.p_win) == 6
    assert "reranked list wins" in size.words()


def _write_log(path: Path) -> Path:
    records = []
    # Three impressions: clicks on B's result (a win), on both teams' (a tie), and none.
    for number, clicked in enumerate([["b1"], ["a1", "b1"], []]):
        records.append({
            "type": "impression", "impression_id": f"i{number}", "collection": "demo", "query": "q",
            "ids": ["a1", "b1"], "teams": ["A", "B"], "a": "dense k=50 (first stage)", "b": "reranked",
        })  # fmt: skip
        records += [{"type": "click", "impression_id": f"i{number}", "id": doc} for doc in clicked]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_the_cli_analyses_a_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = _write_log(tmp_path / "log.jsonl")
    assert main(["interleaving", "analyse", str(log)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Not measurable yet: reranked is preferred in 100.0% of decisive impressions")
    assert "1 wins, 1 ties, 0 losses over 3 impressions (1 without a click)" in out
    assert main(["interleaving", "analyse", str(log), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["wins"] == 1
    with pytest.raises(InputError, match="holds no interleaved impression of 'other'"):
        analyse_interleaving_log(log, "other")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"type": "impression", "ids": ["a"], "teams": ["C"]}\n')
    with pytest.raises(InputError, match=r"broken.jsonl, line 1: a team is A or B"):
        analyse_interleaving_log(broken)
    assert main(["interleaving", "analyse", str(tmp_path / "missing.jsonl")]) == 2
    assert "No interleaving log at missing.jsonl" in capsys.readouterr().err


def test_team_draft_keeps_each_rankings_order_within_its_team() -> None:
    rng = np.random.default_rng(5)
    a, b = [f"d{i}" for i in range(10)], [f"d{i}" for i in (3, 7, 1, 0, 9, 2, 8, 4, 6, 5)]
    for _ in range(50):
        merged = team_draft(a, b, rng, length=8)
        assert len(set(merged.shown)) == len(merged.shown) == 8
        picks = {"A": merged.teams.count("A"), "B": merged.teams.count("B")}
        assert abs(picks["A"] - picks["B"]) <= 1
        for team, ranking in (("A", a), ("B", b)):
            mine = [d for d, t in zip(merged.shown, merged.teams, strict=True) if t == team]
            assert [ranking.index(d) for d in mine] == sorted(ranking.index(d) for d in mine)


def test_an_online_test_of_the_same_list_twice_or_a_vanishing_preference_is_not_sized() -> None:
    """Issue 68, item 9: "about 433,254,072 impressions" was offered for a reranker that moved nothing."""
    from workbench.clicks.interleaving import IMPRACTICAL_IMPRESSIONS, OnlineTestSize

    same = OnlineTestSize(queries=50, simulated_impressions=10_000, p_win=0.0, p_loss=0.0, p_tie=0.1,
                          impressions_needed=None, click_model="pbm", same_lists=50)  # fmt: skip
    assert same.words().startswith("No online test can see a difference") and "all 50 queries" in same.words()
    tiny = same.model_copy(update={"same_lists": 48, "p_win": 0.0011, "p_loss": 0.001,
                                   "impressions_needed": 433_254_072})  # fmt: skip
    assert tiny.words().startswith("No practical online test") and f"{IMPRACTICAL_IMPRESSIONS:,}" in tiny.words()
    plain = tiny.model_copy(update={"impressions_needed": 4_000, "p_win": 0.2, "p_loss": 0.1})
    assert plain.words().startswith("An interleaved online test needs about 4,000 impressions")
