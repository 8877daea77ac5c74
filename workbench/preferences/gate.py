"""The ship gate on a blind preference session: B (the candidate) against A (the baseline), decided by B's share
of the decisive queries: ship (exit 0) when its exact 95 % interval lies above one half and the sign test's p is
below 0.05, no-ship (exit 1) when the interval lies below one half, inconclusive (exit 3) otherwise. Nothing is
run: the people's choices are the evidence."""

from __future__ import annotations

from workbench.evaluation.preference import PreferenceVerdict
from workbench.experiments.gate import Check, GateDecision
from workbench.vocab import GATE_EXIT_CODES


def decide_on_preferences(verdict: PreferenceVerdict, candidate: str, baseline: str, evidence: str) -> GateDecision:
    """The gate's decision on the pooled verdict (`evidence` names the session or kept experiment it came from)."""
    pooled = verdict.pooled
    outcome = pooled.outcome
    checks = [Check(name="quality", passed=outcome == "ship", detail=pooled.words())]
    if len(verdict.raters) > 1 and verdict.fleiss_kappa is not None:
        agreement = f"Fleiss' kappa {verdict.fleiss_kappa:.3f} over {verdict.kappa_queries} queries"
        checks.append(Check(name="raters agree", passed=True, detail=agreement))
    return GateDecision(
        outcome=outcome, exit_code=GATE_EXIT_CODES[outcome], reason=pooled.words(), candidate=candidate,
        baseline=baseline, candidate_experiment=evidence, checks=checks,
        preferences={**verdict.model_dump(mode="json"), "words": verdict.lines()},
    )  # fmt: skip
