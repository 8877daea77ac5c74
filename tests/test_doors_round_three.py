"""Issue 68, items 8 and 9: options that would be taken and misused or passed over are refused in one line, and the
words that misled say what happened. Each on the real surface: the CLI's parser and commands, the settings, the
redaction every message goes through, the served reranker against a real local server."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.rerank_apis import Behaviour, RerankApis
from workbench.cli import main
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import ConfigError, InputError
from workbench.redact import redact_text
from workbench.rerankers import create_reranker


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["doctor", "--parity", "demo", "--tolerance", "-1"], "The tolerance is a number above 0 and below 1"),
        (["doctor", "--parity", "demo", "--tolerance", "nan"], "The tolerance is a number above 0 and below 1"),
    ],
)
def test_a_tolerance_that_would_rewrite_autos_choice_is_refused(
    args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert stopped.value.code == 2 and words in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["doctor", "--dataset", "x"], "--dataset go(es) with --parity COLLECTION or --checks COLLECTION"),
        (["doctor", "--served", "http://127.0.0.1:9"], "--served go(es) with --parity COLLECTION"),
        (
            ["doctor", "--checks", "demo", "--served", "http://127.0.0.1:9"],
            "--served go(es) with --parity, not --checks",
        ),
        (["doctor", "--checks", "demo", "--no-keep"], "--no-keep go(es) with --parity, not --checks"),
        (["eval", "demo", "--looks", "3"], "--looks goes with --stop-when-settled"),
        (["query-sets", "add", "x", "--file", "q.txt", "--sample", "random"], "--sample go(es) with --from-log"),
        (["query-sets", "add", "x", "--file", "q.txt", "--size", "5"], "--size go(es) with --from-log"),
    ],
)
def test_options_that_would_be_passed_over_are_refused_in_one_line(
    args: list[str], words: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("WORKBENCH_CONFIG", "")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("open file:///etc/passwd: No such file or directory", "file:///etc/passwd: No such file"),
        ("the token expired an hour ago", "token expired"),
        ("401: token: invalid", "token: invalid"),
    ],
)
def test_masking_hides_secrets_and_never_the_next_word(said: str, kept: str) -> None:
    assert kept in redact_text(said)
    for secret in ("password: hunter2", "token=abc123", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.x.y"):
        assert "***" in redact_text(secret) and "hunter2" not in redact_text(secret)


def test_a_setting_that_is_not_a_number_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_RERANK_TIMEOUT", "nan")
    with pytest.raises(Exception) as caught:
        Settings()
    assert "finite number" in str(caught.value) and "3600" not in str(caught.value)


@pytest.mark.parametrize("model", ["listwise+#m", "vllm+x", "tei+"])
def test_a_served_kind_without_its_url_is_never_looked_up_on_a_hub(model: str) -> None:
    with pytest.raises(ConfigError, match="without its server's URL") as caught:
        create_reranker(model, Settings(offline=True))
    assert "hub" in str(caught.value) and "not found" not in str(caught.value)


@pytest.mark.live_server
def test_one_replica_down_does_not_refuse_the_service() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{closed.getsockname()[1]}/service"
    with RerankApis(Behaviour(key="")) as server:
        reranker = create_reranker(f"{down},{server.base}/service", Settings(offline=True, rerank_timeout=5))
        assert reranker.served_model == "fake-reranker"  # asked of the replica that answers


def test_a_declared_collection_name_follows_the_one_naming_rule(tmp_path: Path) -> None:
    engine = Engine(Settings(data_dir=tmp_path, reranker_model="none", offline=True,
                             collections={"x": {"store": "chroma", "persist_dir": str(tmp_path / "c")}}))  # fmt: skip
    with pytest.raises(ConfigError, match=r"\[collections.x\] in workbench.toml: Collection name 'x' is not allowed"):
        engine.search("herons", engine.plan(collection="x", k=2, reranker=None))
    listed = {c.name: c for c in engine.registry.list()}
    assert "3-512 characters" in (listed["x"].problem or "")  # listed with its problem, never dropped


def test_two_empty_runs_are_not_compared(tmp_path: Path, tiny_models: dict[str, Path]) -> None:
    """Two configurations that find nothing for any query: no RBO 1.000 between two empty lists."""
    from workbench.experiments.query_sets import QueryItem, QuerySet
    from workbench.experiments.service import compare_configurations

    engine = Engine(Settings(data_dir=tmp_path, embedding_model=str(tiny_models["embedder"]), offline=True,
                             reranker_model="none"))  # fmt: skip
    (tmp_path / "notes.txt").write_text("Herons wade in shallow water.", encoding="utf-8")
    engine.ingest(tmp_path / "notes.txt", "emptyish")
    plan = engine.plan(collection="emptyish", k=5, reranker=None, filters={"source": "nowhere"})
    queries = QuerySet(name="two", queries=[QueryItem(id="a", text="alpha"), QueryItem(id="b", text="beta")])
    with pytest.raises(InputError, match="found nothing for every one of the 2 queries"):
        compare_configurations(engine, queries, plan, plan)
