"""`workbench preferences`: blind side-by-side sessions from the command line (the same service as the Prefer
page and the API: `workbench.services.preferences`)."""

from __future__ import annotations

import argparse
import json

from workbench.cli.common import print_json, settings_from, shown, warn
from workbench.cli.plans import plan_from_spec
from workbench.engine import Engine
from workbench.preferences import open_preference_store
from workbench.services import preferences as blind


def cmd_start(args: argparse.Namespace) -> int:
    engine = Engine(settings_from(args))
    request = blind.PreferenceRequest(
        first=plan_from_spec(engine, args.a, "--a", args.collection),
        second=plan_from_spec(engine, args.b, "--b", args.collection),
        query_set=args.query_set, judged_of=args.judged, typed=tuple(args.query or ()), name=args.name,
        seed=args.seed,
    )  # fmt: skip
    session = blind.start_preferences(engine, request)
    if args.json:
        print_json(session)
        return 0
    print(shown(f"session {session.id}: {session.title}, {len(session.queries)} queries ({session.query_source})"))
    print(shown(f"next: workbench preferences next {session.id} --rater NAME"))
    return 0


def cmd_next(args: argparse.Namespace) -> int:
    pair = blind.next_pair(Engine(settings_from(args)), args.session, args.rater)
    if pair is None:
        if args.json:
            print("null")
        else:
            print(shown(f"Nothing left to choose for {args.rater}: `workbench preferences verdict {args.session}`."))
        return 0
    if args.json:
        print_json(pair)
        return 0
    print(shown(f"query {pair.position} of {pair.queries} [{pair.query_id}]: {pair.query}"))
    for side, passages in (("LEFT", pair.left), ("RIGHT", pair.right)):
        print(f"\n{side}")
        for rank, passage in enumerate(passages, 1):
            title = f"{passage.title}: " if passage.title else ""
            print(shown(f"  {rank:>2}. {title}{' '.join(passage.text.split())[:160]}"))
    print(shown(f"\nchoose: workbench preferences choose {pair.session_id} {pair.query_id} left|same|right|skip"))
    return 0


def cmd_choose(args: argparse.Namespace) -> int:
    added = blind.choose(Engine(settings_from(args)), args.session, args.query_id, args.choice, args.rater, args.key)
    print(shown(f"{args.choice} recorded for {args.query_id}" if added else "already recorded (the same --key)"))
    return 0


def cmd_undo(args: argparse.Namespace) -> int:
    blind.undo(Engine(settings_from(args)), args.session, args.rater)
    print(shown(f"{args.rater}'s last choice taken back"))
    return 0


def cmd_verdict(args: argparse.Namespace) -> int:
    session, verdict = blind.verdict_of(Engine(settings_from(args)), args.session)
    if args.json:
        print(json.dumps({**verdict.model_dump(mode="json"), "outcome": verdict.outcome, "words": verdict.lines()}))
        return 0
    print(shown(f"{session.title}: {verdict.queries} queries ({session.query_source})"))
    for line in verdict.lines():
        print(shown(line))
    for disagreement in verdict.disagreements[:10]:
        said = ", ".join(f"{rater} {side}" for rater, side in disagreement.choices.items())
        warn(f"disagreement on {disagreement.query_id} ({disagreement.query[:60]}): {said}")
    return 0


def cmd_keep(args: argparse.Namespace) -> int:
    experiment = blind.keep_preferences(Engine(settings_from(args)), args.session, name=args.name, tags=tuple(args.tag))
    print(
        shown(f"kept as experiment {experiment.id}: {experiment.title} (`workbench experiments show {experiment.id}`)")
    )
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    sessions = open_preference_store(settings_from(args)).sessions()
    if args.json:
        print(json.dumps([{"id": s.id, "title": s.title, "queries": len(s.queries),
                           "created_at": s.created_at.isoformat()} for s in sessions]))  # fmt: skip
        return 0
    if not sessions:
        print("No preference sessions yet: `workbench preferences start --help`.")
    for session in sessions:
        print(shown(f"{session.id}  {session.created_at:%Y-%m-%d %H:%M}  {len(session.queries):>5} queries  "
                    f"{session.title}"))  # fmt: skip
    return 0
