"""The cross-encoder reranker: pairs built from cached token ids, padded per batch to their own length (or, on an
OpenVINO backend, each its own request), run by the chosen backend through a micro-batcher, behind the single-flight
score cache."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from workbench.config import Settings
from workbench.models import pick_device, resolve_model
from workbench.rerankers.base import BaseReranker
from workbench.rerankers.local.backends import (
    backend_measured,
    background_measurement,
    load_cross_encoder,
    measure_in_background,
    needs_audit,
)
from workbench.rerankers.local.batching import MicroBatcher
from workbench.rerankers.local.openvino_pairs import PairwiseOpenVINO
from workbench.rerankers.scores.cache import ScoreCache, TokenCache
from workbench.vocab import BACKEND_SEPARATOR, ScoreScale

Encoded = tuple[list[int], list[int]]  # input ids, token type ids


def truncate_pair(
    query: list[int], document: list[int], budget: int, lengths: tuple[int, int] | None = None
) -> tuple[list[int], list[int]]:
    """The 'longest_first' truncation of Hugging Face's fast tokenizers for a pair: the shorter side keeps
    what it can up to half of `budget`, the longer side the rest (an odd token goes to the longer side).
    `lengths` are the sides' untruncated lengths when the ids given were already cut short."""
    n_query, n_document = lengths or (len(query), len(document))
    if n_query + n_document <= budget:
        return query, document
    swap = n_query > n_document
    shorter, longer = (n_document, n_query) if swap else (n_query, n_document)
    longer = shorter if shorter > budget else max(shorter, budget - shorter)
    if shorter + longer > budget:
        shorter = budget // 2
        longer = shorter + budget % 2
    keep_query, keep_document = (longer, shorter) if swap else (shorter, longer)
    return query[:keep_query], document[:keep_document]


class CrossEncoderReranker(BaseReranker):
    """A sentence-transformers cross-encoder behind the score cache. Scores are the model's raw logits
    (`score_scale` 'logit').

    `backend` says what runs it ('torch:cpu', 'onnx-int8:cpu', 'torch-fp16:cuda'); `model_calls` counts model
    runs (a micro-batched run that served several searches counts once).
    """

    def __init__(
        self,
        model_id: str,
        settings: Settings,
        cache: ScoreCache | None = None,
        token_cache: TokenCache | None = None,
        progress: Callable[[str], None] | None = None,
        backend: str | None = None,
    ) -> None:
        """`backend` runs it on that backend (torch, onnx, onnx-int8, openvino or auto), as sentence-transformers'
        `backend=` does; None takes RERANKER_BACKEND."""
        backend = backend or settings.reranker_backend
        cache = cache if cache is not None else ScoreCache(settings.cache_ttl, settings.cache_max_size)
        super().__init__(model_id, cache)
        self.path = resolve_model(model_id, settings, setting="RERANKER_MODEL")
        self.max_length = settings.reranker_max_length
        self._settings = settings
        # `auto` on a CPU that never measured this model (or whose faster backends no audit judged, when a front end
        # audits them: WORKBENCH_AUTO_AUDIT), in a process that stays up: torch now, the measurement and the audit in
        # the background, the switch between model runs once it is done (a page never waits a minute or two for it)
        self.measuring = (
            background_measurement()
            and backend == "auto"
            and settings.reranker_calibrate
            and pick_device(settings.reranker_device) == "cpu"
            and (
                not backend_measured(self.path, "cpu", exports_root=settings.exports_dir)
                or needs_audit(self.path, exports_root=settings.exports_dir)
            )
        )
        self._model, self.backend, self.fingerprint = load_cross_encoder(
            self.path,
            settings.reranker_device,
            self.max_length,
            "torch" if self.measuring else backend,
            exports_root=settings.exports_dir,
            progress=progress,
            calibrate_backends=settings.reranker_calibrate,
        )
        on_gpu = self.backend.endswith(":cuda") or ":cuda:" in self.backend
        self.batch_size = settings.reranker_batch_size or (128 if on_gpu else 32)
        self.tokens = token_cache if token_cache is not None else TokenCache(settings.cache_max_size * 5)
        self.tokenizer = self._model.tokenizer
        self._tokenizer_id = f"{self.fingerprint}:{type(self.tokenizer).__name__}:{self.max_length}"
        self._budget = self.max_length - self.tokenizer.num_special_tokens_to_add(pair=True)
        self._inputs = list(self.tokenizer.model_input_names)
        self._batcher = MicroBatcher(self._run, settings.reranker_batch_window_ms / 1000, name=model_id)
        self._lock = threading.Lock()
        self.score_scale: ScoreScale = "logit"
        if self.measuring:
            measure_in_background(
                self.path, self.max_length, exports_root=settings.exports_dir, when_done=self._switch_to_measured
            )

    def _switch_to_measured(self) -> None:
        """The backend the measurement chose, loaded (its export made) off the request path, then swapped in."""
        model, backend, _ = load_cross_encoder(
            self.path, self._settings.reranker_device, self.max_length, "auto",
            exports_root=self._settings.exports_dir, calibrate_backends=False,
        )  # fmt: skip
        with self._lock:
            self._model, self.backend, self.measuring = model, backend, False

    @property
    def cache_key(self) -> str:
        """What its scores are cached under: torch's scores while the measurement runs are kept apart from the
        chosen backend's (which may differ in the fifth decimal, or more for int8)."""
        return f"{self.model_id}{BACKEND_SEPARATOR}torch-until-measured" if self.measuring else self.model_id

    @property
    def store_key(self) -> str | None:
        """The weights' fingerprint, the backend that ran them and the max length: what its scores depend on."""
        return None if self.measuring else f"cross-encoder:{self.fingerprint}:{self.backend}:{self.max_length}"

    @property
    def device(self) -> str:
        return str(self._model.device)

    # Encoding -----------------------------------------------------------------------------------------------
    def _token_ids(self, texts: list[str]) -> list[tuple[list[int], int]]:
        # Kept: the first max_length ids (no pair keeps more) and the full length (truncation needs it).
        encoded = self.tokenizer(texts, add_special_tokens=False)
        return [(list(ids[: self.max_length]), len(ids)) for ids in encoded["input_ids"]]

    def encode(self, query: str, texts: Sequence[str]) -> list[Encoded]:
        """Each (query, text) pair as model input ids, from cached document token ids."""
        [(query_ids, query_length)] = self.tokens.get_many(self._tokenizer_id, [query], self._token_ids)
        documents = self.tokens.get_many(self._tokenizer_id, list(texts), self._token_ids)
        pairs = []
        for document, document_length in documents:
            q, d = truncate_pair(query_ids, document, self._budget, (query_length, document_length))
            pairs.append(
                (
                    self.tokenizer.build_inputs_with_special_tokens(q, d),
                    self.tokenizer.create_token_type_ids_from_sequences(q, d),
                )
            )
        return pairs

    def cut_shares(self, query: str, texts: Sequence[str]) -> list[float]:
        """For each text, the share of its tokens the model never reads: cut at RERANKER_MAX_LENGTH with the query."""
        [(query_ids, query_length)] = self.tokens.get_many(self._tokenizer_id, [query], self._token_ids)
        shares = []
        for document, length in self.tokens.get_many(self._tokenizer_id, list(texts), self._token_ids):
            _, kept = truncate_pair(query_ids, document, self._budget, (query_length, length))
            shares.append(1 - len(kept) / length if length else 0.0)
        return shares

    def windows(self, query: str, text: str, limit: int, stride: int | None = None) -> list[str]:
        """The text cut into at most `limit` windows for MaxP and SumP: each as many tokens (this model's tokenizer)
        as fit beside the query in RERANKER_MAX_LENGTH, the next starting `stride` tokens later (default: half a
        window), cut on token boundaries of the original text. A text that fits is one window, itself."""
        [(query_ids, query_length)] = self.tokens.get_many(self._tokenizer_id, [query], self._token_ids)
        offsets = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        total = len(offsets)
        _, kept = truncate_pair(query_ids, [0] * total, self._budget, (query_length, total))
        room = max(len(kept), 1)
        if total <= room:
            return [text]
        step = stride or max(room // 2, 1)
        cut = []
        for start in range(0, total, step):
            end = min(start + room, total)
            cut.append(text[offsets[start][0] : offsets[end - 1][1]])
            if end == total or len(cut) == limit:
                break
        return cut

    # Running ------------------------------------------------------------------------------------------------
    def _arrays(self, batch: list[Encoded]) -> dict[str, np.ndarray]:
        width = max(len(ids) for ids, _ in batch)
        pad = self.tokenizer.pad_token_id or 0
        ids = np.full((len(batch), width), pad, dtype=np.int64)
        types = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, (pair_ids, pair_types) in enumerate(batch):
            ids[row, : len(pair_ids)] = pair_ids
            types[row, : len(pair_types)] = pair_types
            mask[row, : len(pair_ids)] = 1
        features = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return {k: v for k, v in features.items() if k in self._inputs}

    def batches(self, pairs: list[Encoded]) -> Iterator[list[int]]:
        """The pairs' indices sorted by length and cut into batches of `batch_size` (each padded to its own longest
        pair when it runs)."""
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]), reverse=True)
        for start in range(0, len(order), self.batch_size):
            yield order[start : start + self.batch_size]

    def _run(
        self,
        pairs: list[Encoded],
        wanted: Callable[[int], bool] | None = None,
        done: Callable[[list[int]], None] | None = None,
    ) -> list[float]:
        """One model run over `pairs`, batch by batch (`batches`); a batch none of whose pairs is `wanted` any
        more (their searches ran past their deadline) is skipped; `done` hears each batch's pairs once scored. An
        OpenVINO backend scores each pair of a batch as a request of its own, unpadded (`PairwiseOpenVINO`)."""
        import torch

        scores = [0.0] * len(pairs)
        ran: list[int] = []
        model = self._model  # one backend for the whole run, even if the measured one is swapped in meanwhile

        def scored(chunk: list[int], logits: Sequence[float]) -> None:
            ran.extend(chunk)
            for i, value in zip(chunk, logits, strict=True):
                scores[i] = float(value)
            if done is not None:
                done(chunk)

        chunks = (c for c in self.batches(pairs) if wanted is None or any(wanted(i) for i in c))
        if isinstance(model, PairwiseOpenVINO):  # the next batch starts while this one's last pairs run
            sent: list[list[int]] = []

            def rows() -> Iterator[list[dict[str, np.ndarray]]]:
                for chunk in chunks:
                    sent.append(chunk)
                    yield [self._arrays([pairs[i]]) for i in chunk]

            model.score_batches(rows(), lambda number, logits: scored(sent[number], logits))
        else:
            with torch.inference_mode():
                for chunk in chunks:
                    arrays = self._arrays([pairs[i] for i in chunk])
                    features = {k: torch.from_numpy(v).to(model.device) for k, v in arrays.items()}
                    output = model.model(**features, return_dict=True)
                    scored(chunk, output.logits.float().reshape(len(chunk), -1)[:, 0].cpu().numpy().tolist())
        self.counted(documents=len(ran), tokens=sum(len(pairs[i][0]) for i in ran))
        return scores

    def run_encoded(self, pairs: list[Encoded]) -> list[float]:
        """Scores for encoded pairs, run now in this thread (no micro-batcher, no cache): the model run a search
        makes, as `doctor --bench` times it."""
        return self._run(pairs)

    def predict(self, query: str, texts: list[str], deadline: float | None = None) -> list[float]:
        """Score every text with the model, no score cache; QueryTimeoutError once `deadline` passes."""
        if not texts:
            return []
        return self._batcher.submit(self.encode(query, texts), deadline)

    def score_pairs(self, pairs: list[tuple[str, str]], deadline: float | None = None) -> list[float]:
        """Scores for (query, text) pairs with different queries, all in one model call (no score cache)."""
        encoded = [pair for query, text in pairs for pair in self.encode(query, [text])]
        return self._batcher.submit(encoded, deadline)

    @property
    def tokens_per_pair(self) -> float:
        """Mean model tokens per scored pair so far (what truncation leaves)."""
        usage = self.usage
        return usage.tokens / usage.documents if usage.documents else 0.0
