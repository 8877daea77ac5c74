from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.cli import main


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, tiny_models: dict[str, Path], tmp_path: Path) -> Path:
    monkeypatch.setenv("WORKBENCH_EMBEDDING_MODEL", str(tiny_models["embedder"]))
    monkeypatch.setenv("RERANKER_MODEL", str(tiny_models["reranker"]))
    return tmp_path / "store"


def test_ingest_query_and_collections(cli_env: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ingest", str(corpus_dir), "--collection", "nature", "--persist-dir", str(cli_env)]) == 0
    out = capsys.readouterr()
    assert "nature (chroma): 8 documents -> 8 chunks; 8 added" in out.out
    assert "ingest nature" in out.err  # the tqdm bar

    assert main(["query", "rivers", "--collection", "nature", "-k", "6", "-n", "3", "--persist-dir", str(cli_env)]) == 0
    text = capsys.readouterr().out
    assert "VECTOR SEARCH" in text and "RERANKED" in text and " vector " in text
    assert "Timings: embed" in text and "rerank" in text and "total" in text
    hybrid = ["query", "rivers", "--collection", "nature", "-k", "6", "-n", "3", "--retrieval", "hybrid"]
    assert main([*hybrid, "--persist-dir", str(cli_env)]) == 0
    text = capsys.readouterr().out
    assert "HYBRID (DENSE + BM25)" in text and " RRF " in text  # fused scores are labelled as RRF, not vector
    assert "VECTOR SEARCH" not in text and " vector " not in text

    assert (
        main(
            ["query", "rivers", "--collection", "nature", "-k", "6", "-n", "3", "--json", "--persist-dir", str(cli_env)]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert len(data["candidates"]) == 6 and len(data["reranked"]) == 3
    assert set(data["timings"]) == {"embed_ms", "search_ms", "rerank_ms", "total_ms"}

    assert (
        main(
            [
                "query",
                "rivers",
                "--collection",
                "nature",
                "--filter",
                "page=2",
                "--filter",
                "source=guide.md",
                "--json",
                "-k",
                "5",
                "-n",
                "1",
                "--persist-dir",
                str(cli_env),
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert [c["metadata"]["section"] for c in data["candidates"]] == ["Rivers"]

    assert main(["collections", "--json", "--persist-dir", str(cli_env)]) == 0
    [info] = json.loads(capsys.readouterr().out)
    assert (info["name"], info["store"], info["count"], info["dimension"]) == ("nature", "chroma", 8, 32)

    assert main(["delete", "nature", "--yes", "--persist-dir", str(cli_env)]) == 0
    assert main(["collections", "--persist-dir", str(cli_env)]) == 0
    assert "No collections in" in capsys.readouterr().out


def test_qdrant_store_option(cli_env: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--store", "qdrant", "--persist-dir", str(cli_env.parent / "qdrant")]
    assert main(["ingest", str(corpus_dir), "--collection", "nature", *args]) == 0
    assert main(["query", "bees", "--collection", "nature", "-k", "4", "-n", "2", "--json", *args]) == 0
    assert json.loads(capsys.readouterr().out.split("\n", 1)[1])["store"] == "qdrant"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["query", "", "--collection", "nature"], "query is empty"),
        (["query", "q" * 513, "--collection", "nature"], "513 characters"),
        (["query", "q", "--collection", "nature", "-k", "500"], "k must be between 1 and 200"),
        (["query", "q", "--collection", "nature", "-k", "5", "-n", "6"], "top_n must be between 1 and k"),
        (["query", "q", "--collection", "absent"], "'absent' not found"),
        (["query", "q", "--collection", "nature", "--filter", "oops"], "Filters take key=value"),
        (["ingest", "/no/such/path", "--collection", "nature"], "no such file or folder"),
    ],
)
def test_errors_are_one_line_not_tracebacks(
    cli_env: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    main(["ingest", str(corpus_dir), "--collection", "nature", "--persist-dir", str(cli_env)])
    capsys.readouterr()
    assert main([*argv, "--persist-dir", str(cli_env)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_backend_travels_in_the_plan_and_scores_as_torch_does(
    cli_env: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`query --backend onnx`: the plan's reranker is the model on onnx (its key says so), the result names the
    backend that scored, and the scores are torch's to the parity tolerance; a backend of no known name is one line."""
    main(["ingest", str(corpus_dir), "--collection", "nature", "--persist-dir", str(cli_env)])
    capsys.readouterr()
    base = ["query", "rivers", "--collection", "nature", "-k", "6", "-n", "3", "--json", "--persist-dir", str(cli_env)]
    scores = {}
    for backend in ("torch", "onnx"):
        assert main([*base, "--backend", backend]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["reranker_model"].endswith(f"@{backend}") and data["reranker_backend"].startswith(f"{backend}:")
        scores[backend] = {c["id"]: c["rerank_score"] for c in data["candidates"]}
    assert scores["onnx"].keys() == scores["torch"].keys()
    assert max(abs(scores["onnx"][i] - scores["torch"][i]) for i in scores["torch"]) < 1e-4
    assert main([*base, "--backend", "tpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --backend must be one of") and "'tpu'" in err and "Traceback" not in err


def test_missing_model_is_a_clear_error(
    cli_env: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    main(["ingest", str(corpus_dir), "--collection", "nature", "--persist-dir", str(cli_env)])
    monkeypatch.setenv("RERANKER_MODEL", "cross-encoder/ms-marco-MiniLM-L-6-v2")
    capsys.readouterr()
    assert main(["query", "q", "--collection", "nature", "--persist-dir", str(cli_env)]) == 2
    err = capsys.readouterr().err
    assert "cross-encoder/ms-marco-MiniLM-L-6-v2" in err and "RERANKER_MODEL" in err


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "workbench"
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "ingest" in done.stdout and "query" in done.stdout


def test_eval_demo_builds_the_demo_and_reports_both_groups(cli_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["eval", "demo", "-k", "20", "-n", "10", "--no-rerank", "--json", "--persist-dir", str(cli_env)]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["collection"] == "demo" and data["queries"] == 50
    # named as the app names them
    assert {group["group"] for group in data["groups"]} == {
        "plain questions",
        "hard questions: a negation, a number, a condition or an exact term",
    }


def test_every_option_of_every_command_says_what_it_does() -> None:
    import argparse

    from workbench.cli import build_parser

    def commands_of(parser: argparse.ArgumentParser, prefix: str) -> dict[str, argparse.ArgumentParser]:
        """Every command and sub-command (`experiments list`), by its name."""
        found = {}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found[f"{prefix}{name}"] = sub
                    found.update(commands_of(sub, f"{prefix}{name} "))
        return found

    silent = [
        f"{name} {'/'.join(action.option_strings) or action.dest}"
        for name, sub in commands_of(build_parser(), "").items()
        for action in sub._actions
        if not isinstance(action, argparse._HelpAction) and not (action.help or "").strip()
    ]
    assert not silent, silent


def test_a_filter_that_matches_nothing_names_the_keys(
    cli_env: Path, corpus_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = ["--persist-dir", str(cli_env)]
    assert main(["ingest", str(corpus_dir), "--collection", "nature", *store]) == 0
    capsys.readouterr()
    assert main(["query", "rivers", "--collection", "nature", "--filter", "colour=blue", *store]) == 0
    out = capsys.readouterr().out
    assert "No chunk of 'nature' has 'colour'" in out and "page (numbers)" in out and "section (text)" in out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["serve", "--host", "127.0.0.1 "], "--host '127.0.0.1 ' is not an address to listen on"),
        (["serve", "--host", "http://0.0.0.0"], "is not an address to listen on"),
        (["serve", "--port", "99999"], "port '99999' is not a TCP port"),
        (["app", "--port", "0"], "port '0' is not a TCP port"),
        (["mcp", "--http", "eighty"], "port 'eighty' is not a TCP port"),
        (["experiments", "list", "--limit", "-1"], "--limit takes a whole number from 1 to 500; got -1"),
        (["experiments", "list", "--limit", "all"], "--limit takes a whole number from 1 to 500; got 'all'"),
    ],
)
def test_an_address_that_cannot_be_listened_on_is_one_line(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and words in err and "Traceback" not in err


def test_an_events_sink_of_no_known_form_stops_every_command_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("WORKBENCH_EVENTS", "kafka://user:hunter2pw@broker:9092")
    assert main(["query", "pension", "--collection", "demo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: invalid setting: events:") and "is not a sink" in err
    assert "hunter2pw" not in err and "Traceback" not in err and err.count("\n") == 1


def test_judgments_import_into_a_collection_that_does_not_exist_is_refused(
    cli_env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "q.tsv").write_text("q1\t0\td1\t2\n")
    (tmp_path / "queries.tsv").write_text("q1\tholiday\n")
    files = ["--qrels", str(tmp_path / "q.tsv"), "--queries", str(tmp_path / "queries.tsv")]
    code = main(["judgments", "import", "nowhere", *files, "--persist-dir", str(cli_env)])
    err = capsys.readouterr().err
    assert code == 2 and "Collection 'nowhere' not found" in err and "Traceback" not in err


def test_json_output_is_strict_json_even_for_a_score_that_is_not_a_number(capsys: pytest.CaptureFixture[str]) -> None:
    from pydantic import BaseModel

    from workbench.cli.common import print_json

    class Scored(BaseModel):
        score: float
        other: float

    print_json(Scored(score=float("nan"), other=float("inf")))

    def refuse(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    assert json.loads(capsys.readouterr().out, parse_constant=refuse) == {"score": None, "other": None}


def _modules_loaded_by(argv: list[str], env: dict[str, str]) -> set[str]:
    """The modules a fresh `workbench ARGV` process had imported when the command returned."""
    code = (
        "import sys, json\nfrom workbench.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


HEAVY = ("torch", "transformers", "sentence_transformers", "sklearn", "scipy", "pandas", "workbench.engine")


@pytest.mark.parametrize("argv", [["--help"], ["eval", "--help"], ["experiments", "list", "--help"]])
def test_help_imports_no_model_store_or_evaluation_stack(argv: list[str], tmp_path: Path) -> None:
    import os

    env = dict(os.environ, WORKBENCH_DATA_DIR=str(tmp_path))
    loaded = _modules_loaded_by(argv, env)
    assert not {m for m in loaded if m.split(".")[0] in HEAVY[:-1] or m == "workbench.engine"}
    assert "chromadb" not in loaded and "numpy" not in loaded


def test_collections_imports_the_store_client_but_no_model(tmp_path: Path, corpus_dir: Path) -> None:
    import os

    env = dict(os.environ, WORKBENCH_DATA_DIR=str(tmp_path))
    ingest = f"from workbench.cli import main; main(['ingest', {str(corpus_dir)!r}, '--collection', 'notes'])"
    subprocess.run([sys.executable, "-c", ingest], env=env, check=True, capture_output=True)
    loaded = _modules_loaded_by(["collections"], env)
    assert "chromadb" in loaded  # it did list the store
    assert not {m for m in loaded if m.split(".")[0] in HEAVY[:-1] or m == "workbench.engine"}


def test_a_progress_bar_closes_when_its_work_is_done(capsys: pytest.CaptureFixture[str]) -> None:
    """An ingest's bar closes at its last chunk, not when the whole command ends: its time and rate are the
    ingest's own. Updates after that (none are expected) draw nothing more."""
    from workbench.cli.common import ProgressBar

    with ProgressBar("ingest demo") as bar:
        bar(0, 3)
        bar(3, 3)
        closed = capsys.readouterr().err
        assert "3/3" in closed and closed.endswith("\n")  # tqdm ends a closed bar's line
        bar(3, 3)
    assert capsys.readouterr().err == ""


def test_serve_on_a_taken_port_is_one_line_naming_the_port_and_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 52: `mkdocs serve` held 8000, serve's old default, and serve died with uvicorn's raw Errno 98 after
    loading its models. The port is tried first; the default is now apart from MkDocs'."""
    import socket

    from workbench.cli.parsers.servers import SERVE_PORT

    assert SERVE_PORT not in (8000, 8501)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"Port {port} on 127.0.0.1 is taken" in err and "--port N" in err and len(err.splitlines()) == 1


def test_eval_says_each_step_after_the_queries(cli_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 52: Evaluate's bar sat at "50 of 50 queries" for up to a minute with nothing else said. Each step after
    the queries is named as it starts."""
    args = [
        "eval",
        "demo",
        "-k",
        "10",
        "-n",
        "5",
        "--depth",
        "5,10",
        "--max-queries",
        "4",
        "--persist-dir",
        str(cli_env),
    ]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "queries done; now the depth curve: reranking the first 5, 10 candidates, each timed…" in err
    assert "queries done; now the signs behind each query's change (4 queries)…" in err


@pytest.mark.parametrize(
    "argv",
    [["tune", "-k", "abc"], ["query"], ["query", "q", "-k", "1.5"], ["no-such-command"],
     ["tune", "demo", "--latency-budget-ms", "-5"]],
)  # fmt: skip
def test_a_bad_argument_is_one_line_naming_it(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's refusals, as every other: one line starting 'error:', pointing at the command's --help (its
    usage block is not printed before it)."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--help`)" in err and len(err.strip().splitlines()) == 1, err
