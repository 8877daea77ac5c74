"""Issue 39, item 3: the candidates a production system returned, from a file, as the first stage of an evaluation.
`eval --candidates` on a JSONL file or a TREC run (texts from its corpus) reranks exactly those candidates; its
"before" figures equal pytrec_eval on the same run and qrels; what the file cannot give (hits without text, unknown
ids, repeated hits, judged queries it does not answer) is counted and named; a broken file is one clear line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval

from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation import run_evaluation
from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection
from workbench.services.sources import attach_candidates
from workbench.stores.candidates import CandidatesFile


@pytest.fixture
def production_run(tiny_engine: Engine, tmp_path: Path) -> tuple[Path, dict[str, dict[str, float]]]:
    """What "production" returned: BM25's top 20 on the demo for 12 judged queries, exported as JSONL."""
    ensure_demo_collection(tiny_engine)
    dataset = demo_dataset("test")
    run: dict[str, dict[str, float]] = {}
    lines = []
    for qid, text in list(dataset.queries.items())[:12]:
        result = tiny_engine.search(
            text, tiny_engine.plan(collection=DEMO_COLLECTION, retrieval="bm25", k=20, reranker=None)
        )
        hits = [
            {"id": c.id, "text": c.text, "score": c.vector_score, "title": c.metadata.get("title")}
            for c in result.candidates
        ]
        run[qid] = {h["id"]: h["score"] for h in hits}
        lines.append(json.dumps({"query_id": qid, "query": text, "hits": hits}))
    path = tmp_path / "production.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, run


def test_an_evaluation_on_a_candidates_file_equals_pytrec_eval_before_reranking(
    tiny_engine: Engine, production_run: tuple[Path, dict[str, dict[str, float]]]
) -> None:
    path, run = production_run
    dataset = demo_dataset("test")
    judged = type(dataset)(dataset.name, {q: dataset.queries[q] for q in run}, {q: dataset.qrels[q] for q in run})
    found = attach_candidates(tiny_engine, path, judged.queries, corpus=judged.corpus)
    assert found.name == "candidates-production" and found.problems == [] and found.info().read_only
    report = run_evaluation(tiny_engine, judged, tiny_engine.plan(collection=found.name, k=20, top_n=10))
    expected = pytrec_eval.RelevanceEvaluator(judged.qrels, {"ndcg_cut.10", "recall.20"}).evaluate(run)
    assert report.queries == 12
    assert report.before["ndcg@10"] == pytest.approx(sum(q["ndcg_cut_10"] for q in expected.values()) / 12, abs=1e-9)
    assert report.before["recall@20"] == pytest.approx(sum(q["recall_20"] for q in expected.values()) / 12, abs=1e-9)
    assert report.reranker_model and report.reranker_backend  # the file's candidates, reranked
    assert {c[0] for cands in report.candidates.values() for c in cands} <= {d for r in run.values() for d in r}


def test_what_a_file_cannot_give_is_counted_and_named(tiny_engine: Engine, tmp_path: Path) -> None:
    dataset = demo_dataset("test")
    (qid, text), (other, _) = list(dataset.queries.items())[:2]
    path = tmp_path / "partial.jsonl"
    path.write_text(
        json.dumps({"query_id": qid, "query": text, "hits": [
            {"id": "a", "text": "An answer.", "score": 2.0}, {"id": "b", "text": "   ", "score": 1.0},
            {"id": "a", "text": "Again.", "score": 0.5}, {"id": "c", "text": "No score given."},
        ]}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    found = attach_candidates(tiny_engine, path, dataset.queries, corpus=dataset.corpus)
    said = " | ".join(found.problems)
    assert "1 hits have no text and were left out: b" in said and "1 hits repeat an id" in said
    assert f"{len(dataset.queries) - 1} judged queries have no candidates" in said and other in said
    assert [h.id for h in found.search(10, text=text)] == ["a", "c"]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{not json\n", "line 1 is not JSON"),
        ('{"query": "q", "hits": [{"text": "t"}]}\n', "hit 1 has no id"),
        ('{"query": "q", "hits": [{"id": "x", "text": "t", "score": "high"}]}\n', "finite number"),
        ('{"query": "q", "hits": [{"id": "x", "text": "t", "score": NaN}]}\n', "finite number"),
        ("q1 Q0 d1 1 2.0 run\n", "TREC run: give the corpus"),
        ('["a list"]\n', "each line is"),
    ],
)
def test_a_broken_candidates_file_is_one_clear_line(
    tiny_engine: Engine, tmp_path: Path, content: str, words: str
) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=words):
        CandidatesFile.read(path, "broken")


def test_eval_on_a_trec_run_with_its_corpus_from_the_command_line(tmp_path: Path, tiny_models: dict[str, Path]) -> None:
    corpus = tmp_path / "corpus.jsonl"
    docs = {
        "d1": "Herons wade in shallow water and spear fish.", "d2": "Oaks live for centuries.",
        "d3": "Owls hunt at night.", "d4": "Rivers build deltas.",
    }  # fmt: skip
    corpus.write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in docs.items()))
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"_id": "q1", "text": "birds that fish"}) + "\n" + json.dumps(
        {"_id": "q2", "text": "old trees"}) + "\n")  # fmt: skip
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    run_file = tmp_path / "prod.trec"
    run_file.write_text(
        "q1 Q0 d3 1 9.0 prod\nq1 Q0 d1 2 8.0 prod\nq1 Q0 d9 3 7.0 prod\nq2 Q0 d2 1 5.0 prod\nq2 Q0 d4 2 4.0 prod\n"
        "q7 Q0 d1 1 1.0 prod\n"
    )
    env = {
        **os.environ, "WORKBENCH_DATA_DIR": str(tmp_path / "data"), "RERANKER_MODEL": str(tiny_models["reranker"]),
        "WORKBENCH_EMBEDDING_MODEL": str(tiny_models["embedder"]),
    }  # fmt: skip
    done = subprocess.run(
        [str(Path(sys.executable).parent / "workbench"), "eval", "--queries", str(queries), "--qrels", str(qrels),
         "--candidates", str(run_file), "--corpus", str(corpus), "-k", "3", "-n", "2", "--depth", "none", "--json",
         "--no-save"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    run = {"q1": {"d3": 9.0, "d1": 8.0}, "q2": {"d2": 5.0, "d4": 4.0}}  # d9: not in the corpus
    expected = pytrec_eval.RelevanceEvaluator({"q1": {"d1": 1}, "q2": {"d2": 1}}, {"ndcg_cut.10"}).evaluate(run)
    assert summary["before"]["ndcg@10"] == pytest.approx((expected["q1"]["ndcg_cut_10"] + 1.0) / 2, abs=1e-9)
    assert "1 hits name documents the corpus does not hold: d9" in done.stderr
    assert "1 queries of the run are not judged here: q7" in done.stderr and "Traceback" not in done.stderr
    gate = subprocess.run(
        [str(Path(sys.executable).parent / "workbench"), "gate", "--queries", str(queries), "--qrels", str(qrels),
         "--candidates", str(run_file), "--corpus", str(corpus), "-k", "3", "-n", "2", "--json"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    decision = json.loads(gate.stdout)
    assert gate.returncode == decision["exit_code"] in (0, 1, 3), gate.stderr
    assert decision["candidate"].startswith("candidates-prod · dense k=3 → 2")


def test_a_trec_run_of_the_demos_own_ids_needs_no_corpus(
    demo_cli: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 55: `eval demo --candidates RUN` refused a TREC run of the demo collection's own document ids ("give the
    corpus its document ids come from"): their texts are in the collection it names. Its "before" figure equals
    pytrec_eval on the run."""
    from workbench.cli import main

    dataset = demo_dataset("test")
    items = list(dataset.queries.items())[:6]
    lines, run = [], {}
    for qid, text in items:
        result = demo_cli.search(text, demo_cli.plan(collection="demo", retrieval="bm25", k=20, reranker=None))
        ranked = [(str(c.metadata.get("document_id", c.id)), 20.0 - rank) for rank, c in enumerate(result.candidates)]
        run[qid] = dict(ranked)
        lines += [f"{qid} Q0 {doc} {rank + 1} {score} bm25" for rank, (doc, score) in enumerate(ranked)]
    path = tmp_path / "bm25.trec"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["eval", "demo", "--candidates", str(path), "--max-queries", "6", "-k", "20", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    judged = {q: dataset.qrels[q] for q, _ in items}
    expected = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut.10"}).evaluate(run)
    mean = sum(q["ndcg_cut_10"] for q in expected.values()) / len(expected)
    assert figures["before"]["ndcg@10"] == pytest.approx(mean, abs=1e-9) and figures["queries"] == 6
