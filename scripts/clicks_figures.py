"""The clicks figures the manual quotes (issue 41): a click log simulated from the demo's judgments (each judged
query's dense and reranked top 10 shown 20 times each, clicks drawn from the position-based model the online test
is sized with), read back by `workbench judgments clicks` with COEC and with the position-based model, each one's
agreement with the shipped grades; and the online test the demo's evaluation (dense, k = 50, top 10) implies.

    .venv/bin/python scripts/clicks_figures.py           # measure (about 2 minutes on 2 cores), then write
    .venv/bin/python scripts/clicks_figures.py --write   # write the blocks again from the kept record
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures_blocks import FIGURES, made_by, script_main, stamp

RECORD = FIGURES / "clicks.json"
PREFIX = "clicks-"
SHOWN_EACH = 20  # impressions of each of a query's two lists
SEED = 11


def measure(shared: Path) -> dict[str, Any]:
    """The simulated log, its two imports (nothing kept), and the demo's online test."""
    from workbench.clicks.grades import import_clicks
    from workbench.clicks.interleaving import online_test_size
    from workbench.clicks.models import examination, simulate_clicks
    from workbench.config import Settings
    from workbench.engine import Engine
    from workbench.evaluation import run_evaluation
    from workbench.paths import user_cache_dir
    from workbench.services.demo import DEMO_COLLECTION, demo_dataset, ensure_demo_collection
    from workbench.vocab import CLICK_ATTRACTIVENESS

    folder = user_cache_dir() / "clicks-figures"
    settings = Settings(
        data_dir=folder, offline=True, models_dir=str(shared / "models"), reranker_model="minilm-l6-qa-reranker"
    )
    engine = Engine(settings)
    ensure_demo_collection(engine)
    dataset = demo_dataset(settings=settings)
    plan = engine.plan(collection=DEMO_COLLECTION, retrieval="dense", k=50, top_n=10)
    lists, grades = {}, {}
    for qid, text in dataset.queries.items():
        found = engine.search(text, plan)
        first = [c.metadata.get("document_id", c.id) for c in sorted(found.candidates, key=lambda c: c.vector_rank)]
        reranked = [c.metadata.get("document_id", c.id) for c in sorted(found.candidates, key=lambda c: c.rerank_rank)]
        lists[text] = [first[:10], reranked[:10]] * SHOWN_EACH
        grades[text] = dataset.qrels.get(qid, {})
    impressions = simulate_clicks(lists, grades, examination(10), CLICK_ATTRACTIVENESS, seed=SEED)
    log = folder / "demo-clicks.jsonl"
    log.write_text(
        "".join(
            json.dumps({"query": i.query, "shown": list(i.shown), "clicked": sorted(i.clicked), "session": f"s{n}"})
            + "\n"
            for n, i in enumerate(impressions)
        ),
        encoding="utf-8",
    )
    models = {}
    for model in ("coec", "pbm"):
        read = import_clicks(engine, DEMO_COLLECTION, log, model=model, save=False)
        models[model] = {
            "graded": read.graded, "shared": read.agreement.shared_pairs, "agreed": read.agreement.agreed,
            "kappa": read.agreement.kappa, "tau": read.agreement.kendall_tau, "impressions": read.impressions,
            "queries": read.queries,
        }  # fmt: skip
    report = run_evaluation(engine, dataset, plan)
    online = online_test_size(report)
    return stamp(
        {
            "backend": report.reranker_backend,
            "models": models,
            "verdict": report.verdict.words() if report.verdict else "",
            "online": online.model_dump(),
        }
    )


def footer(record: dict[str, Any]) -> str:
    return made_by(record, "clicks_figures.py")


def render(name: str, record: dict[str, Any]) -> str:
    """The text of one block, from the record."""
    if name == "clicks-agreement":
        coec, pbm = record["models"]["coec"], record["models"]["pbm"]
        return (
            f"On a log simulated from the demo's grades ({coec['impressions']:,} impressions of its {coec['queries']} "
            f"judged queries' dense and reranked top 10s, position-based clicks), each pair shown at least 5 times "
            f"graded: COEC agreed with the shipped grades at kappa {coec['kappa']:.3f} and Kendall's tau "
            f"{coec['tau']:.3f} (the same grade on {coec['agreed']} of {coec['shared']} pairs), the position-based "
            f"model at kappa {pbm['kappa']:.3f} and tau {pbm['tau']:.3f} ({pbm['agreed']} of {pbm['shared']}). "
            f"{footer(record)}\n"
        )
    if name == "clicks-online-test":
        o = record["online"]
        needed = f"about {o['impressions_needed']:,} impressions" if o["impressions_needed"] else "no finite number"
        return (
            f'On the demo (dense, k = 50, top 10): the offline verdict "{record["verdict"].split(":")[0]}"; a '
            f"team-draft test of the first stage against the reranked list needs {needed} for 80 % power "
            f"(simulated: the reranked list wins {o['p_win']:.1%} of impressions and loses {o['p_loss']:.1%}). "
            f"{footer(record)}\n"
        )
    raise KeyError(f"no block named {name!r} in {RECORD.name}")


if __name__ == "__main__":
    sys.exit(script_main(sys.argv[1:], sys.modules[__name__]))
