"""Issue 68, items 1 and 2, and issue 69, item 2: a store attached from workbench.toml is never written, whatever its
class or arguments. The real libraries write the stores (langchain-milvus into Milvus Lite, langchain-chroma into
a Chroma folder); the workbench's listing, queries and errors leave every file of them as it was, refuse an
argument that would drop or recreate them by name, never create a collection, and list a declared collection it
cannot open with its problem (never leave it out, never advise an ingest into someone else's folder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sentence_transformers import SentenceTransformer

from tests.stores.test_attached import QUERIES, _files_digest, _write_langchain_chroma, minilm  # noqa: F401
from tests.stores.test_object_stores import _write_milvus
from workbench.cli import main
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import CollectionNotFoundError, ConfigError, StoreError
from workbench.vocab import DEFAULT_EMBEDDING_MODEL

pytestmark = pytest.mark.slow


def _settings(tmp_path: Path, collections: dict) -> Settings:
    return Settings(data_dir=tmp_path / "data", reranker_model="none", offline=True, collections=collections)


def _cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, toml: str) -> None:
    config = tmp_path / "workbench.toml"
    config.write_text(toml, encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WORKBENCH_OFFLINE", "1")
    monkeypatch.setenv("RERANKER_MODEL", "none")


MILVUS_TABLE = (
    '[collections.handbook]\nstore = "langchain"\nclass = "langchain_milvus.Milvus"\n'
    f'embedding_model = "{DEFAULT_EMBEDDING_MODEL}"\nembedding_argument = "embedding_function"\n'
    '[collections.handbook.arguments]\ncollection_name = "handbook"\ndrop_old = true\n'
    'connection_args = {{ uri = "{uri}" }}\n'
)


def test_an_argument_that_would_drop_the_store_is_refused_by_name_and_nothing_is_written(
    minilm: SentenceTransformer,  # noqa: F811 - the fixture
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = tmp_path / "milvus"
    folder.mkdir()
    _write_milvus(folder, minilm)  # LangChain's own writer, as its examples write it
    before = _files_digest(folder)
    _cli(monkeypatch, tmp_path, MILVUS_TABLE.format(uri=folder / "milvus.db"))

    assert main(["collections"]) == 0  # the listing names the collection and its problem, and drops nothing
    out = capsys.readouterr().out
    assert "handbook" in out and "cannot be opened" in out and "drop_old" in out
    assert main(["query", QUERIES[0], "--collection", "handbook", "-k", "4", "--reranker", "none"]) == 2
    err = capsys.readouterr().err
    assert "drop_old" in err and "read-only" in err and len(err.strip().splitlines()) == 1
    assert main(["collections", "--json"]) == 0
    listed = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert "drop_old" in listed["handbook"]["problem"]
    assert _files_digest(folder) == before  # not one byte of the user's store changed

    table = {"store": "langchain", "class": "langchain_milvus.Milvus", "embedding_model": DEFAULT_EMBEDDING_MODEL,
             "arguments": {"drop_old": False, "mode": "append"}}  # fmt: skip
    monkeypatch.setenv("WORKBENCH_CONFIG", "")
    listed = {c.name: c for c in Engine(_settings(tmp_path, {"xxx": table})).registry.list()}
    assert listed["xxx"].problem is None  # a value that writes nothing
    writing = [
        ({"pre_delete_collection": True}, "pre_delete_collection"),
        ({"mode": "overwrite"}, 'mode = "overwrite"'),
        ({"force_recreate": 1}, "force_recreate"),
    ]
    for arguments, named in writing:
        engine = Engine(_settings(tmp_path, {"xxx": {**table, "arguments": arguments}}))
        with pytest.raises(ConfigError, match=named):
            engine.search("herons", engine.plan(collection="xxx", k=2, reranker=None))


def test_a_langchain_chroma_named_by_its_class_is_read_from_a_copy_and_never_creates_a_collection(
    minilm: SentenceTransformer,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    folder = tmp_path / "lc-store"
    expected = _write_langchain_chroma(folder, minilm)  # LangChain's Chroma writes collection lc_chroma
    before = _files_digest(folder)

    def table(**arguments: object) -> dict:
        where = {"persist_directory": str(folder), "collection_name": "lc_chroma"}
        return {"store": "langchain", "class": "langchain_chroma.Chroma", "embedding_model": DEFAULT_EMBEDDING_MODEL,
                "embedding_argument": "embedding_function", "arguments": {**where, **arguments}}  # fmt: skip

    engine = Engine(_settings(tmp_path, {"lcx": table()}))
    listed = engine.registry.list()
    assert [(c.name, c.read_only, c.problem) for c in listed] == [("lcx", True, None)]
    assert not (tmp_path / "data" / "attached").exists()  # listing constructed nothing, copied nothing
    for query in QUERIES:  # the library's own top 4, in its order
        result = engine.search(query, engine.plan(collection="lcx", k=4, reranker=None))
        assert [c.id for c in result.candidates] == expected[query]
    assert _files_digest(folder) == before  # read from a copy: the user's folder is as LangChain left it

    engine = Engine(_settings(tmp_path, {"lcx": table(collection_name="nosuch")}))
    with pytest.raises(CollectionNotFoundError) as caught:
        engine.search("herons", engine.plan(collection="lcx", k=4, reranker=None))
    said = str(caught.value)
    assert "It holds: lc_chroma" in said and "collection_name" in said and "ingest" not in said
    assert "\n" not in said

    engine = Engine(_settings(tmp_path, {"lcx": table(collection_name="n" * 1_000_000)}))
    with pytest.raises(CollectionNotFoundError) as caught:  # said at once, never a hang
        engine.search("herons", engine.plan(collection="lcx", k=4, reranker=None))
    assert len(str(caught.value)) < 600

    typo = tmp_path / "lc-stroe"
    engine = Engine(_settings(tmp_path, {"lcx": table(persist_directory=str(typo))}))
    with pytest.raises(StoreError, match="does not exist"):
        engine.search("herons", engine.plan(collection="lcx", k=4, reranker=None))
    listed_problem = engine.registry.list()[0].problem
    assert listed_problem is not None and "no Chroma database" in listed_problem
    assert not typo.exists()  # no empty store was made where the path pointed
    assert _files_digest(folder) == before


def test_a_declared_collection_whose_name_differs_in_the_folder_is_listed_with_the_key_to_set(
    minilm: SentenceTransformer,  # noqa: F811 - the fixture
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = tmp_path / "perks-store"
    _write_langchain_chroma(folder, minilm)  # the folder holds lc_chroma, the table's key says myperks
    before = _files_digest(folder)
    _cli(monkeypatch, tmp_path, f'[collections.myperks]\nstore = "chroma"\npersist_dir = "{folder}"\n')

    assert main(["collections"]) == 0
    out = capsys.readouterr().out
    assert "myperks" in out and 'collection = "lc_chroma"' in out and "ingest" not in out
    assert main(["query", "herons", "--collection", "myperks", "--reranker", "none"]) == 2
    err = capsys.readouterr().err
    assert 'collection = "lc_chroma"' in err and "ingest" not in err
    assert _files_digest(folder) == before

    _cli(monkeypatch, tmp_path, f'[collections.myperks]\nstore = "chroma"\npersist_dir = "{tmp_path / "none"}"\n')
    assert main(["collections"]) == 0
    out = capsys.readouterr().out
    assert "myperks" in out and "persist_dir" in out and "ingest" not in out


def test_a_class_path_or_arguments_too_long_or_deep_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep: dict = {}
    inner = deep
    for _ in range(5000):  # what a hostile TOML can nest
        inner["a"] = {}
        inner = inner["a"]
    for table, said in [
        ({"store": "langchain", "class": ".".join(["a"] * 5000)}, "characters long"),
        ({"store": "langchain", "class": "langchain_milvus.Milvus", "arguments": deep}, "nest tables more than"),
    ]:
        engine = Engine(_settings(tmp_path, {"xxx": table}))
        with pytest.raises(ConfigError, match=said) as caught:
            engine.search("herons", engine.plan(collection="xxx", k=2, reranker=None))
        assert "\n" not in str(caught.value)
    config = tmp_path / "deep.toml"
    config.write_text("[collections.xxx]\narguments = " + "{ a = " * 3000 + "1" + " }" * 3000 + "\n", encoding="utf-8")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    with pytest.raises(ConfigError, match="too deeply"):
        Settings()
