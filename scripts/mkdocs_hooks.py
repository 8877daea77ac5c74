"""MkDocs hooks (mkdocs.yml: hooks): each `<!-- reference:NAME -->` of a page replaced by the reference
`scripts/docs_reference.py` generates from the code, when the site is built."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docs_reference import REFERENCES

MARKER = re.compile(r"<!-- reference:(?P<name>[\w-]+) -->")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def generated(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in REFERENCES:
            raise KeyError(f"{page.file.src_path}: no reference named {name!r} (scripts/docs_reference.py)")
        return REFERENCES[name]()

    return MARKER.sub(generated, markdown)
