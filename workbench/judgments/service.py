"""Judgments as the front ends use them: rate a document, read a collection's current grades, import and export
qrels. Every front end (app, CLI, HTTP, MCP) calls these functions.

Files attached to a collection before the store existed (`<data_dir>/judgments/<collection>/qrels.tsv`) move
into the store the first time the collection's judgments are read; the files stay where they were.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Literal, TypedDict, Unpack

from pydantic import BaseModel

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.io import Dataset, GradeSources, Qrels, read_qrels, read_queries
from workbench.inputs import (
    validate_collection_name,
    validate_doc_id,
    validate_grade,
    validate_idempotency_key,
    validate_policy,
    validate_query,
    validate_rater,
)
from workbench.judgments.agreement import Agreement, Weights, rater_agreement
from workbench.judgments.store import JudgmentRow, current_grades, now, open_judgment_store
from workbench.redact import plain_text
from workbench.vocab import (
    DEFAULT_RATER,
    JUDGMENT_EXPORT_FORMATS,
    JUDGMENT_SOURCES,
    LLM_RATER_PREFIX,
    MACHINE_SOURCES,
    MAX_REASON_CHARS,
)

ExportFormat = Literal["trec", "beir", "history"]
EXPORT_FORMATS: tuple[str, ...] = JUDGMENT_EXPORT_FORMATS
_MOVED = "moved-to-store"
_CHUNK_ID = re.compile(r"(.+)::\d+")  # a passage of a document: `<document id>::<index>`


def normal_query(text: str) -> str:
    """A query's text as matched against judged ones: case and spacing ignored."""
    return " ".join(text.casefold().split())


class Judgments(BaseModel):
    """A collection's judged queries (id -> text) and current grades (query id -> document id -> grade), with
    the policy that chose them and how many grades were ever given."""

    collection: str
    queries: dict[str, str]
    qrels: Qrels
    policy: str = "latest"
    given: int = 0
    raters: list[str] = []
    provenance: str = ""  # whose grades these are, in words (`whose`)
    sources: GradeSources | None = None  # where an LLM judge graded some pairs: whose each counted grade is

    def for_query(self, text: str) -> tuple[str, dict[str, int]] | None:
        """The judged query with this text (case and spacing ignored) and its grades, or None."""
        wanted = normal_query(text)
        for qid, query in self.queries.items():
            if normal_query(query) == wanted and qid in self.qrels:
                return qid, self.qrels[qid]
        return None

    @property
    def query_count(self) -> int:
        return sum(1 for q in self.queries if q in self.qrels)

    def dataset(self) -> Dataset:
        """These judgments as an evaluation dataset (InputError when no judged query has a text)."""
        if not self.qrels:
            raise InputError(f"'{self.collection}' has no judgments yet: rate documents or import qrels first.")
        whose_grades = f": {self.provenance}" if self.provenance else ""
        dataset = Dataset(f"{self.collection} (judgments store{whose_grades})", self.queries, self.qrels)
        dataset.grade_sources = self.sources
        return dataset


class Rating(BaseModel):
    """What a rating did: the row stored, the pair's current grade under the policy, and its history length."""

    collection: str
    query_id: str
    query: str
    doc_id: str
    grade: int
    rater: str
    source: str
    current_grade: int
    ratings_of_pair: int
    replayed: bool = False  # a retry of a request with the same idempotency key: nothing new was stored


def judgments_folder(settings: Settings, collection: str) -> Path:
    """Where files attached before the store existed were kept."""
    return Path(settings.data_dir) / "judgments" / validate_collection_name(collection)


def _move_attached_files(settings: Settings, collection: str) -> None:
    folder = judgments_folder(settings, collection)
    if (folder / "qrels.tsv").is_file() and not (folder / _MOVED).exists():
        _import(settings, collection, folder / "qrels.tsv", folder / "queries.jsonl", imported_rater("qrels.tsv"))
        (folder / _MOVED).write_text("These judgments were imported into the judgments store.\n", encoding="utf-8")


def judgment_rows(settings: Settings, collection: str) -> list[JudgmentRow]:
    """Every grade ever given in the collection, oldest first."""
    collection = validate_collection_name(collection)
    _move_attached_files(settings, collection)
    return open_judgment_store(settings).rows(collection)


def judged_queries(settings: Settings, collection: str) -> dict[str, str]:
    """The collection's judged queries: id -> text."""
    return open_judgment_store(settings).queries(validate_collection_name(collection))


def queries_by_rater(rows: Iterable[JudgmentRow]) -> str:
    """How many judged queries each rater's grades hold, the first rater's (the imported or shipped judgments')
    first, then the queries only others graded: "50 by demo handbook, 1 more by ann" (why a collection's judged
    queries can outnumber the set an evaluation of its shipped judgments runs)."""
    ordered = sorted(rows, key=lambda row: row.created_at)
    if not ordered:
        return "no judged queries"
    first = ordered[0].rater
    theirs = {row.query_id for row in ordered if row.rater == first}
    others: Counter[str] = Counter()
    seen: set[str] = set(theirs)
    for row in ordered:
        if row.query_id not in seen:
            seen.add(row.query_id)
            others[row.rater] += 1
    words = f"{len(theirs):,} by {plain_text(first)}"
    if others:
        words += ", " + ", ".join(f"{n:,} more by {plain_text(r)}" for r, n in others.most_common())
    return words


def whose(rows: Iterable[JudgmentRow], first: str | None = None) -> str:
    """Whose grades these are, in words, `first` (the shipped judgments' rater) first, then by count:
    "demo handbook's 1,774 grades + 3 by ann, 1 by bea". Every figure resting on judgments says it."""
    counts = Counter(row.rater for row in rows)
    if not counts:
        return "no grades"
    raters = sorted(counts, key=lambda r: (r != first, -counts[r], r))
    lead, *rest = raters
    words = f"{plain_text(lead)}'s {counts[lead]:,} {'grade' if counts[lead] == 1 else 'grades'}"
    if rest:
        words += " + " + ", ".join(f"{counts[r]:,} by {plain_text(r)}" for r in rest)
    return words


def grade_sources(rows: Iterable[JudgmentRow], policy: str, *, allow_same_lineage: bool) -> GradeSources | None:
    """Whose the grades are where an LLM judge graded some pairs (None where it graded none): people's current
    grades under the policy, the judge's latest grade of each pair, and the pairs whose counted grade is the
    judge's because no person graded them."""
    rows = list(rows)
    judged = [r for r in rows if r.source == "llm"]
    if not judged:
        return None
    people = current_grades([r for r in rows if r.source not in MACHINE_SOURCES], policy)
    judge: Qrels = {}
    for row in judged:  # oldest first: the latest grade of a pair is the judge's
        judge.setdefault(row.query_id, {})[row.doc_id] = row.grade
    counted = {q: sorted(d for d in docs if d not in people.get(q, {})) for q, docs in judge.items()}
    models = sorted({r.rater.removeprefix(LLM_RATER_PREFIX) for r in judged})
    return GradeSources(
        people=people, judge=judge, judge_models=models, judge_counted={q: d for q, d in counted.items() if d},
        allow_same_lineage=allow_same_lineage,
    )  # fmt: skip


def load_judgments(
    settings: Settings, collection: str, policy: str | None = None, rows: list[JudgmentRow] | None = None
) -> Judgments | None:
    """The collection's judgments under the policy (WORKBENCH_JUDGMENT_POLICY by default), or None when it
    has none; from `rows` when the caller has read them already (`judgment_rows`)."""
    rows = judgment_rows(settings, collection) if rows is None else rows
    if not rows:
        return None
    policy = validate_policy(policy) if policy is not None else settings.judgment_policy
    return Judgments(
        collection=validate_collection_name(collection),
        queries=judged_queries(settings, collection),
        qrels=current_grades(rows, policy),
        policy=policy,
        given=len(rows),
        raters=sorted({r.rater for r in rows}),
        provenance=whose(rows),
        sources=grade_sources(rows, policy, allow_same_lineage=settings.allow_same_lineage_judge),
    )


def typed_query_id(text: str) -> str:
    """The id a query typed by a user gets when no judged query has its text (stable: the same text, the same
    id)."""
    return "typed-" + hashlib.sha1(normal_query(text).encode()).hexdigest()[:12]


class GradeGiven(TypedDict, total=False):
    """`judge`'s keywords, passed on to `rate` (whose signature says each one's default)."""

    query: str | None
    query_id: str | None
    rater: str
    source: str
    reason: str
    idempotency_key: str | None


def rate(
    settings: Settings,
    collection: str,
    doc_id: str,
    grade: int | str,
    *,
    query: str | None = None,
    query_id: str | None = None,
    rater: str = DEFAULT_RATER,
    source: str = "person",
    reason: str = "",
    idempotency_key: str | None = None,
) -> Rating:
    """Store one grade for (query, document) by `rater`. The query is named by its text (a judged query with
    the same text is reused; a new one is kept with its text) or by the id of a judged query.

    With an `idempotency_key` a retried request stores nothing new: it answers the pair's current state, marked
    `replayed`; the same key for a different grade, pair or rater is an InputError."""
    collection = validate_collection_name(collection)
    doc_id = validate_doc_id(doc_id)
    grade = validate_grade(grade)
    rater = validate_rater(rater)
    if source not in JUDGMENT_SOURCES:
        raise InputError(f"source must be one of {', '.join(JUDGMENT_SOURCES)}; got {plain_text(repr(source))[:40]}.")
    reason = plain_text(str(reason or ""))[:MAX_REASON_CHARS]
    _move_attached_files(settings, collection)
    store = open_judgment_store(settings)
    queries = store.queries(collection)
    if (query is None) == (query_id is None):
        named = "neither" if query is None else "both"
        raise InputError(f"Name the query by its text (query) or by a judged query's id (query_id), not {named}.")
    if query is None:
        if query_id not in queries:
            raise InputError(f"No judged query has the id '{plain_text(str(query_id))[:80]}' in '{collection}'.")
        text = queries[str(query_id)]
        qid = str(query_id)
    else:
        text = validate_query(query)
        wanted = normal_query(text)
        qid = next((q for q, t in queries.items() if normal_query(t) == wanted), None) or typed_query_id(text)
    row = JudgmentRow(
        collection=collection, query_id=qid, doc_id=doc_id, grade=grade, rater=rater, source=source,
        reason=reason, created_at=now(),
    )  # fmt: skip
    new_query = {qid: text} if qid not in queries else None
    replayed = False
    if idempotency_key is None:
        store.add([row], new_query, collection)
    else:
        key = validate_idempotency_key(idempotency_key)
        request = json.dumps([qid, doc_id, grade, rater, source])
        earlier = store.add_once(row, new_query, key, request)
        if earlier is not None and earlier != request:
            raise InputError(
                f"The idempotency key '{key}' was used for another grade, document or rater in '{collection}': "
                "use a new key for a new grade."
            )
        replayed = earlier is not None
    rows = store.rows(collection, (qid, doc_id))  # the pair's history: its current grade under the policy
    current = current_grades(rows, settings.judgment_policy)[qid][doc_id]
    return Rating(
        collection=collection, query_id=qid, query=text, doc_id=doc_id, grade=grade, rater=rater, source=source,
        current_grade=current, ratings_of_pair=len(rows), replayed=replayed,
    )  # fmt: skip


def _import(settings: Settings, collection: str, qrels: Path, queries: Path, rater: str) -> Judgments:
    grades = read_qrels(qrels)
    texts = read_queries(queries)
    judged = {q: t for q, t in texts.items() if q in grades}
    if not judged:
        raise InputError(f"None of the {len(grades)} judged queries in {qrels.name} has a text in {queries.name}.")
    at = now()
    rows = [
        JudgmentRow(collection=collection, query_id=q, doc_id=d, grade=g, rater=rater, source="import", created_at=at)
        for q, docs in grades.items()
        if q in judged
        for d, g in docs.items()
    ]
    open_judgment_store(settings).add(rows, judged, collection)
    return Judgments(collection=collection, queries=judged, qrels={q: grades[q] for q in judged}, given=len(rows))


def import_judgments(
    engine: Engine, collection: str, qrels: str | Path, queries: str | Path, *, rater: str | None = None
) -> Judgments:
    """`attach_judgments` for front ends that name the collection from outside (CLI, the Collections page): the
    collection must exist, so a typo never becomes a set of judgments nothing can use."""
    engine.collection_info(validate_collection_name(collection))  # CollectionNotFoundError naming those there are
    return attach_judgments(engine.settings, collection, qrels, queries, rater=rater)


def imported_rater(file_name: str) -> str:
    """The rater an imported qrels file's grades are kept under when the user names none: `imported <file>`."""
    return f"imported {file_name}"[:64]


def attach_judgments(
    settings: Settings,
    collection: str,
    qrels: str | Path,
    queries: str | Path,
    *,
    replace: bool = True,
    rater: str | None = None,
) -> Judgments:
    """Import a qrels file (BEIR TSV or TREC; IngestError naming the line of any problem) and its queries into
    the store, as `rater` (default `imported <file name>`). With replace=False nothing is imported when that
    rater's grades are already there, under its name or the `import:<file name>` earlier versions gave (the demo
    attaches its judgments this way on every start). Returns what was imported."""
    collection = validate_collection_name(collection)
    qrels, queries = Path(qrels), Path(queries)
    rater = validate_rater(rater or imported_rater(qrels.name))
    if not replace:
        rows = judgment_rows(settings, collection)
        known = {rater, f"import:{qrels.name}"}
        if any(r.rater in known for r in rows):
            mine = current_grades([r for r in rows if r.rater in known])
            return Judgments(collection=collection, queries=judged_queries(settings, collection), qrels=mine,
                             given=len(rows))  # fmt: skip
    return _import(settings, collection, qrels, queries, rater)


def detach_judgments(settings: Settings, collection: str) -> int:
    """Remove every judgment of the collection (history included); how many grades there were."""
    collection = validate_collection_name(collection)
    _move_attached_files(settings, collection)
    return open_judgment_store(settings).delete(collection)


def export_judgments(settings: Settings, collection: str, fmt: str = "trec", policy: str | None = None) -> str:
    """The collection's judgments as text: `trec` qrels or `beir` qrels TSV of the current grades, or `history`,
    every grade given as JSON lines (query text, rater, source, reason, time)."""
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"format must be one of {', '.join(EXPORT_FORMATS)}; got {plain_text(repr(fmt))[:40]}.")
    judgments = load_judgments(settings, collection, policy)
    if judgments is None:
        raise InputError(f"'{collection}' has no judgments to export.")
    if fmt == "history":
        return "".join(
            json.dumps({**row.model_dump(mode="json"), "query": judgments.queries.get(row.query_id, "")}) + "\n"
            for row in judgment_rows(settings, collection)
        )
    pairs = sorted((q, d, g) for q, docs in judgments.qrels.items() for d, g in docs.items())
    if fmt == "trec":
        return "".join(f"{q} 0 {d} {g}\n" for q, d, g in pairs)
    return "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in pairs)


def export_queries(settings: Settings, collection: str) -> str:
    """The collection's judged queries as BEIR queries.jsonl (to go with an export of the qrels)."""
    queries = judged_queries(settings, collection)
    return "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in sorted(queries.items()))


def judge(engine: Engine, collection: str, doc_id: str, grade: int | str, **given: Unpack[GradeGiven]) -> Rating:
    """`rate`, for front ends that name documents from outside (CLI, HTTP, MCP): the collection must exist
    and hold the document (a chunk with its id, or its first chunk `<id>::0`), so a typo never becomes a grade.
    `given`: `rate`'s keywords (the query by text or id, the rater, the source, the reason, the idempotency key)."""
    collection = validate_collection_name(collection)
    doc_id = validate_doc_id(doc_id)
    engine.collection_info(collection)  # CollectionNotFoundError naming the collections there are
    store = engine.registry.get(collection)
    if not store.embeds_documents and not store.content_hashes([doc_id, f"{doc_id}::0"]):
        raise InputError(f"'{collection}' holds no document '{plain_text(doc_id)[:80]}': check the id.")
    chunk = _CHUNK_ID.fullmatch(doc_id)
    if chunk and not store.embeds_documents and not store.content_hashes([f"{doc_id}::0"]):
        raise InputError(
            f"'{plain_text(doc_id)[:80]}' is a passage's id (a chunk, as `workbench query --json` prints it); grades "
            f"are kept per document: grade '{plain_text(chunk.group(1))[:80]}'."
        )
    return rate(engine.settings, collection, doc_id, grade, **given)


def judgments_agreement(settings: Settings, collection: str, weights: Weights = "quadratic") -> Agreement:
    """How far the collection's raters agree (each rater's latest grade of each pair)."""
    return rater_agreement(judgment_rows(settings, collection), weights)
