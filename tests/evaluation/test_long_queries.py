"""Evaluation scores the full query text: classic test collections have queries over 512 characters (the limit
of the interactive surfaces), and cutting them would change the figures without a word."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
import torch
from sentence_transformers import CrossEncoder, SentenceTransformer

from workbench.cli import main

TOPICS = ["glaciers carve valleys", "bees dance to show flowers", "rivers build deltas", "volcanoes release ash"]
FILLER = "this long query first describes the background of the information need at some length " * 7


def _folder(root: Path) -> Path:
    folder = root / "longq"
    (folder / "qrels").mkdir(parents=True)
    docs, queries, qrels = [], [], ["query-id\tcorpus-id\tscore"]
    for t, topic in enumerate(TOPICS):
        for d in range(3):
            docs.append({"_id": f"d{t}{d}", "title": "", "text": f"Passage {d} about {topic}, variant {d * 7 + t}."})
        text = f"{FILLER} and then it finally asks about {topic} in particular, and why {topic} matters."
        assert len(text) > 512
        queries.append({"_id": f"q{t}", "text": text})
        qrels += [f"q{t}\td{t}0\t2", f"q{t}\td{t}1\t1"]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")
    return folder


def _independent(folder: Path, models: dict[str, Path], cut: int | None) -> tuple[float, float]:
    """nDCG@10 before and after reranking, from the models themselves and pytrec_eval, queries cut at `cut`."""
    docs = [json.loads(line) for line in (folder / "corpus.jsonl").read_text().splitlines()]
    queries = {q["_id"]: q["text"][:cut] for q in map(json.loads, (folder / "queries.jsonl").read_text().splitlines())}
    embedder = SentenceTransformer(str(models["embedder"]))
    reranker = CrossEncoder(str(models["reranker"]), max_length=256)
    matrix = embedder.encode([d["text"] for d in docs], normalize_embeddings=True)
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc] = int(grade)
    before, after = {}, {}
    for qid, text in queries.items():
        vector = embedder.encode([text], normalize_embeddings=True)[0]
        top = np.argsort(-(matrix @ vector), kind="stable")[:10]
        logits = reranker.predict([(text, docs[i]["text"]) for i in top], activation_fn=torch.nn.Identity())
        before[qid] = {docs[i]["_id"]: float((matrix @ vector)[i]) for i in top}
        after[qid] = {docs[i]["_id"]: float(s) for i, s in zip(top, logits, strict=True)}
    measure = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
    means = [float(np.mean([v["ndcg_cut_10"] for v in measure.evaluate(run).values()])) for run in (before, after)]
    return means[0], means[1]


def test_eval_scores_queries_longer_than_512_characters_in_full(
    tmp_path: Path, tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _folder(tmp_path)
    monkeypatch.setenv("WORKBENCH_EMBEDDING_MODEL", str(tiny_models["embedder"]))
    monkeypatch.setenv("RERANKER_MODEL", str(tiny_models["reranker"]))
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    assert main(["eval", str(folder), "--collection", "longq", "-k", "10", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    full = _independent(folder, tiny_models, None)
    cut = _independent(folder, tiny_models, 512)
    assert full != pytest.approx(cut, abs=1e-6)  # cutting the queries would change the figures
    assert summary["before"]["ndcg@10"] == pytest.approx(full[0], abs=1e-6)
    assert summary["after"]["ndcg@10"] == pytest.approx(full[1], abs=1e-6)
