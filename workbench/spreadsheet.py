"""CSV for spreadsheets: every cell a spreadsheet would evaluate is written as text.

A cell whose text starts with `=`, `+`, `-`, `@`, a tab or a carriage return is read by Excel, LibreOffice and
Google Sheets as a formula (OWASP's "CSV injection"): a query text from a click log such as `=HYPERLINK(...)` would
run when a stakeholder opens the download. Such a text cell gets a leading `'` (the spreadsheets' own "this is
text" mark); numbers are numbers and are written as they are (a negative change stays -0.12).
"""

from __future__ import annotations

from typing import Any, Final

_FORMULA_STARTS: Final = ("=", "+", "-", "@", "\t", "\r", "\n")


def safe_cell(value: Any) -> Any:
    """`value`, with a text that a spreadsheet would evaluate turned into plain text (a leading `'`)."""
    if isinstance(value, str) and value.lstrip(" ").startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def csv_text(frame: Any) -> str:
    """A pandas DataFrame as CSV text (no index) whose text cells (and column names) a spreadsheet reads as text,
    never as formulas. The one way the product writes a CSV."""
    safe = frame.copy()
    safe.columns = [safe_cell(str(c)) for c in safe.columns]
    for column in safe.columns:
        if safe[column].dtype.kind not in "biufcmM":  # numbers and times are written as they are
            safe[column] = safe[column].astype(object).map(safe_cell)
    return safe.to_csv(index=False)
