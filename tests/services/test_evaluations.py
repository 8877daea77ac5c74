"""Issue 55: an evaluation is a request. `ready_evaluation` readies what a request names exactly as the pieces give
it when called apart (the judged-query sources, the demo collection, a candidates file, a corpus sample, a query
set), and the CLI's adapter makes the request from a command's options."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
import pytrec_eval

from tests.conftest import tiny_env
from workbench.cli import main
from workbench.cli.plans import evaluation_from
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.io import Dataset
from workbench.evaluation.sample import corpus_sample, sample_collection
from workbench.experiments import open_experiment_store
from workbench.experiments.query_sets import judged_query_set
from workbench.services.demo import DEMO_COLLECTION, demo_dataset
from workbench.services.evaluations import EvaluationRequest, judged_queries_of, ready_evaluation


def test_the_demo_is_readied_with_its_collection(tiny_engine: Engine) -> None:
    ready = ready_evaluation(tiny_engine, EvaluationRequest(demo=True))
    assert ready.collection == DEMO_COLLECTION and not ready.candidates
    assert tiny_engine.collection_info(DEMO_COLLECTION).count > 0  # made, as eval makes it
    expected = demo_dataset("test", tiny_engine.settings)
    assert ready.dataset.queries == expected.queries and ready.dataset.qrels == expected.qrels
    with pytest.raises(dataclasses.FrozenInstanceError):
        ready.request.collection = "other"  # type: ignore[misc]


def test_a_beir_folder_takes_its_name_a_sample_and_a_query_set(tiny_engine: Engine, cranfield_dir: Path) -> None:
    dataset, collection = judged_queries_of(tiny_engine.settings, EvaluationRequest(beir=str(cranfield_dir)))
    assert collection == "cranfield" and dataset.queries == Dataset.from_beir(cranfield_dir).queries
    sampled = ready_evaluation(
        tiny_engine, EvaluationRequest(beir=str(cranfield_dir), corpus_sample=50, max_queries=5)
    )  # fmt: skip
    apart = corpus_sample(Dataset.from_beir(cranfield_dir), 50, tiny_engine.settings.data_dir, 5)
    assert sampled.collection == sample_collection("cranfield", 50)
    assert sampled.dataset.queries == apart.queries and sampled.dataset.corpus == apart.corpus
    chosen = dict(list(dataset.queries.items())[:3])
    three = Dataset("three", chosen, {q: dataset.qrels[q] for q in chosen})
    open_experiment_store(tiny_engine.settings).save_query_set(judged_query_set("three", three))
    narrowed = ready_evaluation(tiny_engine, EvaluationRequest(beir=str(cranfield_dir), query_set="three"))
    assert narrowed.dataset.queries == chosen
    kept_apart = ready_evaluation(
        tiny_engine, EvaluationRequest(beir=str(cranfield_dir), query_set="three"), query_set=False
    )  # fmt: skip
    assert kept_apart.dataset.queries == dataset.queries  # the gate applies the set itself


def test_a_candidates_file_of_the_demos_own_ids_reads_their_texts(tiny_engine: Engine, tmp_path: Path) -> None:
    demo = demo_dataset("test")
    qid = next(iter(demo.qrels))
    docs = list(demo.qrels[qid])[:3]
    run = tmp_path / "prod.trec"
    run.write_text("".join(f"{qid} Q0 {doc} {rank} {10 - rank} prod\n" for rank, doc in enumerate(docs, 1)))
    heard: list[str] = []
    ready = ready_evaluation(tiny_engine, EvaluationRequest(demo=True, candidates=str(run)), warn=heard.append)
    assert ready.candidates and ready.collection.startswith("candidates-prod")
    hits = tiny_engine.search(demo.queries[qid], tiny_engine.plan(collection=ready.collection, k=3, reranker=None))
    assert [c.metadata.get("document_id", c.id) for c in hits.candidates] == docs  # the file's order
    assert all(c.text for c in hits.candidates)  # every id's text read from the demo collection
    assert heard == [f"49 judged queries have no candidates in prod.trec: {_first_five(demo, qid)} and 44 more"]


def test_the_cli_adapter_and_what_a_request_refuses(tmp_path: Path) -> None:
    options = argparse.Namespace(dataset="demo", collection=None, max_queries=4, split=None, query_set="set")
    request = evaluation_from(options)
    assert request == EvaluationRequest(demo=True, max_queries=4, query_set="set")
    assert evaluation_from(argparse.Namespace(dataset="scifact")).beir == "scifact"
    with pytest.raises(InputError, match="max queries must be 1 or more"):
        EvaluationRequest(demo=True, max_queries=0)
    queries, qrels = tmp_path / "q.jsonl", tmp_path / "qrels.tsv"
    queries.write_text(json.dumps({"_id": "q1", "text": "rivers"}) + "\n")
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    files = EvaluationRequest(queries=str(queries), qrels=str(qrels))
    with pytest.raises(InputError, match="Name the collection"):  # files name no collection
        judged_queries_of(Settings(data_dir=tmp_path), files)


def test_the_request_holds_the_depth_grid_the_rerankers_compared_and_whether_to_keep(tmp_path: Path) -> None:
    """What `eval` runs, not only what it judges: --depth, several --reranker and --no-save become the request's."""
    settings = Settings(data_dir=tmp_path, reranker_model="none", offline=True)
    options = argparse.Namespace(dataset="demo", depth="20,5", reranker=["a-model", "b-model"], no_save=True)
    request = evaluation_from(options, settings)
    assert (request.depth, request.rerankers, request.keep) == (
        (5, 20),
        ("a-model", "b-model"),
        False,
    )  # sorted, as --depth reads it
    assert request.depth_grid(50) == [5, 20]
    assert evaluation_from(argparse.Namespace(dataset="demo", depth="none")).depth_grid(50) == []
    assert EvaluationRequest(demo=True).depth_grid(50) == [10, 20, 50] and EvaluationRequest(demo=True).keep
    one = argparse.Namespace(dataset="demo", reranker="a-model")  # tune's --reranker names the one it reranks with
    assert evaluation_from(one).rerankers == ()
    with pytest.raises(InputError, match="compared two or more at a time"):
        EvaluationRequest(demo=True, rerankers=("a-model",))
    for bad in (0, -5, True, 2.5):
        with pytest.raises(InputError, match="A depth is a whole number"):
            EvaluationRequest(demo=True, depth=(10, bad))  # type: ignore[arg-type]


def _first_five(dataset: Dataset, but: str) -> str:
    return ", ".join([q for q in dataset.queries if q != but][:5])


def test_eval_demo_on_a_run_of_its_own_ids_equals_the_runs_ndcg_before_reranking(
    tiny_models: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`workbench eval demo --candidates RUN` with a TREC run of the demo collection's own document ids: the texts are
    read from the demo collection, and the figure before reranking is the run's own nDCG@10 (pytrec_eval)."""
    for name, value in tiny_env(tmp_path / "data", tiny_models).items():
        monkeypatch.setenv(name, value)
    demo = demo_dataset("test")
    pool = sorted({doc for docs in demo.qrels.values() for doc in docs})
    run: dict[str, dict[str, float]] = {}
    for qid in demo.queries:  # its judged ids and others, ten in an order of no model's: a hash of each pair
        others = [doc for doc in pool if doc not in demo.qrels[qid]]
        chosen = [*demo.qrels[qid], *others[: 10 - len(demo.qrels[qid])]][:10]
        ranked = sorted(chosen, key=lambda doc, q=qid: hashlib.sha256(f"{q}|{doc}".encode()).hexdigest())
        run[qid] = {doc: float(10 - rank) for rank, doc in enumerate(ranked)}
    path = tmp_path / "prod.trec"
    path.write_text(
        "".join(f"{q} Q0 {d} {11 - int(s)} {s} prod\n" for q, docs in run.items() for d, s in docs.items()),
        encoding="utf-8",
    )
    code = main(["eval", "demo", "--candidates", str(path), "-k", "10", "-n", "10", "--depth", "none", "--no-save",
                 "--json"])  # fmt: skip
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["queries"] == len(demo.queries)
    per_query = pytrec_eval.RelevanceEvaluator(demo.qrels, {"ndcg_cut.10"}).evaluate(run)
    expected = sum(per_query[q]["ndcg_cut_10"] for q in demo.queries) / len(demo.queries)
    assert 0 < expected < 1 and summary["before"]["ndcg@10"] == pytest.approx(expected, abs=1e-9)
