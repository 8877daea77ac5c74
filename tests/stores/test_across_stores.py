"""The engine on pgvector (its own tables and a seed-004 table it only reads), a PostgreSQL that goes away, and
the same collection compared across Chroma, Qdrant and pgvector."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from workbench.cli import main
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import CollectionNotFoundError, InputError, StoreConnectionError, StoreError
from workbench.evaluation import Dataset
from workbench.services.store_comparison import (
    StoreTarget,
    compare_stores,
    copy_collection,
    copy_into,
    missing_targets,
    open_target,
    recall_study,
)

pytestmark = pytest.mark.live_server

_schemas = itertools.count()


@pytest.fixture
def pg_settings(tiny_settings: Settings, postgres_url: str) -> Settings:
    return tiny_settings.model_copy(
        update={"store": "pgvector", "pg_url": postgres_url, "pg_schema": f"engine_{next(_schemas)}"}
    )


def test_the_engine_ingests_and_searches_pgvector(pg_settings: Settings, corpus_dir: Path) -> None:
    engine = Engine(pg_settings)
    report = engine.ingest(corpus_dir, "nature")
    assert report.store == "pgvector" and report.added == report.chunks == 8
    again = engine.ingest(corpus_dir, "nature")
    assert (again.added, again.updated, again.unchanged) == (0, 0, 8)
    result = engine.search(
        "rivers", engine.plan(collection="nature", k=6, top_n=3, filters={"page": 2, "source": "guide.md"})
    )
    assert [c.metadata["section"] for c in result.candidates] == ["Rivers"] and result.store == "pgvector"
    hybrid = engine.search("volcanoes magma", engine.plan(collection="nature", retrieval="hybrid", k=6, top_n=3))
    assert hybrid.candidates[0].text.startswith("Volcanoes")
    assert {c.name for c in engine.collections()} == {"nature"}
    engine.delete_collection("nature")
    assert engine.collections() == []


def test_cli_on_pgvector(
    tiny_models: dict[str, Path], postgres_url: str, corpus_dir: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("WORKBENCH_EMBEDDING_MODEL", str(tiny_models["embedder"]))
    monkeypatch.setenv("RERANKER_MODEL", str(tiny_models["reranker"]))
    monkeypatch.setenv("WORKBENCH_PG_SCHEMA", f"cli_{next(_schemas)}")
    store = ["--store", "pgvector", "--url", postgres_url]
    assert main(["ingest", str(corpus_dir), "--collection", "nature", *store]) == 0
    assert main(["query", "bees", "--collection", "nature", "-k", "4", "-n", "2", "--json", *store]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("{") :])["store"] == "pgvector"
    assert main(["collections", "--json", *store]) == 0
    assert "postgres@" not in capsys.readouterr().out  # the user part of the URL is masked


def test_a_seed_004_table_is_read_not_written(tiny_settings: Settings, postgres_url: str, tmp_path: Path) -> None:
    import psycopg

    from workbench.embeddings import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(tiny_settings.embedding_model, tiny_settings)
    texts = ["Patients fast for eight hours before surgery.", "Visiting hours are ten to eight.", "Parking is free."]
    vectors = embedder.embed_documents(texts)
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("CREATE EXTENSION IF NOT EXISTS vector")
        db.execute("CREATE SCHEMA IF NOT EXISTS hc_ai_schema")
        db.execute("DROP TABLE IF EXISTS hc_ai_schema.hc_ai_table")
        db.execute(
            "CREATE TABLE hc_ai_schema.hc_ai_table (id bigserial PRIMARY KEY, content text, "
            f"embedding vector({vectors.shape[1]}), metadata jsonb)"
        )
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            db.execute(
                "INSERT INTO hc_ai_schema.hc_ai_table (content, embedding, metadata) VALUES (%s, %s::vector, %s)",
                [text, "[" + ",".join(map(str, vector)) + "]", json.dumps({"ward": "A" if i else "B"})],
            )
    settings = tiny_settings.model_copy(
        update={
            "collections": {
                "hc-ai": {
                    "store": "pgvector",
                    "url": postgres_url,
                    "table": "hc_ai_schema.hc_ai_table",
                    "text_column": "content",
                    "embedding_model": tiny_settings.embedding_model,
                }
            }
        }
    )
    engine = Engine(settings)
    result = engine.search("surgery fasting", engine.plan(collection="hc-ai", k=3, top_n=2))
    assert {c.text for c in result.candidates} == set(texts)
    assert result.store == "pgvector"
    only_a = engine.search("hours", engine.plan(collection="hc-ai", k=3, top_n=1, filters={"ward": "A"}))
    assert all(c.metadata["ward"] == "A" for c in only_a.candidates) and len(only_a.candidates) == 2
    listed = {c.name: c for c in engine.collections()}
    assert listed["hc-ai"].read_only and "table named in workbench.toml" in (listed["hc-ai"].written_by or "")
    (tmp_path / "extra.txt").write_text("A new leaflet about parking.")
    with pytest.raises(InputError, match="is attached read-only: the workbench does not ingest into it"):
        engine.ingest(tmp_path / "extra.txt", "hc-ai")
    with pytest.raises(StoreError, match="does not write to it"):  # the store itself refuses too
        engine.registry.get("hc-ai").delete_chunks(["1"])


def test_a_postgresql_that_goes_away_is_a_connection_error() -> None:
    from workbench.stores.localpg import LocalPostgres
    from workbench.stores.pgvector import PgVectorBackend

    folder = Path(tempfile.mkdtemp(prefix="wb-test-pg-stop-"))
    folder.chmod(0o755)
    server = LocalPostgres(folder / "data").start()
    url = server.url.replace("postgres@", "postgres:Secret99@")
    backend = PgVectorBackend(url, schema="going", timeout=3)
    collection = backend.create("going-away", embedding_model="m", dimension=4)
    assert collection.search(3, vector=np.ones(4, dtype=np.float32)) == []
    server.stop()
    try:
        with pytest.raises(StoreConnectionError) as caught:
            collection.search(3, vector=np.ones(4, dtype=np.float32))
    finally:
        backend.close()
        shutil.rmtree(folder, ignore_errors=True)
    message = str(caught.value)
    assert f"127.0.0.1:{server.port}" in message and "Secret99" not in message and "search 'going-away'" in message


def test_the_same_collection_across_chroma_qdrant_and_pgvector(
    tiny_engine: Engine, corpus_dir: Path, postgres_url: str, tmp_path: Path, cranfield_dir: Path
) -> None:
    settings = tiny_engine.settings.model_copy(update={"pg_url": postgres_url, "pg_schema": f"across_{next(_schemas)}"})
    engine = Engine(settings)
    engine.ingest(corpus_dir, "nature")
    chroma = StoreTarget(kind="chroma", location=str(settings.persist_dir))
    targets = [chroma, StoreTarget(kind="qdrant", location=str(tmp_path / "qdrant")), StoreTarget(kind="pgvector")]
    source = open_target(chroma, settings, "nature")
    for target in targets[1:]:
        copied = copy_collection(source, target, settings)
        assert copied.count() == 8
    assert copy_collection(source, targets[2], settings).count() == 8  # again: nothing new, nothing doubled

    result = compare_stores(
        engine, "rivers and deltas", engine.plan(collection="nature", k=6, top_n=3), targets, repeats=2
    )
    assert [r.store for r in result.runs] == [t.label for t in targets]
    assert all(r.recall_vs_exact == 1.0 and r.search_ms_p50 > 0 for r in result.runs)  # tiny: HNSW is exact
    assert all(a.overlap_at_n == 1.0 for a in result.agreement.values())
    assert len(result.agreement) == 3

    engine.ingest(cranfield_dir, "cran")
    cran = open_target(chroma, settings, "cran")
    copy_collection(cran, targets[1], settings)
    study = recall_study(
        engine, Dataset.from_beir(cranfield_dir), engine.plan(collection="cran", k=20), targets[:2], max_queries=8
    )
    assert study.queries == 8 and [row["store"] for row in study.rows] == [t.label for t in targets[:2]]
    for row in study.rows:
        assert 0.9 <= row["recall@20 vs exact"] <= 1.0 and 0 <= row["ndcg@10 after"] <= 1
    open_target(targets[1], settings, "cran")
    from workbench.stores.qdrant import QdrantBackend

    QdrantBackend(path=tmp_path / "qdrant").close()


def _another_process_opens(folder: Path) -> bool:
    """Whether a second process can open a local Qdrant folder (it cannot while a client here holds its lock)."""
    code = f"from qdrant_client import QdrantClient; QdrantClient(path={str(folder)!r}).close()"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120).returncode == 0


def test_a_first_comparison_across_stores_offers_the_copy_and_lets_go_of_local_qdrant(
    tiny_engine: Engine, corpus_dir: Path, tmp_path: Path
) -> None:
    tiny_engine.ingest(corpus_dir, "nature")
    folder = tmp_path / "qdrant"
    qdrant = StoreTarget(kind="qdrant", location=str(folder))
    targets = [StoreTarget(kind="chroma"), qdrant]
    assert missing_targets(tiny_engine, "nature", targets) == [qdrant]
    with pytest.raises(InputError, match=r"'nature' is not in qdrant:.* yet: copy it there first"):
        compare_stores(tiny_engine, "rivers", tiny_engine.plan(collection="nature", k=6, top_n=3), targets, repeats=1)
    assert _another_process_opens(folder)  # the check let go of the folder's lock

    copy_into(tiny_engine, "nature", [qdrant])
    assert _another_process_opens(folder)  # so did the copy (the CLI's --copy-from works while the app runs)
    result = compare_stores(
        tiny_engine, "rivers", tiny_engine.plan(collection="nature", k=6, top_n=3), targets, repeats=1
    )
    assert [r.store for r in result.runs] == ["chroma", qdrant.label] and result.runs[1].recall_vs_exact == 1.0
    assert _another_process_opens(folder)  # and the comparison
    assert tiny_engine.search(
        "rivers", tiny_engine.plan(collection="nature", k=6, top_n=3)
    ).candidates  # the engine's own store still works


def test_a_missing_collection_names_the_store_to_create_it_in() -> None:
    message = str(CollectionNotFoundError("nature", "qdrant at /data/qdrant"))
    assert "--collection nature --store qdrant`" in message and "--copy-from" in message
