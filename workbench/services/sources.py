"""Where the judged queries to evaluate come from, for every front end (`workbench eval`, the Evaluate page):
files (queries and qrels), the demo handbook's, a BEIR folder, or the judgments store's for a collection; and the
first-stage candidates a production system exported, as a read-only collection (`attach_candidates`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.io import Dataset
from workbench.inputs import safe_file_stem
from workbench.judgments import load_judgments
from workbench.services.demo import demo_dataset
from workbench.stores.candidates import CandidatesFile


@dataclass(frozen=True)
class JudgedAsk:
    """What a front end named as the judged queries to evaluate (each field left out when not named)."""

    queries: str | Path | None = None
    qrels: str | Path | None = None
    demo: bool = False
    beir: str | Path | None = None
    split: str = "test"
    collection: str | None = None
    shipped: bool = False


@dataclass(frozen=True)
class JudgedSource:
    """One place judged queries come from: whether an ask names it, and how its queries and grades are read."""

    name: str
    named: Callable[[JudgedAsk], bool]
    read: Callable[[Settings, JudgedAsk], Dataset | None]  # None: named, but nothing there (try the next)


def _files(_: Settings, ask: JudgedAsk) -> Dataset:
    if ask.queries is None or ask.qrels is None:
        raise InputError("The queries and the qrels go together: give both (--qrels and --queries).")
    return Dataset.from_files(ask.queries, ask.qrels)


def _shipped_demo(_: Settings, ask: JudgedAsk) -> Dataset:
    dataset = demo_dataset(
        ask.split
    )  # named so, so that no figure made on them reads as made on the grades given since
    dataset.name = f"{dataset.name} (as shipped)"
    return dataset


def _stored(settings: Settings, ask: JudgedAsk) -> Dataset | None:
    stored = load_judgments(settings, ask.collection or "")
    return stored.dataset() if stored is not None else None


# The sources, in the order an ask is matched against them: the first that names it and has judgments is read. A
# new source is a reader and one line here.
JUDGED_SOURCES: tuple[JudgedSource, ...] = (
    JudgedSource("files", lambda ask: ask.queries is not None or ask.qrels is not None, _files),
    JudgedSource("demo as shipped", lambda ask: ask.demo and ask.shipped, _shipped_demo),
    JudgedSource("demo", lambda ask: ask.demo, lambda settings, ask: demo_dataset(ask.split, settings)),
    JudgedSource("beir", lambda ask: ask.beir is not None, lambda _, ask: Dataset.from_beir(ask.beir, ask.split)),
    JudgedSource("judgments store", lambda ask: bool(ask.collection), _stored),
)


def judged_dataset(
    settings: Settings,
    *,
    queries: str | Path | None = None,
    qrels: str | Path | None = None,
    demo: bool = False,
    beir: str | Path | None = None,
    split: str = "test",
    collection: str | None = None,
    shipped: bool = False,
) -> Dataset:
    """The judged queries from the first source given (`JUDGED_SOURCES`, in this order): `queries` with `qrels`
    (BEIR or TREC files), the demo's (`demo`: with the grades given since, or `shipped` as it came), a BEIR folder
    (`beir`, its `split`), the judgments stored for `collection`. InputError when only one of the files is given,
    or when no source is."""
    ask = JudgedAsk(queries, qrels, demo, beir, split, collection, shipped)
    for source in JUDGED_SOURCES:
        if source.named(ask) and (dataset := source.read(settings, ask)) is not None:
            return dataset
    raise InputError(
        "Name what to evaluate: a BEIR folder, `demo`, --qrels FILE --queries FILE, or --collection NAME "
        "when that collection has judgments (rated, or imported with `workbench judgments import`)."
    )


def collection_texts(engine: Engine, collection: str) -> dict[str, tuple[str, str]]:
    """A collection's documents as a TREC run's hits read them: document id -> (title, text), a document's chunks
    joined in their stored order (a TREC run of the collection's own ids needs no corpus file beside it)."""
    texts: dict[str, tuple[str, list[str]]] = {}
    for chunk in engine.registry.get(collection).all_chunks():
        doc = str(chunk.metadata.get("document_id", chunk.id))
        _, parts = texts.setdefault(doc, (str(chunk.metadata.get("title") or ""), []))
        parts.append(chunk.text)
    return {doc: (title, "\n".join(parts)) for doc, (title, parts) in texts.items()}


def attach_candidates(
    engine: Engine,
    path: str | Path,
    queries: Mapping[str, str],
    *,
    corpus: str | Path | None = None,
    texts_from: str | None = None,
    tag: str = "",
) -> CandidatesFile:
    """A file of a production system's first-stage candidates (JSONL, or a TREC run with its corpus) registered
    with the engine as a read-only collection named after the file, so that an evaluation, the gate, a query set's
    comparison or Compare reranks exactly those candidates for `queries` (id: text; a TREC run's ids are theirs).
    Its `problems` say what it could not use. `tag` sets one caller's files apart from another's (the app's
    sessions share one engine)."""
    name = f"candidates-{safe_file_stem(Path(path).stem, 'file')}" + (f"-{tag}" if tag else "")
    texts = collection_texts(engine, texts_from) if corpus is None and texts_from else None
    found = CandidatesFile.read(path, name, queries=queries, corpus=corpus if corpus is not None else texts)
    engine.registry.register_collection(name, found)
    return found
