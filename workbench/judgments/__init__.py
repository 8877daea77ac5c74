"""Judgments: grades of (query, document) pairs with their provenance, kept in one store per workbench.

- `store`: the rows (who, when, how) in SQLite or PostgreSQL, and the policy that picks a pair's current grade;
- `service`: rate, read, import, export (what every front end calls);
- `figures`: a judged query's figures in one search result;
- `agreement`: how far raters (people and the LLM judge) agree: Cohen's and Fleiss' kappa, disagreements;
- `queue`: the unjudged documents that could move a verdict most, to rate next, and when the verdict is settled;
- `llm`: the optional LLM judge, any OpenAI-compatible chat endpoint.
"""

from workbench.judgments.agreement import Agreement, Disagreement, PairAgreement, fleiss_kappa, rater_agreement
from workbench.judgments.figures import QueryFigures, query_figures
from workbench.judgments.queue import (
    QueueItem,
    configuration_label,
    document_chunks,
    document_texts,
    judging_queue,
    pooled_reports,
    settle_now,
)
from workbench.judgments.service import (
    EXPORT_FORMATS,
    Judgments,
    Rating,
    attach_judgments,
    detach_judgments,
    export_judgments,
    export_queries,
    import_judgments,
    judge,
    judged_queries,
    judgment_rows,
    judgments_agreement,
    judgments_folder,
    load_judgments,
    normal_query,
    queries_by_rater,
    rate,
    typed_query_id,
    whose,
)
from workbench.judgments.store import JudgmentRow, current_grades, open_judgment_store
from workbench.judgments.walk import WalkItem, grading_walk, queue_walk, rater_progress

__all__ = [
    "EXPORT_FORMATS",
    "Agreement",
    "Disagreement",
    "JudgmentRow",
    "Judgments",
    "PairAgreement",
    "QueryFigures",
    "QueueItem",
    "Rating",
    "WalkItem",
    "attach_judgments",
    "configuration_label",
    "current_grades",
    "detach_judgments",
    "document_chunks",
    "document_texts",
    "export_judgments",
    "export_queries",
    "fleiss_kappa",
    "grading_walk",
    "import_judgments",
    "judge",
    "judged_queries",
    "judging_queue",
    "judgment_rows",
    "judgments_agreement",
    "judgments_folder",
    "load_judgments",
    "normal_query",
    "open_judgment_store",
    "pooled_reports",
    "queries_by_rater",
    "query_figures",
    "queue_walk",
    "rate",
    "rater_agreement",
    "rater_progress",
    "settle_now",
    "typed_query_id",
    "whose",
]
