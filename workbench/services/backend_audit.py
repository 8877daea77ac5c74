"""Fast by default: the parity audit of a reranker's faster backends, run without being asked.

`auto` only takes a backend the parity audit found faithful to fp32 torch on this machine (`rerankers.local.machine`);
the audit used to run only when a user typed `workbench doctor --parity demo`, so out of the box every reranker stayed
on torch. Now, when `auto`'s calibration finds backends faster than torch that no audit has judged here, they are
audited on the demo (offline, always there), as `doctor --parity demo` would, and the verdicts kept per machine, model
and library versions:

- in a front end that stays up (the app, `serve`, `mcp`), in the background (`enable_auto_audit`): searches run on
  torch meanwhile, the page says "checking the faster backends: n of m", and the reranker switches between model
  runs once the audit admits one (a search keeps the backend it started with);
- in a command, in the foreground before its work, only when the work repays it (`audit_first_if_it_repays`): its
  pairs at torch's speed against at the fastest candidate's, beside the audit's own cost, both said.

WORKBENCH_AUTO_AUDIT=false keeps the old behaviour (torch until `doctor --parity` is run).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import error_message
from workbench.evaluation.parity import ParityAudit, audit_parity
from workbench.rerankers.local.backends import (
    AuditProgress,
    ExportCache,
    fingerprint,
    set_auto_auditor,
    unaudited_faster,
)
from workbench.rerankers.local.machine import kept_choice, machine_facts
from workbench.services.demo import demo_dataset, ensure_demo_collection
from workbench.vocab import DEMO_COLLECTION, PARITY_K

log = logging.getLogger("workbench.services.backend_audit")
AUDIT_QUERIES = 50  # the demo's judged queries the audit runs on: PARITY_K candidates each, as `doctor --parity demo`
AUDIT_OVERHEAD = 2.0  # the audit's time over its pairs' scoring alone: loading, exports, the batch-mates check


def audit_on_demo(
    settings: Settings, model_path: str, backends: list[str], progress: AuditProgress | None = None
) -> ParityAudit:
    """`backends` of the local cross-encoder at `model_path` held to fp32 torch on the demo's judged queries (k =
    PARITY_K, top 10), the verdicts kept for `auto`: what `workbench doctor --parity demo` does for them.
    `progress(checked, of)` after the reference and after each backend."""
    engine = Engine(settings.model_copy(update={"reranker_model": model_path}))
    ensure_demo_collection(engine)
    plan = engine.plan(collection=DEMO_COLLECTION, k=PARITY_K, top_n=10, reranker=model_path)
    total = len(backends) + 1
    checked = [0]

    def said(words: str) -> None:
        log.info("%s", words)
        if words.startswith("Scoring") and progress is not None:  # the reference, then each backend
            progress(checked[0], total)
            checked[0] += 1

    audit = audit_parity(engine, demo_dataset(), plan, backends=backends, max_queries=AUDIT_QUERIES, progress=said)
    if progress is not None:
        progress(total, total)
    return audit


def enable_auto_audit(settings: Settings) -> None:
    """For a front end that stays up: a background measurement that leaves faster backends unaudited audits them on
    the demo (`audit_on_demo`); nothing with WORKBENCH_AUTO_AUDIT=false."""
    if not settings.auto_audit:
        set_auto_auditor(None)
        return
    set_auto_auditor(lambda model_path, backends, progress: log.warning(
        "The parity audit of %s on the demo %s.", Path(model_path).name,
        outcome(audit_on_demo(settings, model_path, backends, progress)),
    ))  # fmt: skip


def outcome(audit: ParityAudit) -> str:
    """What an audit changed, in words: 'admitted onnx, openvino: auto now runs openvino'."""
    admitted = [r.backend for r in audit.rows if r.faithful and r.backend != audit.reference]
    return f"admitted {', '.join(admitted) or 'no faster backend'}: auto now runs {audit.auto_runs or 'torch'}"


@dataclass(frozen=True)
class AuditCost:
    """Whether auditing the faster backends first repays a command's work: its pairs' seconds on torch and on the
    fastest unaudited backend, and the audit's own seconds (estimates from the kept calibration)."""

    backends: list[str]
    pairs: int
    torch_seconds: float
    fastest_seconds: float
    audit_seconds: float

    @property
    def repays(self) -> bool:
        """The time saved on the work is more than the audit takes."""
        return self.torch_seconds - self.fastest_seconds > self.audit_seconds

    def words(self) -> str:
        """The estimate, in a sentence."""
        return (
            f"the faster backends ({', '.join(self.backends)}) are not audited on this machine: this run's "
            f"{self.pairs:,} pairs take about {self.torch_seconds:,.0f} s on torch and {self.fastest_seconds:,.0f} s "
            f"on the fastest of them, and the audit about {self.audit_seconds:,.0f} s"
        )


def audit_cost(settings: Settings, model_path: str, pairs: int) -> AuditCost | None:
    """The estimate for a command that will score `pairs` pairs with the cross-encoder at `model_path`: None when
    there is nothing to audit (no kept calibration, or every faster backend judged), or WORKBENCH_AUTO_AUDIT=false
    (or WORKBENCH_CALIBRATE_BACKENDS=false: nothing is measured)."""
    if not (settings.auto_audit and settings.reranker_calibrate):
        return None
    backends = unaudited_faster(model_path, exports_root=settings.exports_dir)
    if not backends:
        return None
    kept = kept_choice(ExportCache(settings.exports_dir).choices_root, fingerprint(model_path), machine_facts("cpu"))
    if kept is None:
        return None
    speed = {f.backend: f for f in kept.figures}
    torch_per_pair = speed["torch"].ms_per_50_pairs / 50_000 if "torch" in speed else 0.0
    fastest = max(speed[b].speedup for b in backends)
    audit_pairs = AUDIT_QUERIES * PARITY_K
    audit = audit_pairs * torch_per_pair * (1 + sum(1 / speed[b].speedup for b in backends)) * AUDIT_OVERHEAD
    return AuditCost(
        backends=backends, pairs=pairs, torch_seconds=pairs * torch_per_pair,
        fastest_seconds=pairs * torch_per_pair / fastest, audit_seconds=audit,
    )  # fmt: skip


def audit_first_if_it_repays(
    engine: Engine, pairs: int, say: Callable[[str], None], reranker: str | None = None
) -> ParityAudit | None:
    """Before a command scores `pairs` pairs with the engine's reranker on `auto`: audit the faster backends on the
    demo first when that repays (saying so, with the estimate), else say why not; then the reranker is made again,
    so the command runs on what `auto` now chooses. None when nothing was audited."""
    chosen = engine.reranker(reranker or "default")
    path = getattr(chosen, "path", None)
    if path is None or engine.settings.reranker_backend != "auto":
        return None
    cost = audit_cost(engine.settings, str(path), pairs)
    if cost is None:
        return None
    if not cost.repays:
        say(f"{cost.words()}: not worth it for this run (`workbench doctor --parity demo` runs it)")
        return None
    say(f"{cost.words()}: auditing them on the demo first")
    try:
        audit = audit_on_demo(engine.settings, str(path), cost.backends)
    except Exception as exc:  # an optimisation: the command runs on what auto chose before
        say(f"the audit of the faster backends failed ({error_message(exc)}): running on torch")
        return None
    engine.forget_reranker(reranker or "default")
    say(f"the audit {outcome(audit)}")
    return audit
