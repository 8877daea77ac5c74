"""An OpenAI-compatible chat endpoint as the LLM reranker kinds reach it (`listwise+URL#MODEL`, `chat+URL#MODEL`):
the id taken apart, the caller made with the reranker services' timeout, retries and key, and the chat model named
by the id or, where it names none, the one model the endpoint lists."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

import httpx
from pydantic import BaseModel

from workbench.config import Settings
from workbench.errors import ConfigError
from workbench.rerankers.served.remote import KEY_SETTING, SETTING, reported_count
from workbench.service_calls import ServiceCaller, ServiceWords, service_address
from workbench.vocab import CHAT_MODEL_SEPARATOR


@dataclass
class ChatEndpoint:
    """A connected chat endpoint: its caller, its URL as shown, the chat model, and the reranker's public id."""

    service: ServiceCaller
    shown_url: str
    chat_model: str
    public_id: str  # the id without any secret in its URL, the model after CHAT_MODEL_SEPARATOR


def listed_chat_model(service: ServiceCaller, chat_url: httpx.URL, shown_id: str) -> str:
    """The one model a chat endpoint lists at GET /models, for an id that names none (`shown_id`, as the id is
    shown: the kind's prefix and the URL)."""
    models_url = chat_url.copy_with(path=chat_url.path.removesuffix("/chat/completions") + "/models")
    try:
        listed = service.client.get(models_url, headers=service.headers()).json().get("data", [])
        models = [str(m.get("id")) for m in listed if isinstance(m, dict) and m.get("id")]
    except (httpx.TimeoutException, httpx.ConnectError) as exc:
        raise service.unreachable(exc) from exc
    except (httpx.HTTPError, ValueError, AttributeError):
        models = []
    if len(models) != 1:
        listed_words = f"it lists {len(models)} models" if models else "it lists none at /models"
        raise ConfigError(f"{SETTING}: name the chat model after '#' ({shown_id}#MODEL); {listed_words}.")
    return models[0]


def connect_chat(model_id: str, prefix: str, noun: str, settings: Settings) -> ChatEndpoint:
    """The chat endpoint a `PREFIX+URL[#MODEL]` id names, its failures said as `noun`'s ("The chat reranker")."""
    url, _, model = model_id.removeprefix(prefix).partition(CHAT_MODEL_SEPARATOR)
    address = service_address(url, "/chat/completions", prefix=prefix)
    key = settings.rerank_api_key.get_secret_value() if settings.rerank_api_key is not None else None
    words = ServiceWords(
        noun, SETTING, f"set {KEY_SETTING} to the endpoint's key, or give it in the URL (http://:TOKEN@host)",
        "WORKBENCH_RERANK_TIMEOUT",
    )  # fmt: skip
    service = ServiceCaller(
        [str(address.url)], [address.token or key], words, timeout=settings.rerank_timeout,
        retries=settings.rerank_retries,
    )  # fmt: skip
    chat_model = model.strip() or listed_chat_model(service, address.url, f"{prefix}{service.shown_url}")
    public_id = f"{address.public_id}{CHAT_MODEL_SEPARATOR}{chat_model}"
    return ChatEndpoint(service, service.shown_url, chat_model, public_id)


class AnswerStats(BaseModel):
    """What an LLM kind counts of its answers (its fields numbers); `since` is what was counted after a copy."""

    def since(self, before: Self) -> Self:
        """What was counted after `before` (a copy taken earlier)."""
        return type(self)(**{name: getattr(self, name) - getattr(before, name) for name in type(self).model_fields})


def token_counts(answer: dict[str, Any]) -> tuple[int, int, int]:
    """The prompt, completion and total tokens a chat answer's `usage` reports (0 where it reports none; the total
    is the two added where it gives none)."""
    usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
    prompt = int(reported_count(usage.get("prompt_tokens")))
    completion = int(reported_count(usage.get("completion_tokens")))
    return prompt, completion, int(reported_count(usage.get("total_tokens"))) or prompt + completion
