"""Why a query was hurt: for the reranked top n of each judged query, the signs that explain a loss.

- **cut**: the share of a passage's tokens the cross-encoder never read (cut at its max length with the query);
- **phantom hit**: a passage the reranker placed in its top PHANTOM_TOP_RANKS from beyond the top n that shares no
  word with the query and is not judged relevant (a high cross-encoder score on no lexical evidence and a low
  first-stage score; Jacob et al., 2024, "Drowning in Documents"). Lower places are left out: a top n is mostly
  filler once its few relevant documents are placed, and filler from beyond the top n says nothing;
- **near-duplicates**: two passages in the top n whose word 5-grams mostly coincide (Jaccard ≥ 0.8);
- **first stage found**: whether any document judged relevant was among the k candidates at all (if not, no
  reranking could help: the first stage's Recall@k is the ceiling).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import BaseModel

from workbench.engine import Engine
from workbench.evaluation.io import Dataset
from workbench.types import RankedHit, SearchPlan, SearchResult

_WORD = re.compile(r"\w+", re.UNICODE)
CUT_SHOWN = 0.1  # a passage with at least this share cut counts as cut
DUPLICATE_JACCARD = 0.8
SHINGLE = 5
# Words too common to count as lexical evidence that a passage answers a query.
_STOPWORDS = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    )
)

PHANTOM_TOP_RANKS = 3  # a phantom hit is placed this high: a high score, not filler at the bottom of the top n


class DocumentSigns(BaseModel):
    """One passage of a reranked top n and what may have gone wrong with it."""

    document_id: str
    rank_before: int
    rank_after: int
    grade: int | None
    cut_share: float | None  # None: the reranker does not say (a remote service)
    phantom: bool
    duplicate_of: str | None = None


class QueryDiagnosis(BaseModel):
    """The signs over one query's reranked top n."""

    query_id: str
    query: str
    delta: float
    first_stage_found: bool
    documents: list[DocumentSigns]
    # the largest share of a judged-relevant candidate's tokens (any of the k) cut at the model's max length; None
    # when no candidate is relevant or the reranker does not say (a remote service)
    relevant_cut_share: float | None = None

    @property
    def cut(self) -> int:
        return sum(1 for d in self.documents if d.cut_share is not None and d.cut_share >= CUT_SHOWN)

    @property
    def phantoms(self) -> int:
        return sum(d.phantom for d in self.documents)

    @property
    def duplicates(self) -> int:
        return sum(d.duplicate_of is not None for d in self.documents)

    def words(self) -> str:
        """The signs in a line ("none" when there are none)."""
        signs = []
        if not self.first_stage_found:
            signs.append("the first stage found no relevant document among the k candidates")
        if self.phantoms:
            signs.append(f"{self.phantoms} phantom hit{'s' if self.phantoms > 1 else ''} (no query word, placed in "
                         f"the top {PHANTOM_TOP_RANKS} from beyond the top n)")  # fmt: skip
        if self.cut:
            worst = max(d.cut_share or 0.0 for d in self.documents)
            signs.append(f"{self.cut} passage{'s' if self.cut > 1 else ''} cut at the model's max length (up to "
                         f"{worst:.0%} unread)")  # fmt: skip
        if self.duplicates:
            signs.append(f"{self.duplicates} near-duplicate{'s' if self.duplicates > 1 else ''} in the top n")
        return "; ".join(signs) or "no sign of truncation, phantom hits or duplicates"


class Diagnosis(BaseModel):
    """The signs per judged query, and how many queries show each."""

    queries: int
    not_found_by_first_stage: int
    with_phantoms: int
    with_cut_passages: int
    with_duplicates: int
    per_query: list[QueryDiagnosis]

    def of(self, query_id: str) -> QueryDiagnosis | None:
        return next((d for d in self.per_query if d.query_id == query_id), None)

    def words(self) -> str:
        return (
            f"Over {self.queries} queries: the first stage found no relevant document for "
            f"{self.not_found_by_first_stage}; {self.with_phantoms} had phantom hits in the top n; "
            f"{self.with_cut_passages} had passages cut at the model's max length; {self.with_duplicates} had "
            "near-duplicates."
        )


def words_of(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> set[str]:
    """A text's words that can be evidence of an answer (common function words left out)."""
    return {w for w in words_of(text) if w not in _STOPWORDS}


def shingles(text: str, size: int = SHINGLE) -> set[tuple[str, ...]]:
    words = words_of(text)
    if len(words) < size:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _phantom(row: RankedHit, top_n: int, terms: set[str], grade: int | None) -> bool:
    """Placed in the top PHANTOM_TOP_RANKS from beyond the top n, sharing no word with the query, and not judged
    relevant."""
    lifted = row.rank_before > top_n and row.rank_after <= PHANTOM_TOP_RANKS
    return lifted and not (terms & content_words(row.text)) and not (grade is not None and grade > 0)


def diagnose_result(
    result: SearchResult,
    query_id: str,
    grades: dict[str, int],
    delta: float,
    cut_shares: Callable[[str, list[str]], list[float]] | None,
) -> QueryDiagnosis:
    """The signs over one search result's reranked top n (`grades`: the query's judgments)."""
    rows = result.reranked
    cut = cut_shares(result.query, [r.text for r in rows]) if cut_shares and rows else [None] * len(rows)
    terms = content_words(result.query)
    seen: list[tuple[str, set[tuple[str, ...]]]] = []
    documents = []
    for row, share in zip(rows, cut, strict=True):
        doc = str(row.metadata.get("document_id", row.id))
        own = shingles(row.text)
        twin = next((other for other, theirs in seen if jaccard(own, theirs) >= DUPLICATE_JACCARD), None)
        seen.append((doc, own))
        documents.append(
            DocumentSigns(
                document_id=doc, rank_before=row.rank_before, rank_after=row.rank_after, grade=grades.get(doc),
                cut_share=share, phantom=_phantom(row, result.top_n, terms, grades.get(doc)),
                duplicate_of=twin,
            )
        )  # fmt: skip
    relevant = {d for d, g in grades.items() if g > 0}
    answers = [c.text for c in result.candidates if str(c.metadata.get("document_id", c.id)) in relevant]
    relevant_cut = max(cut_shares(result.query, answers)) if cut_shares and answers else None
    return QueryDiagnosis(
        query_id=query_id, query=result.query, delta=delta, first_stage_found=bool(answers), documents=documents,
        relevant_cut_share=relevant_cut,
    )  # fmt: skip


def diagnose(engine: Engine, dataset: Dataset, plan: SearchPlan, deltas: dict[str, float]) -> Diagnosis:
    """The signs for each query in `deltas` (query id -> its nDCG@10 change), from the same searches the evaluation
    ran (served from the engine's caches when they are still there)."""
    reranker = engine.reranker_of(plan)
    cut_shares = getattr(reranker, "cut_shares", None)
    per_query = []
    for qid, delta in deltas.items():
        result = engine.search(dataset.queries[qid], plan, max_query_chars=None)
        per_query.append(diagnose_result(result, qid, dataset.qrels.get(qid, {}), delta, cut_shares))
    return Diagnosis(
        queries=len(per_query),
        not_found_by_first_stage=sum(not d.first_stage_found for d in per_query),
        with_phantoms=sum(d.phantoms > 0 for d in per_query),
        with_cut_passages=sum(d.cut > 0 for d in per_query),
        with_duplicates=sum(d.duplicates > 0 for d in per_query),
        per_query=per_query,
    )
