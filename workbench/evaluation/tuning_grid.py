"""A tuning run's grid: its first stages (a fusion is hybrid under it), its k values and the chunkings it compares,
turned into the plans of its cells and checked before any work."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.errors import InputError
from workbench.fusion import parse_fusion
from workbench.inputs import parse_chunking, validate_collection_name, whole_number
from workbench.types import SearchPlan
from workbench.vocab import DEFAULT_FIRST_STAGES, DEFAULT_TUNE_KS, MAX_K, RETRIEVAL_MODES

MAX_CELLS = 60


def first_stage_of(text: str) -> tuple[str, str | None]:
    """(retrieval, fusion) from a grid's first stage: 'dense', 'bm25', 'hybrid' (the settings' RRF), or a fusion
    ('rrf k=20', 'minmax 0.7', 'hybrid:zscore 0.3'), which is hybrid under that fusion."""
    text = (text or "").strip()
    if text in RETRIEVAL_MODES:
        return text, None
    return "hybrid", parse_fusion(text.removeprefix("hybrid:").removeprefix("hybrid ")).spec


def chunked_collection(collection: str, chunking: tuple[int, int]) -> str:
    """The collection a chunking of `collection`'s corpus is ingested into: '<collection>-chunks-500-50'."""
    return f"{collection}-chunks-{chunking[0]}-{chunking[1]}"


def check_grid(
    first_stages: Sequence[str], ks: Sequence[Any], base: SearchPlan, chunkings: Sequence[Any] = ()
) -> list[SearchPlan]:
    """The grid's plans (chunking × first stage × k, each with the base plan's reranker, filters and top n, at
    most k), checked before any work: InputError naming the first bad value. Chunkings, when given (two or more),
    each search a collection of their own (`chunked_collection`)."""
    stages = list(dict.fromkeys(first_stage_of(s) for s in first_stages or DEFAULT_FIRST_STAGES))
    depths = sorted({whole_number("k", k) for k in ks or DEFAULT_TUNE_KS})
    bad = [k for k in depths if not 1 <= k <= MAX_K]
    if bad:
        raise InputError(f"Each k of the grid must be from 1 to {MAX_K}; got {', '.join(map(str, bad))}.")
    sizes = list(dict.fromkeys(parse_chunking(c) for c in chunkings))
    if len(sizes) == 1:
        raise InputError("Chunkings are compared two or more at a time: give another --chunking SIZE/OVERLAP.")
    collection = base.collection or ""
    collections = [validate_collection_name(chunked_collection(collection, c)) for c in sizes] or [base.collection]
    cells = len(collections) * len(stages) * len(depths)
    if cells > MAX_CELLS:
        raise InputError(
            f"The grid has {cells} cells ({len(sizes) or 1} chunkings × {len(stages)} first stages × {len(depths)} "
            f"k); at most {MAX_CELLS} run in one tuning run."
        )
    return [
        base.with_(collection=name, retrieval=retrieval, fusion=fusion, k=k, top_n=min(base.top_n, k))
        for name in collections
        for retrieval, fusion in stages
        for k in depths
    ]
