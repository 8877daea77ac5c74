"""The Experiments page through AppTest: an experiment the CLI kept is listed and opened by its link, Evaluate keeps
what it runs, two experiments side by side give the diff the service computes, "run again" reproduces the figures,
and a query set kept from an upload is listed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.test_pages import app_env, new_app, same_browser, visible  # noqa: F401 - the fixture is used by name
from workbench.app import ENTRY_SCRIPT
from workbench.app.widgets import text_md
from workbench.cli import main
from workbench.config import Settings
from workbench.experiments import diff_experiments, open_experiment_store


def _page(experiment: str | None = None) -> AppTest:
    at = AppTest.from_file(str(ENTRY_SCRIPT), default_timeout=180)
    at.run()
    if experiment:
        at.query_params["experiment"] = experiment
    at.switch_page("app/pages/experiments.py").run()
    assert not at.exception, at.exception
    return at


def _cli_experiment(capsys: pytest.CaptureFixture[str], *arguments: str) -> str:
    assert main(["eval", "demo", "--max-queries", "6", "--json", *arguments]) == 0
    return json.loads(capsys.readouterr().out)["experiment"]


def test_an_experiment_the_cli_kept_opens_by_its_link(app_env: dict, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    new_app()  # builds the demo in the app's data folder
    first = _cli_experiment(capsys, "--name", "cli dense", "--tag", "nightly")
    at = _page(first)
    assert any(h.value.startswith(f"Experiment {first}: cli dense") for h in at.subheader)
    stored = open_experiment_store(Settings()).get(first)
    after = next(m for m in at.metric if m.label == "ndcg@10 after").value
    assert after == f"{stored.figure():.4f}"
    assert "Kept (1 experiment)" in [h.value for h in at.subheader]
    unknown = _page("0123456789ab")
    assert any("No experiment has the id" in visible(e.value) for e in unknown.error)
    # a crafted link: the id is never echoed, and nothing of it renders as Markdown (an image would be fetched)
    crafted = _page("![x](http://example.com/p.png)")
    messages = [e.value for e in crafted.error]
    assert any("12 hex digits" in visible(m) for m in messages)
    assert not any("](" in m or "example" in m for m in messages), messages


def test_evaluate_keeps_its_run_and_two_runs_diff_as_the_service_does(
    app_env: dict,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    at = new_app()
    at.switch_page("app/pages/evaluate.py").run()
    at.number_input(key="eval-max").set_value(6)
    at.text_input(key="eval-name").input("from evaluate")
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert not at.exception, at.exception
    kept = [c.value for c in at.caption if c.value.startswith("Kept as experiment")]
    assert kept, [c.value for c in at.caption]
    store = open_experiment_store(Settings())
    newest = store.list()[0]
    assert newest.name == "from evaluate" and newest.tags == ["app"] and f"`{newest.id}`" in kept[0]
    # issue 69: the same evaluation clicked again links the one kept, and keeps no copy
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert not at.exception, at.exception
    assert [e.name for e in store.list()].count("from evaluate") == 1
    assert any("nothing new was kept" in i.value and newest.id in i.value for i in at.info), [i.value for i in at.info]

    other = _cli_experiment(capsys, "--retrieval", "bm25")
    page = _page()
    page.selectbox(key="diff-a").set_value(newest.id).run()
    page.selectbox(key="diff-b").set_value(other).run()
    assert not page.exception, page.exception
    expected = diff_experiments(newest, store.get(other))
    assert any(text_md(expected.words()) in m.value for m in page.markdown), expected.words()
    overlap = next(m for m in page.metric if m.label.startswith("overlap@")).value
    assert overlap == f"{expected.agreement.overlap_at_n.mean:.3f}"
    assert next(m for m in page.metric if m.label == "top 1 changed").value == (
        f"{expected.agreement.top1_change_rate:.0%}"
    )


def test_a_store_that_cannot_keep_loses_no_figure_on_the_page_or_the_cli(
    app_env: dict,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Evaluate keeps through the same door as `workbench eval`: where the experiments store cannot be opened (its
    file is a folder), the page shows the report with one warning naming why it was not kept, and the CLI prints
    the report, then one error line, and exits 1."""
    from workbench.app.state import engine_resource

    (tmp_path / "experiments.sqlite3").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
        engine_resource.clear()
        try:
            at = new_app()
            at.switch_page("app/pages/evaluate.py").run()
            at.number_input(key="eval-max").set_value(3)
            next(b for b in at.button if b.label == "Run evaluation").click().run()
            assert not at.exception, at.exception
            warned = [w.value for w in at.warning if "could not be kept as an experiment" in w.value]
            assert len(warned) == 1 and "unable to open database file" in warned[0], [w.value for w in at.warning]
            assert any(m.label == "ndcg@10 after" for m in at.metric)
            assert not [c.value for c in at.caption if c.value.startswith("Kept as experiment")]
            capsys.readouterr()
            assert main(["eval", "demo", "--max-queries", "3", "--depth", "none", "--json"]) == 1
            printed = capsys.readouterr()
            assert json.loads(printed.out)["queries"] == 3 and "experiment" not in json.loads(printed.out)
            lines = [line for line in printed.err.splitlines() if line.startswith("error:")]
            assert lines == [
                "error: the evaluation could not be kept as an experiment: the experiments store at "
                f"{tmp_path / 'experiments.sqlite3'} cannot be used (create its tables): unable to open database file."
            ], printed.err
            assert "Traceback" not in printed.err
        finally:
            engine_resource.clear()


def test_run_again_reproduces_the_figures(app_env: dict, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    new_app()
    first = _cli_experiment(capsys)
    at = _page(first)
    next(b for b in at.button if b.label == "Run again").click().run()
    assert not at.exception, at.exception
    assert any("the same figures to the last digit" in s.value for s in at.success), [s.value for s in at.success]


def test_a_query_set_from_an_upload_is_kept(app_env: dict) -> None:  # noqa: F811
    at = _page()
    at.text_input(key="query-set-name").input("two queries").run()
    at.get("file_uploader")[0].set_value(("log.csv", b"query,frequency\nparental leave,3\nexpenses,1\n", "text/csv"))
    at.run()
    next(b for b in at.button if b.label == "Keep query set").click().run()
    assert not at.exception, at.exception
    assert any("Kept 'two queries': 2 queries" in s.value for s in at.success)
    kept = open_experiment_store(Settings()).query_set("two queries")
    assert kept.weights == {"q2": 3.0, "q3": 1.0} and os.environ["WORKBENCH_DATA_DIR"]


def test_a_history_saved_by_the_previous_version_still_opens(app_env: dict) -> None:  # noqa: F811
    """Before plans, a history entry kept each field flat; a data folder holding one opens and re-opens it."""
    from workbench.services.sessions import open_session_store

    user = "0123456789abcdef"
    flat = {
        "query": "is there a bike to work scheme", "collection": "demo", "k": 30, "top_n": 5, "filters": "",
        "retrieval": "bm25", "reranker": "none", "backend": None, "candidates": 30, "cached": False,
        "embed_ms": 1.0, "search_ms": 2.0, "rerank_ms": 0.0, "total_ms": 3.0,
    }  # fmt: skip
    open_session_store(Settings()).add_turn(f"app:{user}", "query", flat["query"], flat)
    at = same_browser(user)
    entry = next(b for b in at.button if b.label.startswith("is there a bike to work scheme"))
    assert entry.label.endswith("30 · bm25")  # the label is escaped Markdown (k\\=30)
    entry.click().run()
    assert not at.exception, at.exception
    assert at.text_input(key="w.query").value == "is there a bike to work scheme"
    assert at.slider(key="w.k").value == 30


def test_a_query_set_from_a_collections_stored_judgments(app_env: dict) -> None:  # noqa: F811
    at = _page()
    at.radio(key="query-set-source").set_value("judged queries").run()
    at.text_input(key="query-set-name").input("demo judged").run()
    at.selectbox(key="query-set-judged").set_value("the judgments of 'demo'").run()
    next(b for b in at.button if b.label == "Keep query set").click().run()
    assert not at.exception, at.exception
    kept = open_experiment_store(Settings()).query_set("demo judged")
    assert len(kept.queries) == 50 and kept.source.startswith("judged queries of")


def test_compare_over_a_query_set_reranks_an_uploaded_candidates_file(app_env: dict) -> None:  # noqa: F811
    """Issue 39, item 3, on Compare: a production system's candidates for a query set's queries, uploaded, are both
    configurations' first stage (A without reranking, B reranked); B's top-1 changes equal the reranker scoring the
    file's hits here."""
    from workbench.app.state import engine_resource
    from workbench.experiments import QueryItem, QuerySet
    from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection

    engine = engine_resource()
    ensure_demo_collection(engine)
    chosen = list(demo_dataset("test").queries.items())[:5]
    store = open_experiment_store(engine.settings)
    store.save_query_set(QuerySet(name="prod-five", queries=[QueryItem(id=q, text=t) for q, t in chosen]))
    lines, changed = [], 0
    for qid, text in chosen:
        first = engine.search(text, engine.plan(collection=DEMO_COLLECTION, retrieval="bm25", k=20, reranker=None))
        hits = [{"id": c.id, "text": c.text, "score": c.vector_score} for c in first.candidates]
        lines.append(json.dumps({"query_id": qid, "query": text, "hits": hits}))
        scores, _ = engine.reranker().score(text, [h["text"] for h in hits], use_cache=False)
        changed += hits[0]["id"] != hits[max(range(len(hits)), key=scores.__getitem__)]["id"]
    at = new_app()
    at.switch_page("app/pages/compare.py").run()
    at.selectbox(key="compare-query-set").set_value("prod-five")
    upload = next(u for u in at.get("file_uploader") if u.key == "compare-candidates")
    upload.set_value(("production.jsonl", "\n".join(lines).encode(), "application/json"))
    next(b for b in at.button if b.label == "Compare over the query set").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    diff = at.session_state["wb.set_comparison"]
    assert diff.agreement.queries == 5 and diff.agreement.top1_change_rate == pytest.approx(changed / 5)
    assert diff.name_a.startswith("candidates-production-") and diff.name_b.startswith("candidates-production-")
