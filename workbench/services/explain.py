"""Why a reranker scored a passage as it did: leave-one-out (occlusion) over the passage's sentences and the
query's terms.

Each sentence's effect is the score of the whole passage minus the score of the passage without that sentence
(the other sentences joined by a space), so a positive effect is a sentence that raises the score; each query
term's effect is the same with the query less that term. For a local cross-encoder every variant goes through
one batched model call; a reranker that is a service gets one request per distinct query (the passage's
variants share one), and the explanation says what that cost. Effects are on the reranker's own scale (logits
for a cross-encoder), exact by construction: removing a sentence changes the score by its effect.

`explain_pair` explains one (query, passage); `explain_document` finds a document's passage in a search and
explains it; `explain_movement` sets a document beside the one it overtook ("why did #17 come to #3?").
"""

from __future__ import annotations

import re
import time
from typing import Any

from pydantic import BaseModel, Field

from workbench.engine import Engine
from workbench.errors import InputError
from workbench.inputs import validate_query
from workbench.rerankers import Reranker, needs_scores
from workbench.rerankers.served.pricing import DEFAULT_PRICES, Price
from workbench.types import Candidate, SearchPlan, SearchResult
from workbench.vocab import EXPLAIN_MAX_SENTENCES, EXPLAIN_MAX_TERMS, EXPLAIN_WINDOW_WORDS

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n\s*\n|\n(?=\s*[-*•]\s)")
_TERM = re.compile(r"[\w'’-]+", re.UNICODE)


class SentenceEffect(BaseModel):
    """One sentence of the passage and how much it adds to the score (whole passage minus passage without it)."""

    index: int
    text: str
    effect: float
    window: bool = Field(False, description="a stretch of EXPLAIN_WINDOW_WORDS words cut from a run-on sentence")

    @property
    def label(self) -> str:
        """How a page names it: "sentence 2", or "part 3 (a 40-word stretch of a long sentence)"."""
        if self.window:
            return f"part {self.index + 1} (a {EXPLAIN_WINDOW_WORDS}-word stretch of a long sentence)"
        return f"sentence {self.index + 1}"


class TermEffect(BaseModel):
    """One query term and how much it adds to the score (whole query minus query without it)."""

    index: int
    term: str
    effect: float


class Explanation(BaseModel):
    """Why one passage scored as it did for one query, and what finding out cost."""

    query: str
    document_id: str | None = None
    text: str
    reranker_model: str
    score_scale: str
    score: float = Field(description="the whole passage's score on `score_scale`")
    sentences: list[SentenceEffect]
    terms: list[TermEffect]
    model_calls: int = Field(description="model runs (local) or requests (a service) the explanation took")
    pairs_scored: int
    seconds: float
    cost_usd: float | None = Field(None, description="what a hosted API charged, at the price table's rate")
    cost_note: str = ""
    notes: list[str] = Field(default_factory=list)

    def strongest(self) -> SentenceEffect | None:
        """The sentence that raises the score most (None when the passage has one sentence)."""
        return max(self.sentences, key=lambda s: s.effect) if len(self.sentences) > 1 else None

    def to_markdown(self) -> str:
        """The explanation as text: score, sentences by effect, terms by effect, cost."""
        lines = [
            f"Score {self.score:.3f} ({self.score_scale}, {self.reranker_model}) for "
            f"{self.document_id or 'the passage'}",
            "",
            "Sentences (effect on the score when left out; + raises it):",
        ]
        for s in sorted(self.sentences, key=lambda s: -abs(s.effect)):
            lines.append(f"  {s.effect:+8.3f}  [{s.index + 1}] {_clip(s.text, 110)}")
        if self.terms:
            lines += ["", "Query terms:"]
            lines += [f"  {t.effect:+8.3f}  {t.term}" for t in sorted(self.terms, key=lambda t: -abs(t.effect))]
        lines += ["", f"{self.cost_note} in {self.seconds * 1000:.0f} ms."]
        lines += [f"Note: {note}" for note in self.notes]
        return "\n".join(lines)


class MovementExplanation(BaseModel):
    """A document that moved up, beside the document it overtook: both explained for the same query."""

    query: str
    moved: Explanation
    moved_from: int
    moved_to: int
    overtaken: Explanation | None = None
    overtaken_from: int | None = None
    overtaken_to: int | None = None


def split_sentences(text: str) -> list[str]:
    """The passage's sentences (and list items or paragraphs), each stripped; a run-on stretch over
    EXPLAIN_WINDOW_WORDS words is cut into windows of that many words so that it can still be explained."""
    pieces = [p.strip() for p in _SENTENCE_END.split(text) if p and p.strip()]
    sentences: list[str] = []
    for piece in pieces:
        words = piece.split()
        if len(words) <= EXPLAIN_WINDOW_WORDS:
            sentences.append(piece)
        else:
            sentences += [
                " ".join(words[i : i + EXPLAIN_WINDOW_WORDS]) for i in range(0, len(words), EXPLAIN_WINDOW_WORDS)
            ]
    return sentences


def query_terms(query: str) -> list[str]:
    """The query's words, in order (punctuation dropped)."""
    return _TERM.findall(query)


def without(parts: list[str], index: int) -> str:
    """The parts but one, joined by a space: the variant whose score, subtracted from the whole's, is that part's
    effect."""
    return " ".join(part for i, part in enumerate(parts) if i != index)


def explain_pair(
    reranker: Reranker,
    query: str,
    text: str,
    *,
    document_id: str | None = None,
    prices: dict[str, Price] | None = None,
) -> Explanation:
    """Sentence and query-term effects on `reranker`'s score of (query, text); see the module's docstring."""
    query = validate_query(query, None)
    needs_scores(reranker.score_scale, "Explaining a score")
    if not text or not text.strip():
        raise InputError("There is no passage text to explain.")
    sentences = split_sentences(text)
    whole_sentences = {p.strip() for p in _SENTENCE_END.split(text) if p and p.strip()}  # the rest are windows
    notes = []
    if len(sentences) > EXPLAIN_MAX_SENTENCES:
        notes.append(
            f"The passage has {len(sentences)} sentences; the first {EXPLAIN_MAX_SENTENCES} are explained, the rest "
            "are kept in every variant."
        )
    explained = sentences[:EXPLAIN_MAX_SENTENCES]
    terms = query_terms(query)[:EXPLAIN_MAX_TERMS]
    if len(terms) < 2:
        terms = []
    pairs = [(query, text)]
    if len(sentences) > 1:
        pairs += [(query, without(sentences, i)) for i in range(len(explained))]
    if terms:
        pairs += [(without(terms, i), text) for i in range(len(terms))]
    else:
        notes.append("The query has one term: there is nothing to leave out of it.")
    usage_before = reranker.usage
    calls_before = reranker.model_calls
    started = time.perf_counter()
    scores = reranker.score_pairs(pairs)
    seconds = time.perf_counter() - started
    calls = reranker.model_calls - calls_before
    whole = scores[0]
    sentence_scores = scores[1 : 1 + len(explained)] if len(sentences) > 1 else []
    term_scores = scores[1 + len(sentence_scores) :]
    cost, cost_note = _cost(reranker, usage_before, calls, len(pairs), prices)
    return Explanation(
        query=query,
        document_id=document_id,
        text=text,
        reranker_model=reranker.model_id,
        score_scale=reranker.score_scale,
        score=whole,
        sentences=[
            SentenceEffect(
                index=i,
                text=s,
                effect=whole - sentence_scores[i] if sentence_scores else 0.0,
                window=s not in whole_sentences,
            )
            for i, s in enumerate(explained)
        ],
        terms=[
            TermEffect(index=i, term=t, effect=whole - v)
            for i, (t, v) in enumerate(zip(terms, term_scores, strict=True))
        ],
        model_calls=calls,
        pairs_scored=len(pairs),
        seconds=seconds,
        cost_usd=cost,
        cost_note=cost_note,
        notes=notes,
    )


def _cost(
    reranker: Reranker, before: Any, calls: int, pairs: int, prices: dict[str, Price] | None
) -> tuple[float | None, str]:
    kind = getattr(reranker, "kind", None)
    noun = "request" if kind else "model call"
    done = f"{calls} {noun}{'s' if calls != 1 else ''}, {pairs} pairs scored"
    price = (prices or DEFAULT_PRICES).get(kind) if isinstance(kind, str) else None
    if price is None:
        return None, done
    after = reranker.usage
    used = after.model_copy(
        update={
            "tokens": after.tokens - before.tokens,
            "billed_units": after.billed_units - before.billed_units,
            "requests": after.requests - before.requests,
            "documents": after.documents - before.documents,
        }
    )
    cost = price.cost(used)
    return cost, f"{done}, about ${cost:.4f} at ${price.usd:g} per {price.per:,} {price.unit} ({price.read})"


def _find(result: SearchResult, document_id: str) -> Candidate:
    for candidate in result.candidates:
        if document_id in {candidate.id, str(candidate.metadata.get("document_id", ""))}:
            return candidate
    raise InputError(
        f"'{document_id[:80]}' is not among the {len(result.candidates)} candidates of this search: explain a "
        "document the search found (its id or its document id), or raise k."
    )


def explain_document(
    engine: Engine,
    query: str,
    document_id: str,
    plan: SearchPlan,
    *,
    prices: dict[str, Price] | None = None,
) -> Explanation:
    """Search as `plan` says (its top n set to 1) and explain the candidate `document_id` (a chunk id or a
    document id: the best-ranked chunk of that document) among its candidates."""
    plan = plan.with_(top_n=1, min_score=None)
    model = engine.reranker_of(plan)
    if model is None:
        raise InputError("An explanation needs a reranker: name one (or leave the default on).")
    result = engine.search(query, plan)
    candidate = _find(result, document_id)
    return explain_pair(model, result.query, candidate.text, document_id=candidate.id, prices=prices)


def explain_movement(
    engine: Engine, result: SearchResult, document_id: str, *, prices: dict[str, Price] | None = None
) -> MovementExplanation:
    """A candidate of `result` explained beside the candidate it overtook: the one that was at its new rank
    before reranking (None when it did not move up)."""
    model = engine.reranker(result.reranker_model) if result.reranker_model else None
    if model is None:
        raise InputError("This result was not reranked: there is no movement to explain.")
    moved = _find(result, document_id)
    explanation = MovementExplanation(
        query=result.query,
        moved=explain_pair(model, result.query, moved.text, document_id=moved.id, prices=prices),
        moved_from=moved.vector_rank,
        moved_to=moved.rerank_rank,
    )
    if moved.rerank_rank < moved.vector_rank:
        other = next(c for c in result.candidates if c.vector_rank == moved.rerank_rank)
        explanation.overtaken = explain_pair(model, result.query, other.text, document_id=other.id, prices=prices)
        explanation.overtaken_from, explanation.overtaken_to = other.vector_rank, other.rerank_rank
    return explanation


def _clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
