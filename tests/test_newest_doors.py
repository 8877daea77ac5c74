"""Issue 51: the newest doors (click logs, candidates files, online tests, exports) refuse what they cannot read and
never give a verdict on nothing. Each finding of the hostile-input round is one test on the real surface."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import tiny_env
from workbench.cli import main
from workbench.clicks.logs import read_click_log
from workbench.clicks.online import InterleavingLog, analyse_interleaving_log
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation import run_evaluation
from workbench.evaluation.metrics import evaluate
from workbench.evaluation.runs import fold_documents
from workbench.inputs import read_user_file
from workbench.services.demo import demo_dataset, ensure_demo_collection
from workbench.services.sources import attach_candidates
from workbench.spreadsheet import csv_text
from workbench.stores.candidates import CandidatesFile

HOSTILE_CELLS = ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3", "\t=1", " =1"]


def test_every_csv_cell_a_spreadsheet_would_evaluate_is_written_as_text() -> None:
    frame = pd.DataFrame({"query": [*HOSTILE_CELLS, "plain"], "change": [-0.25] * 7, "=col": [1] * 7})
    rows = list(csv.reader(io.StringIO(csv_text(frame))))
    assert rows[0] == ["query", "change", "'=col"]
    for row, hostile in zip(rows[1:], HOSTILE_CELLS, strict=False):
        assert row[0] == "'" + hostile  # read as text by Excel, LibreOffice and Sheets
        assert row[1] == "-0.25"  # a number stays a number
    assert rows[-1][0] == "plain"


def test_no_app_download_writes_a_csv_but_through_the_safe_writer() -> None:
    app = Path(__file__).resolve().parents[1] / "workbench" / "app"
    offenders = [str(p) for p in app.rglob("*.py") if ".to_csv(" in p.read_text(encoding="utf-8")]
    assert offenders == []


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused_before_a_byte_is_read(device: str, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a regular file"):
        CandidatesFile.read(Path(device), "x")
    with pytest.raises(InputError, match="not a regular file"):
        read_click_log(device)
    with pytest.raises(InputError, match="is a folder"):
        read_user_file(tmp_path, "log", 10)
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"x" * 101)
    with pytest.raises(InputError, match="over 100 bytes"):
        read_user_file(big, "log", 100)


def test_the_cli_refuses_dev_zero_as_candidates_in_one_line(
    demo_cli: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["eval", "demo", "--candidates", "/dev/zero", "--max-queries", "2", "-k", "10"])
    err = capsys.readouterr().err
    assert code == 2 and "not a regular file" in err and "Traceback" not in err


def _impressions(log: InterleavingLog, a: str, b: str, winner: str, count: int) -> None:
    for _ in range(count):
        served, _ = log.serve("demo", "q", (a, ["x1", "x2", "x3"]), (b, ["y1", "y2", "y3"]), 6)
        clicked = next(i for i, team in zip(served.shown, served.teams, strict=True) if team == winner)
        log.click(served.id, clicked)


def test_online_tests_are_never_pooled_and_each_keeps_its_roles(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, reranker_model="none", offline=True)
    log = InterleavingLog(settings)
    # Two tests: the reranked list is B in the first and A in the second (`against`); users prefer it in both.
    _impressions(log, "dense k=50 (first stage)", "dense k=50 → qa", "B", 12)
    _impressions(log, "dense k=50 → qa", "bm25 k=50 (first stage)", "A", 12)
    with pytest.raises(InputError, match="holds 2 online tests; they are never pooled: name one with --test") as ex:
        analyse_interleaving_log(log.path)
    tests = [part.split(":")[0].strip() for part in str(ex.value).split("(", 1)[1].split(";")]
    first, second = (analyse_interleaving_log(log.path, test=t) for t in tests)
    assert (first.b, first.wins, first.losses) == ("dense k=50 → qa", 12, 0) and first.direction == "helps"
    assert (second.a, second.wins, second.losses) == ("dense k=50 → qa", 0, 12) and second.direction == "hurts"
    with pytest.raises(InputError, match="holds no online test 't-nosuch'"):
        analyse_interleaving_log(log.path, test="t-nosuch")
    assert main(["interleaving", "analyse", str(log.path), "--test", tests[0], "--json"]) == 0


KILLED_IMPORT = """
import sys, time
import workbench.clicks.logs as click_log
import workbench.clicks.grades as clicks
import workbench.judgments.store as store
from workbench.cli import main

point = sys.argv[1]

def stop_here():
    print("AT " + point, flush=True)
    time.sleep(120)

def after(module, name, wanted):
    original = getattr(module, name)
    def wrapped(*args, **kwargs):
        value = original(*args, **kwargs)
        if point == wanted:
            stop_here()
        return value
    setattr(module, name, wrapped)

after(clicks, "read_click_log", "read")  # the log read, nothing kept yet
after(clicks, "fit_click_model", "fitted")  # the grades computed, nothing kept yet
original_texts = store._query_values
def texts(*args):  # inside the transaction, before the texts are written
    if point == "texts":
        stop_here()
    return original_texts(*args)
store._query_values = texts
original_values, seen = store._values, []
def grades(row, at):  # inside the transaction, the texts written, the last grade being prepared
    seen.append(row)
    if point == "grades" and len(seen) == 3000:
        stop_here()
    return original_values(row, at)
store._values = grades
after(store.SqliteJudgmentStore, "_add", "committed")  # the transaction committed
sys.exit(main(["judgments", "clicks", sys.argv[2], "--collection", "demo", "--min-impressions", "1"]))
"""


@pytest.fixture(scope="module")
def click_import(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]) -> tuple[Path, Path, dict]:
    """The demo (tiny models) in a data folder, a log of 3,000 queries each shown five of its documents, and the
    texts and grades a whole import of it keeps."""
    data = tmp_path_factory.mktemp("click-import")
    env = tiny_env(data / "data", tiny_models)
    engine = Engine(Settings(data_dir=data / "data", embedding_model=env["WORKBENCH_EMBEDDING_MODEL"],
                             reranker_model=env["RERANKER_MODEL"], offline=True))  # fmt: skip
    ensure_demo_collection(engine)
    docs = sorted({str(c.metadata.get("document_id", c.id)) for c in engine.registry.get("demo").all_chunks()})
    log = data / "clicks.jsonl"
    lines = []
    for i in range(3000):
        shown = [docs[(i + j) % len(docs)] for j in range(5)]
        lines.append(json.dumps({"query": f"question number {i}", "shown": shown, "clicked": shown[:1]}))
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    whole = subprocess.run([sys.executable, "-c", KILLED_IMPORT, "none", str(log)], env={**os.environ, **env},
                           capture_output=True, text=True, timeout=600)  # fmt: skip
    assert whole.returncode == 0, whole.stderr
    counts = _kept(data / "data")
    assert counts[0] >= 3000 and counts[1] >= 3000
    return data, log, {**env, "counts": counts}


def _kept(data: Path) -> tuple[int, int]:
    with sqlite3.connect(data / "judgments.sqlite3") as db:
        texts = db.execute("SELECT COUNT(*) FROM judged_queries WHERE collection = 'demo'").fetchone()[0]
        grades = db.execute("SELECT COUNT(*) FROM judgments WHERE collection = 'demo' AND source = 'clicks'")
        return texts - _shipped(db), grades.fetchone()[0]


def _shipped(db: sqlite3.Connection) -> int:
    """The demo's own judged queries (its shipped grades are not the import's)."""
    return db.execute(
        "SELECT COUNT(DISTINCT query_id) FROM judgments WHERE collection = 'demo' AND source != 'clicks'"
    ).fetchone()[0]


@pytest.mark.parametrize("point", ["read", "fitted", "texts", "grades", "committed"])
def test_a_click_import_killed_at_any_point_keeps_all_or_nothing(
    click_import: tuple[Path, Path, dict], tmp_path: Path, point: str
) -> None:
    """`workbench judgments clicks` killed (SIGKILL) after reading the log, after fitting, inside the transaction
    before the texts, inside it with the texts written and the grades being prepared, and after the commit: the
    store holds every text and grade of the import, or none of them, never texts without their grades."""
    data, log, env = click_import
    fresh = tmp_path / "data"
    shutil.copytree(data / "data", fresh, ignore=shutil.ignore_patterns("judgments.sqlite3*"))
    env = {name: value for name, value in env.items() if name != "counts"} | {"WORKBENCH_DATA_DIR": str(fresh)}
    process = subprocess.Popen([sys.executable, "-c", KILLED_IMPORT, point, str(log)], env={**os.environ, **env},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    assert line == f"AT {point}", (line, process.stderr.read() if process.poll() is not None else "")
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    kept = _kept(fresh) if (fresh / "judgments.sqlite3").exists() else (0, 0)
    whole = click_import[2]["counts"]  # what the import kept when it ran to its end
    assert kept == (whole if point == "committed" else (0, 0)), (point, kept)


def _write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("noclick.csv", "query,shown\nherons,d0 d1\n", "it has no clicked"),
        ("dupe.csv", "query,shown,clicked,query\nherons,d0,d0,x\n", "names the column query more than once"),
        ("newline.csv", 'query,shown,clicked\n"herons,d0,d0\n', "not a readable CSV"),
        ("long.csv", "query,shown,clicked\n" + "a" * 20_000_000 + ",d0,d0\n", "not a readable CSV"),
        ("latin.csv", "query,shown,clicked\nh\xe9rons,d0,d0\n".encode("latin-1"), "not UTF-8 text"),
        ("nul.csv", b"query,shown,clicked\nher\x00ons,d0,d0\n", "line 2: a NUL byte"),
        ("object.jsonl", '{"query": {"a": 1}, "shown": ["d0"], "clicked": ["d0"]}\n', "the query must be text"),
        ("list.jsonl", '{"query": ["a"], "shown": ["d0"], "clicked": ["d0"]}\n', "the query must be text"),
        ("zero.jsonl", '{"query": "a", "shown": ["d0"], "clicked": []}\n', "not one click on a shown id"),
        ("ubi.jsonl", '{"query_id": "1", "user_query": "a", "query_response_hit_ids": ["d0"]}\n', "but no events"),
    ],
)
def test_a_click_log_that_would_grade_silently_is_refused(
    tmp_path: Path, name: str, content: object, words: str
) -> None:
    with pytest.raises(InputError, match=words):
        read_click_log(_write(tmp_path / name, content))  # type: ignore[arg-type]


def test_utf16_logs_are_read_and_repeated_ubi_query_ids_are_counted(tmp_path: Path) -> None:
    utf16 = _write(tmp_path / "u.csv", "query,shown,clicked\nherons,d0 d1,d0\n".encode("utf-16"))
    assert read_click_log(utf16).impressions[0].query == "herons"
    records = [
        {"query_id": "1", "user_query": "a", "query_response_hit_ids": ["d0"]},
        {"query_id": "1", "user_query": "b", "query_response_hit_ids": ["d1"]},
        {"action_name": "click", "query_id": "1", "event_attributes": {"object": {"object_id": "d0"}}},
    ]
    read = read_click_log(_write(tmp_path / "ubi.jsonl", "".join(json.dumps(r) + "\n" for r in records)))
    assert read.skipped == {"repeated query_ids (the first record of each kept)": 1}
    assert [i.query for i in read.impressions] == ["a"]


def test_a_query_on_two_lines_of_a_candidates_file_is_refused(tmp_path: Path) -> None:
    line = json.dumps({"query_id": "1", "query": "Vacation days", "hits": [{"id": "a", "text": "x"}]})
    again = json.dumps({"query_id": "1", "query": "vacation  days", "hits": [{"id": "b", "text": "y"}]})
    with pytest.raises(InputError, match="line 2: the query 'vacation  days' is on an earlier line too"):
        CandidatesFile.read(_write(tmp_path / "c.jsonl", f"{line}\n{again}\n"), "c")


def test_a_candidates_file_that_answers_no_evaluated_query_gives_no_verdict(
    tiny_engine: Engine, tmp_path: Path
) -> None:
    ensure_demo_collection(tiny_engine)
    dataset = demo_dataset("test")
    line = json.dumps({"query_id": "zz", "query": "a query nobody judged", "hits": [{"id": "a", "text": "x"}]})
    found = attach_candidates(tiny_engine, _write(tmp_path / "other.jsonl", line + "\n"), dataset.queries)
    with pytest.raises(InputError, match="Nothing was measured: none of the 3 evaluated queries got a candidate"):
        run_evaluation(tiny_engine, dataset, tiny_engine.plan(collection=found.name, k=10), max_queries=3)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["tune", "demo", "--latency-budget-ms", "nan"], "latency budget is a number of milliseconds above 0"),
        (["gate", "demo", "--max-latency-ms", "-5"], "latency budget is a number of milliseconds above 0"),
        (["query-sets", "add", "x", "--from-log", "log.csv", "--seed", "-1"], "seed is a whole number from 0"),
    ],
)
def test_options_that_would_do_nothing_are_refused(
    args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert stopped.value.code == 2 and words in capsys.readouterr().err


def test_a_reranker_whose_scores_all_tie_changes_no_figure_to_the_last_digit() -> None:
    """The run handed to the metrics is the order the user sees: tied scores keep the first-stage order (pytrec_eval
    on the explicit shown order is the independent computation)."""
    import pytrec_eval

    qrels = {"q": {"d9": 3, "d1": 1, "d5": 2}}
    # every rerank score 0.5
    first_stage = [(f"d{i}", 1.0 - rank / 20, 0.5) for rank, i in enumerate((3, 9, 1, 7, 5, 2))]
    before, after = fold_documents(first_stage)
    assert list(after) == list(before) == ["d3", "d9", "d1", "d7", "d5", "d2"]
    figures_before, _ = evaluate(qrels, {"q": before}, 6)
    figures_after, _ = evaluate(qrels, {"q": after}, 6)
    assert figures_after == figures_before
    shown = {"q": {doc: float(6 - rank) for rank, doc in enumerate(["d3", "d9", "d1", "d7", "d5", "d2"])}}
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(shown)["q"]["ndcg_cut_10"]
    assert figures_after["ndcg@10"] == expected
    by_id = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate({"q": {d: 0.5 for d in before}})
    assert by_id["q"]["ndcg_cut_10"] != expected  # what the figures were: ties broken by document id


def test_a_query_set_takes_one_source_and_reads_tsv_ids_apart_from_texts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 51: `query-sets add both demo --file ok.txt` dropped the dataset, `--from-log X --file Y` the log; a
    TSV whose header says query-id, or an id<TAB>text file of another name, kept the ids in the texts."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WORKBENCH_CONFIG", "")
    listed = _write(tmp_path / "ok.txt", "q1\tcan I carry over vacation days\nq2\thow do I claim expenses\n")
    assert main(["query-sets", "add", "both", "demo", "--file", str(listed)]) == 2
    assert "A query set comes from one source; got --file and a dataset" in capsys.readouterr().err
    assert main(["query-sets", "add", "two", "--file", str(listed), "--from-log", str(listed)]) == 2
    assert "got --file and --from-log" in capsys.readouterr().err
    assert main(["query-sets", "add", "tabbed", "--file", str(listed)]) == 0
    capsys.readouterr()
    assert main(["query-sets", "show", "tabbed"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "q1\t1\tcan I carry over vacation days",
        "q2\t1\thow do I claim expenses",
    ]
    headed = _write(tmp_path / "h.tsv", "query-id\ttext\nq7\tparental leave\n")
    assert main(["query-sets", "add", "headed", "--file", str(headed)]) == 0
    capsys.readouterr()
    assert main(["query-sets", "show", "headed"]) == 0
    assert capsys.readouterr().out.splitlines() == ["q7\t1\tparental leave"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["experiments", "export", "x" * 12, "-o", "{tmp}"], "--output"),
        (["experiments", "export", "x" * 12, "-o", "{tmp}/missing/e.json"], "cannot write the file there"),
        (["experiments", "show", "x" * 12, "--report", "{tmp}/afile"], "cannot be a folder"),
        (["tune", "demo", "--out", "{tmp}/missing/t.md"], "the grid did not run"),
    ],
)
def test_output_paths_are_checked_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    """Issue 51: `export -o` on a folder and `show --report` on a file gave "Unexpected error (FileExistsError)";
    `tune --out /missing/dir` failed after the whole grid."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WORKBENCH_CONFIG", "")
    (tmp_path / "afile").write_text("x")
    assert main([a.replace("{tmp}", str(tmp_path)) for a in args]) == 2
    err = capsys.readouterr().err
    assert words in err and "Unexpected" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [["collections"], ["query", "leave", "--collection", "c"]])
def test_reading_a_folder_that_holds_no_chroma_database_writes_nothing_into_it(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The recount found `workbench collections --store chroma --persist-dir FOLDER` writing a chroma.sqlite3 of
    188 kB into a folder that held none (the user's folder, named to be read). Nothing to read there: nothing is
    opened, and the folder is as it was."""
    folder = tmp_path / "not-a-store"
    folder.mkdir()
    (folder / "notes.txt").write_text("the user's own file", encoding="utf-8")
    code = main([*command, "--store", "chroma", "--persist-dir", str(folder)])
    said = capsys.readouterr()
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    assert code == (0 if command == ["collections"] else 2)
    assert ("No collections in" in said.out) if code == 0 else ("not found in chroma" in said.err)
