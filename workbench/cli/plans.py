"""The one adapter from a command's options to a search plan (as the app's sidebar and the API's request model
are theirs), and to an evaluation request (`evaluation_from`): kept apart from `cli.common` so that commands that
load no model (the collections listing) do not import the engine."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from workbench.cli.common import settings_from
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.evaluation.sequential import SequentialPlan
from workbench.inputs import parse_int_list
from workbench.rerankers.factory import on_backend
from workbench.services.evaluations import EvaluationRequest
from workbench.types import SearchPlan
from workbench.vocab import BACKEND_CHOICES, DEFAULT_RERANKER_CHOICE, spoken

__all__ = ["evaluation_from", "plan_from", "rerankers_from"]


def plan_from(args: argparse.Namespace, engine: Engine, **given: Any) -> SearchPlan:
    """The one search plan a command's options make: --collection, --retrieval, --fusion, -k, -n, --filter,
    --min-score and the reranker (`rerankers_from`), each left out taking the settings' default (`Engine.plan`).
    `given` sets a field the command decides itself (one first stage of a sweep, the collection a candidates file
    became)."""
    chosen = rerankers_from(args, engine.settings)
    fusion = getattr(args, "fusion", None)
    if given.get("retrieval") not in (None, "hybrid"):
        fusion = None  # one first stage of a sweep (`eval --retrieval dense,hybrid --fusion ...`) that fuses nothing
    fields: dict[str, Any] = {
        "collection": getattr(args, "collection", None),
        "retrieval": getattr(args, "retrieval", None),
        "fusion": fusion,
        "k": getattr(args, "k", None),
        "top_n": getattr(args, "n", None),
        "filters": getattr(args, "filter", None),
        "min_score": getattr(args, "min_score", None),
        "long_documents": getattr(args, "long_documents", None),
        "skip_gap": getattr(args, "skip_gap", None),
        "reranker": chosen[0] if len(chosen) == 1 else None,  # several are compared, each in a plan of its own
    }
    return engine.plan(**{**fields, **given})


def rerankers_from(args: argparse.Namespace, settings: Settings) -> list[str | None]:
    """The rerankers the options name: [None] for --no-rerank; each --reranker (repeatable for `eval`), else
    'default' (the configured one); with --backend, each local cross-encoder's id on that backend
    ('minilm@onnx'), so the backend travels in the plan and is named wherever the plan is."""
    if getattr(args, "no_rerank", False):
        return [None]
    named = getattr(args, "reranker", None) or []
    named = [named] if isinstance(named, str) else list(named)
    backend = getattr(args, "backend", None)
    if not backend or not (named or settings.reranker_enabled):
        return named or [DEFAULT_RERANKER_CHOICE]
    if backend not in BACKEND_CHOICES:
        raise InputError(f"--backend must be one of {spoken(BACKEND_CHOICES)}; got {backend!r}.")
    return [on_backend(model, backend) for model in named or [settings.reranker_model]]


SPEC_NAMES = {"retrieval": "retrieval", "fusion": "fusion", "k": "k", "n": "top_n", "top_n": "top_n",
              "reranker": "reranker", "backend": "backend", "collection": "collection",
              "long_documents": "long_documents"}  # fmt: skip


def plan_from_spec(engine: Engine, text: str, option: str, collection: str | None = None) -> SearchPlan:
    """A plan from `retrieval=hybrid,fusion=minmax 0.7,k=20,n=5,reranker=none,backend=onnx` (what `query-sets
    compare --a/--b` take), over `collection` and the settings' defaults; `backend` puts the reranker on it, as
    --backend does."""
    fields: dict[str, Any] = {"collection": collection}
    for part in filter(None, (p.strip() for p in (text or "").split(","))):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in SPEC_NAMES:
            raise InputError(f"{option}: '{part}' is not NAME=VALUE with NAME one of {', '.join(sorted(SPEC_NAMES))}.")
        name, value = SPEC_NAMES[key.strip()], value.strip()
        fields[name] = int(value) if name in {"k", "top_n"} and value.isdigit() else value
        if name == "reranker" and value.lower() in {"none", ""}:
            fields[name] = None
    named = fields.pop("reranker", DEFAULT_RERANKER_CHOICE)  # None: reranker=none
    options = argparse.Namespace(
        reranker=None if named == DEFAULT_RERANKER_CHOICE else named, backend=fields.pop("backend", None),
        no_rerank=named is None,
    )  # fmt: skip
    return engine.plan(**fields, reranker=rerankers_from(options, engine.settings)[0])


def stopping_from(args: argparse.Namespace) -> SequentialPlan | None:
    """The stopping rule `--stop-when-settled`, `--tolerance`, `--seed` and `--looks` name (None without the flag)."""
    if not args.stop_when_settled:
        if getattr(args, "looks", None) is not None:
            raise InputError("--looks goes with --stop-when-settled (how often the stopping rule looks).")
        return None
    return SequentialPlan(seed=args.seed, tolerance=args.tolerance, looks=args.looks)


def evaluation_from(args: argparse.Namespace, settings: Settings | None = None) -> EvaluationRequest:
    """The evaluation a command's options ask for (`eval`, `gate`, `tune`, `long-documents`, `query-sets add`): the
    judged queries (DATASET, or --queries with --qrels, or --collection's stored judgments), the collection, and
    --candidates, --corpus, --corpus-sample, --query-set and --max-queries where the command takes them; for
    `eval`, --depth, the --reranker values compared and --no-save."""
    named = getattr(args, "dataset", None)
    demo = named == "demo" and not Path("demo").exists()  # a folder of that name wins
    depth_text = getattr(args, "depth", None)
    depth = None
    if depth_text is not None:
        depth = () if depth_text.strip().lower() == "none" else tuple(parse_int_list(depth_text, "--depth"))
    named_rerankers = getattr(args, "reranker", None)
    several = isinstance(named_rerankers, list) and len(named_rerankers) > 1  # `eval`'s repeatable --reranker
    compared = rerankers_from(args, settings or settings_from(args)) if several else []
    return EvaluationRequest(
        demo=demo, beir=None if demo else named, queries=getattr(args, "queries", None),
        qrels=getattr(args, "qrels", None), split=getattr(args, "split", None) or "test",
        shipped=getattr(args, "shipped_judgments", False), collection=getattr(args, "collection", None),
        candidates=getattr(args, "candidates", None), corpus=getattr(args, "corpus", None),
        corpus_sample=getattr(args, "corpus_sample", None), query_set=getattr(args, "query_set", None),
        max_queries=getattr(args, "max_queries", None), depth=depth,
        rerankers=tuple(model for model in compared if model), keep=not getattr(args, "no_save", False),
        rerank_budget_ms=getattr(args, "rerank_budget_ms", None),
        serve_concurrency=getattr(args, "serve_concurrency", None) or 1,
    )  # fmt: skip
