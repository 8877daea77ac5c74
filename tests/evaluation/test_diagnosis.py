"""Why a query was hurt, on constructed passages: phantom hits, near-duplicates, a first stage that found nothing
relevant, and the share of a long passage the cross-encoder never reads (against the tokenizer's own count)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.config import Settings
from workbench.evaluation.diagnosis import diagnose_result
from workbench.rerankers import CrossEncoderReranker
from workbench.types import Candidate, SearchResult, StageTimings

QUERY = "how many vacation days do I get"


def _result(rows: list[tuple[str, str, int, int]], top_n: int = 3) -> SearchResult:
    """(document id, text, first-stage rank, reranked rank) rows."""
    candidates = [
        Candidate(
            id=f"{doc}::0",
            text=text,
            metadata={"document_id": doc},
            vector_score=1.0 / before,
            vector_rank=before,
            rerank_score=10.0 - after,
            rerank_rank=after,
        )
        for doc, text, before, after in rows
    ]
    return SearchResult(
        query=QUERY, collection="c", store="s", k=len(rows), top_n=top_n, retrieval="dense", embedding_model="e",
        reranker_model="r", candidates=sorted(candidates, key=lambda c: c.vector_rank), timings=StageTimings(),
    )  # fmt: skip


ANNUAL = "Employees get 25 vacation days a year, plus public holidays, taken in agreement with their manager."


def test_phantom_hits_duplicates_and_an_empty_first_stage_are_named() -> None:
    result = _result(
        [
            ("leave", ANNUAL, 1, 2),
            ("leave-copy", ANNUAL + " See the policy.", 2, 3),  # nearly the same words: a near-duplicate
            ("parking", "Parking permits are issued by facilities on the first floor.", 9, 1),  # no query word
            ("holiday", "Holiday requests go through the HR portal.", 5, 4),
        ]
    )
    found = diagnose_result(result, "q1", {"leave": 2, "parking": 0}, -0.2, None)
    signs = {d.document_id: d for d in found.documents}
    assert signs["parking"].phantom and not signs["leave"].phantom  # brought in from #9, no query word, grade 0
    assert signs["leave-copy"].duplicate_of == "leave"
    assert found.first_stage_found and (found.phantoms, found.duplicates, found.cut) == (1, 1, 0)
    assert found.words() == (
        "1 phantom hit (no query word, placed in the top 3 from beyond the top n); 1 near-duplicate in the top n"
    )
    # filler at the bottom of a longer top n is no phantom: placed at #4 from #9, no query word, grade 0
    low = _result([("leave", ANNUAL, 1, 1), ("a", "x y", 2, 2), ("b", "z w", 3, 3),
                   ("parking", "Parking permits are issued by facilities.", 9, 4)], top_n=4)  # fmt: skip
    assert not diagnose_result(low, "q1", {"leave": 2, "parking": 0}, 0.0, None).documents[3].phantom
    # a passage judged relevant is no phantom, whatever its words
    assert not diagnose_result(result, "q1", {"parking": 3}, 0.0, None).documents[0].phantom
    # nothing relevant among the candidates: no reranking could have helped
    nothing = diagnose_result(result, "q1", {"elsewhere": 2}, -0.1, None)
    assert not nothing.first_stage_found and nothing.words().startswith("the first stage found no relevant document")


def test_the_share_cut_at_the_models_max_length_equals_the_tokenizers_count(tiny_models: dict[str, Path]) -> None:
    settings = Settings(reranker_model=str(tiny_models["reranker"]), offline=True, reranker_max_length=64)
    reranker = CrossEncoderReranker(str(tiny_models["reranker"]), settings)
    long_text = " ".join(["vacation days are agreed with the manager"] * 20)
    query_tokens = len(reranker.tokenizer(QUERY, add_special_tokens=False)["input_ids"])
    text_tokens = len(reranker.tokenizer(long_text, add_special_tokens=False)["input_ids"])
    budget = 64 - reranker.tokenizer.num_special_tokens_to_add(pair=True)
    expected = 1 - (budget - query_tokens) / text_tokens  # the short query kept whole, the passage gets the rest
    short, long = reranker.cut_shares(QUERY, ["vacation days", long_text])
    assert short == 0.0 and long == pytest.approx(expected)
    result = _result([("long", long_text, 1, 1), ("short", "vacation days", 2, 2)], top_n=2)
    found = diagnose_result(result, "q1", {"long": 1}, -0.1, reranker.cut_shares)
    assert found.cut == 1 and f"up to {expected:.0%} unread" in found.words()
