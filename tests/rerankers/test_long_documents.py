"""Long documents: windows cut by the reranker's own tokenizer (counted against it), MaxP finding an answer that
sits past the first window where FirstP cannot, SumP's sum by hand, the strategy in a plan, refused where it cannot
run, and `compare_long_documents` on a constructed collection whose answers sit late in long passages."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.rerank_apis import Behaviour, RerankApis
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation import Dataset
from workbench.evaluation.long_documents import compare_long_documents
from workbench.passages import parse_long_documents
from workbench.rerankers import create_reranker
from workbench.rerankers.crossencoder import CrossEncoderReranker, truncate_pair
from workbench.rerankers.served.remote import RemoteReranker
from workbench.rerankers.windows import windowed_scores
from workbench.types import SearchPlan

FILLER = " ".join(
    f"On day {i} the committee reviewed the parks budget, the library hours and the bus timetable." for i in range(30)
)
FACTS = {
    "eiffel": ("How tall is the Eiffel Tower?", "The Eiffel Tower is 330 metres tall to the tip of its antenna."),
    "nile": ("How long is the river Nile?", "The Nile is about 6,650 kilometres long, the longest river in Africa."),
    "everest": ("How high is Mount Everest?", "Mount Everest rises 8,849 metres above sea level."),
}


@pytest.fixture(scope="module")
def qa_reranker(real_reranker_dir: Path) -> CrossEncoderReranker:
    settings = Settings(reranker_model=str(real_reranker_dir), offline=True, reranker_backend="torch")
    reranker = create_reranker(settings.reranker_model, settings)
    assert isinstance(reranker, CrossEncoderReranker)
    return reranker


def token_count(reranker: CrossEncoderReranker, text: str) -> int:
    return len(reranker.tokenizer(text, add_special_tokens=False)["input_ids"])


def test_windows_are_cut_by_the_rerankers_own_tokenizer(qa_reranker: CrossEncoderReranker) -> None:
    query, answer = FACTS["eiffel"]
    document = f"{FILLER} {answer}"
    total, query_tokens = token_count(qa_reranker, document), token_count(qa_reranker, query)
    room = len(truncate_pair([0] * query_tokens, [0] * total, qa_reranker._budget)[1])
    assert room == qa_reranker.max_length - 3 - query_tokens  # [CLS] query [SEP] window [SEP]
    windows = qa_reranker.windows(query, document, limit=32)
    counts = [token_count(qa_reranker, w) for w in windows]
    stride = room // 2
    assert len(windows) == math.ceil((total - room) / stride) + 1  # windows start every half window to the end
    assert all(count <= room for count in counts) and counts[0] == room
    assert document.startswith(windows[0]) and document.endswith(windows[-1]) and answer in windows[-1]
    assert answer not in windows[0]  # what FirstP reads: the first window, without the answer
    assert windows[1] in document and document.index(windows[1]) > 0
    assert qa_reranker.windows(query, document, limit=2) == windows[:2]
    wide = qa_reranker.windows(query, document, limit=32, stride=room)  # no overlap
    assert len(wide) == math.ceil(total / room) and "".join(wide).replace(" ", "") == document.replace(" ", "")
    assert qa_reranker.windows(query, answer, limit=4) == [answer]  # a text that fits is one window: itself


def test_maxp_finds_the_answer_firstp_never_reads_and_sump_adds_probabilities(
    qa_reranker: CrossEncoderReranker,
) -> None:
    query, answer = FACTS["eiffel"]
    late = f"{FILLER} {answer}"
    texts = [late, FILLER]
    firstp, _ = qa_reranker.score(query, texts)
    assert abs(firstp[0] - firstp[1]) < 0.5  # FirstP reads the same filler in both: it cannot tell them apart
    maxp, _, windows = windowed_scores(qa_reranker, query, texts, parse_long_documents("maxp windows=32"))
    assert maxp[0] > 0 > maxp[1] and maxp[0] - maxp[1] > 5  # MaxP reads the answer's window
    cut = [qa_reranker.windows(query, text, 32) for text in texts]
    assert windows == sum(len(c) for c in cut)
    each, _ = qa_reranker.score(query, cut[0])
    assert maxp[0] == max(each)
    sump, _, _ = windowed_scores(qa_reranker, query, texts, parse_long_documents("sump windows=32"))
    assert sump[0] == pytest.approx(sum(1 / (1 + math.exp(-s)) for s in each))
    firstp_alone, _, _ = windowed_scores(qa_reranker, query, texts, parse_long_documents("maxp windows=1"))
    assert firstp_alone == pytest.approx(firstp, abs=1e-4)  # one window is what FirstP reads


@pytest.mark.parametrize(
    ("text", "spec"),
    [("maxp", "maxp windows=4"), ("SumP windows=3 stride=64", "sump windows=3 stride=64"), ("firstp", "firstp")],
)
def test_a_strategy_is_read_from_text(text: str, spec: str) -> None:
    assert parse_long_documents(text).spec == spec


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "short text"),
        ("maxq", "Unknown long-document strategy 'maxq'"),
        ("maxp windows=0", "windows must be from 1 to 32"),
        ("maxp windows=x", "windows must be a whole number"),
        ("maxp stride=99999", "stride must be from 1 to 4096"),
        ("firstp windows=2", "firstp takes nothing"),
        ("maxp depth=3", "'depth=3' is not understood"),
    ],
)
def test_a_bad_strategy_is_one_clear_line(text: str, said: str) -> None:
    with pytest.raises(InputError, match=said):
        parse_long_documents(text)


def test_the_plan_names_its_strategy() -> None:
    plan = SearchPlan(collection="c", k=10, top_n=5, long_documents="MAXP windows=8")
    assert plan.long_documents == "maxp windows=8" and plan.key.endswith(" · maxp windows=8")
    assert SearchPlan(collection="c", k=10, top_n=5, long_documents="firstp").long_documents is None  # the default


@pytest.mark.live_server
def test_a_service_reranker_is_refused_windows_in_one_line(tiny_engine: Engine, corpus_dir: Path) -> None:
    tiny_engine.ingest(corpus_dir, "nature")
    with RerankApis(Behaviour(key="unused")) as server:
        plan = tiny_engine.plan(collection="nature", k=5, reranker=f"{server.base}/service", long_documents="maxp")
        with pytest.raises(InputError, match="is a service whose tokenizer the workbench does not hold"):
            tiny_engine.search("volcanoes", plan)
        assert isinstance(tiny_engine.reranker_of(plan), RemoteReranker)
        assert tiny_engine.search("volcanoes", plan.with_(long_documents=None)).reranker_model  # FirstP runs


@pytest.fixture
def late_answers(tmp_path: Path, tiny_models: dict[str, Path], real_reranker_dir: Path) -> tuple[Engine, Dataset]:
    """A BEIR folder of long passages, each fact's answer at the end of one of them, ingested whole."""
    folder = tmp_path / "late"
    (folder / "qrels").mkdir(parents=True)
    documents = [{"_id": name, "title": "", "text": f"{FILLER} {fact}"} for name, (_, fact) in FACTS.items()]
    documents += [{"_id": f"filler{i}", "title": "", "text": FILLER.replace("day", f"week {i} day")} for i in range(3)]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in documents) + "\n")
    (folder / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": name, "text": query}) for name, (query, _) in FACTS.items()) + "\n"
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{name}\t{name}\t1\n" for name in FACTS)
    )
    settings = Settings(
        data_dir=tmp_path / "data", embedding_model=str(tiny_models["embedder"]), reranker_model=str(real_reranker_dir),
        reranker_backend="torch", chunk_size=20000, chunk_overlap=0, offline=True,
    )  # fmt: skip
    return Engine(settings), Dataset.from_beir(folder)


def test_compare_long_documents_on_answers_past_the_window(late_answers: tuple[Engine, Dataset]) -> None:
    engine, dataset = late_answers
    plan = engine.plan(collection="late", k=6, top_n=3)
    comparison = compare_long_documents(engine, dataset, plan, ["maxp windows=8", "sump windows=8"], timing_queries=1)
    firstp, maxp, sump = comparison.strategies
    assert [row.strategy for row in comparison.strategies] == ["firstp", "maxp windows=8", "sump windows=8"]
    assert maxp.ndcg_after == pytest.approx(1.0)  # each answer's passage first: its window holds the answer
    assert firstp.ndcg_after < 1.0 and maxp.vs_firstp.delta == pytest.approx(1.0 - firstp.ndcg_after)
    assert firstp.windows_per_query == 6 and maxp.windows_per_query == sump.windows_per_query > 6
    assert all(u.cut_passages == 6 and u.unread_share > 0.4 for u in comparison.unread)
    assert comparison.queries == 3 and maxp.top_n_changed <= 3
    result = engine.search("How tall is the Eiffel Tower?", plan.with_(long_documents="maxp windows=8"))
    assert result.reranked[0].metadata["document_id"] == "eiffel" and result.windows_scored == maxp.windows_per_query
    assert result.long_documents == "maxp windows=8" and "Under FirstP the reranker never reads" in comparison.words
