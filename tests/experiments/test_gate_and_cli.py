"""The ship gate and the experiments commands as a CI job and a user run them: real models on the demo, every
evaluation kept, a run again that reproduces its figures to the last digit, and the gate's three exit codes with a
JUnit file a CI system's reader accepts."""

from __future__ import annotations

import json
from pathlib import Path

import junitparser
import pytest

from workbench.cli import main
from workbench.config import Settings
from workbench.engine import Engine
from workbench.experiments import diff_experiments, open_experiment_store, reproduced, run_again
from workbench.services.demo import demo_dataset


@pytest.mark.parametrize(
    ("arguments", "exit_code", "outcome"),
    [
        (["--retrieval", "bm25"], 0, "ship"),  # the reranker helps BM25's candidates (p = 0.0006)
        (["--reranker", "minilm-l6-scifact-reranker"], 1, "no-ship"),  # the domain-tuned model hurts here
        (["--retrieval", "dense"], 3, "inconclusive"),  # no measurable difference on dense candidates
    ],
)
def test_the_gate_exits_ship_no_ship_or_inconclusive_with_json_and_junit(
    demo_cli: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], exit_code: int,
    outcome: str,
) -> None:  # fmt: skip
    junit, decision_file = tmp_path / "gate.xml", tmp_path / "gate.json"
    code = main(["gate", "demo", *arguments, "--junit", str(junit), "--json-out", str(decision_file)])
    out = capsys.readouterr().out
    assert code == exit_code, out
    assert out.startswith(f"{outcome.upper()} (exit {exit_code})")
    decision = json.loads(decision_file.read_text())
    assert decision["outcome"] == outcome and decision["exit_code"] == exit_code
    comparison = decision["comparison"]
    assert comparison["judged_queries"] == 50
    # the figures the gate decided on are the kept experiment's own before and after
    kept = open_experiment_store(demo_cli.settings).get(decision["candidate_experiment"])
    assert comparison["a"]["ndcg@10"] == pytest.approx(kept.figure(stage="before"))
    assert comparison["b"]["ndcg@10"] == pytest.approx(kept.figure())
    assert "gate" in kept.tags
    suite = next(iter(junitparser.JUnitXml.fromfile(str(junit))))
    cases = {case.name: case for case in suite}
    assert suite.name == "workbench gate" and suite.tests == 1 and list(cases) == ["quality"]
    result = [type(r).__name__ for r in cases["quality"].result]
    assert result == {"ship": [], "no-ship": ["Failure"], "inconclusive": ["Skipped"]}[outcome]
    assert suite.failures == (outcome == "no-ship") and suite.skipped == (outcome == "inconclusive")


def test_a_budget_broken_is_no_ship_whatever_the_quality(demo_cli: Engine, tmp_path: Path) -> None:
    junit, decision_file = tmp_path / "gate.xml", tmp_path / "gate.json"
    # 20 of the 50 queries: a budget is broken whatever their number, and the quality check still passes on them
    arguments = ["--junit", str(junit), "--json-out", str(decision_file), "--max-queries", "20"]
    code = main(
        ["gate", "demo", "--retrieval", "bm25", "--max-rerank-pairs", "20", "--max-latency-ms", "1e9", *arguments]
    )
    assert code == 1
    suite = next(iter(junitparser.JUnitXml.fromfile(str(junit))))
    cases = {case.name: [type(r).__name__ for r in case.result] for case in suite}
    assert cases == {"quality": [], "latency": [], "cost": ["Failure"]}
    # the latency budget is the candidate's p95 total time, as its experiment measured it
    assert main(["gate", "demo", "--retrieval", "bm25", "--max-latency-ms", "0.001", *arguments]) == 1
    decision = json.loads(decision_file.read_text())
    p95 = open_experiment_store(demo_cli.settings).get(decision["candidate_experiment"]).report["latency_p95"]["total"]
    latency = next(c for c in decision["checks"] if c["name"] == "latency")
    assert not latency["passed"] and latency["detail"] == f"p95 total {p95:.0f} ms over the budget of 0.001 ms"


def test_the_gate_against_a_kept_experiment_and_another_configuration(
    demo_cli: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "demo", "--retrieval", "bm25", "--no-rerank", "--name", "bm25 alone", "--json"]) == 0
    baseline = json.loads(capsys.readouterr().out)["experiment"]
    code = main(["gate", "demo", "--retrieval", "bm25", "--baseline", baseline, "--json"])
    decision = json.loads(capsys.readouterr().out)
    assert code == 0 and decision["baseline_experiment"] == baseline and decision["outcome"] == "ship"
    assert decision["baseline"].startswith(f"experiment {baseline} (bm25 alone)")
    assert decision["candidate"].endswith("(reranker on torch:cpu)")  # a verdict holds for the backend it ran on
    code = main(["gate", "demo", "--retrieval", "dense", "--baseline-retrieval", "bm25", "--baseline-reranker",
                 "none", "--json"])  # fmt: skip
    decision = json.loads(capsys.readouterr().out)
    assert decision["baseline"].startswith("configuration demo · bm25 k=50 → 10 · none")
    assert code == decision["exit_code"]
    assert main(["gate", "demo", "--baseline", "no-such-id"]) == 2
    assert "No experiment has the id" in capsys.readouterr().err


def test_eval_keeps_an_experiment_that_lists_shows_diffs_and_runs_again_to_the_last_digit(
    demo_cli: Engine, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # no depth curve: what is kept, listed, diffed and run again is the evaluation at the plan's k (the curve is
    # held by tests/evaluation/test_runner.py and test_steps.py; a kept report keeps whatever the report holds)
    one = ["eval", "demo", "--max-queries", "12", "--depth", "none", "--json"]
    assert main([*one, "--name", "qa dense", "--tag", "nightly"]) == 0
    first_id = json.loads(capsys.readouterr().out)["experiment"]
    assert main([*one, "--retrieval", "hybrid"]) == 0
    second_id = json.loads(capsys.readouterr().out)["experiment"]
    assert main(["experiments", "list"]) == 0
    listing = capsys.readouterr().out
    assert first_id in listing and second_id in listing and "'qa dense'" in listing
    assert main(["experiments", "show", first_id, "--report", str(tmp_path / "report")]) == 0
    assert "# Evaluation: " in capsys.readouterr().out
    assert (tmp_path / "report" / "demo.after.trec").is_file()
    assert main(["experiments", "diff", first_id, second_id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    store = open_experiment_store(demo_cli.settings)
    first, second = store.get(first_id), store.get(second_id)
    assert shown == json.loads(diff_experiments(first, second).model_dump_json())
    assert shown["judged_queries"] == 12

    again = run_again(Engine(Settings()), first)  # the settings the CLI ran with
    same, changed = reproduced(first, again)
    assert same and changed == [] and again.id != first.id and again.name == "qa dense"
    _, changed = reproduced(first, second)
    assert changed == ["the search plan"]
    # the report names the backend its reranker ran on; a rerun on another backend says that it differed
    assert first.report["reranker_backend"] == "torch:cpu"
    assert main(["experiments", "show", first_id]) == 0 and "on `torch:cpu`" in capsys.readouterr().out
    assert main(["experiments", "rerun", first_id, "--backend", "onnx"]) == 0
    assert "the reranker's backend" in capsys.readouterr().out

    path = tmp_path / "exp.json"
    assert main(["experiments", "export", first_id, "-o", str(path)]) == 0
    assert main(["experiments", "delete", first_id]) == 0
    assert main(["experiments", "show", first_id]) == 2
    assert main(["experiments", "import", str(path)]) == 0
    assert store.get(first_id) == first


def test_a_query_set_from_a_file_narrows_an_evaluation(
    demo_cli: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = demo_dataset("test", demo_cli.settings)
    chosen = list(dataset.queries.items())[:5]
    path = tmp_path / "five.csv"
    path.write_text("id,query,frequency\n" + "".join(f"{q},{t},{i + 1}\n" for i, (q, t) in enumerate(chosen)))
    assert main(["query-sets", "add", "five", "--file", str(path)]) == 0
    assert "query set 'five': 5 queries" in capsys.readouterr().out
    assert main(["eval", "demo", "--query-set", "five", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    kept = open_experiment_store(demo_cli.settings).get(summary["experiment"])
    assert summary["queries"] == 5 and kept.query_set.name == "five" and list(kept.queries) == [q for q, _ in chosen]
    assert main(["query-sets", "show", "nope"]) == 2


def test_two_configurations_over_a_query_set_without_judgments(
    demo_cli: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = demo_dataset("test", demo_cli.settings)
    chosen = list(dataset.queries.values())[:6]
    path = tmp_path / "six.txt"
    path.write_text("\n".join(chosen) + "\n")
    assert main(["query-sets", "add", "six", "--file", str(path)]) == 0
    capsys.readouterr()
    code = main(
        ["query-sets", "compare", "six", "--collection", "demo", "--a", "reranker=none", "--b", "k=50", "--json"]
    )
    assert code == 0
    diff = json.loads(capsys.readouterr().out)
    assert diff["change"] is None and diff["agreement"]["queries"] == 6  # no judgments asked for
    engine = Engine(Settings())
    changed = 0
    for query in chosen:  # counted here from the engine's own lists: the first stage's top 1 against the reranked
        result = engine.search(query, engine.plan(collection="demo", k=50, top_n=10))
        changed += result.candidates[0].metadata["document_id"] != result.reranked[0].metadata["document_id"]
    assert diff["agreement"]["top1_change_rate"] == pytest.approx(changed / 6)
    assert main(["query-sets", "compare", "six", "--a", "depth=3"]) == 2
    assert "'depth=3' is not NAME=VALUE" in capsys.readouterr().err


def test_a_query_set_compares_two_rerankings_of_a_production_systems_candidates(
    demo_cli: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 39, item 3: `query-sets compare --candidates FILE` starts both configurations from the candidates a
    production system returned (here BM25's top 20, exported), not from the workbench's own search."""
    dataset = demo_dataset("test", demo_cli.settings)
    chosen = list(dataset.queries.items())[:6]
    (tmp_path / "six.csv").write_text("id,query\n" + "".join(f"{q},{t}\n" for q, t in chosen))
    assert main(["query-sets", "add", "prod-six", "--file", str(tmp_path / "six.csv")]) == 0
    engine = Engine(Settings())
    exported, by_document, changed = [], [], 0
    for qid, text in chosen:
        first = engine.search(text, engine.plan(collection="demo", retrieval="bm25", k=20, reranker=None)).candidates
        hits = [{"id": c.id, "text": c.text, "score": c.vector_score} for c in first]
        exported.append(json.dumps({"query_id": qid, "query": text, "hits": hits}))
        named = [{**hit, "id": c.metadata["document_id"]} for hit, c in zip(hits, first, strict=True)]
        by_document.append(json.dumps({"query_id": qid, "query": text, "hits": named}))
        scores, _ = engine.reranker().score(text, [h["text"] for h in hits], use_cache=False)  # counted here
        changed += hits[0]["id"] != hits[max(range(len(hits)), key=scores.__getitem__)]["id"]
    path = tmp_path / "production.jsonl"
    path.write_text("\n".join(exported) + "\n", encoding="utf-8")
    capsys.readouterr()
    code = main(["query-sets", "compare", "prod-six", "--candidates", str(path), "--a", "reranker=none", "--b",
                 "k=20", "--json"])  # fmt: skip
    assert code == 0
    diff = json.loads(capsys.readouterr().out)
    assert diff["agreement"]["queries"] == 6
    assert diff["agreement"]["top1_change_rate"] == pytest.approx(changed / 6)
    assert diff["name_a"].startswith("candidates-production") and diff["name_b"].startswith("candidates-production")
    # one side on the collection itself (its spec names collection=), the judged figures from --collection's; the
    # file names the collection's documents
    path = tmp_path / "production-documents.jsonl"
    path.write_text("\n".join(by_document) + "\n", encoding="utf-8")
    a_side, b_side = "collection=demo,retrieval=bm25,k=20,reranker=none", "k=20,reranker=none"
    code = main(["query-sets", "compare", "prod-six", "--candidates", str(path), "--collection", "demo", "--judged",
                 "--a", a_side, "--b", b_side, "--json"])  # fmt: skip
    assert code == 0
    same = json.loads(capsys.readouterr().out)
    assert same["name_a"].startswith("demo") and same["name_b"].startswith("candidates-production")
    # the file holds BM25's top 20, unreranked on both sides: the same lists, so nothing changes, judged or not
    assert same["agreement"]["top1_change_rate"] == 0.0 and same["judged_queries"] == 6
    assert same["a"] == same["b"] and same["a"]["judged@10"] == 1.0 and same["change"]["delta"] == 0.0
    assert main(["query-sets", "compare", "prod-six", "--candidates", str(path), "--judged", "--json"]) == 2
    assert "Judged figures need a collection" in capsys.readouterr().err
