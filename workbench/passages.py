"""What the reranker does with a document longer than its window, as a plan names it:

    firstp                    the first window only (a cross-encoder cuts the rest itself): the default
    maxp                      the first 4 windows, each scored beside the query; the document scores its best window
    maxp windows=8 stride=64  ... the first 8 windows, each starting 64 tokens after the one before
    sump windows=3            the first 3 windows; the document scores its windows' probabilities added up

A window is as many of the document's tokens as fit beside the query in the reranker's max length, counted by the
reranker's own tokenizer; the stride defaults to half a window. The cutting is in `workbench.rerankers`; this module
only names and checks a strategy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from workbench.errors import InputError
from workbench.redact import plain_text
from workbench.vocab import DEFAULT_WINDOWS, LONG_DOCUMENT_STRATEGIES, MAX_WINDOWS, LongDocumentStrategy, spoken

MAX_STRIDE: Final = 4096
_WHOLE = re.compile(r"^\d{1,6}$")


@dataclass(frozen=True)
class LongDocuments:
    """A strategy for long documents: FirstP, or MaxP/SumP over the first `windows` windows, `stride` tokens apart
    (None: half a window)."""

    strategy: LongDocumentStrategy = "firstp"
    windows: int = DEFAULT_WINDOWS
    stride: int | None = None

    @property
    def windowed(self) -> bool:
        """Whether documents are cut into windows (MaxP, SumP) rather than read from the start only."""
        return self.strategy != "firstp"

    @property
    def spec(self) -> str:
        """The strategy as text: `parse_long_documents(s.spec) == s`."""
        if not self.windowed:
            return "firstp"
        said = f"{self.strategy} windows={self.windows}"
        return said + (f" stride={self.stride}" if self.stride is not None else "")


def parse_long_documents(text: object) -> LongDocuments:
    """A strategy from its text ('firstp', 'maxp', 'sump windows=3 stride=64'); InputError naming what is wrong."""
    if isinstance(text, LongDocuments):
        return text
    if not isinstance(text, str) or not text.strip() or len(text) > 80:
        shown = plain_text(repr(text))[:40]
        raise InputError(f"A long-document strategy is short text such as 'maxp' or 'sump windows=3'; got {shown}.")
    words = text.lower().replace(",", " ").split()
    strategy = words[0]
    if strategy not in LONG_DOCUMENT_STRATEGIES:
        raise InputError(
            f"Unknown long-document strategy '{plain_text(words[0])[:30]}': use one of "
            f"{spoken(LONG_DOCUMENT_STRATEGIES)} (for example 'maxp windows=4')."
        )
    given: dict[str, int] = {}
    for word in words[1:]:
        name, sep, value = word.partition("=")
        if strategy == "firstp" or not sep or name not in ("windows", "stride") or name in given:
            raise InputError(
                f"Long documents '{plain_text(text)[:40]}': '{plain_text(word)[:30]}' is not understood; "
                + ("firstp takes nothing." if strategy == "firstp" else f"{strategy} takes windows=N and stride=N.")
            )
        if not _WHOLE.match(value):
            raise InputError(f"Long documents: {name} must be a whole number; got '{plain_text(value)[:20]}'.")
        given[name] = int(value)
    windows = given.get("windows", DEFAULT_WINDOWS)
    if not 1 <= windows <= MAX_WINDOWS:
        raise InputError(f"Long documents: windows must be from 1 to {MAX_WINDOWS}; got {windows}.")
    stride = given.get("stride")
    if stride is not None and not 1 <= stride <= MAX_STRIDE:
        raise InputError(f"Long documents: stride must be from 1 to {MAX_STRIDE} tokens; got {stride}.")
    return LongDocuments(strategy, windows, stride)  # type: ignore[arg-type]
