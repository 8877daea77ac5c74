"""The LLM judge, optional: any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, LM Studio) through
langchain-openai, set by WORKBENCH_JUDGE_MODEL and WORKBENCH_JUDGE_URL, its key read from WORKBENCH_JUDGE_API_KEY
or OPENAI_API_KEY and never shown.

It grades (query, passage) pairs on the collection's scale with a one-line reason, as rater `llm:<model>` with
source `llm`, so a person's grade of the same pair outranks it (one click overrides it). Each run also grades a
few pairs people already graded, so its agreement with each of them (Cohen's kappa on the same pairs) sits beside
its grades: that is how far to trust it. The tokens each answer used are counted from what the endpoint reports.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import ConfigError, InputError, ModelError, exception_chain, is_connection_problem
from workbench.evaluation.report import EvaluationReport
from workbench.evaluation.service import EvaluationOptions, evaluate_dataset
from workbench.extras import require_extra
from workbench.judgments.agreement import PairAgreement, rater_agreement
from workbench.judgments.queue import QueueItem, document_texts, judging_queue, settle_now
from workbench.judgments.service import judged_queries, judgment_rows, load_judgments, rate
from workbench.redact import redact_url, register_secret, shown
from workbench.types import SearchPlan
from workbench.vocab import (
    DEFAULT_JUDGE_CHECK,
    DEFAULT_JUDGE_LIMIT,
    GRADE_SCALE,
    JUDGE_CONCURRENCY,
    JUDGE_PASSAGE_CHARS,
    JUDGE_ROUND,
    LLM_RATER_PREFIX,
    MACHINE_SOURCES,
    MAX_JUDGE_PAIRS,
    MAX_QUEUE_TEXT_CHUNKS,
    MAX_REASON_CHARS,
)

SETTINGS_HINT = "WORKBENCH_JUDGE_MODEL (and WORKBENCH_JUDGE_URL for an endpoint other than OpenAI's)"
_NO_KEY = "not-needed"  # local servers (vLLM, Ollama, LM Studio) take any key; the client insists on one
RUBRIC = (
    "You judge how well a passage answers a search query, as a relevance assessor would, on this scale:\n"
    + "\n".join(f"{grade} = {label}" for grade, label in GRADE_SCALE.items())
    + '\nAnswer with one JSON object and nothing else: {"grade": <0-3>, "reason": "<one line: why>"}'
)


class JudgePair(BaseModel):
    """One (query, document) pair to grade, with the passage the judge reads."""

    query_id: str
    query: str
    doc_id: str
    passage: str
    graded_by_people: bool = False  # True for the pairs graded to measure agreement


class JudgeGrade(BaseModel):
    """The judge's answer for one pair: its grade and reason (stored), or why there is none."""

    query_id: str
    query: str
    doc_id: str
    grade: int | None
    reason: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    error: str = ""
    graded_by_people: bool = False


class JudgeRun(BaseModel):
    """What one run of the judge did: its grades, the tokens they took, and its agreement with each person."""

    model: str
    rater: str
    endpoint: str
    grades: list[JudgeGrade]
    input_tokens: int
    output_tokens: int
    seconds: float
    agreement: list[PairAgreement]
    # the endpoint was asked for the grade's JSON schema (WORKBENCH_JUDGE_SCHEMA) and did not refuse it
    held_to_schema: bool = False
    settle: str = ""  # after the run: about how many grades settle the verdict, or that it is settled
    stopped: str = ""  # with a budget of tokens: why grading stopped (settled, limit reached, budget spent)

    @property
    def stored(self) -> int:
        return sum(1 for g in self.grades if g.grade is not None)

    @property
    def failed(self) -> int:
        return sum(1 for g in self.grades if g.grade is None)

    def summary(self) -> str:
        """One line: how many grades, how many tokens, how long."""
        failed = f", {self.failed} without a grade" if self.failed else ""
        return (
            f"{self.rater} graded {self.stored} of {len(self.grades)} pairs{failed} in {self.seconds:.1f} s, using "
            f"{self.input_tokens + self.output_tokens:,} tokens ({self.input_tokens:,} in, {self.output_tokens:,} out)"
            + ("" if self.held_to_schema else "; the endpoint was not asked for, or refused, the grade's JSON schema")
        )

    def agreement_lines(self) -> list[str]:
        """Its agreement with each person who graded the same pairs, or why there is none yet."""
        if not self.agreement:
            return [f"{self.rater} shares no graded pair with a person yet: its agreement cannot be measured."]
        lines = []
        for p in self.agreement:
            person = p.rater_b if p.rater_a == self.rater else p.rater_a
            kappa = "undefined" if p.kappa is None else f"{p.kappa:.3f}"
            lines.append(f"with {person}: agreed on {p.agreed} of {p.overlap} pairs, Cohen's kappa (quadratic) {kappa}")
        return lines


def judge_rater(settings: Settings) -> str:
    """The rater name the configured judge grades as, `llm:<model>` (ConfigError when no judge is set)."""
    if not settings.judge_model:
        raise ConfigError(f"No LLM judge is set: set {SETTINGS_HINT}.")
    return f"{LLM_RATER_PREFIX}{settings.judge_model}"[:64]


def _chat_model(settings: Settings):  # type: ignore[no-untyped-def]  # langchain's ChatOpenAI (imported lazily)
    require_extra("openai", "The LLM judge")
    from langchain_openai import ChatOpenAI  # the openai client is heavy, and most runs never judge

    key = settings.judge_api_key.get_secret_value() if settings.judge_api_key else None
    register_secret(key)
    if key is None and not settings.judge_url:
        raise ConfigError(
            "The LLM judge calls OpenAI but no key is set: set OPENAI_API_KEY or WORKBENCH_JUDGE_API_KEY."
        )
    return ChatOpenAI(
        model=str(settings.judge_model),
        base_url=settings.judge_url,
        api_key=key or _NO_KEY,
        temperature=0,
        max_tokens=200,
        timeout=settings.rerank_timeout,
        max_retries=1,
    )


# The answer's shape as a JSON schema the endpoint is asked to hold the model to (OpenAI's structured outputs; vLLM,
# Ollama, LM Studio and llama.cpp's server take the same `response_format`): a grade on the scale and a reason.
SCHEMA_REASON_CHARS = 120  # a reason that ends well inside the answer's 200 tokens, JSON around it
GRADE_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "grade",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {
                "grade": {"type": "integer", "enum": list(GRADE_SCALE)},
                "reason": {"type": "string", "maxLength": SCHEMA_REASON_CHARS},
            },
            "required": ["grade", "reason"],
            "additionalProperties": False,
        },
    },
}


def _ask(settings: Settings, messages: list[list[BaseMessage]]) -> tuple[list[AIMessage | BaseException], bool]:
    """Every pair's answer (or its failure), asked with the grade's schema when WORKBENCH_JUDGE_SCHEMA is on; an
    endpoint that refuses every request as malformed (400: no structured outputs) is asked again without it. The
    second value says whether the answers were held to the schema."""
    chat = _chat_model(settings)
    config: Any = {"max_concurrency": JUDGE_CONCURRENCY}
    if settings.judge_schema:
        answers = chat.bind(response_format=GRADE_SCHEMA).batch(messages, config=config, return_exceptions=True)
        refused = [a for a in answers if isinstance(a, BaseException) and _status(a) == 400]
        if not messages or len(refused) < len(messages):
            return answers, True
    return chat.batch(messages, config=config, return_exceptions=True), False


def _status(exc: BaseException) -> int | None:
    return next((getattr(e, "status_code", None) for e in exception_chain(exc) if hasattr(e, "status_code")), None)


def _messages(pair: JudgePair) -> list[BaseMessage]:
    passage = " ".join(pair.passage.split())[:JUDGE_PASSAGE_CHARS]
    return [SystemMessage(RUBRIC), HumanMessage(f"Query: {pair.query}\nPassage: {passage}")]


_JSON_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)
_GRADE_WORD = re.compile(r"grade\W{0,4}([0-9])", re.IGNORECASE)


def read_answer(text: str) -> tuple[int, str]:
    """The grade and one-line reason in a judge's answer (JSON, or "grade: N" in prose); ValueError when it
    holds no grade on the scale."""
    grade: object = None
    reason = ""
    # the whole answer first (a reason may hold braces), then each object in it; control characters inside a
    # string (a small model's) are taken, as the answer's own words
    for candidate in [text.strip(), *_JSON_OBJECT.findall(text)]:
        try:
            answer = json.loads(candidate, strict=False)
        except json.JSONDecodeError:
            continue
        if isinstance(answer, dict) and "grade" in answer:
            grade, reason = answer.get("grade"), str(answer.get("reason") or "")
            break
    if grade is None and (found := _GRADE_WORD.search(text)):
        grade, reason = found.group(1), text
    try:
        value = int(str(grade).strip())
    except ValueError:
        value = -1
    if value not in GRADE_SCALE:
        raise ValueError(f"the answer holds no grade from 0 to 3: {shown(' '.join(text.split()))[:80]!r}")
    reason = " ".join(reason.split())
    return value, shown(reason)[:MAX_REASON_CHARS]


def _failure(exc: BaseException, settings: Settings) -> ModelError | ConfigError:
    """A failure of the endpoint as a message that names the setting to change (the key never in it)."""
    where = redact_url(settings.judge_url) or "OpenAI"
    status = _status(exc)
    if status in {401, 403}:
        return ConfigError(
            f"The LLM judge at {where} refused the key ({status}): set OPENAI_API_KEY or WORKBENCH_JUDGE_API_KEY."
        )
    if status == 404:
        return ConfigError(
            f"The LLM judge at {where} has no model '{settings.judge_model}' or no chat endpoint (404): check "
            f"{SETTINGS_HINT}."
        )
    if is_connection_problem(exc) or "connection error" in str(exc).lower():
        return ModelError(f"The LLM judge at {where} did not answer: is it running? Check WORKBENCH_JUDGE_URL.")
    if status is None and isinstance(exc, IndexError | KeyError | TypeError | ValueError | AttributeError):
        # langchain-openai reading an answer that is not a chat completion: no choices, usage that is not numbers
        return ModelError(
            f"The LLM judge at {where} answered in a shape that is not an OpenAI chat completion (no choice, or "
            f"usage figures that are not numbers: {type(exc).__name__}: {shown(exc)[:120]}). Check "
            "WORKBENCH_JUDGE_URL names an OpenAI-compatible endpoint."
        )
    return ModelError(f"The LLM judge at {where} failed ({type(exc).__name__}): {shown(exc)[:200]}")


def _grade(pair: JudgePair, answer: AIMessage | BaseException, settings: Settings) -> JudgeGrade:
    base = {
        "query_id": pair.query_id,
        "query": pair.query,
        "doc_id": pair.doc_id,
        "graded_by_people": pair.graded_by_people,
    }
    if isinstance(answer, BaseException):
        return JudgeGrade(**base, grade=None, error=shown(_failure(answer, settings)))
    usage = answer.usage_metadata or {}
    tokens = {"input_tokens": usage.get("input_tokens", 0), "output_tokens": usage.get("output_tokens", 0)}
    try:
        grade, reason = read_answer(str(answer.content))
    except ValueError as exc:
        return JudgeGrade(**base, **tokens, grade=None, error=str(exc))
    return JudgeGrade(**base, **tokens, grade=grade, reason=reason)


def grade_pairs(settings: Settings, collection: str, pairs: Sequence[JudgePair]) -> JudgeRun:
    """Ask the judge for each pair's grade and store each one as `llm:<model>` (source `llm`, with its reason);
    then its agreement with each person who graded the same pairs. When the endpoint fails for every pair (down,
    wrong key, unknown model) the error is raised and nothing is stored; a pair it answers without a grade is
    reported, not stored. Every pair given is asked (the CLI bounds its own: `--limit` and `--check`, each at most
    MAX_JUDGE_PAIRS); none is dropped without a word."""
    rater = judge_rater(settings)
    pairs = list(pairs)
    started = time.perf_counter()
    answers, held = _ask(settings, [_messages(p) for p in pairs])
    grades = [_grade(p, a, settings) for p, a in zip(pairs, answers, strict=True)]
    failures = [a for a in answers if isinstance(a, BaseException)]
    if pairs and len(failures) == len(pairs):
        raise _failure(failures[0], settings)
    for grade in grades:
        if grade.grade is not None:
            rate(
                settings, collection, grade.doc_id, grade.grade, query=grade.query, rater=rater, source="llm",
                reason=grade.reason,
            )  # fmt: skip
    return JudgeRun(
        model=str(settings.judge_model),
        rater=rater,
        endpoint=redact_url(settings.judge_url) or "OpenAI",
        grades=grades,
        input_tokens=sum(g.input_tokens for g in grades),
        output_tokens=sum(g.output_tokens for g in grades),
        seconds=time.perf_counter() - started,
        held_to_schema=held,
        agreement=judge_agreement(settings, collection, rater),
    )


def judge_agreement(settings: Settings, collection: str, rater: str) -> list[PairAgreement]:
    """The judge's agreement with each person (no LLM, no click model), over the pairs both graded."""
    rows = judgment_rows(settings, collection)
    machines = {r.rater for r in rows if r.source in MACHINE_SOURCES}  # other LLMs, click models: not people
    return [
        p
        for p in rater_agreement(rows).pairs
        if rater in (p.rater_a, p.rater_b) and not {p.rater_a, p.rater_b} & (machines - {rater}) and p.overlap
    ]


def judge_queue(
    engine: Engine,
    collection: str,
    queue: Sequence[QueueItem],
    *,
    limit: int = DEFAULT_JUDGE_LIMIT,
    check: int = DEFAULT_JUDGE_CHECK,
) -> JudgeRun:
    """Grade the first `limit` documents of a judging queue with the LLM judge, and `check` pairs people graded
    (the most recent first) so its agreement with them is measured."""
    settings = engine.settings
    judge_rater(settings)  # unset: say so before reading any passage
    for name, value in (("limit", limit), ("check", check)):
        if not 0 <= value <= MAX_JUDGE_PAIRS:
            raise InputError(f"{name} must be from 0 to {MAX_JUDGE_PAIRS}; got {value}.")
    chosen = list(queue)[: max(limit, 0)]
    people = [
        r for r in reversed(judgment_rows(settings, collection)) if r.source not in MACHINE_SOURCES
    ]  # newest first: the grades people are working on now
    texts_of_queries = judged_queries(settings, collection)
    checked: dict[tuple[str, str], str] = {}
    for row in people:
        if len(checked) >= max(check, 0):
            break
        if row.query_id in texts_of_queries:
            checked.setdefault((row.query_id, row.doc_id), texts_of_queries[row.query_id])
    passages = document_texts(engine, collection, [i.doc_id for i in chosen] + [d for _, d in checked])
    pairs = [
        JudgePair(query_id=i.query_id, query=i.query, doc_id=i.doc_id, passage=passages[i.doc_id])
        for i in chosen
        if passages.get(i.doc_id)
    ]
    pairs += [
        JudgePair(query_id=q, query=text, doc_id=d, passage=passages[d], graded_by_people=True)
        for (q, d), text in checked.items()
        if passages.get(d)
    ]
    if chosen and not pairs:
        raise InputError(
            f"No passage of the {len(chosen)} queue documents could be read from '{collection}' (the judge reads "
            f"passages of collections up to {MAX_QUEUE_TEXT_CHUNKS:,} chunks)."
        )
    return grade_pairs(settings, collection, pairs)


def judge_collection(
    engine: Engine,
    plan: SearchPlan,
    *,
    max_queries: int | None = None,
    limit: int = DEFAULT_JUDGE_LIMIT,
    check: int = DEFAULT_JUDGE_CHECK,
    token_budget: int | None = None,
) -> JudgeRun:
    """Evaluate the plan's collection's judged queries as the plan says (first stage, k, top n, the reranker), and
    grade the first `limit` documents of that run's judging queue with the LLM judge (the CLI's way to fill a
    queue); the run says after whether the verdict is settled.

    With a `token_budget` the judge grades to the decision: rounds of JUDGE_ROUND pairs, heaviest first, the queue
    and the verdict read again after each, until the verdict is settled, `limit` pairs are graded or the next
    round would pass the budget (sized by the tokens a pair took so far)."""
    judge_rater(engine.settings)
    collection = plan.collection or engine.settings.collection
    judgments = load_judgments(engine.settings, collection)
    if judgments is None:
        raise InputError(
            f"'{collection}' has no judged query yet: the queue comes from the queries people graded. Grade one "
            "document of a query (workbench judge) or import qrels first."
        )
    report = evaluate_dataset(
        engine, judgments.dataset(), plan, max_queries=max_queries, options=EvaluationOptions(ingest_missing=False)
    )
    if token_budget is None:
        run = judge_queue(engine, collection, judging_queue([report], judgments), limit=limit, check=check)
        state = settle_now(report, load_judgments(engine.settings, collection))
        return run.model_copy(update={"settle": state.words() if state else ""})
    return _judge_to_the_decision(engine, collection, report, limit, check, token_budget)


def _judge_to_the_decision(
    engine: Engine, collection: str, report: EvaluationReport, limit: int, check: int, budget: int
) -> JudgeRun:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise InputError(f"The budget (--token-budget) is a whole number of tokens above 0; got {budget!r}.")
    runs: list[JudgeRun] = []
    graded, sent, used, stopped = 0, 0, 0, ""
    while True:
        judgments = load_judgments(engine.settings, collection)
        state = settle_now(report, judgments)
        if state is not None and state.settled:
            stopped = "settled"
            break
        queue = judging_queue([report], judgments)
        per_pair = used / sent if sent else 0
        size = min(JUDGE_ROUND, limit - graded, len(queue))
        if per_pair:
            size = min(size, int((budget - used) // per_pair))
        if size <= 0:
            stopped = "queue empty" if not queue else "limit reached" if graded >= limit else "budget spent"
            break
        run = judge_queue(engine, collection, queue, limit=size, check=check if not runs else 0)
        runs.append(run)
        graded += sum(1 for g in run.grades if not g.graded_by_people)
        sent += len(run.grades)
        used += run.input_tokens + run.output_tokens
        if used >= budget:
            stopped = "budget spent"
            state = settle_now(report, load_judgments(engine.settings, collection))
            break
    words = state.words() if state else ""
    if not runs:
        return JudgeRun(
            model=str(engine.settings.judge_model), rater=judge_rater(engine.settings),
            endpoint=redact_url(engine.settings.judge_url) or "OpenAI", grades=[], input_tokens=0, output_tokens=0,
            seconds=0.0, agreement=[], settle=words, stopped=stopped,
        )  # fmt: skip
    last = runs[-1]
    return last.model_copy(
        update={
            "grades": [g for r in runs for g in r.grades],
            "input_tokens": sum(r.input_tokens for r in runs),
            "output_tokens": sum(r.output_tokens for r in runs),
            "seconds": sum(r.seconds for r in runs),
            "settle": words,
            "stopped": stopped,
        }
    )
