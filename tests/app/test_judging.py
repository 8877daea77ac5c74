"""Judging in the real Streamlit app (AppTest): the rater's name kept across a reload, a graded Explore card
that makes the query judged, and Evaluate's queue that empties as it is graded."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.app.test_pages import app_env, new_app, search  # noqa: F401 - the fixture is used by name
from workbench.app import ENTRY_SCRIPT
from workbench.paths import demo_dir


def _grade_controls(at: AppTest) -> list:
    return [w for w in at.get("button_group") if str(w.key or "").startswith("grade-")]


def test_the_raters_name_is_kept_for_this_browser(app_env: dict) -> None:  # noqa: F811
    at = new_app()
    at.text_input(key="wb.rater").input("ann").run()
    reloaded = AppTest.from_file(str(ENTRY_SCRIPT), default_timeout=180)
    reloaded.query_params["u"] = at.query_params["u"]
    reloaded.run()
    assert reloaded.text_input(key="wb.rater").value == "ann"
    assert new_app().text_input(key="wb.rater").value == "me"  # another browser: the default
    at.text_input(key="wb.rater").input("ann\x1b[2J").run()  # refused, the kept name stays
    assert not at.exception and at.text_input(key="wb.rater").value == "ann"


def test_grading_a_card_judges_the_query_in_the_same_view(app_env: dict) -> None:  # noqa: F811
    at = search(new_app(), "bicycles for commuting")
    assert any("no judgments yet" in c.value or "not one of them" in c.value for c in at.caption)
    controls = _grade_controls(at)
    assert len(controls) == 20  # every card of both lists
    reranked_first = controls[10]
    reranked_first.set_value(2).run()
    assert not at.exception
    labels = {m.label: m.value for m in at.metric}
    assert labels["nDCG@10 after reranking"] == "1.000" and labels["first relevant, after"] == "#1"
    twin = next(c for c in _grade_controls(at)[:10] if c.value == 2)  # the same document in the other list
    assert twin is not None


def test_the_queue_lists_unjudged_documents_and_empties_as_they_are_graded(app_env: dict, tmp_path: Path) -> None:  # noqa: F811
    lines = (demo_dir() / "qrels" / "test.tsv").read_text().splitlines()[1:]
    kept = [line for line in lines if line.split("\t")[0] in {"h1", "h2"}][:3]  # 3 judged pairs of 2 queries
    queries = "".join(line + "\n" for line in (demo_dir() / "queries.jsonl").read_text().splitlines()[:60])
    at = new_app()
    at.switch_page("app/pages/evaluate.py").run()
    at.radio(key="eval-source").set_value("Upload queries and qrels").run()
    at.get("file_uploader")[0].set_value(("queries.jsonl", queries.encode(), "application/json"))
    at.get("file_uploader")[1].set_value(
        ("few.tsv", ("query-id\tcorpus-id\tscore\n" + "\n".join(kept) + "\n").encode(), "text/tab-separated-values")
    )
    at.text_input(key="eval-collection-Upload queries and qrels").input("demo")
    at.number_input(key="eval-k").set_value(10)
    at.text_input(key="eval-depth").input("")
    next(b for b in at.button if b.label == "Run evaluation").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    queue = [c for c in _grade_controls(at) if str(c.key).startswith("grade-queue-")]
    intro = next(c.value for c in at.caption if "unjudged document" in c.value)
    waiting = int(intro.split()[0])
    assert queue and waiting >= len(queue)
    queue[0].set_value(0).run()
    assert not at.exception
    intro = next(c.value for c in at.caption if "unjudged document" in c.value)
    assert int(intro.split()[0]) == waiting - 1  # the graded one left the queue
