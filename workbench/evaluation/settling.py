"""Judging to the decision: which unjudged pairs to grade first, about how many grades settle the verdict, and when
no grade of the remaining pairs can change it.

An unjudged document in a query's top 10 before or after reranking moves the nDCG@10 change only through where it
ranks: found relevant, it adds its gain × (its discount after − its discount before) / the query's ideal DCG to
the query's change. So each pair has a side (it can only lower the change when the reranker moved it down or out,
only raise it when moved up or in) and a reach (how far its top grade would move the mean change).

- The extreme completions: every unjudged pair of one side counted relevant at the top grade, the other side not
  relevant; and the reverse. The verdict is **settled** when both completions give the verdict it has now: no
  grade of the remaining pairs can change it (pairs of neither side, at the same place in both lists, only scale
  the query's figures).
- The queue order: by reach, the narrowing of the bounds each grade is sure to bring.
- "About N grades": grading in that order, the fewest pairs after which what is left cannot reach past the
  verdict's interval (its distance to zero on each side), the interval taken to move with the change.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import BaseModel

from workbench.evaluation.io import Qrels, Run
from workbench.evaluation.metrics import evaluate
from workbench.evaluation.report import EvaluationReport
from workbench.evaluation.verdict import Verdict, measured_verdict, verdict
from workbench.vocab import PRIMARY_METRIC

DEPTH = 10  # the verdict's metric is nDCG@10


class PairReach(BaseModel):
    """An unjudged pair of a top 10, how far its top grade could move the mean nDCG@10 change, and which way."""

    query_id: str
    doc_id: str
    reach: float  # ≥ 0
    side: int  # -1: relevant lowers the change, +1: raises it, 0: neither (same place in both lists)


class SettleState(BaseModel):
    """Whether the verdict is settled, what the extreme completions say, and about how many grades settle it."""

    direction: str
    settled: bool
    remaining: int
    lowest: str  # the verdict with every pair of the lowering side relevant
    highest: str
    delta_low: float
    delta_high: float
    grades_to_settle: int | None  # None when settled

    def words(self) -> str:
        """ "Settled: ..." or "About N grades settle this ...", with the range the change could still take."""
        remaining = _count(self.remaining, "unjudged pair")
        span = f"{self.delta_low:+.4f} to {self.delta_high:+.4f}"
        if self.settled:
            if self.remaining == 0:
                return (
                    f"Settled: every document in the top 10s is judged, so no grade can change the verdict "
                    f"({self._said()}: the change is {self.delta_low:+.4f})."
                )
            return (
                f"Settled: no grade of the remaining {remaining} in the top 10s can change the verdict "
                f"({self._said()} whatever they are: the change lies in {span})."
            )
        grades = self.grades_to_settle or 0
        return (
            f"About {_count(grades, 'grade')} {'settles' if grades == 1 else 'settle'} this (of {remaining} in the "
            f"top 10s): graded the other way, they could make the verdict {self._other()} (the change could lie "
            f"anywhere in {span})."
        )

    def _said(self) -> str:
        """The verdict in words ("none" is no measurable difference, never the word "none")."""
        return {"helps": "it helps", "hurts": "it hurts", "none": "no measurable difference"}.get(
            self.direction, self.direction
        )

    def _other(self) -> str:
        others = [d for d in dict.fromkeys([self.lowest, self.highest]) if d != self.direction]
        return " or ".join(others) if others else self.direction


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def discount(rank: int | None) -> float:
    """nDCG's discount 1 / log2(rank + 1) within the top 10, 0 below it (or for a document not in the list)."""
    return 1 / math.log2(rank + 1) if rank is not None and rank <= DEPTH else 0.0


def ideal_dcg(grades: Iterable[int]) -> float:
    """The DCG@10 of the best order of these grades."""
    ranked = sorted((g for g in grades if g > 0), reverse=True)[:DEPTH]
    return sum(g * discount(rank) for rank, g in enumerate(ranked, start=1))


def top_grade(qrels: Qrels) -> int:
    """The highest grade the judgments use (1 when none is positive)."""
    return max([g for docs in qrels.values() for g in docs.values()] + [1])


class Judging(BaseModel):
    """What settling looks at: the judgments, the runs before and after reranking, the queries, the verdict."""

    qrels: Qrels
    before_run: Run
    after_run: Run
    query_ids: list[str]
    k: int
    verdict: Verdict

    def with_qrels(self, qrels: Qrels) -> Judging:
        """The same runs judged by `qrels` (grades given since), the verdict measured again as a report would."""
        judged = {q: qrels[q] for q in self.query_ids if q in qrels}
        measured = measured_verdict(judged, self.before_run, self.after_run, self.k)
        return self.model_copy(update={"qrels": judged, "verdict": measured.verdict})

    @classmethod
    def of(cls, report: EvaluationReport) -> Judging:
        assert report.verdict is not None
        return cls(
            qrels=report.qrels, before_run=report.before_run, after_run=report.after_run,
            query_ids=[o.query_id for o in report.per_query], k=report.k, verdict=report.verdict,
        )  # fmt: skip


def _top(run: Run, query: str) -> dict[str, int]:
    ranked = sorted(run.get(query, {}).items(), key=lambda item: (-item[1], item[0]))[:DEPTH]
    return {doc: rank for rank, (doc, _) in enumerate(ranked, start=1)}


def reach_scale(judged: dict[str, int], best: int, queries: int) -> float:
    """What a discount moved turns into on the mean change when the document is relevant at the top grade `best`:
    the top grade over the query's ideal DCG (at least that of one such document) and the number of queries."""
    return best / max(ideal_dcg(judged.values()), best * discount(1)) / max(queries, 1)


def pair_reaches(judging: Judging) -> list[PairReach]:
    """Every unjudged pair of the top 10s with its reach and side, greatest reach first."""
    best = top_grade(judging.qrels)
    pairs = []
    for query in judging.query_ids:
        judged = judging.qrels.get(query, {})
        ranks_before, ranks_after = _top(judging.before_run, query), _top(judging.after_run, query)
        scale = reach_scale(judged, best, len(judging.query_ids))
        for doc in dict.fromkeys([*ranks_before, *ranks_after]):
            if doc in judged:
                continue
            shift = discount(ranks_after.get(doc)) - discount(ranks_before.get(doc))
            reach = abs(shift) * scale
            side = 0 if abs(shift) < 1e-12 else (1 if shift > 0 else -1)
            pairs.append(PairReach(query_id=query, doc_id=doc, reach=reach, side=side))
    return sorted(pairs, key=lambda p: (-p.reach, p.query_id, p.doc_id))


def _completed(judging: Judging, pairs: list[PairReach], relevant_side: int) -> Qrels:
    best = top_grade(judging.qrels)
    qrels = {q: dict(docs) for q, docs in judging.qrels.items()}
    for pair in pairs:
        qrels.setdefault(pair.query_id, {})[pair.doc_id] = best if pair.side == relevant_side else 0
    return qrels


def _direction(judging: Judging, qrels: Qrels) -> tuple[str, float]:
    """The verdict (with every top-10 document judged) and the mean change under completed judgments."""
    ids = judging.query_ids
    judged = {q: qrels[q] for q in ids if q in qrels}
    _, before = evaluate(judged, judging.before_run, judging.k)
    _, after = evaluate(judged, judging.after_run, judging.k)
    values_before = [before.get(q, {}).get(PRIMARY_METRIC, 0.0) for q in ids]
    values_after = [after.get(q, {}).get(PRIMARY_METRIC, 0.0) for q in ids]
    said = verdict(values_before, values_after, 1.0, 1.0)
    return said.direction, said.delta


def settle_state(report: EvaluationReport) -> SettleState | None:
    """`judging_settled` of a report's evaluation; None for a report without a verdict (nothing reranked)."""
    return judging_settled(Judging.of(report)) if report.verdict is not None else None


def judging_settled(judging: Judging) -> SettleState:
    """Whether the verdict is settled (both extreme completions give the same verdict: what it will be whatever
    the remaining grades), else about how many grades settle it."""
    pairs = pair_reaches(judging)
    now = judging.verdict
    low, delta_low = _direction(judging, _completed(judging, pairs, -1)) if pairs else (now.direction, now.delta)
    high, delta_high = _direction(judging, _completed(judging, pairs, 1)) if pairs else (now.direction, now.delta)
    settled = low == high
    return SettleState(
        direction=low if settled else now.direction, settled=settled, remaining=len(pairs), lowest=low,
        highest=high, delta_low=delta_low, delta_high=delta_high,
        grades_to_settle=None if settled else max(1, _grades_to_settle(now, pairs)),
    )  # fmt: skip


def _grades_to_settle(v: Verdict, pairs: list[PairReach]) -> int:
    """The fewest pairs, graded in reach order, after which the rest cannot carry the change across the edge of
    the verdict's interval (its distance to 0 below and above, the interval moving with the change)."""
    if v.direction == "helps":
        room_down, room_up = v.ci_low, math.inf
    elif v.direction == "hurts":
        room_down, room_up = math.inf, -v.ci_high
    else:
        room_down, room_up = max(v.ci_high, 0.0), max(-v.ci_low, 0.0)
    down = sum(p.reach for p in pairs if p.side < 0)
    up = sum(p.reach for p in pairs if p.side > 0)
    for graded, pair in enumerate(pairs):
        if down < room_down and up < room_up:
            return graded
        if pair.side < 0:
            down -= pair.reach
        elif pair.side > 0:
            up -= pair.reach
    return len(pairs)
