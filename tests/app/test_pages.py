"""The real Streamlit app through AppTest: every page, with the tiny models and a fresh store."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[2]
QUERY = "how many vacation days do I get per year"


@pytest.fixture(scope="module")
def app_env(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]):
    """Settings for the app's engine: a fresh store, the tiny models (the browser tests use the real ones)."""
    from ui.state import engine_resource

    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(REPO)
        patch.setenv("WORKBENCH_PERSIST_DIR", str(tmp_path_factory.mktemp("app-store")))
        patch.setenv("WORKBENCH_EMBEDDING_MODEL", str(tiny_models["embedder"]))
        patch.setenv("RERANKER_MODEL", str(tiny_models["reranker"]))
        engine_resource.clear()
        yield
        engine_resource.clear()


def new_app() -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    at.run()
    assert not at.exception, at.exception
    return at


def search(at: AppTest, query: str = QUERY) -> AppTest:
    at.text_input(key="query").input(query).run()
    assert not at.exception, at.exception
    return at


def test_first_start_builds_the_demo_and_a_query_renders_both_lists(app_env: None) -> None:
    at = new_app()
    from ui.state import engine_resource

    assert engine_resource().collection_info("demo").count >= 150
    search(at)
    headers = [h.value for h in at.subheader]
    assert "Vector search · top 10 of 50" in headers and "Reranked · top 10" in headers
    assert len(at.get("plotly_chart")) == 2  # the stage bar and the slopegraph
    assert not at.error


def test_changing_top_n_reslices_without_the_reranker(app_env: None) -> None:
    from ui.state import engine_resource

    at = search(new_app(), "time off when a family member dies")
    reranker = engine_resource().reranker()
    calls = reranker.model_calls
    at.sidebar.slider(key="w_top_n").set_value(4).run()
    assert not at.exception
    assert "Reranked · top 4" in [h.value for h in at.subheader]
    assert any("no model ran" in s.value for s in at.success)
    assert reranker.model_calls == calls


def test_sample_queries_are_one_click_away(app_env: None) -> None:
    at = new_app()
    pills = at.get("button_group")
    assert pills, "the sample query pills are shown for the demo collection"


@pytest.mark.parametrize(("query", "message"), [("x" * 513, "513 characters")])
def test_bad_query_shows_an_error_and_the_app_keeps_working(app_env: None, query: str, message: str) -> None:
    at = search(new_app(), query)
    assert any(message in e.value for e in at.error)
    search(at, QUERY)
    assert not at.error and "Reranked · top 10" in [h.value for h in at.subheader]


def test_bad_filter_and_top_n_above_k_are_handled(app_env: None) -> None:
    at = new_app()
    at.sidebar.text_area(key="w_filters_text").input("no equals sign").run()
    assert any("key=value" in e.value for e in at.error)
    at.sidebar.text_area(key="w_filters_text").input("page=999").run()
    search(at)
    assert any("Nothing matched" in w.value for w in at.warning)


def test_missing_reranker_model_shows_what_to_change(app_env: None) -> None:
    at = new_app()
    at.switch_page("pages/compare.py").run()
    at.text_input(key="cmp-query").input(QUERY).run()
    at.text_input(key="cmp-B-model").input("cross-encoder/no-such-reranker").run()
    assert not at.exception
    assert any("cross-encoder/no-such-reranker" in e.value and "RERANKER_MODEL" in e.value for e in at.error)


def test_compare_shows_agreement_figures(app_env: None) -> None:
    at = new_app()
    at.switch_page("pages/compare.py").run()
    at.text_input(key="cmp-query").input(QUERY).run()
    assert not at.exception and not at.error
    labels = [m.label for m in at.metric]
    assert {"Jaccard", "Kendall τ (shared)", "RBO (p=0.9)"} <= set(labels)
    assert any(label.startswith("overlap@") for label in labels)


def test_latency_page_records_queries_and_runs_a_load_run(app_env: None) -> None:
    at = search(new_app())
    at.switch_page("pages/latency.py").run()
    assert not at.exception
    assert at.dataframe, "this session's query appears in the timings table"
    at.number_input(key="load-n").set_value(4).run()
    next(b for b in at.button if b.label == "Start load run").click().run()
    assert not at.exception and not at.error
    assert any("**4 queries**" in m.value for m in at.markdown)
    next(b for b in at.button if b.label == "Measure").click().run()
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) >= 3


def test_collections_create_browse_and_delete(app_env: None, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("Kestrels hover over fields while hunting voles.")
    (folder / "b.md").write_text("# Birds\n\n## Owls\nOwls hunt at night and hear mice under snow.\n")
    at = new_app()
    at.switch_page("pages/collections.py").run()
    at.text_input(key="new-name").input("bird-notes")
    at.radio(key="new-source").set_value("A folder on this machine")
    at.text_input(key="new-folder").input(str(folder))
    at.button[0].click().run()  # the form's submit button
    assert not at.exception and not at.error
    assert any("bird-notes: 2 documents → 2 chunks; 2 added" in s.value for s in at.success)
    at.selectbox(key="browse-collection").set_value("bird-notes").run()
    assert any("Kestrels" in str(df.value.to_dict()) for df in at.dataframe)
    at.selectbox(key="delete-collection").set_value("bird-notes").run()
    at.text_input(key="delete-confirm").input("bird-notes").run()
    next(b for b in at.button if b.label == "Delete collection").click().run()
    assert not at.exception
    from ui.state import engine_resource

    assert "bird-notes" not in {c.name for c in engine_resource().collections()}


def test_collections_reports_a_missing_folder(app_env: None, tmp_path: Path) -> None:
    at = new_app()
    at.switch_page("pages/collections.py").run()
    at.text_input(key="new-name").input("ghost")
    at.radio(key="new-source").set_value("A folder on this machine")
    at.text_input(key="new-folder").input(str(tmp_path / "absent"))
    at.button[0].click().run()
    assert not at.exception
    assert any("no such file or folder" in e.value for e in at.error)


def test_evaluate_page_runs_judgments_and_opens_a_query_in_explore(app_env: None, cranfield_dir: Path) -> None:
    at = new_app()
    at.switch_page("pages/evaluate.py").run()
    assert not at.exception
    at.text_input(key="eval-folder").input(str(cranfield_dir))
    at.text_input(key="eval-collection").input("cran-eval")
    at.number_input(key="eval-k").set_value(10)
    at.number_input(key="eval-max").set_value(6)
    at.text_input(key="eval-depth").input("5, 10")
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("cranfield on 'cran-eval': 6 queries" in h.value for h in at.subheader)
    metrics = {m.label for m in at.metric}
    assert {"ndcg@10 after", "p-value (randomization)", "helped / tied / hurt"} <= metrics
    assert len(at.get("plotly_chart")) == 2  # per-query deltas and the depth curve
    explore = next(b for b in at.button if b.label == "Explore")
    explore.click().run()
    assert not at.exception
    assert at.session_state["collection"] == "cran-eval"
    assert [t.value for t in at.title] == ["Explore"]
    assert "Reranked · top 10" in [h.value for h in at.subheader]


def test_evaluate_page_reports_a_bad_folder(app_env: None, tmp_path: Path) -> None:
    at = new_app()
    at.switch_page("pages/evaluate.py").run()
    at.text_input(key="eval-folder").input(str(tmp_path))
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert not at.exception
    assert any("not a BEIR folder" in e.value for e in at.error)
