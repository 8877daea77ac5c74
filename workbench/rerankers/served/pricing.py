"""What a hosted reranker costs: a price per unit the provider bills, editable by the user.

The defaults are the providers' published list prices as this team last read them, with that date. No provider
can be reached from the machines this workbench is developed on, so they were not re-read here: check them on the
providers' pages and edit the table (`workbench eval --price cohere=2.0`, or the table on the Evaluate page).
Local models and self-hosted servers cost nothing per query here (their cost is the hardware's).
"""

from __future__ import annotations

from pydantic import BaseModel

from workbench.errors import InputError
from workbench.rerankers.base import RerankerUsage
from workbench.vocab import HOSTED_LIST_PRICES


class Price(BaseModel):
    """A hosted kind's price: US dollars per `per` units of what it bills (searches or tokens)."""

    kind: str
    usd: float
    per: int
    unit: str  # "searches" (Cohere: one query of up to 100 documents) or "tokens"
    read: str  # when and where the figure was read

    def cost(self, usage: RerankerUsage) -> float:
        """Dollars for this usage."""
        units = usage.billed_units if self.unit == "searches" else usage.tokens
        return units * self.usd / self.per


DEFAULT_PRICES: dict[str, Price] = {
    kind: Price(kind=kind, usd=usd, per=per, unit=unit, read=read)
    for kind, (usd, per, unit, read) in HOSTED_LIST_PRICES.items()
}


def parse_prices(items: list[str] | None) -> dict[str, Price]:
    """The default prices with `KIND=USD` overrides (same unit as the default: per 1,000 searches for cohere, per
    million tokens for jina and voyage)."""
    prices = dict(DEFAULT_PRICES)
    for item in items or []:
        kind, sep, value = item.partition("=")
        kind = kind.strip().lower()
        if not sep or kind not in prices:
            raise InputError(f"--price takes KIND=USD with KIND one of {', '.join(prices)}; got '{item[:40]}'.")
        try:
            usd = float(value)
        except ValueError as exc:
            raise InputError(f"--price {kind}: '{value[:20]}' is not a number of dollars.") from exc
        if usd < 0:
            raise InputError(f"--price {kind}: a price cannot be negative.")
        prices[kind] = prices[kind].model_copy(update={"usd": usd, "read": "set by you"})
    return prices
