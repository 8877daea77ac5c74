"""The real Streamlit app through AppTest: every page, with the tiny models and a fresh data folder."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from workbench.app import ENTRY_SCRIPT
from workbench.paths import demo_dir

QUERY = "how many vacation days do I get per year"


@pytest.fixture(scope="module")
def app_env(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]):
    """Settings for the app's engine: a fresh data folder, the tiny models (the browser tests use the real ones),
    and one allowed folder for server paths."""
    from workbench.app.state import engine_resource

    data = tmp_path_factory.mktemp("app-data")
    allowed = tmp_path_factory.mktemp("allowed")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKBENCH_DATA_DIR", str(data))
        patch.setenv("WORKBENCH_DATA_ROOTS", str(allowed))
        patch.setenv("WORKBENCH_EMBEDDING_MODEL", str(tiny_models["embedder"]))
        patch.setenv("RERANKER_MODEL", str(tiny_models["reranker"]))
        engine_resource.clear()
        yield {"data": data, "allowed": allowed, **tiny_models}
        engine_resource.clear()


def new_app() -> AppTest:
    at = AppTest.from_file(str(ENTRY_SCRIPT), default_timeout=180)
    at.run()
    assert not at.exception, at.exception
    return at


def user_of(at: AppTest) -> str:
    """The user id this app session runs as (what its browser's `wb_user` cookie will hold)."""
    return at.session_state["wb.history_user"]


def same_browser(user: str) -> AppTest:
    """A new session of the app in the browser that holds `user` in its cookie (a reload, a new tab): AppTest
    cannot send cookies, so the cookie the browser would send is given to the app's reader for the first run."""
    from workbench.app import history

    at = AppTest.from_file(str(ENTRY_SCRIPT), default_timeout=180)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(history, "_browser_cookie", lambda: user)
        at.run()
    assert not at.exception, at.exception
    return at


def visible(markdown: str) -> str:
    """What a Markdown message shows: escapes and entities undone (the app escapes any text it quotes)."""
    return html.unescape(re.sub(r"\\(.)", r"\1", markdown)).replace("\u2060", "")


def search(at: AppTest, query: str = QUERY) -> AppTest:
    at.text_input(key="w.query").input(query).run()
    assert not at.exception, at.exception
    return at


def headers(at: AppTest) -> list[str]:
    return [h.value for h in at.subheader]


def test_first_start_builds_the_demo_and_a_query_renders_both_lists(app_env: dict) -> None:
    at = new_app()
    from workbench.app.state import engine_resource

    assert engine_resource().collection_info("demo").count >= 150
    search(at)
    assert "Vector search · top 10 of 50" in headers(at) and "Reranked · top 10" in headers(at)
    assert len(at.get("plotly_chart")) == 3  # the strip's small slopegraph, the stage bar and the slopegraph
    assert not at.error
    # the demo's judgments are attached: a judged query shows its figures and the score reading is explained
    labels = {m.label for m in at.metric}
    assert {"nDCG@10 after reranking", "judged@10", "first relevant, before", "first relevant, after"} <= labels
    judged = next(m for m in at.metric if m.label == "judged@10").value
    assert judged.endswith("%")  # the demo's judgments are pooled over the shipped configurations
    from workbench.services.demo import demo_dataset

    qrels = demo_dataset().qrels
    result = engine_resource().search(QUERY, engine_resource().plan(collection="demo", k=50, top_n=10))
    qid = next(q for q, text in demo_dataset().queries.items() if text == QUERY)
    top10 = [r.metadata["document_id"] for r in result.reranked]
    assert judged == f"{sum(d in qrels[qid] for d in top10) / len(top10):.0%}"  # counted here by hand
    from workbench.app.charts import slopegraph

    relevant = {d for d, g in qrels[qid].items() if g > 0}
    figure = slopegraph(result, relevant)
    stars = [t for t in figure.data if t.marker.symbol == "star" and t.x[0] is not None]
    shown = {r.metadata["document_id"] for r in result.reranked} | {
        c.metadata["document_id"] for c in result.candidates[:10]
    }
    assert len(stars) == len(relevant & shown) and any(t.name == "★ judged relevant" for t in figure.data)
    from workbench.app.charts import mini_slopegraph

    small = mini_slopegraph(result, relevant)  # the strip's: one line per document, the relevant ones starred
    assert len(small.data) == len(shown) and sum(t.marker.symbol == "star" for t in small.data) == len(relevant & shown)
    assert any("raw logit" in c.value and "σ" in c.value for c in at.caption)
    at.sidebar.slider(key="w.k").set_value(160).run()  # every demo passage is a candidate: the judged ones too
    at.sidebar.slider(key="w.top_n_wanted").set_value(160).run()
    assert any(":green-badge[relevant (2)]" in m.value for m in at.markdown)
    assert any(":orange-badge[partly relevant (1)]" in m.value for m in at.markdown)


def test_changing_top_n_reslices_without_the_reranker(app_env: dict) -> None:
    from workbench.app.state import engine_resource

    at = search(new_app(), "time off when a family member dies")
    reranker = engine_resource().reranker()
    calls = reranker.model_calls
    at.sidebar.slider(key="w.top_n_wanted").set_value(4).run()
    assert not at.exception
    assert "Reranked · top 4" in headers(at)
    assert any("no model ran" in s.value for s in at.success)
    assert reranker.model_calls == calls
    assert {m.label: m.value for m in at.metric}["rerank ms now"] == "0"  # not the first run's time


def test_sample_queries_come_in_two_groups(app_env: dict) -> None:
    at = new_app()
    groups = at.get("button_group")
    assert len(groups) == 2
    texts = [m.value for m in at.markdown]
    assert "**Plain questions**" in texts
    assert "**Hard questions: a negation, a number, a condition or an exact term**" in texts
    groups[1].set_value("which travel expenses will the company not pay back").run()
    assert not at.exception
    assert at.text_input(key="w.query").value == "which travel expenses will the company not pay back"
    assert "Reranked · top 10" in headers(at)


@pytest.mark.parametrize(
    ("query", "message"), [("x" * 513, "513 characters"), ("\x00\x07\x1b\x7f", "empty"), ("   ", None)]
)
def test_bad_queries_show_an_error_and_the_app_keeps_working(app_env: dict, query: str, message: str | None) -> None:
    at = search(new_app(), query)
    if message:
        assert any(message in visible(e.value) for e in at.error)
    else:
        assert any("Type a query" in i.value for i in at.info)
    search(at, QUERY)
    assert not at.error and "Reranked · top 10" in headers(at)


def test_a_bad_filter_stops_the_search_with_the_message_on_the_page(app_env: dict) -> None:
    at = search(new_app())
    at.sidebar.text_area(key="w.filters_text").input("no equals sign").run()
    assert any("key=value" in visible(e.value) for e in at.sidebar.error)
    assert any("The search did not run" in e.value and "key=value" in visible(e.value) for e in at.main.error)
    assert "Reranked · top 10" not in headers(at)  # never an unfiltered search under a filter that failed
    at.sidebar.text_area(key="w.filters_text").input("page=[1, 2]").run()
    assert any("one value per name" in visible(e.value) for e in at.main.error)
    at.sidebar.text_area(key="w.filters_text").input("page=999").run()
    assert any("Nothing matched" in w.value for w in at.warning)
    at.sidebar.text_area(key="w.filters_text").input('page="2"').run()  # the typing rule: "2" is the number 2
    assert "Reranked · top 10" in headers(at) or any("Nothing matched" in w.value for w in at.warning)


def test_state_survives_page_switches_and_k_changes(app_env: dict) -> None:
    at = search(new_app(), "what happens if I lose my work laptop")
    at.sidebar.slider(key="w.top_n_wanted").set_value(6).run()
    at.sidebar.slider(key="w.k").set_value(1).run()
    assert any("top n = 1" in c.value for c in at.sidebar.caption)
    at.sidebar.slider(key="w.k").set_value(40).run()
    assert at.sidebar.slider(key="w.top_n_wanted").value == 6  # the user's choice comes back with k
    at.switch_page("app/pages/compare.py").run()
    assert at.text_input(key="w.compare_query").value == "what happens if I lose my work laptop"
    at.number_input(key="w.compare_b.k").set_value(12).run()
    at.switch_page("app/pages/latency.py").run()
    at.switch_page("app/pages/compare.py").run()
    assert at.number_input(key="w.compare_b.k").value == 12
    at.switch_page("app/pages/explore.py").run()
    assert at.text_input(key="w.query").value == "what happens if I lose my work laptop"
    assert "Reranked · top 6" in headers(at)


def test_compare_shows_agreement_figures_and_presets(app_env: dict) -> None:
    at = new_app()
    at.switch_page("app/pages/compare.py").run()
    at.text_input(key="w.compare_query").input(QUERY).run()
    assert not at.exception and not at.error
    assert at.selectbox(key="compare-backend").value == "torch"  # one backend for both unless asked otherwise
    labels = [m.label for m in at.metric]
    assert {"Jaccard", "Kendall τ (shared)", "RBO (p=0.9)"} <= set(labels)
    next(b for b in at.button if b.label == "dense vs hybrid candidates (both reranked)").click().run()
    assert not at.exception and not at.error
    assert any("· hybrid ·" in h for h in headers(at)) and any("· dense ·" in h for h in headers(at))
    # a document found by one side only is marked in its own card's header line, never under it
    at.radio(key="w.compare_b.retrieval").set_value("bm25").run()
    marked = [m.value for m in at.markdown if ":violet-badge[only in " in m.value]
    assert marked and all(m.startswith("**\\#") for m in marked)
    assert not any(c.value.startswith("only in") for c in at.caption)
    # both sides' cross-encoders pinned to one backend: the timing names it for each, and no warning is needed
    at.selectbox(key="compare-backend").set_value("onnx").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    timing = next(m for m in at.metric if m.label == "total ms A / B")
    assert timing.help == "A scored on onnx:cpu, B on onnx:cpu"
    assert not any("different backends" in w.value for w in at.warning)


def test_compare_offers_your_attached_search_against_the_workbenchs_hybrid(
    app_env: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 39: a collection LangChain wrote, attached in workbench.toml, is in the pickers, and Compare's preset
    puts it (its own ranking, reranked) against the workbench's hybrid."""
    from langchain_chroma import Chroma
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from workbench.app.state import engine_resource

    folder = tmp_path / "their-chroma"
    texts = ["Expense receipts are due within 30 days.", "Laptops are replaced every three years."]
    Chroma.from_documents([Document(page_content=t) for t in texts], DeterministicFakeEmbedding(size=32),
                          persist_directory=str(folder), collection_name="their_docs")  # fmt: skip
    config = tmp_path / "workbench.toml"
    config.write_text(
        f'[collections.their_docs]\nstore = "chroma"\npersist_dir = "{folder}"\n'
        f'embedding_model = "{app_env["embedder"]}"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    engine_resource.clear()
    try:
        at = new_app()
        at.switch_page("app/pages/compare.py").run()
        at.text_input(key="w.compare_query").input("when are receipts due").run()
        preset = next(b for b in at.button if b.label.startswith("your search (their_docs)"))
        preset.click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert at.selectbox(key="w.compare_a.collection").value == "their_docs"
        assert at.selectbox(key="w.compare_b.collection").value == "demo"
        assert at.radio(key="w.compare_b.retrieval").value == "hybrid"
    finally:
        engine_resource.clear()


def test_across_stores_offers_to_copy_the_collection_on_first_use(app_env: dict) -> None:
    at = new_app()
    at.switch_page("app/pages/compare.py").run()
    at.text_input(key="w.compare_query").input(QUERY).run()
    assert at.multiselect(key="stores-picked").value == ["chroma", "qdrant"]
    at.button(key="stores-run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]  # was "not found in qdrant"
    assert any("'demo' is not in qdrant yet" in w.value for w in at.warning)
    at.button(key="stores-copy").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    tables = at.dataframe
    stores = list(tables[-2].value["store"])
    assert stores == ["chroma", "qdrant"] and list(tables[-2].value.iloc[:, 2]) == [1.0, 1.0]
    at.button(key="stores-run").click().run()  # the second time there is nothing to copy
    assert not any("is not in" in w.value for w in at.warning) and list(at.dataframe[-2].value["store"]) == stores


def test_a_missing_reranker_model_is_named(app_env: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.app.state import engine_resource

    monkeypatch.setenv("RERANKER_MODEL", "cross-encoder/no-such-reranker")
    engine_resource.clear()
    try:
        at = new_app()
        assert any(
            "cross-encoder/no-such-reranker" in visible(e.value) and "RERANKER_MODEL" in visible(e.value)
            for e in at.sidebar.error
        )
        search(at)
        assert not at.exception and "No reranking: first-stage order · top 10" in headers(at)  # said so
    finally:
        monkeypatch.undo()
        engine_resource.clear()


def test_latency_counts_each_search_once_and_runs_a_load_run(app_env: dict) -> None:
    at = search(new_app(), "deadline for submitting expense receipts")
    at.sidebar.slider(key="w.top_n_wanted").set_value(3).run()  # a re-slice: not a new search
    search(at, "deadline for submitting expense receipts")  # the same search again: not counted again
    at.switch_page("app/pages/latency.py").run()
    assert not at.exception
    table = at.dataframe[-1].value
    assert list(table["query"]).count("deadline for submitting expense receipts") == 1
    assert {"top_n", "filters", "candidates", "cached", "retrieval"} <= set(table.columns)
    at.number_input(key="load-n").set_value(4).run()
    next(b for b in at.button if b.label == "Start load run").click().run()
    assert not at.exception and not at.error
    assert any("**4 queries**" in m.value for m in at.markdown)
    next(b for b in at.button if b.label == "Measure").click().run()
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) >= 3


def test_latency_runs_the_parity_audit_on_the_demo_and_auto_follows_it(app_env: dict) -> None:
    """Issue 37: the Latency page audits the reranker's backends against fp32 torch on the demo's judged queries,
    shows each backend's verdict and speed against the ceiling, and keeps the verdicts for `auto`."""
    at = new_app()  # the demo collection, built at start
    at.switch_page("app/pages/latency.py").run()
    assert not at.exception
    assert any("No parity audit of" in c.value for c in at.caption)
    at.number_input(key="parity-queries").set_value(4).run()
    next(b for b in at.button if b.key == "parity-run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = next(d.value for d in at.dataframe if "batch-mates drift" in d.value.columns)
    assert table["backend"].iloc[0] == "torch" and bool(table["faithful"].iloc[0])
    assert set(table["backend"]) >= {"torch", "onnx", "onnx-int8"}
    assert not bool(table.set_index("backend").loc["onnx-int8", "faithful"])  # its scores move with batch-mates
    assert all(0 < share <= 1 for share in table["share of the ceiling"])
    assert any("Kept for this machine" in m.value and "auto now runs" in m.value for m in at.markdown)
    at.run()
    assert any(c.value.startswith("Kept audit") and "4 queries" in c.value for c in at.caption)


def test_collections_ingest_refreshes_the_list_and_reports_bad_files(app_env: dict) -> None:
    folder = app_env["allowed"] / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("Kestrels hover over fields while hunting voles.")
    (folder / "b.md").write_text("# Birds\n\n## Owls\nOwls hunt at night and hear mice under snow.\n")
    (folder / "c.txt").write_bytes(b"\xff\xfe\x81 not text")
    at = new_app()
    at.switch_page("app/pages/collections.py").run()
    at.radio(key="new-source").set_value("A folder on this machine").run()
    assert not [u for u in at.get("file_uploader") if u.key == "new-files"]  # only what "From" names is shown
    at.text_input(key="new-name").input("bird-notes")
    at.text_input(key="new-folder").input(str(folder))
    next(b for b in at.button if b.label == "Ingest").click().run()
    assert not at.exception and not at.error
    assert any("bird-notes (chroma): 2 documents -> 2 chunks; 2 added" in s.value for s in at.success)
    frames = [d.value for d in at.dataframe]
    listing = next(f for f in frames if "name" in f.columns)
    assert "bird-notes" in list(listing["name"])  # the list shows it without a manual refresh
    assert not listing.isin([None, "None"]).any().any() and "ingest" in listing.columns  # blanks, never "None"
    skipped = next(f for f in frames if "file" in f.columns)
    assert list(skipped["file"]) == ["c.txt"] and "not UTF-8" in skipped["why it was skipped"][0]
    assert any("2 chunks in 'bird-notes'" in c.value for c in at.caption)  # browse shows the total
    assert at.selectbox(key="delete-collection").value is None  # delete never preselects a collection
    at.selectbox(key="delete-collection").set_value("bird-notes").run()
    at.text_input(key="delete-confirm-bird-notes").input("bird-notes").run()
    next(b for b in at.button if b.label == "Delete collection").click().run()
    assert not at.exception
    from workbench.app.state import engine_resource

    assert "bird-notes" not in {c.name for c in engine_resource().collections()}


@pytest.mark.parametrize("outside", ["/etc", "../../..", "{home}"])
def test_folders_outside_the_allowed_roots_are_refused(app_env: dict, outside: str) -> None:
    at = new_app()
    at.switch_page("app/pages/collections.py").run()
    at.radio(key="new-source").set_value("A folder on this machine").run()
    at.text_input(key="new-name").input("sneaky")
    at.text_input(key="new-folder").input(outside.format(home=str(Path.home())))
    next(b for b in at.button if b.label == "Ingest").click().run()
    assert not at.exception
    assert any("outside the folders this app may read" in visible(e.value) for e in at.error)
    from workbench.app.state import engine_resource

    assert "sneaky" not in {c.name for c in engine_resource().collections()}


def test_uploads_with_hostile_names_stay_in_their_own_folder(app_env: dict, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    at = new_app()
    at.switch_page("app/pages/collections.py").run()
    at.text_input(key="new-name").input("uploaded-notes")
    at.get("file_uploader")[0].set_value(
        [
            (f"../../../..{victim}", b"Herons fish in shallow water.", "text/plain"),
            ("/tmp/owls.md", b"# Owls\n\n## Night\nOwls hunt at night.\n", "text/markdown"),
        ]
    )
    next(b for b in at.button if b.label == "Ingest").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not victim.exists() and not Path("/tmp/owls.md").exists()
    assert any("uploaded-notes (chroma): 2 documents" in s.value for s in at.success)
    from workbench.app.state import engine_resource

    sources = {c.metadata["source"] for c in engine_resource().browse("uploaded-notes", 0, 10)}
    assert sources == {"victim.txt", "owls.md"}


@pytest.mark.parametrize("name", ["..", "notes", "report.exe", "."])
def test_an_upload_without_an_allowed_extension_is_refused_with_a_message(app_env: dict, name: str) -> None:
    at = new_app()
    at.switch_page("app/pages/collections.py").run()
    at.text_input(key="new-name").input("herons")
    at.get("file_uploader")[0].set_value(
        [(name, b"Herons fish in shallow water.", "text/plain"), ("kept.txt", b"Egrets wade.", "text/plain")]
    )
    next(b for b in at.button if b.label == "Ingest").click().run()
    assert not at.exception, at.exception  # was Streamlit's "Invalid file extension" traceback
    assert any("left out: a file name must end in .txt" in visible(e.value) for e in at.error)
    assert any(
        "herons (chroma): 1 documents" in s.value or "herons (chroma): 1 document" in s.value for s in at.success
    )


def test_passages_are_shown_as_text_not_markdown(app_env: dict) -> None:
    folder = app_env["allowed"] / "hostile"
    folder.mkdir()
    (folder / "x.txt").write_text(
        "Pelicans ![tracker](http://198.51.100.7/pixel.png) [click](http://198.51.100.7/) "
        "<img src=http://198.51.100.7/a.png> :red[alarm] $x^2$"
    )
    from workbench.app.state import engine_resource

    engine_resource().ingest(folder, "hostile")
    at = new_app()
    at.sidebar.selectbox(key="w.collection").set_value("hostile").run()
    search(at, "pelicans")
    body = next(m.value for m in at.markdown if "Pelicans" in m.value)
    assert "\\!\\[tracker\\]\\(http&#58;\u2060//" in body and "&lt;img" in body and "&#58;red\\[alarm\\]" in body
    assert "\\$x^2\\$" in body


@pytest.mark.parametrize("budget", [1, 600_000])
def test_evaluate_under_a_rerank_budget_shows_the_verdict_as_served(app_env: dict, budget: int) -> None:
    """Issue 72: the Evaluate page takes a rerank budget, as `eval --rerank-budget-ms` does. Its "as served"
    figures equal a hand computation over the report's own per-query times (a query whose rerank took longer than
    the budget counts at its first-stage nDCG@10), and the Experiments page shows the kept run the same way."""
    import numpy as np

    at = new_app()
    at.switch_page("app/pages/evaluate.py").run()
    at.number_input(key="eval-k").set_value(10)
    at.number_input(key="eval-max").set_value(6)
    at.text_input(key="eval-depth").input("")
    at.number_input(key="eval-budget").set_value(budget)
    load = 2 if budget == 1 else 1  # served two searches at once: budgets bite under load
    at.number_input(key="eval-serve-concurrency").set_value(load)
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    report = at.session_state["wb.eval_report"]
    over = [o.rerank_ms > budget for o in report.per_query]
    before = [o.before["ndcg@10"] for o in report.per_query]
    after = [o.after["ndcg@10"] for o in report.per_query]
    served = float(np.mean([b if late else a for b, a, late in zip(before, after, over, strict=True)]))
    assert report.served is not None and report.served.as_served == pytest.approx(served, abs=1e-12)
    assert report.served.served_reranked == over.count(False) and report.score_cache_hits == 0  # every search timed
    if budget == 600_000:
        assert over.count(True) == 0
    tiles = {m.label: m.value for m in at.metric}
    assert tiles["ndcg@10 as served"] == f"{served:.4f}"
    assert tiles["served reranked"] == f"{over.count(False)} of {len(over)}"
    heading = f"#### As served under a rerank budget of {budget:g} ms{', 2 searches at once' if load == 2 else ''}"
    assert any(m.value == heading for m in at.markdown) and report.served.concurrency == load
    kept = at.session_state["wb.eval_experiment"]
    at.switch_page("app/pages/experiments.py")
    at.query_params["experiment"] = kept
    at.run()
    assert any(m.label == "ndcg@10 as served" and m.value == f"{served:.4f}" for m in at.metric)


def test_evaluate_offers_the_demo_judgments_first_and_runs_them(app_env: dict) -> None:
    at = new_app()
    at.switch_page("app/pages/evaluate.py").run()
    assert not at.exception
    assert at.radio(key="eval-source").value == "The demo handbook's judgments (50 queries)"
    at.number_input(key="eval-k").set_value(10)
    at.number_input(key="eval-max").set_value(8)
    at.text_input(key="eval-depth").input("5, 10")
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("the demo handbook on 'demo': 8 queries" in h.value for h in at.subheader)
    assert any("on `torch:cpu`" in c.value for c in at.caption)  # the report names the backend its reranker ran on
    # Either the calibration view is drawn or the page says why not (too few relevant candidates for tiny models)
    assert any("Scores against relevance" in m.value for m in at.markdown)
    assert any(p.key == "cutoff-curve" for p in at.get("plotly_chart")) or any(
        "No calibration for this run" in i.value for i in at.info
    )
    at.number_input(key="eval-k").set_value(40)
    at.number_input(key="eval-max").set_value(20)
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    metrics = {m.label for m in at.metric}
    assert {"ndcg@10 after", "p-value (randomization)", "helped / tied / hurt"} <= metrics
    # per-query deltas, the depth curve, two score histograms, the reliability diagram and the cutoff curve
    assert len(at.get("plotly_chart")) == 6
    assert any(m.value.startswith("**Verdict** :") for m in at.markdown)
    # query by query, worst first: the change in words beside its figure, only the queries that changed at first
    report = at.session_state["wb.eval_report"]
    table = next(d for d in at.dataframe if "query id" in d.value.columns).value
    assert list(table["Δ"]) == sorted(o.delta for o in report.per_query if o.change != "= same")
    assert all((word == "▼ worse") == (delta < 0) for word, delta in zip(table["change"], table["Δ"], strict=True))
    at.toggle(key="evaluate-only-changed").set_value(False).run()
    assert len(next(d for d in at.dataframe if "query id" in d.value.columns).value) == 20
    # Scores against relevance: the figures, the cutoff in words, every table downloadable as CSV
    assert any("Scores against relevance" in m.value for m in at.markdown)
    assert any(("cut at **min_score" in m.value) or ("No score threshold" in m.value) for m in at.markdown)
    downloads = {d.proto.label for d in at.get("download_button")}
    assert {"Separation (CSV)", "Calibration error (CSV)", "Cutoffs by score (CSV)", "Cutoffs by top n (CSV)"} <= (
        downloads
    )
    next(b for b in at.button if b.label == "Use this calibration on the cards").click().run()
    assert any("Calibration kept" in s.value for s in at.success)
    at.switch_page("app/pages/explore.py").run()
    search(at)
    assert any("p(relevant) ≈" in m.value for m in at.markdown)
    assert any("calibration fitted on the demo handbook&#58; 20 queries" in c.value for c in at.caption)  # escaped
    at.switch_page("app/pages/evaluate.py").run()
    explore = next((b for b in at.button if b.label == "Explore"), None)
    if explore is not None:
        explore.click().run()
        assert not at.exception
        assert [t.value for t in at.title] == ["Explore"]
        assert "Reranked · top 10" in headers(at)
        at.switch_page("app/pages/evaluate.py").run()
    assert any("the demo handbook on 'demo'" in h.value for h in at.subheader)  # kept across pages
    at.radio(key="eval-source").set_value("Upload queries and qrels").run()  # another source: its result goes
    assert not at.exception and not any("the demo handbook on 'demo'" in h.value for h in at.subheader)
    assert not any(m.label == "p-value (randomization)" for m in at.metric)


def test_why_here_explains_a_reranked_card_in_place(app_env: dict) -> None:
    at = search(new_app())
    toggles = [t for t in at.toggle if t.label == "Why here?"]
    assert len(toggles) == 10 and not any(t.value for t in toggles)
    toggles[0].set_value(True).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    highlighted = [m.value for m in at.markdown if "-background[" in m.value]
    assert highlighted or any("one term" in c.value or "Strongest" in c.value for c in at.caption)
    assert any(m.value.startswith("Query terms:") and "**vacation**" in m.value for m in at.markdown)
    assert any("1 model call" in c.value for c in at.caption)
    moved = next((t for t in at.toggle if t.label == "Why here?" and not t.value), None)
    assert moved is not None


def test_evaluate_refuses_top_n_above_k_and_judgments_of_another_collection(app_env: dict) -> None:
    at = new_app()
    at.switch_page("app/pages/evaluate.py").run()
    at.number_input(key="eval-k").set_value(10)
    at.number_input(key="eval-max").set_value(3)
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert not at.error and at.subheader, [e.value for e in at.error]  # a first, good run
    at.number_input(key="eval-top-n").set_value(20)
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert any("top_n must be between 1 and k (10)" in visible(e.value) for e in at.error)
    assert not at.subheader  # the old report is gone, not shown beside the error
    at.number_input(key="eval-top-n").set_value(5)
    other = app_env["allowed"] / "other"
    other.mkdir()
    (other / "o.txt").write_text("Nothing about holidays here at all.")
    from workbench.app.state import engine_resource

    engine_resource().ingest(other, "other-docs")
    at.text_input(key="eval-collection-The demo handbook's judgments (50 queries)").input("other-docs")
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert any("belong to another collection" in visible(e.value) for e in at.error)


def test_password_gate(app_env: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.app.state import engine_resource

    monkeypatch.setenv("WORKBENCH_APP_PASSWORD", "correct horse")
    engine_resource.clear()
    try:
        at = new_app()
        assert [t.value for t in at.title] == ["Rerank Workbench"] and not at.sidebar.slider
        at.text_input[0].input("wrong")
        at.button[0].click().run()
        assert any("not the password" in visible(e.value) for e in at.error) and not at.sidebar.slider
        at.text_input[0].input("correct horse")
        at.button[0].click().run()
        assert [t.value for t in at.title] == ["Explore"]
    finally:
        monkeypatch.undo()
        engine_resource.clear()


def test_history_counts_one_search_in_the_singular(app_env: dict) -> None:
    at = search(new_app(), "who approves travel over budget")
    again = same_browser(user_of(at))
    assert [e.label for e in again.expander if e.label.startswith("History")] == ["History (1 search)"]
    # The count includes the search the page has just run (it was one behind: drawn before the search)
    search(at, "how do I claim mileage")
    assert [e.label for e in at.expander if e.label.startswith("History")] == ["History (2 searches)"]


def test_a_k_slider_held_down_is_one_search_in_the_history(app_env: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 69, item 3: holding the k slider's arrow key searched each value on the way; the history counted each.
    A search that only moves k, soon after the last, replaces it in the history (kept in the session store too)."""
    from workbench.app import history

    monkeypatch.setattr(history, "HISTORY_SETTLE_S", 120.0)  # every step of this test is "soon after"
    at = search(new_app(), "who approves travel over budget")
    k = next(s for s in at.sidebar.slider if s.label.startswith("k"))
    for value in (49, 48, 47):
        k.set_value(value).run()
        assert not at.exception, at.exception
    assert [e.label for e in at.expander if e.label.startswith("History")] == ["History (1 search)"]
    again = same_browser(user_of(at))  # what the session store kept: the last step only
    kept = [b.label for b in again.button if b.label.startswith("who approves travel over budget")]
    assert len(kept) == 1 and "k\\=47" in kept[0]  # (the label is Markdown-escaped)
    monkeypatch.setattr(history, "HISTORY_SETTLE_S", 0.0)  # later, a new k is a search of its own
    k.set_value(46).run()
    assert [e.label for e in at.expander if e.label.startswith("History")] == ["History (2 searches)"]


def test_history_survives_a_reload_and_reopens_a_search(app_env: dict) -> None:
    at = search(new_app(), "how long is paid leave for new fathers")
    reloaded = same_browser(user_of(at))  # the same browser: its cookie names the user
    assert any(e.label.startswith("History (") for e in reloaded.expander)
    entry = next(b for b in reloaded.button if b.label.startswith("how long is paid leave for new fathers"))
    entry.click().run()
    assert not reloaded.exception
    assert reloaded.text_input(key="w.query").value == "how long is paid leave for new fathers"
    assert "Reranked · top 10" in headers(reloaded)
    stranger = new_app()  # another browser sees none of it
    assert not any(e.label.startswith("History (") for e in stranger.expander)


def test_a_click_log_is_read_on_the_collections_page(app_env: dict) -> None:
    """A plain click log of the demo's judged queries: read, fitted and compared with the shipped grades, nothing
    kept when asked not to."""
    queries = {q["_id"]: q["text"] for q in map(json.loads, (demo_dir() / "queries.jsonl").read_text().splitlines())}
    qrels: dict[str, dict[str, int]] = {}
    for line in (demo_dir() / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc] = int(grade)
    rows = []
    for qid in list(qrels)[:5]:
        shown = sorted(qrels[qid], key=lambda d: -qrels[qid][d])[:5]
        rows += [
            {"query": queries[qid], "shown": shown, "clicked": [d for d in shown if qrels[qid][d] > 0][:1],
             "session": f"{qid}-{n}"}
            for n in range(6)
        ]  # fmt: skip
    at = new_app()
    at.switch_page("app/pages/collections.py").run()
    at.selectbox(key="clicks-collection").set_value("demo")
    log = "".join(json.dumps(r) + "\n" for r in rows).encode()
    at.get("file_uploader")[3].set_value(("clicks.jsonl", log, "application/json"))
    at.checkbox(key="clicks-keep").uncheck()
    next(b for b in at.button if b.label == "Import clicks").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    said = visible(next(s.value for s in at.success if "Read 30 rows" in visible(s.value)))
    assert "Read 30 rows of clicks.jsonl (plain log): 30 sessions, 30 impressions, 5 queries" in said
    assert "Agreement with people on" in said and "Not kept" in said
    from workbench.app.state import engine_resource
    from workbench.judgments import judgment_rows

    assert not [r for r in judgment_rows(engine_resource().settings, "demo") if r.source == "clicks"]


def test_evaluate_and_judgment_uploads_keep_safe_names(app_env: dict, tmp_path: Path) -> None:
    victim = tmp_path / "evil.tsv"
    queries = b'{"_id": "q1", "text": "how many vacation days do I get per year"}\n'
    qrels = b"query-id\tcorpus-id\tscore\nq1\tleave-policy.md#1\t2\n"
    at = new_app()
    at.switch_page("app/pages/evaluate.py").run()
    at.radio(key="eval-source").set_value("Upload queries and qrels").run()
    at.get("file_uploader")[0].set_value(("../../../../../../tmp/evil-queries.jsonl", queries, "application/json"))
    at.get("file_uploader")[1].set_value((f"../../../..{victim}", qrels, "text/tab-separated-values"))
    at.text_input(key="eval-collection-Upload queries and qrels").input("demo")
    at.number_input(key="eval-k").set_value(10)
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not victim.exists() and not Path("/tmp/evil-queries.jsonl").exists()
    assert any("'demo': 1 query," in h.value for h in at.subheader)

    at.switch_page("app/pages/collections.py").run()
    at.selectbox(key="judge-collection").set_value("demo")
    at.get("file_uploader")[1].set_value((f"../../..{victim}", qrels, "text/tab-separated-values"))
    at.get("file_uploader")[2].set_value(("/etc/cron.d/q.jsonl", queries, "application/json"))
    at.text_input(key="judge-rater").input("team b")
    next(b for b in at.button if b.label == "Attach").click().run()
    assert not at.exception and any("Attached judgments for 1 query to 'demo'" in s.value for s in at.success)
    assert not victim.exists() and not Path("/etc/cron.d/q.jsonl").exists()
    from workbench.app.state import engine_resource
    from workbench.judgments import attach_judgments, detach_judgments, load_judgments
    from workbench.services.demo import DEMO_RATER, demo_dir

    settings = engine_resource().settings
    shipped = len((demo_dir() / "qrels" / "test.tsv").read_text().splitlines()) - 1
    judged = load_judgments(settings, "demo")
    assert judged.given == shipped + 1  # attached beside the demo's, not over them
    assert {"team b", DEMO_RATER} <= set(judged.raters)  # under the rater named on the page
    # put the demo's own judgments back, alone, for whatever runs next
    assert detach_judgments(settings, "demo") == shipped + 1
    attach_judgments(
        settings, "demo", demo_dir() / "qrels" / "test.tsv", demo_dir() / "queries.jsonl", rater=DEMO_RATER
    )


def test_evaluate_reranks_an_uploaded_candidates_file_as_the_first_stage(app_env: dict) -> None:
    """Issue 39, item 3, in the app: a production system's candidates uploaded on Evaluate are the first stage (a
    collection of this session's own); "before" equals pytrec_eval on the file's run, and the file's problems
    are shown, not dropped."""
    import json

    import pytrec_eval

    from workbench.services.demo import demo_dataset

    dataset = demo_dataset("test")
    run: dict[str, dict[str, float]] = {}
    lines = []
    for qid, text in dataset.queries.items():  # each query's judged documents, the best graded last
        ranked = sorted(dataset.qrels[qid], key=lambda d: (dataset.qrels[qid][d], d))[:20]
        run[qid] = {doc: float(len(ranked) - i) for i, doc in enumerate(ranked)}
        hits = [{"id": doc, "text": f"A passage of {doc} about {text}", "score": run[qid][doc]} for doc in ranked]
        lines.append(json.dumps({"query_id": qid, "query": text, "hits": hits}))
    lines.append(json.dumps({"query_id": "q-extra", "query": "not a judged query", "hits": [{"id": "x", "text": " "}]}))
    at = new_app()
    at.switch_page("app/pages/evaluate.py").run()
    at.get("file_uploader")[0].set_value(("production.jsonl", "\n".join(lines).encode(), "application/json"))
    at.number_input(key="eval-k").set_value(20)
    at.text_input(key="eval-depth").input("")
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("have no text and were left out: x" in w.value for w in at.warning)
    heading = next(h.value for h in at.subheader if "queries, k=20" in h.value)
    assert "on 'candidates-production-" in heading  # this session's own collection of the file
    rows = at.dataframe[0].value.set_index("metric")
    expected = pytrec_eval.RelevanceEvaluator(dataset.qrels, {"ndcg_cut.10"}).evaluate(run)
    mean = sum(q["ndcg_cut_10"] for q in expected.values()) / len(expected)
    assert rows.loc["ndcg@10", "before rerank"] == pytest.approx(mean, abs=1e-9)


@contextmanager
def offered_reranker(monkeypatch: pytest.MonkeyPatch, template: str) -> Iterator[tuple[Any, str]]:
    """A local reranker server, and the id `template` names on it ({base}: its URL) offered to the app through
    WORKBENCH_RERANKERS; the app's engine made anew on the way in and out (an earlier test's has other settings)."""
    from tests.rerank_apis import Behaviour, RerankApis
    from workbench.app.state import engine_resource

    with RerankApis(Behaviour(key="unused")) as server:
        offered = template.format(base=server.base)
        monkeypatch.setenv("WORKBENCH_RERANKERS", offered)
        engine_resource.clear()
        try:
            yield server, offered
        finally:
            engine_resource.clear()


@pytest.mark.live_server
def test_evaluate_shows_rerankers_side_by_side(app_env: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """A configured reranker service is offered beside the local model; two picked give one table row each (after
    the first stage's), a CSV, and quality against latency with the Pareto front."""
    with offered_reranker(monkeypatch, "{base}/service") as (server, service):
        at = new_app()
        at.switch_page("app/pages/evaluate.py").run()
        picker = at.multiselect(key="eval-rerankers")
        local = str(app_env["reranker"])
        assert {f"service 127.0.0.1:{server.port}", "tiny-reranker", "tiny-reranker@onnx-int8"} <= set(picker.options)
        at.number_input(key="eval-k").set_value(10)
        at.number_input(key="eval-max").set_value(5)
        at.text_input(key="eval-depth").input("")
        picker.select(local).select(service)
        next(b for b in at.button if b.label == "Run evaluation").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert any(m.value == "#### Rerankers side by side" for m in at.markdown)
        table = next(d for d in at.dataframe if "judged@10" in d.value.columns)
        assert table.value["reranker"].iloc[0] == "first stage (no reranker)" and len(table.value) == 3
        assert list(table.value["backend"])[1:] == ["torch:cpu", f"service {service}/rerank"]
        assert any("is the cheapest" in m.value or "is the best" in m.value for m in at.markdown)
        assert len(at.get("plotly_chart")) == 2  # per-query deltas, quality against latency
        at.number_input(key="rerankers-budget").set_value(0.001).run()  # no reranker answers that fast
        assert any(m.value.startswith("No reranker as good as the best") for m in at.markdown)
        assert any(b.label == "Rerankers (CSV)" for b in at.get("download_button"))


def test_with_reranking_off_the_right_column_says_so_and_csvs_match(app_env: dict) -> None:
    at = search(new_app(), "who approves travel over budget")
    at.sidebar.toggle(key="w.rerank").set_value(False).run()
    assert not at.exception
    assert "No reranking: first-stage order · top 10" in headers(at) and "Reranked · top 10" not in headers(at)
    from workbench.app.state import engine_resource
    from workbench.app.widgets import candidates_frame, reranked_frame

    result = engine_resource().search(
        "who approves travel over budget", engine_resource().plan(collection="demo", k=50, top_n=10)
    )
    assert {"page", "section", "title"} <= set(reranked_frame(result).columns) & set(candidates_frame(result).columns)


def test_deleting_the_selected_collection_runs_nothing_unasked(app_env: dict) -> None:
    from workbench.app.state import engine_resource

    folder = app_env["allowed"] / "doomed"
    folder.mkdir()
    (folder / "d.txt").write_text("Herons wade in shallow water and spear fish.")
    engine_resource().ingest(folder, "doomed-notes")
    at = new_app()
    at.sidebar.selectbox(key="w.collection").set_value("doomed-notes").run()
    search(at, "herons")
    assert any(h.startswith("Reranked · top") for h in headers(at))
    at.switch_page("app/pages/collections.py").run()
    at.selectbox(key="delete-collection").set_value("doomed-notes").run()
    at.text_input(key="delete-confirm-doomed-notes").input("doomed-notes").run()
    next(b for b in at.button if b.label == "Delete collection").click().run()
    assert not at.exception
    assert any("the query was cleared" in s.value for s in at.success)
    at.switch_page("app/pages/explore.py").run()
    assert at.text_input(key="w.query").value == "" and not any(h.startswith("Reranked") for h in headers(at))
    assert at.sidebar.selectbox(key="w.collection").value != "doomed-notes"


def test_latencys_empty_state_promises_only_what_it_shows(app_env: dict) -> None:
    at = new_app()
    at.switch_page("app/pages/latency.py").run()
    [empty] = [i.value for i in at.info if i.value.startswith("No searches yet")]
    assert "run some on Explore" in empty and "reports its figures in its own section" in empty


def test_a_filter_on_an_unknown_key_or_of_the_wrong_kind_names_the_keys(app_env: dict) -> None:
    at = search(new_app())
    at.sidebar.text_area(key="w.filters_text").input("colour=blue").run()
    [warning] = [w.value for w in at.warning if w.value.startswith("Nothing matched")]
    assert "has 'colour'" in warning and "page (numbers)" in warning and "title (text)" in warning
    at.sidebar.text_area(key="w.filters_text").input("page=abc").run()
    [warning] = [w.value for w in at.warning if w.value.startswith("Nothing matched")]
    assert "'page' holds numbers, not text" in warning


@pytest.mark.parametrize(
    ("page_file", "says"),
    [
        ("explore", "From the sidebar: collection, reranker, first stage, k, top n, filters."),
        ("compare", "The sidebar's collection, reranker, first stage, k, top n do not apply here (greyed)."),
        ("latency", "From the sidebar: collection, reranker, first stage, k, top n, filters."),
        ("evaluate", "The sidebar's collection, k, top n, filters do not apply here (greyed)."),
        ("collections", "This page uses none of the sidebar's controls."),
    ],
)
def test_every_page_says_which_sidebar_controls_it_uses(app_env: dict, page_file: str, says: str) -> None:
    at = new_app()
    at.switch_page(f"app/pages/{page_file}.py").run()
    assert any(says in c.value for c in at.caption), [c.value for c in at.caption][:4]
    # issue 69, item 7: the sidebar shows which of its controls the page uses: the others are greyed
    k = next(s for s in at.sidebar.slider if s.label.startswith("k"))
    assert k.proto.disabled == (page_file in {"compare", "evaluate", "collections"}), page_file


def test_a_service_reranker_with_credentials_never_shows_them(app_env: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reranker service named with a password (WORKBENCH_RERANKERS) is offered in the sidebar and on Compare;
    no label, help text or message of either page shows the password."""
    from workbench.app.state import engine_resource

    secret = "pw-in-the-url-5150"
    monkeypatch.setenv("WORKBENCH_RERANKERS", f"http://reader:{secret}@127.0.0.1:9/rerank-gateway")
    engine_resource.clear()  # an engine made by an earlier test has settings without it
    try:
        at = new_app()
        at.switch_page("app/pages/compare.py").run()
        assert not at.exception, at.exception
        shown = [repr(element.proto) for element in at.main] + [repr(element.proto) for element in at.sidebar]
    finally:
        engine_resource.clear()  # the next test's engine without it
    assert secret not in " ".join(shown)
    assert any("rerank-gateway" in text for text in shown)  # the service is offered, by its redacted URL


def test_evaluate_names_an_interrupted_collection_and_offers_to_resume_it(app_env: dict) -> None:
    """Issue 52 on the page: an ingest stopped at 4 of 12 passages is named by Evaluate, which refuses to evaluate
    the part as if it were whole and says how to resume it (the CLI's refusal is tests/test_ingest_status.py's)."""
    from tests.conftest import stopped_halfway_ingest
    from workbench.app.state import engine_resource

    data = engine_resource().settings.data_dir  # the app's own data folder
    stopped_halfway_ingest(app_env["allowed"] / "halfway", data, app_env["embedder"])
    # the app opened after the stopped ingest, as in the issue (the tutorial's ingest stopped, then evaluated)
    engine_resource.clear()
    at = new_app()
    at.switch_page("app/pages/evaluate.py").run()
    at.radio(key="eval-source").set_value("BEIR: halfway").run()
    assert at.text_input(key="eval-collection-BEIR: halfway").value == "halfway"
    at.number_input(key="eval-k").set_value(10)
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert not at.exception
    said = [visible(e.value) for e in at.error]
    assert any("'halfway' is partial (interrupted at 4 of 12 chunks" in s and "same ingest again" in s for s in said), (
        said,
        [s.value for s in at.subheader],
        [w.value for w in at.warning],
    )
    assert any("WORKBENCH_ALLOW_PARTIAL=1 for the app" in s for s in said) and not at.subheader  # no report drawn


@pytest.mark.live_server
def test_explore_shows_a_listwise_rerankers_ranks_and_no_scores(app_env: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """A listwise LLM reranker (an order, no scores) picked in the sidebar: its cards say their rank, the caption
    says what an order is, and no card offers "Why here?" (there is no score to explain)."""
    with offered_reranker(monkeypatch, "listwise+{base}/listwise/good/v1#tiny-ranker") as (server, listwise):
        at = new_app()
        at.sidebar.selectbox(key="w.reranker_model").set_value(listwise).run()
        search(at)
        assert not at.error, [e.value for e in at.error]
        assert "Reranked · top 10" in headers(at)
        assert any("answers an order, not scores" in c.value for c in at.caption)
        assert any("listwise rank `1`" in m.value for m in at.markdown)
        assert not any(t.label == "Why here?" for t in at.toggle)
        assert any(r["path"].endswith("/chat/completions") for r in server.behaviour.requests)
        at.switch_page("app/pages/compare.py").run()
        at.toggle(key="w.compare_b.rerank").set_value(True)
        at.selectbox(key="w.compare_b.model").set_value(listwise)
        at.text_input(key="w.compare_query").input(QUERY).run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert any("answers an order, not scores" in c.value for c in at.caption)
        assert {"Jaccard", "Kendall τ (shared)"} <= {m.label for m in at.metric}
