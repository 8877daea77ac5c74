"""Click logs in: plain CSV and JSON lines, UBI 1.0 queries and events, their counts, the grades kept, their
agreement with people (against a hand computation), and hostile logs, each a clear line."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.clicks.grades import click_agreement, import_clicks
from workbench.clicks.impressions import Impression
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation import Dataset
from workbench.evaluation.service import prepare_collection
from workbench.experiments.log_sample import log_query_set, query_frequencies
from workbench.judgments import attach_judgments, judgment_rows, load_judgments, typed_query_id

DOCS = {
    f"d{i}": f"Document {i} about {topic}"
    for i, topic in enumerate(["herons", "fish", "oaks", "moss", "rivers", "stones"])
}
QUERIES = {"q1": "herons and fish", "q2": "oak trees"}
PEOPLE = {"q1": {"d0": 2, "d1": 1, "d2": 0}, "q2": {"d2": 2, "d3": 0}}


@pytest.fixture
def shop(tiny_settings: Settings, tmp_path: Path) -> Engine:
    """A six-document collection with two queries people graded, in a data folder of its own."""
    tiny_engine = Engine(tiny_settings.model_copy(update={"data_dir": tmp_path / "data"}))
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in DOCS.items()))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items()))
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{g}" for q, docs in PEOPLE.items() for d, g in docs.items()]
    (folder / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    prepare_collection(tiny_engine, Dataset.from_beir(folder), "shop")
    attach_judgments(tiny_engine.settings, "shop", folder / "qrels" / "test.tsv", folder / "queries.jsonl", rater="ann")
    return tiny_engine


def _log(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# q1: d0 is clicked at the top 6 times of 6, d1 3 of 6 at the 2nd place, d2 never; q2 ("Oak  Trees": the judged
# query by its text): d2 clicked 2 of 6 at the top, d3 never.
ROWS = [
    {"query": "herons and fish", "shown": ["d0", "d1", "d2"], "clicked": ["d0"] + (["d1"] if i % 2 else []),
     "session": f"s{i}", "time": f"2026-11-0{i + 1}"}
    for i in range(6)
] + [
    {"query": "Oak  Trees", "shown": ["d2", "d3"], "clicked": ["d2"] if i < 2 else [], "session": f"t{i}"}
    for i in range(6)
]  # fmt: skip


def test_a_plain_log_becomes_grades_with_their_agreement(shop: Engine, tmp_path: Path) -> None:
    imported = import_clicks(shop, "shop", _log(tmp_path / "log.jsonl", ROWS), model="coec", min_impressions=5)
    assert (imported.rows, imported.impressions, imported.sessions, imported.queries, imported.pairs) == (
        12,
        12,
        12,
        2,
        5,
    )
    # CTR at 1: (6 + 2) / 12 = 2/3; at 2: 3/12 = 1/4; at 3: 0. COEC: d0 6 / (6 * 2/3) = 1.5 -> grade 2 (cuts 0.5,
    # 1, 2); d1 3 / (6/4) = 2 -> 3; d2 (q1) 0 -> 0; d2 (q2) 2 / 4 = 0.5 -> 1; d3 0 / 1.5 = 0 -> 0.
    click_grades = {
        (r.query_id, r.doc_id): r.grade for r in judgment_rows(shop.settings, "shop") if r.source == "clicks"
    }
    assert click_grades == {("q1", "d0"): 2, ("q1", "d1"): 3, ("q1", "d2"): 0, ("q2", "d2"): 1, ("q2", "d3"): 0}
    # Against people on the 5 shared pairs, grades (clicks, people): (2,2) (3,1) (0,0) (1,2) (0,0), same grade on 3.
    # Quadratic weights (i - j)^2 / 9 over grades 0..3. Observed disagreement: (3-1)^2/9 + (1-2)^2/9 = 5/9 over 5
    # pairs = 1/9. Expected: click marginals {0: 2, 1: 1, 2: 1, 3: 1}, people's {0: 2, 1: 1, 2: 2}; the sum of
    # weight * product of marginals / 25.
    clicks_m = {0: 2, 1: 1, 2: 1, 3: 1}
    people_m = {0: 2, 1: 1, 2: 2}
    expected = sum((i - j) ** 2 / 9 * a * b for i, a in clicks_m.items() for j, b in people_m.items()) / 25
    assert imported.agreement.shared_pairs == 5 and imported.agreement.agreed == 3
    assert imported.agreement.kappa == pytest.approx(1 - (1 / 9) / expected)
    assert imported.rater == "clicks:coec" and "12 sessions of log.jsonl" in imported.provenance
    # A person's grade outranks the click model's: the verdict's grades are still people's where they graded.
    judgments = load_judgments(shop.settings, "shop")
    assert judgments is not None and judgments.qrels["q1"]["d1"] == 1 and "clicks:coec" in judgments.provenance


def test_kendall_tau_of_the_estimates_by_hand() -> None:
    # Estimates 0.2, 0.9, 0.5 against grades 0, 2, 2: pairs (1,2) concordant, (1,3) concordant, (2,3) tied in
    # grade. tau-b = (2 - 0) / sqrt(3 * 2) = 0.8165.
    pairs = [("q", "a"), ("q", "b"), ("q", "c")]
    estimates = dict(zip(pairs, [0.2, 0.9, 0.5], strict=True))
    agreement = click_agreement(estimates, dict.fromkeys(pairs, 1), {"q": {"a": 0, "b": 2, "c": 2}})
    assert agreement.kendall_tau == pytest.approx(2 / 6**0.5)


def test_ubi_queries_and_events_import(shop: Engine, tmp_path: Path) -> None:
    """UBI 1.0: query records with the hit ids returned, click events naming the object, in two files."""
    queries, events = [], []
    for i, row in enumerate(ROWS):
        queries.append({
            "application": "shop", "query_id": f"u{i}", "client_id": f"c{i}", "user_query": row["query"],
            "query_response_id": f"r{i}", "query_response_hit_ids": row["shown"], "timestamp": "2026-11-01T00:00:00Z",
        })  # fmt: skip
        events += [
            {"application": "shop", "action_name": "click", "query_id": f"u{i}", "session_id": f"s{i}",
             "client_id": f"c{i}", "timestamp": "2026-11-01T00:00:01Z", "message_type": "CLICK",
             "event_attributes": {"object": {"object_id": doc, "object_id_field": "_id"}, "position": {"ordinal": 1}}}
            for doc in row["clicked"]
        ]  # fmt: skip
        events.append({"action_name": "hover", "query_id": f"u{i}", "client_id": f"c{i}"})
    imported = import_clicks(
        shop, "shop", _log(tmp_path / "ubi_queries.jsonl", queries), events=_log(tmp_path / "ubi_events.jsonl", events),
        min_impressions=5, save=False,
    )  # fmt: skip
    assert imported.format == "UBI 1.0" and (imported.impressions, imported.sessions, imported.pairs) == (12, 12, 5)
    assert imported.grades == {2: 1, 3: 1, 0: 2, 1: 1} and not imported.saved
    assert not [r for r in judgment_rows(shop.settings, "shop") if r.source == "clicks"]


def test_a_csv_log_through_the_cli(shop: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(shop.settings.data_dir))
    monkeypatch.setenv("WORKBENCH_PERSIST_DIR", str(shop.settings.persist_dir))
    monkeypatch.setenv("WORKBENCH_OFFLINE", "1")
    for key in ("embedding_model", "reranker_model"):
        monkeypatch.setenv({"embedding_model": "EMBEDDING_MODEL", "reranker_model": "RERANKER_MODEL"}[key],
                           str(getattr(shop.settings, key)))  # fmt: skip
    lines = ["query,shown,clicked,session,time"] + [
        f"{r['query']},{' '.join(r['shown'])},{'|'.join(r['clicked'])},{r['session']}," for r in ROWS
    ]
    log = tmp_path / "clicks.csv"
    log.write_text("\n".join(lines) + "\n")
    assert (
        main(["judgments", "clicks", str(log), "--collection", "shop", "--model", "pbm", "--min-impressions", "3"]) == 0
    )
    out = capsys.readouterr().out
    assert (
        "Read 12 rows of clicks.csv (plain log): 12 sessions, 12 impressions, 2 queries, 5 (query, document) pairs"
        in out
    )
    assert "clicks: position-based model (EM), 12 sessions of clicks.csv: 5 pairs graded" in out
    assert "Agreement with people on 5 pairs people graded too" in out and "Kept as the rater 'clicks:pbm'" in out
    assert main(["query-sets", "add", "busy", "--from-log", str(log), "--collection", "shop", "--size", "5"]) == 0
    assert (
        "query set 'busy': 2 queries (2 of 2 queries of clicks.csv, most frequent, seed 0)" in capsys.readouterr().out
    )
    assert main(["query-sets", "show", "busy"]) == 0
    assert capsys.readouterr().out.splitlines() == ["q1\t6\therons and fish", "q2\t6\tOak  Trees"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"query": "herons and fish", "shown": ["x1", "x2"], "clicked": ["x1"]}], "None of the ids log.jsonl shows"),
        ([{"query": "herons and fish", "shown": [], "clicked": []}], "1 rows that showed nothing"),
        ([{"query": "", "shown": ["d0"]}], "1 rows without a query"),
        ([{"query": "\u200b\u2060 \ufeff", "shown": ["d0"]}], "1 rows without a query"),  # nothing visible in it
        ([{"query": "q", "shown": "d0", "clicked": {"a": 1}}], "line 1: ids must be a list; got dict"),
        ([{"query": "q", "shown": ["d0\x1b[31m"]}], "line 1: document id must be"),
        (["not an object"], "line 1: not a JSON object"),
    ],
)
def test_hostile_logs_are_one_clear_line(shop: Engine, tmp_path: Path, rows: list, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        import_clicks(shop, "shop", _log(tmp_path / "log.jsonl", rows))


def test_broken_deep_and_huge_logs(shop: Engine, tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"query": "a", "shown": ["d0"]}\n{"query": \n')
    with pytest.raises(InputError, match=r"broken.jsonl, line 2: not a JSON object"):
        import_clicks(shop, "shop", broken)
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"query": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(InputError, match=r"deep.jsonl, line 1: not a JSON object"):
        import_clicks(shop, "shop", deep)
    huge = tmp_path / "huge.csv"
    huge.write_text("query,shown,clicked\n" + "herons,d0,d0\n" * 1_000_000)
    with pytest.raises(InputError, match="more than 500,000 rows; give a sample"):
        import_clicks(shop, "shop", huge)
    with pytest.raises(InputError, match="neither JSON lines nor a CSV with the columns query and shown"):
        import_clicks(shop, "shop", _write(tmp_path / "x.csv", "a,b\n1,2\n"))


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_an_id_shown_twice_in_one_list_is_counted_at_its_first_place(shop: Engine, tmp_path: Path) -> None:
    rows = [{"query": "oak trees", "shown": ["d2", "d3", "d2", "d2"], "clicked": ["d2"]} for _ in range(3)]
    imported = import_clicks(shop, "shop", _log(tmp_path / "log.jsonl", rows), save=False)
    assert imported.skipped == {"ids shown twice in one list (the first place kept)": 6}
    assert imported.pairs == 2


def test_clicks_on_unshown_and_unknown_ids_are_counted_not_kept(shop: Engine, tmp_path: Path) -> None:
    rows = [{"query": "oak trees", "shown": ["d2", "zz", "d3"], "clicked": ["d2", "d5"]} for _ in range(5)]
    imported = import_clicks(shop, "shop", _log(tmp_path / "log.jsonl", rows), save=False)
    assert imported.skipped == {"clicks on ids not shown in their list": 5} and imported.unknown_ids == 5
    assert imported.pairs == 2 and imported.sessions == 5
    text = imported.summary()
    assert "Skipped 5 shown ids that are not documents of 'shop'." in text
    assert "Skipped 5 clicks on ids not shown in their list." in text


def test_query_sets_drawn_from_a_log_by_frequency(shop: Engine, tmp_path: Path) -> None:
    texts = ["oak trees"] * 5 + ["Oak  Trees"] * 1 + ["moss"] * 3 + ["herons and fish"] * 2 + ["stones"]
    log = [Impression(text, ("d0",)) for text in texts]
    assert query_frequencies(log) == [("oak trees", 6), ("moss", 3), ("herons and fish", 2), ("stones", 1)]
    judged = {"q1": "herons and fish", "q2": "oak trees"}
    top = log_query_set("top", log, sample="top", size=2, judged=judged)
    assert [(q.id, q.text, q.weight) for q in top.queries] == [
        ("q2", "oak trees", 6.0),
        (typed_query_id("moss"), "moss", 3.0),
    ]
    pps = log_query_set("pps", log, sample="pps", size=4, seed=3, judged=judged)
    assert sorted(q.text for q in pps.queries) == sorted(["oak trees", "moss", "herons and fish", "stones"])
    assert {q.weight for q in pps.queries} == {1.0} and "by frequency (PPS), seed 3" in pps.source
    # PPS by frequency: over many draws of one query, each is drawn in proportion to its frequency (6:3:2:1).
    drawn = Counter(log_query_set("p", log, sample="pps", size=1, seed=s).queries[0].text for s in range(3000))
    assert drawn["oak trees"] / 3000 == pytest.approx(6 / 12, abs=0.03)
    assert drawn["stones"] / 3000 == pytest.approx(1 / 12, abs=0.02)
    uniform = Counter(log_query_set("r", log, sample="random", size=1, seed=s).queries[0].text for s in range(3000))
    assert uniform["stones"] / 3000 == pytest.approx(1 / 4, abs=0.03)
    with pytest.raises(InputError, match="The sample is one of top, random, pps"):
        log_query_set("x", log, sample="often")


def test_case_and_spacing_variants_of_a_query_are_one_query(shop: Engine, tmp_path: Path) -> None:
    """Issue 51: pairs are keyed by the query as people match it (case and spacing ignored), so two spellings are
    one query whose impressions count together, never two queries whose grades overwrite each other."""
    rows = [{"query": q, "shown": ["d0", "d1"], "clicked": ["d0"]} for q in ("Herons and fish", "herons  AND fish")]
    done = import_clicks(shop, "shop", _log(tmp_path / "log.jsonl", rows * 3), min_impressions=6)
    assert done.queries == 1 and done.graded == 2  # 6 impressions of one query, not 3 of two
