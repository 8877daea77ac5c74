"""Every bad input is a clear error naming it: the engine, the contracts, the loaders and judgments, the CLI and
the app, as a parametrised matrix (the HTTP API has its own in tests/api/test_http_api.py). Each case
asserts the error class and a piece of the message that names the problem; none may be a traceback."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from workbench import RetrievalService, retrieve_chunks, retrieve_top_docs
from workbench.cli import main
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import (
    CollectionNotFoundError,
    ConfigError,
    IngestError,
    InputError,
    ModelError,
    ModelNotFoundError,
    WorkbenchError,
)
from workbench.evaluation import Dataset, read_qrels, read_queries
from workbench.inputs import parse_filters, safe_upload_name

ENGINE_CASES: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    ("empty query", {"query": ""}, InputError, "empty"),
    ("blank query", {"query": " \n\t "}, InputError, "empty"),
    ("control characters only", {"query": "\x00\x07\x1b\x7f"}, InputError, "empty"),
    ("513 characters", {"query": "x" * 513}, InputError, "513 characters"),
    ("query not text", {"query": 42}, InputError, "must be text"),
    ("query None", {"query": None}, InputError, "must be text"),
    ("undecodable bytes", {"query": "caf\udce9"}, InputError, "not valid UTF-8"),
    ("bytes not UTF-8", {"query": b"\xff\xfe"}, InputError, "not valid UTF-8"),
    ("k zero", {"k": 0}, InputError, "k must be between 1 and 200"),
    ("k too big", {"k": 201}, InputError, "k must be between 1 and 200"),
    ("k fraction", {"k": 2.5}, InputError, "whole number"),
    ("k text", {"k": "10"}, InputError, "whole number"),
    ("k boolean", {"k": True}, InputError, "whole number"),
    ("top_n zero", {"top_n": 0}, InputError, "top_n must be between 1 and k"),
    ("top_n above k", {"k": 5, "top_n": 6}, InputError, "top_n must be between 1 and k (5)"),
    ("filter list", {"filters": {"page": [1, 2]}}, InputError, "one value per name"),
    ("filter object", {"filters": {"page": {"$gt": 1}}}, InputError, "one value per name"),
    ("filter dollar key", {"filters": {"$where": "x"}}, InputError, "cannot start with '$'"),
    ("filter NaN", {"filters": {"score": math.nan}}, InputError, "finite number"),
    ("filter infinity", {"filters": {"score": math.inf}}, InputError, "finite number"),
    ("filter None", {"filters": {"page": None}}, InputError, "Filter 'page'"),
    ("filter empty name", {"filters": {"": 1}}, InputError, "non-empty"),
    ("filter not a mapping", {"filters": 7}, InputError, "filters"),
    ("seventeen filters", {"filters": {f"k{i}": i for i in range(17)}}, InputError, "At most 16 filters"),
    ("filter text no equals", {"filters": ["oops"]}, InputError, "key=value"),
    ("unknown collection", {"collection": "nope"}, CollectionNotFoundError, "'nope' not found"),
    ("collection traversal", {"collection": "../etc"}, CollectionNotFoundError, "'../etc' not found"),
    ("retrieval unknown", {"retrieval": "sparse"}, InputError, "retrieval must be one of"),
    ("reranker not text", {"reranker": 123}, InputError, "reranker must be a model id"),
    ("reranker missing folder", {"reranker": "/no/such/model"}, ModelNotFoundError, "/no/such/model"),
    ("reranker missing hub id", {"reranker": "org/missing-model"}, ModelNotFoundError, "RERANKER_MODEL"),
]


@pytest.fixture(scope="module")
def nature(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]) -> Engine:
    folder = tmp_path_factory.mktemp("nature")
    (folder / "a.md").write_text(
        "# Birds\n\n## Herons\nHerons wade in shallow water.\n\n## Owls\nOwls hunt at night.\n"
    )
    engine = Engine(
        Settings(
            data_dir=tmp_path_factory.mktemp("data"),
            embedding_model=str(tiny_models["embedder"]),
            reranker_model=str(tiny_models["reranker"]),
            offline=True,
        )
    )
    engine.ingest(folder, "nature")
    return engine


@pytest.mark.parametrize(("case", "arguments", "error", "message"), ENGINE_CASES, ids=[c[0] for c in ENGINE_CASES])
def test_engine_search(nature: Engine, case: str, arguments: dict, error: type, message: str) -> None:
    fields = {"k": 3, "top_n": 1, "collection": "nature", **arguments}
    query = fields.pop("query", "herons")
    with pytest.raises(error) as caught:  # the plan refuses a field, or the search a query or a missing part
        nature.search(query, nature.plan(**fields))
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda e: e.browse("nature", -1, 10), InputError, "offset must be 0 or more"),
        (lambda e: e.browse("nature", 0, 0), InputError, "limit must be between 1 and 1000"),
        (lambda e: e.browse("nature", 0, 100000), InputError, "limit must be between 1 and 1000"),
        (lambda e: e.browse("nowhere", 0, 5), CollectionNotFoundError, "'nowhere'"),
        (lambda e: e.delete_collection("nowhere"), CollectionNotFoundError, "'nowhere'"),
        (lambda e: e.ingest("/no/such/folder", "x-docs"), IngestError, "no such file or folder"),
        (lambda e: e.ingest(Path(__file__).parent, "bad name!"), InputError, "is not allowed"),
        (
            lambda e: e.search("herons", e.plan(collection="nature", k=3, top_n=1)).top(9),
            InputError,
            "top_n must be between 1",
        ),
    ],
    ids=[
        "negative offset",
        "zero limit",
        "huge limit",
        "browse unknown",
        "delete unknown",
        "ingest missing",
        "bad collection name",
        "re-slice beyond candidates",
    ],
)
def test_engine_other_calls(nature: Engine, call, error: type, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error) as caught:
        call(nature)
    assert message in str(caught.value)


def test_settings_and_models(tmp_path: Path, tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    if not torch.cuda.is_available():
        engine = Engine(Settings(reranker_model=str(tiny_models["reranker"]), reranker_device="cuda", offline=True))
        with pytest.raises(ConfigError, match="RERANKER_DEVICE=cuda"):
            engine.reranker()
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text('{"architectures": ["BertForSequenceClassification"], "model_type": "bert"}')
    (broken / "model.safetensors").write_bytes(b"not really weights")
    with pytest.raises(ModelError, match="broken-model"):
        Engine(Settings(reranker_model=str(broken), offline=True)).reranker()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-offline-key-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    from workbench.embeddings import create_embedder

    embedder = create_embedder("openai:text-embedding-3-small", Settings(store_timeout=1))
    with pytest.raises(ModelError) as caught:
        embedder.embed_query("hello")
    assert "cannot be reached" in str(caught.value) and "sk-test" not in str(caught.value)


CONTRACT_CASES = [
    (
        lambda e: retrieve_chunks("q", top_k=0, engine=e, collection="nature"),
        InputError,
        "top_k must be between 1 and 20",
    ),
    (lambda e: retrieve_chunks("q", top_k=21, engine=e, collection="nature"), InputError, "top_k"),
    (lambda e: retrieve_chunks("q", top_k="5", engine=e, collection="nature"), InputError, "whole number"),
    (lambda e: retrieve_chunks("", engine=e, collection="nature"), InputError, "empty"),
    (lambda e: retrieve_chunks("q", {"a": [1]}, engine=e, collection="nature"), InputError, "one value per name"),
    (lambda e: retrieve_chunks("q", engine=e, collection="absent"), CollectionNotFoundError, "'absent'"),
    (lambda e: RetrievalService(None), ConfigError, "needs a LangChain VectorStore"),
    (lambda e: RetrievalService("a string"), ConfigError, "got str"),
]


@pytest.mark.parametrize(("call", "error", "message"), CONTRACT_CASES)
def test_contracts(nature: Engine, call, error: type, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error) as caught:
        call(nature)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("x_docs", None, "/no/such/folder", "q"), "no Chroma folder"),
        (("x_docs", None, "{tmp}", ""), "Error retrieving"),
        (("x_docs", None, "{tmp}", "q", 0, 1), "Error retrieving"),
    ],
)
def test_retrieve_top_docs_returns_errors_as_text(tmp_path: Path, arguments: tuple, message: str) -> None:
    arguments = tuple(str(tmp_path) if a == "{tmp}" else a for a in arguments)
    text = retrieve_top_docs(*arguments)
    assert text.startswith("Error retrieving from collection:") and message in text


@pytest.mark.parametrize(
    ("name", "content", "reader", "message"),
    [
        ("q.jsonl", b'{"_id": "1", "text": "a"}\n{broken\n', read_queries, "q.jsonl, line 2: not valid JSON"),
        ("q.tsv", "1\tcaf\xe9".encode("latin-1"), read_queries, "q.tsv: not UTF-8"),
        ("q.tsv", b"just one column\n", read_queries, "expected 'id<TAB>text'"),
        ("r.tsv", "q1\td1\t\xff".encode("latin-1"), read_qrels, "r.tsv: not UTF-8"),
        ("r.tsv", b"q1 0 d1 inf\n", read_qrels, "is not a number"),
        ("r.tsv", b"q1 d1\n", read_qrels, "expected 3 (BEIR) or 4 (TREC) columns"),
        ("r.tsv", b"", read_qrels, "holds no judgments"),
    ],
)
def test_judgment_files(tmp_path: Path, name: str, content: bytes, reader, message: str) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / name).write_bytes(content)
    with pytest.raises(IngestError) as caught:
        reader(tmp_path / name)
    assert message in str(caught.value) and str(tmp_path) not in str(caught.value)


def test_datasets_and_filters_and_names() -> None:
    with pytest.raises(IngestError, match="not a BEIR folder"):
        Dataset.from_beir("/no/such/beir")
    assert parse_filters("page=2\ntitle=Leave") == {"page": 2, "title": "Leave"}
    assert parse_filters({"page": "2", "document_id": 7}) == {"page": 2, "document_id": "7"}
    with pytest.raises(InputError, match="one value per name"):
        parse_filters(["page=[1,2]"])
    for hostile, safe in (
        ("../../etc/passwd", "passwd"),
        ("/tmp/x.tsv", "x.tsv"),
        ("..\\..\\a.md", "a.md"),
        ("", "upload"),
        ("...", "upload"),
        ("a\x00b.txt", "a b.txt"),
    ):
        assert safe_upload_name(hostile) == safe


CLI_CASES = [
    (["gate", "demo", "--junit", "/nonexistent-folder/gate.xml"], "--junit /nonexistent-folder/gate.xml: cannot write"),
    (["gate", "demo", "--json-out", "{tests}"], "cannot write the decision there"),
    (["query", "", "--collection", "nature"], "query is empty"),
    (["query", "q" * 513, "--collection", "nature"], "513 characters"),
    (["query", "q", "--collection", "nature", "-k", "500"], "k must be between 1 and 200"),
    (["query", "q", "--collection", "nature", "-k", "5", "-n", "6"], "top_n must be between 1 and k"),
    (["query", "q", "--collection", "absent"], "'absent' not found"),
    (["query", "q", "--collection", "nature", "--filter", "oops"], "Filters take key=value"),
    (["query", "q", "--collection", "nature", "--filter", "page=[1,2]"], "one value per name"),
    (["query", "q", "--collection", "nature", "--filter", "$where=1"], "cannot start with '$'"),
    (["query", "caf\udce9", "--collection", "nature"], "not valid UTF-8"),
    (["query", "q", "--collection", "nature", "--retrieval", "bm25", "--reranker", "/no/model"], "/no/model"),
    (["ingest", "/no/such/path", "--collection", "nature"], "no such file or folder"),
    (["ingest", "{tests}", "--collection", "x"], "is not allowed"),
    (["delete", "absent"], "'absent' not found"),
    (["delete", "nature"], "pass --yes"),
    (["eval", "--collection", "x1x"], "Name what to evaluate"),
    (["eval", "/no/beir", "--collection", "x1x"], "not a BEIR folder"),
    (["eval", "{odd}"], "Name the collection to evaluate with --collection: the folder's name cannot be one"),
    (["eval", "{demo}", "--collection", "nature", "--max-queries", "-1"], "max queries must be 1 or more"),
    (["eval", "{demo}", "--collection", "nature", "--depth", "10,x"], "--depth takes whole numbers"),
    (["eval", "{demo}", "--collection", "nature", "-k", "10", "--depth", "20"], "Depth values must be between 1 and k"),
    (["eval", "{demo}", "--collection", "nature", "-k", "5", "-n", "10"], "top_n must be between 1 and k"),
    (["eval", "{demo}", "--collection", "nature", "--save-runs", "/proc/no-such/dir"], "--save-runs"),
    (["eval", "--qrels", "{tests}/x.tsv", "--collection", "nature"], "go together"),
    (["eval", "{demo}", "--collection", "nature"], "belong to another collection"),
    (["compare-stores", "q", "--collection", "nature", "--in", "chroma"], "two or more stores"),
    (
        ["compare-stores", "q", "--collection", "nature", "--in", "mongo", "--in", "chroma"],
        "chroma, qdrant or pgvector",
    ),
]


@pytest.mark.parametrize(
    ("argv", "message"), CLI_CASES, ids=[" ".join(a[:2]) + f" #{i}" for i, (a, _) in enumerate(CLI_CASES)]
)
def test_cli_errors_are_one_line(
    nature: Engine,
    tiny_models: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
    tmp_path: Path,
) -> None:
    from workbench.services.demo import demo_dir

    monkeypatch.setenv("WORKBENCH_EMBEDDING_MODEL", str(tiny_models["embedder"]))
    monkeypatch.setenv("RERANKER_MODEL", str(tiny_models["reranker"]))
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(nature.settings.data_dir))
    monkeypatch.setattr("sys.stdin", open("/dev/null"))  # noqa: SIM115 - no terminal, as under cron or CI
    odd = tmp_path / "a b"  # a BEIR folder whose name is no collection name, made for the case that names it
    if "{odd}" in argv:
        shutil.copytree(demo_dir(), odd)
        (odd / "corpus.jsonl").write_text('{"_id": "d1", "text": "a passage"}\n')
    places = {"{demo}": str(demo_dir()), "{tests}": str(Path(__file__).parent), "{odd}": str(odd)}
    for place, path in places.items():
        argv = [a.replace(place, path) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_no_error_escapes_as_an_unexpected_one(nature: Engine) -> None:
    """Everything above was a WorkbenchError (or a ValueError subclass of one): no raw client exceptions."""
    for _, _arguments, error, _ in ENGINE_CASES:
        assert issubclass(error, WorkbenchError)


def test_a_passages_id_is_refused_as_a_graded_document(nature: Engine) -> None:
    """`workbench query --json` prints chunk ids (`<document>::<n>`); a grade given to one was kept and never
    counted (judgments key on documents). It is refused, naming the document to grade."""
    from workbench.judgments import judge

    chunk = nature.search("herons", nature.plan(collection="nature", k=3, top_n=1)).candidates[0].id
    document = chunk.rsplit("::", 1)[0]
    assert chunk != document
    with pytest.raises(InputError, match="is a passage's id") as refused:
        judge(nature, "nature", chunk, 2, query="herons", rater="ann")
    assert f"grade '{document}'" in str(refused.value)
    assert judge(nature, "nature", document, 2, query="herons", rater="ann").grade == 2
