"""How a hybrid first stage fuses its dense and BM25 lists, as a plan names it: reciprocal rank fusion (its k and
the two lists' weights) or a linear combination of normalised scores (min-max, z-score or L2, and the dense
list's weight; BM25 weighs the rest).

Written and read as short text, the form a plan's key, a CLI option and an API field share:

    rrf                      reciprocal rank fusion, k = 60, both weights 1
    rrf k=20 dense=2 bm25=1  ... its k and weights
    minmax 0.7               min-max normalised scores, 0.7 × dense + 0.3 × BM25
    zscore 0.5 · l2 0.3      z-score (zero mean, unit variance) or L2-normalised scores, likewise

The arithmetic is in `workbench.retrieval.fusion`; this module only names and checks a fusion.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Final

from workbench.errors import InputError
from workbench.redact import plain_text
from workbench.vocab import FUSION_METHODS, LINEAR_FUSIONS, RETRIEVAL, RRF_K, FusionMethod, spoken

ALIASES: Final = {"min-max": "minmax", "min_max": "minmax", "z-score": "zscore", "zmuv": "zscore", "l2norm": "l2"}
DEFAULT_LINEAR_WEIGHT: Final = 0.5
MAX_FUSION_CHARS: Final = 80
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


@dataclass(frozen=True)
class Fusion:
    """A fusion of a dense and a BM25 list. For RRF: `rrf_k` and both weights; for a linear fusion: the dense
    list's weight in [0, 1] (`bm25_weight` is 1 minus it)."""

    method: FusionMethod
    rrf_k: int = RRF_K
    dense_weight: float = 1.0
    bm25_weight: float = 1.0

    @property
    def linear(self) -> bool:
        """Whether scores are normalised and combined (not ranks)."""
        return self.method in LINEAR_FUSIONS

    @property
    def weights(self) -> dict[str, float]:
        """Each list's weight by its name ('dense', 'bm25')."""
        return {"dense": self.dense_weight, "bm25": self.bm25_weight}

    @property
    def spec(self) -> str:
        """The fusion as text: `parse_fusion(f.spec) == f`."""
        if self.linear:
            return f"{self.method} {self.dense_weight:g}"
        said = f"rrf k={self.rrf_k}"
        if (self.dense_weight, self.bm25_weight) != (1.0, 1.0):
            said += f" dense={self.dense_weight:g} bm25={self.bm25_weight:g}"
        return said


def score_name(retrieval: str, fusion: str | None) -> str:
    """What a first-stage list's scores are called: the mode's own name ('vector', 'BM25', 'RRF'), or 'fused' for
    a hybrid list fused by normalised scores."""
    if retrieval == "hybrid" and fusion and not fusion.startswith("rrf"):
        return "fused"
    return RETRIEVAL[retrieval].score_name if retrieval in RETRIEVAL else RETRIEVAL["dense"].score_name


def first_stage_name(retrieval: str, fusion: str | None) -> str:
    """The first stage as a plan's key writes it: 'dense', 'hybrid', 'hybrid(minmax 0.7)'."""
    return f"{retrieval}({fusion})" if fusion else retrieval


def rrf(k: int = RRF_K, dense_weight: float = 1.0, bm25_weight: float = 1.0) -> Fusion:
    """Reciprocal rank fusion with its constant and weights, checked."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
        raise InputError(f"RRF's k must be a whole number from 1 to 1000; got {plain_text(repr(k))[:20]}.")
    for name, weight in (("dense", dense_weight), ("bm25", bm25_weight)):
        if not math.isfinite(weight) or not 0 <= weight <= 100:
            raise InputError(f"RRF's {name} weight must be from 0 to 100; got {weight:g}.")
    if dense_weight == bm25_weight == 0:
        raise InputError("RRF's weights cannot both be 0: nothing would be ranked.")
    return Fusion("rrf", k, float(dense_weight), float(bm25_weight))


def linear(method: str, dense_weight: float = DEFAULT_LINEAR_WEIGHT) -> Fusion:
    """A linear fusion after `method`'s normalisation, the dense list weighing `dense_weight` (0 to 1)."""
    if method not in LINEAR_FUSIONS:
        raise InputError(f"A linear fusion normalises by {spoken(LINEAR_FUSIONS)}; got {plain_text(method)[:20]!r}.")
    if not math.isfinite(dense_weight) or not 0 <= dense_weight <= 1:
        raise InputError(f"A linear fusion's dense weight must be from 0 to 1 (BM25 weighs the rest); got "
                         f"{dense_weight:g}.")  # fmt: skip
    return Fusion(method, RRF_K, float(dense_weight), round(1.0 - float(dense_weight), 12))  # type: ignore[arg-type]


def parse_fusion(text: object) -> Fusion:
    """A fusion from its text ('rrf', 'rrf k=20 dense=2 bm25=1', 'minmax 0.7', 'zscore dense=0.4'); InputError
    naming the part that is wrong."""
    if isinstance(text, Fusion):
        return text
    if not isinstance(text, str) or not text.strip():
        shown = plain_text(repr(text))[:40]
        raise InputError(f"A fusion is named by text, such as 'rrf' or 'minmax 0.5'; got {shown}.")
    if len(text) > MAX_FUSION_CHARS:
        raise InputError(f"A fusion's text is at most {MAX_FUSION_CHARS} characters; got {len(text)}.")
    words = text.replace(":", " ").replace(",", " ").split()
    method = ALIASES.get(words[0].lower(), words[0].lower())
    if method not in FUSION_METHODS:
        raise InputError(
            f"Unknown fusion '{plain_text(words[0])[:30]}': use one of {spoken(FUSION_METHODS)} "
            "(for example 'rrf k=60' or 'minmax 0.5')."
        )
    given: dict[str, float] = {}
    for word in words[1:]:
        name, sep, value = word.rpartition("=")
        name = name.lower() if sep else ("k" if method == "rrf" else "dense")
        allowed = ("k", "dense", "bm25") if method == "rrf" else ("dense",)
        if name not in allowed or name in given or not _NUMBER.match(value):
            raise InputError(
                f"Fusion '{plain_text(text)[:40]}': '{plain_text(word)[:30]}' is not understood; {method} takes "
                + ("k=N, dense=W and bm25=W." if method == "rrf" else "one weight of the dense list, from 0 to 1.")
            )
        given[name] = float(value)
        if not math.isfinite(given[name]):
            raise InputError(f"Fusion '{plain_text(text)[:40]}': '{plain_text(word)[:30]}' is not a finite number.")
    if method == "rrf":
        k = given.get("k", RRF_K)
        if not math.isfinite(k) or k != int(k):
            raise InputError(f"RRF's k must be a whole number; got {k:g}.")
        return rrf(int(k), given.get("dense", 1.0), given.get("bm25", 1.0))
    return linear(method, given.get("dense", DEFAULT_LINEAR_WEIGHT))
