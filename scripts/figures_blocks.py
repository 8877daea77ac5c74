"""What every figures script shares: the marked blocks in the README and docs, the record of what made a figure
(machine, versions, date), and the number formats the blocks use.

A block is the text between `<!-- figures:NAME -->` and `<!-- /figures:NAME -->`. Each script owns the blocks whose
names begin with its prefix, renders them from its record in `docs/figures/`, and leaves every other block alone;
`tests/test_docs_figures.py` checks that every block reads as its record renders it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIGURES = REPO / "docs" / "figures"
DOCUMENTS = (REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")))  # the README and every page of the site
BLOCK = re.compile(r"(<!-- figures:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /figures:(?P=name) -->)", re.DOTALL)


def machine() -> dict[str, Any]:
    """The CPU, its core count and its widest vector instructions (what speed and int8 figures depend on)."""
    cpu, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    widest = next((f for f in ("avx512_vnni", "avx512f", "avx2") if f in flags), "no AVX2")
    return {"cpu": cpu, "cores": os.cpu_count() or 1, "vector": widest.replace("_", "-").upper()}


def versions() -> dict[str, str]:
    found = {}
    for name in ("rerank-workbench", "torch", "sentence-transformers", "onnxruntime", "openvino"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def today() -> str:
    """Today's date (UTC), as the records keep it."""
    return datetime.now(UTC).strftime("%Y-%m-%d")


def stamp(record: dict[str, Any]) -> dict[str, Any]:
    """The record with the machine, the versions and today's date added."""
    return {**record, "machine": machine(), "versions": versions(), "measured_at": today()}


def made_by(record: dict[str, Any], script: str) -> str:
    """One sentence: which script, when, on which backend and machine."""
    m = record["machine"]
    return (
        f"Measured by `scripts/{script}` on {record['measured_at']}: reranker backend {record['backend']}, "
        f"{m['cpu']} ({m['cores']} cores, {m['vector']}), workbench {record['versions'].get('rerank-workbench', '?')}."
    )


def p_text(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}" if p >= 0.01 else f"p = {p:.4f}"


def signed(x: float) -> str:
    return f"{x:+.3f}".replace("-", "−")


def table(header: list[str], rule: str, cells: list[list[str]], footer: str) -> str:
    """A Markdown table and, under it, what made its figures."""
    rows = ["| " + " | ".join(header) + " |", rule, *("| " + " | ".join(row) + " |" for row in cells)]
    return "\n".join(rows) + f"\n\n{footer}\n"


def blocks_named(prefix: str) -> list[str]:
    """The names of the blocks beginning with `prefix` in every document."""
    return [
        m.group("name")
        for document in DOCUMENTS
        for m in BLOCK.finditer(document.read_text(encoding="utf-8"))
        if m.group("name").startswith(prefix)
    ]


def rewrite(text: str, prefix: str, render: Callable[[str], str]) -> str:
    """`text` with each block whose name begins with `prefix` rendered anew; other blocks as they are."""

    def block(m: re.Match[str]) -> str:
        if not m.group("name").startswith(prefix):
            return m.group(0)
        return m.group(1) + render(m.group("name")) + m.group(4)

    return BLOCK.sub(block, text)


def write_documents(prefix: str, render: Callable[[str], str]) -> None:
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        document.write_text(rewrite(text, prefix, render), encoding="utf-8")


def data_dir_option(parser: argparse.ArgumentParser) -> None:
    """--data-dir: a folder where the script's collections are (or are ingested), to reuse across runs."""
    parser.add_argument("--data-dir", help="where the collections are (or are ingested); default the user's cache")


def script_main(argv: list[str], script: Any) -> int:
    """A figures script's command line, from the script module's own names (`__doc__`, RECORD, PREFIX, `measure`,
    `render`, `footer`, and `add_options` where it takes more): measure with the shared folder (and those options)
    and keep the record, unless `--write`; then render the script's blocks from the kept record into every
    document."""
    parser = argparse.ArgumentParser(description=script.__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="only write the blocks from the kept record")
    parser.add_argument("--shared", default=str(REPO.parent / "shared"), help="the shared folder (data/ inside)")
    if hasattr(script, "add_options"):
        script.add_options(parser)
    args = parser.parse_args(argv)
    if not args.write:
        options = {name: value for name, value in vars(args).items() if name not in ("write", "shared")}
        measured = script.measure(Path(args.shared), **options)
        script.RECORD.parent.mkdir(parents=True, exist_ok=True)
        script.RECORD.write_text(json.dumps(measured, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    kept = json.loads(script.RECORD.read_text(encoding="utf-8"))
    write_documents(script.PREFIX, lambda name: script.render(name, kept))
    print(script.footer(kept))
    return 0


def qa_settings(shared: Path, data_dir: str | None, cache_name: str) -> Any:
    """The settings a figures script measures with: the shared QA cross-encoder on fp32 torch, offline, in
    `data_dir` (or a folder of the user's cache named `cache_name`, kept between runs)."""
    from workbench.config import Settings
    from workbench.paths import user_cache_dir

    folder = Path(data_dir) if data_dir else user_cache_dir() / cache_name
    return Settings(
        data_dir=folder, offline=True, reranker_backend="torch",
        reranker_model=str(shared / "models" / "minilm-l6-qa-reranker"),
    )  # fmt: skip
