"""PyLate's own ColBERT, run in its environment (.venv-pylate: its pins differ from ours): what a ColBERT reranker
is held to (tests/rerankers/test_colbert.py, scripts/family_figures.py).

    .venv-pylate/bin/python scripts/pylate_reference.py build ENCODER_FOLDER OUT_FOLDER
        a ColBERT from a sentence-transformers encoder (a fresh projection, seed 0), saved by PyLate
    .venv-pylate/bin/python scripts/pylate_reference.py score COLBERT_FOLDER ASKED_JSON
        for each [query, [passages]] in ASKED_JSON, PyLate's scores as JSON: "masked" (colbert_scores with the
        padding masked), "alone" (rank.rerank of each passage alone) and "rerank" (rank.rerank of the whole list,
        padded with zero vectors as PyLate pads), in the passages' order
"""

from __future__ import annotations

import json
import sys


def build(encoder: str, out: str) -> None:
    import torch
    from pylate import models

    torch.manual_seed(0)
    models.ColBERT(model_name_or_path=encoder, device="cpu").save(out)


def score(folder: str, asked_path: str) -> None:
    import torch
    from pylate import models, rank
    from pylate.scores import colbert_scores

    with open(asked_path, encoding="utf-8") as asked_file:
        asked = json.load(asked_file)
    model = models.ColBERT(model_name_or_path=folder, device="cpu")
    out = []
    for query, passages in asked:
        q = model.encode([query], is_query=True, convert_to_tensor=True)[0]
        docs = [torch.as_tensor(d) for d in model.encode(passages, is_query=False)]
        padded = torch.nn.utils.rnn.pad_sequence(docs, batch_first=True)
        mask = torch.nn.utils.rnn.pad_sequence([torch.ones(len(d)) for d in docs], batch_first=True)
        masked = colbert_scores(q.unsqueeze(0), padded, documents_mask=mask)[0].tolist()
        alone = [rank.rerank([[0]], [q], [[d]])[0][0]["score"] for d in docs]
        listed = {r["id"]: r["score"] for r in rank.rerank([list(range(len(docs)))], [q], [docs])[0]}
        out.append({"masked": masked, "alone": alone, "rerank": [listed[i] for i in range(len(docs))]})
    print(json.dumps(out))


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    {"build": build, "score": score}[command](*arguments)
