"""OpenVINO scoring one pair per request: each (query, passage) pair is an inference request of its own, at its own
length, with no padding, through an asynchronous queue with two streams per core (one thread each). A pair's score
then never depends on its batch-mates, whatever the precision: the same tokens always run through the same kernels
(the parity audit's batch-mates check holds it to the last digit). On 2 cores it is also faster than padded batches:
no padding is computed.

Three precisions share it (`vocab.OPENVINO_BACKENDS`): fp32; bf16 where the CPU multiplies bf16
(`INFERENCE_PRECISION_HINT`); and int8 from NNCF's static post-training quantization (`quantize_static_int8`), whose
activation scales are fixed from calibration pairs made of the demo's passages, never of any judged query, so unlike
dynamic int8 no call rescales another's. Whether any is faithful to fp32 torch is the parity audit's to say.
"""

from __future__ import annotations

import functools
import io
import logging
import os
import random
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np

from workbench.loaders import load_path
from workbench.paths import demo_dir

PRECISION_HINTS = {"openvino": "f32", "openvino-bf16": "bf16", "openvino-int8": "f32"}  # int8 layers stay int8
CALIBRATION_PAIRS = 256
# Requests in flight per core, one thread each: while one is between pairs (its answer read, the next started from
# Python), the other computes. Measured on the demo's judged pairs (2 cores, bf16): 154-160 pairs/s per core with one
# a core, 168-171 with two, no gain past two; the same scores to the last bit (each pair is still one request).
REQUESTS_PER_CORE = 2
_PASSAGE_CHARS = 900  # passages cut as the demo collection's chunks are, near enough
_QUERY_WORDS = 10


@functools.cache  # read on every load of an int8 export (its recipe) and by its quantization: the demo's files once
def calibration_pairs(count: int = CALIBRATION_PAIRS, seed: int = 0) -> tuple[tuple[str, str], ...]:
    """Pairs to fix int8 activation scales with: the demo's passages, each asked by the opening words of a passage
    (its own for half the pairs, so that high scores are seen too; another's for the rest). No judged query is among
    them, so an audit on the demo's queries is not an audit on the calibration."""
    documents = sorted(load_path(demo_dir() / "docs").documents, key=lambda d: d.id)
    passages = [d.text[i : i + _PASSAGE_CHARS] for d in documents for i in range(0, len(d.text), _PASSAGE_CHARS)]
    passages = [p for p in passages if len(p.split()) > _QUERY_WORDS]
    rng = random.Random(seed)
    pairs = []
    for n in range(count):
        passage = rng.choice(passages)
        asking = passage if n % 2 == 0 else rng.choice(passages)
        pairs.append((" ".join(asking.split()[:_QUERY_WORDS]), passage))
    return tuple(pairs)


def quantize_static_int8(fp32_xml: Path, int8_xml: Path, tokenizer: Any, max_length: int) -> None:
    """NNCF's post-training quantization of an OpenVINO fp32 model (a transformer: SmoothQuant, LayerNorm and
    softmax kept in floating point) with activation scales fixed from `calibration_pairs`; written to `int8_xml`."""
    import nncf
    import openvino as ov

    core = ov.Core()
    model = core.read_model(str(fp32_xml))
    names = [port.get_any_name() for port in model.inputs]
    pairs = calibration_pairs()
    batches = [list(pairs[i : i + 8]) for i in range(0, len(pairs), 8)]

    def inputs(batch: list[tuple[str, str]]) -> dict[str, np.ndarray]:
        encoded = tokenizer([q for q, _ in batch], [p for _, p in batch], truncation=True, max_length=max_length,
                            padding=True, return_tensors="np")  # fmt: skip
        return {name: encoded[name].astype(np.int64) for name in names}

    nncf.set_log_level(logging.ERROR)
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):  # NNCF's progress bars
        quantized = nncf.quantize(
            model, nncf.Dataset(batches, inputs), model_type=nncf.ModelType.TRANSFORMER, subset_size=len(batches)
        )
    ov.save_model(quantized, str(int8_xml))


class PairwiseOpenVINO:
    """An OpenVINO sequence-classification model that scores pairs one request each (see the module's docstring):
    what `CrossEncoderReranker` runs for the OpenVINO backends, with the face of a sentence-transformers
    CrossEncoder that the backend calibration uses (`tokenizer`, `max_length`, `predict`)."""

    device = "cpu"

    def __init__(self, xml: Path, tokenizer: Any, max_length: int, backend: str, cores: int | None = None) -> None:
        import openvino as ov

        affinity = getattr(os, "sched_getaffinity", None)  # Linux: the cores this process may run on
        cores = max(1, cores or (len(affinity(0)) if affinity else os.cpu_count() or 1))
        streams = cores * REQUESTS_PER_CORE
        core = ov.Core()
        self.compiled = core.compile_model(
            core.read_model(str(xml)),
            "CPU",
            {
                "INFERENCE_PRECISION_HINT": PRECISION_HINTS[backend],
                "PERFORMANCE_HINT": "THROUGHPUT",
                "NUM_STREAMS": streams,
                "INFERENCE_NUM_THREADS": streams,  # one thread a stream: a pair's arithmetic never splits
            },
        )
        self.inputs = [port.get_any_name() for port in self.compiled.inputs]
        self.tokenizer, self.max_length, self.backend = tokenizer, max_length, backend
        self._queue = ov.AsyncInferQueue(self.compiled, streams)
        self._answers: dict[int, float] = {}
        self._queue.set_callback(self._answered)
        self._lock = threading.Lock()  # one run at a time: the queue is not shared between callers

    def _answered(self, request: Any, index: int) -> None:
        self._answers[index] = float(request.get_output_tensor(0).data.reshape(-1)[0])

    def score_batches(
        self, batches: Iterable[Sequence[dict[str, np.ndarray]]], finished: Callable[[int, list[float]], None]
    ) -> None:
        """Score batches of rows (each row one pair's model inputs, shape 1 x its length; each a request of its
        own), calling `finished(batch's number, its scores)` in this thread, in order, as each batch is answered.
        The next batch is taken from `batches` once this one's requests are started, and its requests start while
        this one's last are still running: no stream waits for a batch's last pair."""
        with self._lock:
            self._answers = {}
            started = 0
            waiting: deque[tuple[int, range]] = deque()  # (batch number, its requests) not yet handed back

            def hand_back(done: bool) -> None:
                while waiting and (done or all(i in self._answers for i in waiting[0][1])):
                    number, requests = waiting.popleft()
                    finished(number, [self._answers.pop(i) for i in requests])

            try:
                for number, rows in enumerate(batches):
                    for row in rows:  # start_async waits for a free request when all are busy
                        self._queue.start_async({name: row[name] for name in self.inputs}, started)
                        started += 1
                    waiting.append((number, range(started - len(rows), started)))
                    hand_back(done=False)
            finally:
                self._queue.wait_all()
            hand_back(done=True)

    def score_rows(self, rows: Sequence[dict[str, np.ndarray]]) -> list[float]:
        """Each row scored as a request of its own: the logits of the first label, in order."""
        scores: list[float] = []
        self.score_batches([rows], lambda _, values: scores.extend(values))
        return scores

    def predict(self, pairs: Sequence[tuple[str, str]], **_: Any) -> np.ndarray:
        """Scores for (query, passage) pairs, each cut to `max_length` by the tokenizer (what the calibration
        times; the reranker cuts its pairs itself and calls `score_rows`)."""
        rows = []
        for query, passage in pairs:
            encoded = self.tokenizer(query, passage, truncation=True, max_length=self.max_length, return_tensors="np")
            rows.append({name: encoded[name].astype(np.int64) for name in self.inputs})
        return np.asarray(self.score_rows(rows))
