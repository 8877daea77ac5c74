"""`workbench explain`: why the reranker scored a document as it did (sentences and query terms left out)."""

from __future__ import annotations

import argparse

from workbench.cli.common import print_json, settings_from, shown
from workbench.cli.plans import plan_from
from workbench.engine import Engine
from workbench.rerankers.served.pricing import parse_prices
from workbench.services.explain import explain_document


def cmd_explain(args: argparse.Namespace) -> int:
    prices = parse_prices(args.price)
    engine = Engine(settings_from(args))
    explanation = explain_document(engine, args.text, args.doc, plan_from(args, engine), prices=prices)
    if args.json:
        print_json(explanation)
    else:
        print(shown(explanation.to_markdown()))
    return 0
