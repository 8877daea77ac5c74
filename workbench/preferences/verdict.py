"""A session's preference verdict, assembled from its rows (oldest first) and the lists its queries showed: the
choices that stand per rater, identical lists as ties, each query pooled by majority; the figures themselves are
measured in `workbench.evaluation.preference`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from workbench.evaluation.io import Qrels
from workbench.evaluation.preference import (
    POOLED,
    Disagreement,
    GradedAgreement,
    PreferenceVerdict,
    counts,
    fleiss_kappa,
    list_ndcg10,
)
from workbench.preferences.session import ChoiceRow, Preferred, ShownLists, standing_choices


def preference_verdict(
    session_id: str,
    query_ids: list[str],
    texts: Mapping[str, str],
    rows: list[ChoiceRow],
    lists: Mapping[str, ShownLists],
    qrels: Qrels | None = None,
) -> PreferenceVerdict:
    """The verdict from a session's rows (oldest first) and the lists its queries showed."""
    identical = [q for q in query_ids if q in lists and lists[q].identical]
    standing = standing_choices(rows)
    by_query: dict[str, dict[str, Preferred]] = {}
    for (query_id, rater), row in standing.items():
        preferred = row.preferred
        if preferred is not None and query_id not in identical:
            by_query.setdefault(query_id, {})[rater] = preferred
    raters = sorted({r for choices in by_query.values() for r in choices})
    pooled_choices: dict[str, Preferred] = {q: "tie" for q in identical}
    for query_id, choices in by_query.items():
        pooled_choices[query_id] = _majority(list(choices.values()))
    per_rater = [
        counts(rater, [c[rater] for c in by_query.values() if rater in c] + ["tie"] * len(identical))
        for rater in raters
    ]
    everyone = [q for q, c in by_query.items() if len(raters) > 1 and len(c) == len(raters)]
    table = [[Counter(by_query[q].values())[side] for side in ("a", "b", "tie")] for q in everyone]
    disagreements = [
        Disagreement(query_id=q, query=texts.get(q, ""), choices=dict(sorted(c.items())))
        for q, c in by_query.items()
        if len(set(c.values())) > 1
    ]
    return PreferenceVerdict(
        session_id=session_id, queries=len(query_ids), identical=len(identical),
        undecided=sum(1 for q in query_ids if q not in pooled_choices),
        pooled=counts(POOLED, [pooled_choices[q] for q in query_ids if q in pooled_choices]),
        raters=per_rater, fleiss_kappa=fleiss_kappa(table) if table else None, kappa_queries=len(table),
        disagreements=disagreements, graded=_graded(pooled_choices, lists, qrels) if qrels else None,
    )  # fmt: skip


def _majority(choices: list[Preferred]) -> Preferred:
    """The choice most of a query's raters made (a tie when two choices are made equally often)."""
    tally = Counter(choices).most_common()
    if len(tally) > 1 and tally[0][1] == tally[1][1]:
        return "tie"
    return tally[0][0]


def _graded(chosen: Mapping[str, Preferred], lists: Mapping[str, ShownLists], qrels: Qrels) -> GradedAgreement:
    queries = agree = 0
    for query_id, side in chosen.items():
        grades = qrels.get(query_id)
        if side == "tie" or not grades or query_id not in lists:
            continue
        shown = lists[query_id]
        a, b = (list_ndcg10(query_id, grades, ids) for ids in (shown.a, shown.b))
        if abs(a - b) < 1e-12:
            continue
        queries += 1
        agree += int((b > a) == (side == "b"))
    return GradedAgreement(queries=queries, agree=agree)
