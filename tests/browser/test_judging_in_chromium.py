"""Judging in a real browser, where the reproductions of issue 29 live: Compare's controls (a typed k, a preset,
another first stage) write no grade and keep top n; the rater is asked before the first grade; a new tab (and a
new visit) finds the rater and the history again without the URL's ?u=."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser.conftest import (
    CHROMIUM,
    app_server,
    chromium_page,
    click_until,
    grade_button,
    no_exception,
    on_page,
    shown,
)
from workbench.config import Settings
from workbench.judgments import judgment_rows
from workbench.vocab import DEFAULT_TOP_N

pytestmark = pytest.mark.browser

JUDGED = "how many vacation days do I get per year"  # one of the demo's judged queries
RUN: dict[str, object] = {}


@pytest.fixture(scope="module")
def app_url(tmp_path_factory: pytest.TempPathFactory, real_reranker_dir: Path):
    with app_server(tmp_path_factory, real_reranker_dir, "judging") as (url, data, _):
        RUN["data"] = data
        yield url


def _rows() -> list:
    return judgment_rows(Settings(data_dir=RUN["data"]), "demo")


def _idle(page) -> None:
    """Wait until the script run is over: no element stale and no "Running" status."""
    page.wait_for_function(
        "() => document.querySelectorAll('[data-stale=\"true\"]').length === 0 && "
        "!document.querySelector('[data-testid=\"stStatusWidget\"]')"
    )
    page.wait_for_timeout(800)


def _rate_as(page, name: str) -> None:
    box = page.get_by_label("Rating as", exact=True)
    box.fill(name)
    box.press("Enter")
    _idle(page)


def _open_as(page, rater: str, heading: str) -> None:
    """Give the rater's name on Explore, then go to the page with this heading."""
    on_page(page, "Explore")
    _rate_as(page, rater)
    page.get_by_role("link", name=heading).click()
    on_page(page, heading)


def _rater_shown(page, name: str) -> None:
    """Wait until the sidebar's "Rating as" holds `name`."""
    page.wait_for_function(
        "(name) => [...document.querySelectorAll('input')].some(i => i.getAttribute('aria-label') === 'Rating as' "
        "&& i.value === name)",
        arg=name,
    )


def _top_n(page) -> int:
    slider = page.get_by_role("slider", name="top n compared")
    return int(slider.get_attribute("aria-valuenow") or slider.get_attribute("aria-valuetext") or 0)


def test_compare_controls_write_no_grade_and_keep_top_n(app_url: str) -> None:
    """The reproduction: a judged query on Compare, the "dense vs hybrid" preset, A's k typed from 50 to 10, then
    "dense" clicked in B. Before the fix, each rerun fired the grade controls of cards that had left the lists
    (grades nobody clicked) and top n fell to 1."""
    with chromium_page(app_url, []) as page:
        _open_as(page, "ann", "Compare")
        page.get_by_role("button", name="dense vs hybrid candidates (both reranked)").click()
        _idle(page)
        box = page.get_by_label("Query", exact=True)
        box.fill(JUDGED)
        box.press("Enter")
        shown(page, "RBO (p=0.9)")
        _idle(page)
        assert _top_n(page) == DEFAULT_TOP_N
        before = len(_rows())
        k_of_a = page.get_by_label("k", exact=True).first
        k_of_a.fill("10")
        k_of_a.press("Enter")
        _idle(page)
        page.locator("label").filter(has_text=re.compile(r"^dense$")).last.click()  # "dense" in Configuration B
        _idle(page)
        shown(page, "RBO (p=0.9)")
        assert len(_rows()) == before, [(r.doc_id, r.grade, r.rater) for r in _rows()[before:]]
        assert page.get_by_text("Graded ").count() == 0  # no toast of a grade
        assert _top_n(page) == DEFAULT_TOP_N
        k_of_a.fill("3")  # below top n: held down to 3, said so, and back to top n when k allows
        k_of_a.press("Enter")
        shown(page, "top n compared is 3, the smaller k")
        k_of_a.fill("10")
        k_of_a.press("Enter")
        _idle(page)
        assert _top_n(page) == DEFAULT_TOP_N
        assert len(_rows()) == before
        no_exception(page)


def test_the_first_grade_asks_for_the_raters_name_and_a_new_tab_keeps_it(app_url: str) -> None:
    """A new browser has no rater: its first grade opens "Who is grading?", the grade is kept under the name typed
    there, and a second tab of the same browser (no ?u= in its URL) shows the name and the history."""
    with chromium_page(app_url, []) as page:
        on_page(page, "Explore")
        assert page.get_by_label("Rating as", exact=True).input_value() == ""
        box = page.get_by_label("Query", exact=True)
        box.fill("do we have a bicycle plan")
        box.press("Enter")
        shown(page, "unjudged")
        page.get_by_text("Reranking 50 candidates…").first.wait_for(state="hidden")
        _idle(page)
        before = len(_rows())
        click_until(
            page,
            lambda: grade_button(page, "reranked", "2").click(),
            lambda: page.get_by_text("Who is grading?").first.wait_for(timeout=30_000),
            "rater-prompt-failed.png",
        )
        assert len(_rows()) == before  # nothing kept until the name is given
        page.get_by_label("Your name as a rater", exact=True).fill("bea")
        page.get_by_role("button", name="Keep my name and grade").click()
        shown(page, "nDCG@10 after reranking")
        added = _rows()[before:]
        assert [(r.grade, r.rater) for r in added] == [(2, "bea")]
        _idle(page)

        second = page.context.new_page()
        second.goto(app_url)  # a new tab: no ?u= in its address
        on_page(second, "Explore")
        _rater_shown(second, "bea")
        second.get_by_text("History (1 search)").first.wait_for()
        no_exception(second)

        shared = page.context.new_page()
        shared.goto(f"{app_url}/?u=0123456789abcdef")  # a link someone else shared, with their id in it
        on_page(shared, "Explore")
        _rater_shown(shared, "bea")  # this browser still rates as itself
        assert "u=0123456789abcdef" not in shared.url

        # bea's own address copied to a colleague whose browser has never seen the app: it never makes them bea
        bea = next(c["value"] for c in page.context.cookies() if c["name"] == "wb_user")
        stranger = page.context.browser.new_context(viewport={"width": 1500, "height": 1000}).new_page()
        stranger.set_default_timeout(180_000)
        stranger.goto(f"{app_url}/?u={bea}")
        on_page(stranger, "Explore")
        stranger.get_by_text("History (1 search)").first.wait_for(state="detached", timeout=5_000)
        assert stranger.get_by_label("Rating as", exact=True).input_value() == ""
        stranger.wait_for_function("() => document.cookie.includes('wb_user=')")
        theirs = next(c["value"] for c in stranger.context.cookies() if c["name"] == "wb_user")
        assert theirs != bea and f"u={bea}" not in stranger.url
        no_exception(stranger)


def _at_document(page, number: int) -> None:
    page.get_by_text(re.compile(rf"document {number} of \d+")).first.wait_for()


def test_a_query_set_is_graded_from_the_keyboard(app_url: str) -> None:
    """The Grade page walks a kept query set: 2 grades the document shown and goes on, ← goes back, → skips, 0
    grades again; each key press is one row in the store, under the rater, and the rater's progress counts them."""
    from workbench.experiments import QueryItem, QuerySet, open_experiment_store

    open_experiment_store(Settings(data_dir=RUN["data"])).save_query_set(
        QuerySet(
            name="two questions",
            queries=[
                QueryItem(id="q1", text="do we have a bicycle plan"),
                QueryItem(id="q2", text="can I expense a standing desk"),
            ],
        )
    )
    with chromium_page(app_url, []) as page:
        _open_as(page, "cy", "Grade")
        page.get_by_text(re.compile(r"The judged queries of 'demo' \(\d+ queries\)")).first.wait_for()  # first
        page.get_by_text("A query set, searched with the sidebar's plan").first.click()
        page.get_by_text("Query set", exact=True).first.wait_for()
        page.get_by_role("button", name="Start grading").click()
        _at_document(page, 1)
        _idle(page)
        before = len(_rows())
        page.keyboard.press("2")
        _at_document(page, 2)
        _idle(page)
        page.keyboard.press("ArrowLeft")
        _at_document(page, 1)
        _idle(page)
        page.keyboard.press("ArrowRight")
        _at_document(page, 2)
        _idle(page)
        page.keyboard.press("0")
        _at_document(page, 3)
        _idle(page)
        added = _rows()[before:]
        assert [(r.grade, r.rater) for r in added] == [(2, "cy"), (0, "cy")]
        assert added[0].doc_id != added[1].doc_id
        table = page.locator("[data-testid='stDataFrame']").first
        table.wait_for()
        no_exception(page)


GONE_JS = (  # the query shown (the main area's h3) is no longer `q`
    "(q) => ![...document.querySelectorAll('[data-testid=\"stMain\"] h3')].some(h => h.innerText.trim() === q)"
)


def _blind_query(page) -> str:
    page.get_by_role("button", name=re.compile("Left is better")).wait_for()
    heading = page.locator("[data-testid='stMain'] h3").first
    heading.wait_for()
    return heading.inner_text().strip()


def test_a_blind_preference_session_is_chosen_from_the_keyboard_and_a_reload_resumes_it(app_url: str) -> None:
    """Prefer on the demo (the sidebar's first stage without and with the reranker): the right arrow, the left
    arrow and U record right, left and an undo under the rater, each one row; the page names neither configuration
    and shows no score or rank movement while blind; the sides stored follow the session's seeded draw; a reload of
    the session's URL resumes at the query the undo gave back."""
    from workbench.preferences import open_preference_store

    with chromium_page(app_url, []) as page:
        _open_as(page, "dee", "Prefer")
        page.get_by_role("button", name="Start a blind session").click()
        first = _blind_query(page)
        _idle(page)
        session_id = re.search(r"session=([0-9a-f]{12})", page.url).group(1)
        store = open_preference_store(Settings(data_dir=RUN["data"]))
        session = store.session(session_id)
        main = page.locator("[data-testid='stMain']").inner_text()
        for name in (session.first.key, session.second.key, "minilm", "score"):
            assert name not in main, name
        assert not re.search(r"[↑↓]\d|new \(was", main)
        page.keyboard.press("ArrowRight")
        page.wait_for_function(GONE_JS, arg=first)
        second = _blind_query(page)
        _idle(page)
        page.keyboard.press("ArrowLeft")
        page.wait_for_function(GONE_JS, arg=second)
        _idle(page)
        page.keyboard.press("u")
        page.get_by_role("heading", name=second).wait_for()
        _idle(page)
        rows = store.choices(session_id)
        assert [(r.choice, r.rater) for r in rows] == [("right", "dee"), ("left", "dee"), ("undo", "dee")]
        for row in rows[:2]:
            assert row.a_side == ("left" if session.a_on_left(row.query_id) else "right")
        assert session.text_of(rows[0].query_id) == first and session.text_of(rows[1].query_id) == second
        page.reload()
        assert _blind_query(page) == second  # resumed where it stopped: the query the undo gave back
        no_exception(page)


def test_two_browsers_choosing_at_once_on_one_session_lose_nothing_and_count_nothing_twice(app_url: str) -> None:
    """Two browsers (two raters) on one session's address press their keys at the same moments, three times: each
    rater has exactly three choices kept, each counted once in the verdict."""
    from workbench.engine import Engine
    from workbench.preferences import open_preference_store
    from workbench.services.preferences import verdict_of

    settings = Settings(data_dir=RUN["data"])
    with chromium_page(app_url, []) as first:
        other = first.context.browser.browser_type.launch(  # a second browser of its own, in the same Playwright
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        second = other.new_context(viewport={"width": 1500, "height": 1000}).new_page()
        second.set_default_timeout(180_000)
        second.goto(app_url)
        pages = {"fay": first, "gus": second}
        for rater, page in pages.items():
            _open_as(page, rater, "Prefer")
        first.get_by_role("button", name="Start a blind session").click()
        _blind_query(first)
        session_id = re.search(r"session=([0-9a-f]{12})", first.url).group(1)
        second.goto(f"{app_url}/prefer?session={session_id}")
        for _ in range(3):
            shown = {rater: _blind_query(page) for rater, page in pages.items()}
            for page in pages.values():
                _idle(page)
            for page in pages.values():  # both keys pressed before either page has answered
                page.keyboard.press("ArrowRight")
            for rater, page in pages.items():
                page.wait_for_function(GONE_JS, arg=shown[rater])
        for page in pages.values():
            _idle(page)
            no_exception(page)
        other.close()
    rows = open_preference_store(settings).choices(session_id)
    assert sorted((r.rater, r.choice) for r in rows) == [("fay", "right")] * 3 + [("gus", "right")] * 3
    assert len({(r.rater, r.query_id) for r in rows}) == 6  # three queries each, none twice
    verdict = verdict_of(Engine(settings), session_id)[1]
    assert {r.rater: r.decisive + r.ties for r in verdict.raters} == {"fay": 3, "gus": 3}
