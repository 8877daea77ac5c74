"""`workbench doctor`: what this machine is, and what `auto` runs the reranker on here, with the figures the
choice rests on (measured once per model and machine, and kept)."""

from __future__ import annotations

import argparse
import json

from workbench.cli.common import settings_from, shown, warn
from workbench.rerankers.factory import reranker_backend_choice


def cmd_doctor(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    model = settings.reranker_model
    measured = reranker_backend_choice(settings, recalibrate=args.recalibrate, progress=warn)
    if measured is None:
        print(shown(f"The reranker {model} is a service: it has no local backend to choose."))
        return 0
    facts, choice = measured
    if args.json:
        body = {"machine": facts.model_dump(), "choice": choice.model_dump(mode="json") if choice else None}
        print(shown(json.dumps(body, indent=2)))
        return 0
    flags = ", ".join(facts.flags) or "none of note"
    print(shown(f"machine: {facts.cpu} ({facts.arch}); flags {flags}; int8 configuration {facts.int8_config}"))
    print(shown(f"GPU: {facts.gpu or 'none in use'}"))
    print(shown(f"reranker: {model} (RERANKER_BACKEND={settings.reranker_backend})"))
    if choice is None:
        print("auto → torch in half precision on the GPU (no calibration there)")
        return 0
    print(shown(choice.summary()))
    used = choice.chosen if settings.reranker_backend == "auto" else settings.reranker_backend
    print(shown(f"runs on: {used}; measured {choice.measured_at:%Y-%m-%d %H:%M} UTC in {choice.seconds:.1f} s"))
    return 0
