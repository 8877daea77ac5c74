"""Query sets drawn from a click log by frequency: the most frequent queries (top N), N distinct queries at random,
or N drawn with probability proportional to their frequency (PPS, without replacement).

A query's id is its judged query's id where the collection judged the same text (case and spacing ignored), else
the id a typed query gets: the ids click judgments are kept under, so an evaluation on the set finds them. Top N
and random sets weigh each query by its frequency, so a weighted mean is a mean over traffic; a PPS set already
drew by frequency, so its queries weigh 1 each (Hansen-Hurwitz).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from workbench.clicks.impressions import Impression
from workbench.errors import InputError
from workbench.experiments.query_sets import QueryItem, QuerySet
from workbench.judgments.service import normal_query, typed_query_id
from workbench.vocab import LOG_SAMPLES, MAX_QUERY_SET_QUERIES


def query_frequencies(impressions: Sequence[Impression]) -> list[tuple[str, int]]:
    """Each distinct query (its most common spelling) and how many impressions it had, most frequent first (ties
    by text)."""
    counts: Counter[str] = Counter()
    spellings: dict[str, Counter[str]] = {}
    for impression in impressions:
        key = normal_query(impression.query)
        counts[key] += 1
        spellings.setdefault(key, Counter())[impression.query] += 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [(spellings[key].most_common(1)[0][0], count) for key, count in ranked]


def log_query_set(
    name: str,
    impressions: Sequence[Impression],
    *,
    sample: str = "top",
    size: int = 50,
    seed: int = 0,
    judged: dict[str, str] | None = None,
    source: str = "a click log",
) -> QuerySet:
    """A query set of `size` queries of the log, drawn as `sample` says (top, random or pps)."""
    if sample not in LOG_SAMPLES:
        raise InputError(f"The sample is one of {', '.join(LOG_SAMPLES)}; got {str(sample)[:40]!r}.")
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_QUERY_SET_QUERIES:
        raise InputError(f"The sample size is a whole number from 1 to {MAX_QUERY_SET_QUERIES:,}; got {size!r}.")
    frequencies = query_frequencies(impressions)
    if not frequencies:
        raise InputError("The log has no query to draw from.")
    size = min(size, len(frequencies))
    rng = np.random.default_rng(seed)
    if sample == "top":
        chosen = list(range(size))
    elif sample == "random":
        chosen = sorted(rng.choice(len(frequencies), size=size, replace=False).tolist())
    else:
        counts = np.array([count for _, count in frequencies], dtype=float)
        chosen = sorted(rng.choice(len(frequencies), size=size, replace=False, p=counts / counts.sum()).tolist())
    by_text = {normal_query(text): qid for qid, text in (judged or {}).items()}
    items = []
    for index in chosen:
        text, count = frequencies[index]
        query_id = by_text.get(normal_query(text)) or typed_query_id(text)
        items.append(QueryItem(id=query_id, text=text, weight=1.0 if sample == "pps" else float(count)))
    words = {"top": "most frequent", "random": "at random", "pps": "by frequency (PPS)"}[sample]
    return QuerySet(
        name=name, source=f"{len(items)} of {len(frequencies)} queries of {source}, {words}, seed {seed}", queries=items
    )
