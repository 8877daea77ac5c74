"""Judgments and runs in and out: BEIR folders, TREC qrels and TREC run files.

Qrels are `{query_id: {doc_id: grade}}` with graded judgments kept as grades; runs are
`{query_id: {doc_id: score}}` (higher is better).
"""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import BaseModel, Field

from workbench.errors import IngestError, InputError
from workbench.inputs import decode_text, read_user_file
from workbench.loaders import iter_jsonl
from workbench.redact import CONTROL_CHARACTERS, plain_text
from workbench.vocab import MAX_EXPORT_BYTES, MAX_IMPORTED_GRADE

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]


class GradeSources(BaseModel):
    """Whose grades a judged query set's are, where an LLM judge graded some of them: people's current grades,
    the judge's latest grade of each pair it graded, and which of the counted grades are the judge's alone."""

    people: Qrels
    judge: Qrels
    judge_models: list[str]
    judge_counted: dict[str, list[str]] = Field(description="query id -> documents whose counted grade is the judge's")
    allow_same_lineage: bool = False  # the user's explicit override of the same-lineage refusal


def _lines(path: Path, what: str) -> list[str]:
    """A judgments file's lines. Messages name the file by its name only (uploads live in temp folders)."""
    try:
        return decode_text(read_user_file(path, f"{what} file", MAX_EXPORT_BYTES), path.name).splitlines()
    except InputError as exc:
        raise IngestError(str(exc)) from None


def read_queries(path: str | Path) -> dict[str, str]:
    """BEIR queries.jsonl (`_id`, `text`), or a TSV of `id<TAB>text`."""
    path = Path(path)
    queries: dict[str, str] = {}
    lines = _lines(path, "queries")
    if path.suffix == ".jsonl":
        for number, record in iter_jsonl(lines, path.name):
            if "_id" not in record or "text" not in record:
                raise IngestError(f"{path.name}, line {number}: expected a JSON object with _id and text.")
            queries[str(record["_id"])] = str(record["text"])
        return queries
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        qid, sep, text = line.partition("\t")
        if not sep:
            raise IngestError(f"{path.name}, line {number}: expected 'id<TAB>text'.")
        queries[qid.strip()] = text.strip()
    return queries


def read_query_groups(path: str | Path) -> dict[str, str]:
    """Query id -> group, from `metadata.group` in a BEIR queries.jsonl (empty for other files)."""
    path = Path(path)
    if path.suffix != ".jsonl":
        return {}
    groups = {}
    for _, record in iter_jsonl(_lines(path, "queries"), path.name):
        group = (record.get("metadata") or {}).get("group") if isinstance(record.get("metadata"), dict) else None
        if group and "_id" in record:
            groups[str(record["_id"])] = str(group)
    return groups


def read_qrels(path: str | Path) -> Qrels:
    """BEIR qrels TSV (`query-id  corpus-id  score`, with header) or TREC qrels (`qid 0 docid grade`)."""
    path = Path(path)
    qrels: Qrels = {}
    for number, line in enumerate(_lines(path, "qrels"), start=1):
        parts = line.split()
        if not parts or (number == 1 and parts[0].lower() in {"query-id", "query_id", "qid"}):
            continue
        if len(parts) == 3:
            qid, docid, grade = parts
        elif len(parts) == 4:
            qid, _, docid, grade = parts
        else:
            raise IngestError(f"{path.name}, line {number}: expected 3 (BEIR) or 4 (TREC) columns, got {len(parts)}.")
        where = f"{path.name}, line {number}"
        if CONTROL_CHARACTERS.search(qid + docid):
            raise IngestError(f"{where}: an id holds a control character ({plain_text(repr(qid + ' ' + docid))[:80]}).")
        qrels.setdefault(qid, {})[docid] = _whole_grade(grade, where)
    if not qrels:
        raise IngestError(f"{path.name} holds no judgments.")
    return qrels


def _whole_grade(text: str, where: str) -> int:
    """A qrels grade: a whole number (written 2 or 2.0) within MAX_IMPORTED_GRADE of 0; IngestError otherwise."""
    try:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(text)
    except ValueError as exc:
        raise IngestError(f"{where}: the grade '{plain_text(text)[:20]}' is not a number.") from exc
    if not value.is_integer() or abs(value) > MAX_IMPORTED_GRADE:
        raise IngestError(
            f"{where}: the grade '{plain_text(text)[:20]}' is not a whole number from {-MAX_IMPORTED_GRADE} to "
            f"{MAX_IMPORTED_GRADE} (grades are 0 not relevant to 3 perfectly relevant)."
        )
    return int(value)


def read_trec_run(path: str | Path) -> Run:
    """A TREC run file: `qid Q0 docid rank score tag` per line."""
    path = Path(path)
    run: Run = {}
    for number, line in enumerate(_lines(path, "run"), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise IngestError(f"{path.name}, line {number}: a TREC run line has 6 columns, got {len(parts)}.")
        qid, _, docid, _, score, _ = parts
        try:
            value = float(score)
            if not math.isfinite(value):
                raise ValueError(score)
            run.setdefault(qid, {})[docid] = value
        except ValueError as exc:
            raise IngestError(f"{path.name}, line {number}: the score '{score}' is not a finite number.") from exc
    return run


def write_trec_run(run: Run, path: str | Path, tag: str) -> Path:
    """Write a run as a TREC run file, documents ranked by score (ties by id), ranks from 1; each score written
    exactly (the shortest text that reads back as the same float), so the file keeps the run's order."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(trec_run_text(run, tag), encoding="utf-8")
    return path


def trec_run_text(run: Run, tag: str) -> str:
    """The TREC run file's text (for downloads)."""
    lines = []
    for qid in sorted(run):
        ranked = sorted(run[qid].items(), key=lambda item: (-item[1], item[0]))
        lines += [f"{qid} Q0 {docid} {rank} {float(score)!r} {tag}" for rank, (docid, score) in enumerate(ranked, 1)]
    return "\n".join(lines) + "\n"


class Dataset:
    """A judged query set: queries, qrels, and (for BEIR folders) the corpus to ingest."""

    def __init__(
        self,
        name: str,
        queries: dict[str, str],
        qrels: Qrels,
        corpus: Path | None = None,
        groups: dict[str, str] | None = None,
        note: str | None = None,
    ) -> None:
        """`note` is what every report on these judgments must say beside its figures (a corpus sample)."""
        self.name = name
        self.note = note
        self.groups = groups or {}
        self.qrels = qrels
        missing = [qid for qid in qrels if qid not in queries]
        if len(missing) == len(qrels):
            raise IngestError(f"None of the {len(qrels)} judged queries of {name} has a text in the queries file.")
        self.queries = {qid: queries[qid] for qid in qrels if qid in queries}
        self.unmatched_judged = missing
        self.corpus = corpus
        # Where an LLM judge graded some pairs: whose each grade is (GradeSources), set by the
        # judgments store; None for files, BEIR folders and stores without the judge's grades.
        self.grade_sources: GradeSources | None = None

    @classmethod
    def from_beir(cls, folder: str | Path, split: str = "test") -> Dataset:
        """A BEIR folder: queries.jsonl and qrels/<split>.tsv, and usually corpus.jsonl (without it, the
        collection must already hold the documents, as the demo's folder does)."""
        folder = Path(folder)
        qrels_path = folder / "qrels" / f"{split}.tsv"
        if not (folder / "queries.jsonl").is_file() or not qrels_path.is_file():
            raise IngestError(
                f"{folder} is not a BEIR folder: it needs queries.jsonl and qrels/{split}.tsv (and corpus.jsonl)."
            )
        corpus = folder if (folder / "corpus.jsonl").is_file() else None
        queries = folder / "queries.jsonl"
        return cls(folder.name, read_queries(queries), read_qrels(qrels_path), corpus, read_query_groups(queries))

    @classmethod
    def from_files(cls, queries: str | Path, qrels: str | Path, name: str | None = None) -> Dataset:
        """Separate queries (BEIR jsonl or TSV) and qrels (BEIR TSV or TREC) files."""
        return cls(name or Path(qrels).stem, read_queries(queries), read_qrels(qrels), None, read_query_groups(queries))
