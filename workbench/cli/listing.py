"""`workbench collections`: the collections and the ingests under way, without loading a model.

Only the settings and the store's client are imported here, so the listing answers in a moment, also while
another terminal ingests.
"""

from __future__ import annotations

import argparse
import json

from workbench.cli.common import settings_from, shown
from workbench.stores.registry import StoreRegistry


def cmd_collections(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    infos = StoreRegistry(settings).list()
    if args.json:
        print(json.dumps([i.model_dump() for i in infos], indent=2))
        return 0
    if not infos:
        print(
            shown(f"No collections in {settings.store_location}. Create one: workbench ingest PATH --collection NAME")
        )
        return 0
    print(f"{'name':<24} {'store':<9} {'count':>8}  {'dim':>5}  embedding model")
    for i in infos:
        embedder = i.embedding_model or ("not recorded: declare it (embedding_model)" if i.read_only else "—")
        count = str(i.count) if i.count >= 0 else "?"  # a search service does not say
        print(shown(f"{i.name:<24} {i.store:<9} {count:>8}  {i.dimension or '—':>5}  {embedder}"))
        if i.problem:
            print(shown(f"{'':<24} cannot be opened: {i.problem}"))
        elif i.read_only:
            print(shown(f"{'':<24} attached read-only: written by {i.written_by}"))
        if i.ingesting is not None:
            print(shown(f"{'':<24} {i.ingesting.words()}"))
    return 0
