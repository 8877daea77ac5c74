"""Validation shared by every front end (app, CLI, HTTP, MCP, contracts), against the limits in `vocab`.

One typing rule for metadata: a text value that reads as a JSON number or boolean *is* that number or
boolean. It applies to metadata at ingest (a CSV's "2" is stored as 2) and to every filter, whether it
arrives as `page=2` on the command line, a line in the app's sidebar or `{"page": "2"}` over HTTP, so
the same filter matches the same chunks everywhere.
"""

from __future__ import annotations

import contextlib
import csv
import io
import ipaddress
import json
import math
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Final

from workbench.errors import InputError
from workbench.redact import CONTROL_CHARACTERS as _CONTROL
from workbench.redact import plain_text
from workbench.vocab import (
    BENCH_LENGTH_RANGE,
    GRADE_SCALE,
    JUDGMENT_POLICIES,
    MAX_BENCH_PAIRS,
    MAX_BROWSE_LIMIT,
    MAX_DOC_ID_CHARS,
    MAX_FILTER_KEY_CHARS,
    MAX_FILTER_VALUE_CHARS,
    MAX_FILTERS,
    MAX_JSON_DEPTH,
    MAX_K,
    MAX_QUERY_CHARS,
    MAX_RATER_CHARS,
    MAX_RERANK_BUDGET_MS,
    MAX_SERVE_CONCURRENCY,
    MAX_TOP_K,
    MAX_UPLOAD_NAME_CHARS,
    RATER_POLICY_PREFIX,
    RETRIEVAL_MODES,
)

Scalar = str | int | float | bool
_RATER: Final = re.compile(r"^[\w .:@/-]{1,64}$")  # "/": an LLM judge is named by its model id
_COLLECTION_NAME: Final = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]$")
# A reranker named by someone outside this process (an API client, an imported file): a bare name found in
# WORKBENCH_MODELS_DIR or a hub id; never a server folder, a URL or a path that climbs out.
_MODEL_ID: Final = re.compile(r"^[A-Za-z0-9][\w.\-]{0,127}(/[A-Za-z0-9][\w.\-]{0,127})?$")
_EXPERIMENT_ID: Final = re.compile(r"^[0-9a-f]{12}$")


def visible_text(text: str) -> str:
    """`text` without invisible format characters (zero-width spaces, bidirectional overrides, byte-order marks,
    soft hyphens), its control characters made plain, trimmed: what a person sees of it (empty when nothing)."""
    visible = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return " ".join(plain_text(visible).split()) if _CONTROL.search(visible) else visible.strip()


def validate_query(query: Any, max_chars: int | None = MAX_QUERY_CHARS) -> str:
    """The query trimmed, free of control characters and of invisible format characters (zero-width spaces,
    bidirectional overrides, byte-order marks, soft hyphens); 1 to `max_chars` characters, else InputError.

    `max_chars` is the interactive limit (512); evaluation passes None and scores the whole text (the models
    truncate tokens themselves)."""
    if isinstance(query, bytes):
        try:
            query = query.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError("The query holds bytes that are not valid UTF-8 text.") from exc
    if not isinstance(query, str):
        raise InputError(f"The query must be text; got {type(query).__name__}.")
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in query):
        # Python turns undecodable command-line bytes into lone surrogates.
        raise InputError("The query holds bytes that are not valid UTF-8 text.")
    trimmed = visible_text(query)
    if not trimmed:
        limit = f"1 to {max_chars}" if max_chars else "at least 1"
        raise InputError(f"The query is empty (nothing visible in it): type {limit} characters.")
    if max_chars is not None and len(trimmed) > max_chars:
        raise InputError(f"The query is {len(trimmed)} characters long; the limit is {max_chars}.")
    return trimmed


def json_depth(value: Any) -> int:
    """How deeply a JSON value nests (a scalar is 0, `{"a": 1}` is 1), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            stack.extend((child, depth) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def unpaired_surrogate_at(value: Any) -> str | None:
    """Where a JSON value holds a lone surrogate (`"\\ud800"`: valid JSON, not valid text, which no model or
    store can encode), as a path like 'documents[1]' ('' for the value itself), or None. Without recursion."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str) and _SURROGATE.search(item):
            return path
        if isinstance(item, dict):
            for key, child in item.items():
                where = f"{path}.{key}" if path else str(key)
                if _SURROGATE.search(str(key)):
                    return where
                stack.append((child, where))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(item))
    return None


def check_json(value: Any, name: str, *, max_depth: int = MAX_JSON_DEPTH, max_bytes: int) -> str:
    """A free-form JSON value a user sends (a turn's meta): plain JSON, nested at most `max_depth` levels, at most
    `max_bytes` encoded; InputError naming `name` otherwise. Returns the encoded JSON."""
    depth = json_depth(value)
    if depth > max_depth:
        raise InputError(f"{name} is nested {depth} levels deep; the limit is {max_depth}.")
    try:
        encoded = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be plain JSON ({exc}).") from exc
    if len(encoded.encode("utf-8")) > max_bytes:
        raise InputError(f"{name} is larger than {max_bytes} bytes.")
    return encoded


LOOPBACK_NAMES: Final = frozenset({"127.0.0.1", "localhost", "::1"})


def is_loopback(host: str) -> bool:
    """True for the names of this machine's loopback interface."""
    return host.strip().strip("[]").lower() in LOOPBACK_NAMES


_HOST_NAME: Final = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9.\-]*[A-Za-z0-9])?$")


def validate_listen_host(value: str) -> str:
    """An address to listen on: an IP address or a host name, exactly (no spaces, no port, no scheme)."""
    with contextlib.suppress(ValueError):
        return str(ipaddress.ip_address(value.strip("[]")))
    if _HOST_NAME.match(value):
        return value
    raise InputError(
        f"--host '{plain_text(value)[:60]}' is not an address to listen on: give an IP address (127.0.0.1, 0.0.0.0, "
        "::1) or a host name, without spaces, port or scheme."
    )


def validate_port(value: str | int) -> int:
    """A TCP port: a whole number from 1 to 65535."""
    text = str(value).strip()
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise InputError(f"port '{plain_text(text)[:20]}' is not a TCP port: give a whole number from 1 to 65535.")
    return int(text)


def host_name(header: str) -> str:
    """The name in a Host header, without its port ('[::1]:8000' -> '::1', 'localhost:8000' -> 'localhost')."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def whole_number(name: str, value: Any) -> int:
    """`value` as an int, refusing booleans, fractions and text; InputError naming `name` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise InputError(f"{name} must be a whole number; got {value!r}.")
    return value


def validate_depths(k: Any, top_n: Any, max_k: int = MAX_K) -> tuple[int, int]:
    """k in 1..max_k and top_n in 1..k, as integers, else InputError."""
    k, top_n = whole_number("k", k), whole_number("top_n", top_n)
    if not 1 <= k <= max_k:
        raise InputError(f"k must be between 1 and {max_k}; got {k}.")
    if not 1 <= top_n <= k:
        raise InputError(f"top_n must be between 1 and k ({k}); got {top_n}.")
    return k, top_n


def validate_min_score(value: Any) -> float | None:
    """A score threshold: a finite number, or None for none; InputError otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            value = float(str(value).strip())
        except ValueError:
            raise InputError(f"min_score must be a number; got {str(value)[:40]!r}.") from None
    if not math.isfinite(value):
        raise InputError(f"min_score must be a finite number; got {value}.")
    return float(value)


def validate_top_k(top_k: Any) -> int:
    """top_k of the search contract: 1 to 20."""
    top_k = whole_number("top_k", top_k)
    if not 1 <= top_k <= MAX_TOP_K:
        raise InputError(f"top_k must be between 1 and {MAX_TOP_K}; got {top_k}.")
    return top_k


def validate_page(offset: Any, limit: Any) -> tuple[int, int]:
    """A browse window: offset ≥ 0 and 1 ≤ limit ≤ 1000."""
    offset, limit = whole_number("offset", offset), whole_number("limit", limit)
    if offset < 0:
        raise InputError(f"offset must be 0 or more; got {offset}.")
    if not 1 <= limit <= MAX_BROWSE_LIMIT:
        raise InputError(f"limit must be between 1 and {MAX_BROWSE_LIMIT}; got {limit}.")
    return offset, limit


def validate_retrieval(value: Any) -> str:
    """dense, bm25 or hybrid."""
    if value not in RETRIEVAL_MODES:
        raise InputError(f"retrieval must be one of {', '.join(RETRIEVAL_MODES)}; got {plain_text(repr(value))[:40]}.")
    return str(value)


def validate_collection_name(name: Any) -> str:
    """Chroma's naming rule, which every store accepts: 3-512 characters of letters, digits, '.', '_', '-'."""
    if not isinstance(name, str) or not _COLLECTION_NAME.match(name):
        shown = plain_text(str(name))[:80]
        raise InputError(
            f"Collection name '{shown}' is not allowed: use 3-512 characters from letters, digits, '.', '_' "
            "and '-', starting and ending with a letter or digit."
        )
    return name


# Identity and label keys stay text whatever they look like: BEIR's document id "007" or "1e5" must not turn
# into a number, nor a title "1984", nor a file's hex source key "8888706419968592". Filters on them are compared
# as text too.
TEXT_KEYS: Final = frozenset(
    {"document_id", "origin", "content_hash", "source", "source_key", "source_url", "url", "title", "section", "id",
     "chunk_id"}
)  # fmt: skip


def normalise_value(value: Any, key: str | None = None) -> Any:
    """The typing rule: text that reads as a JSON number or boolean becomes it; whole floats become ints;
    except for the TEXT_KEYS, whose scalar values are always text.

    Other values pass through unchanged (callers decide what to do with lists, None and objects).
    """
    if key in TEXT_KEYS:
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value) if isinstance(value, int | float | str) else value
    if isinstance(value, str):
        raw = value.strip()
        if raw and (raw[0] in "-0123456789" or raw in {"true", "false"}):
            try:
                parsed = json.loads(raw)
            except (json.JSONDecodeError, RecursionError):
                return value
            if isinstance(parsed, bool | int | float):
                value = parsed
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def validate_filters(filters: Any) -> dict[str, Scalar]:
    """Metadata equalities, typed by the typing rule: a mapping of names to one text, number or boolean each.

    Refuses `$`-names (store operators), lists, objects, NaN and infinities, and more than 16 filters.
    """
    if filters is None:
        return {}
    if not isinstance(filters, Mapping):
        raise InputError(f"filters must be a mapping of metadata names to values; got {type(filters).__name__}.")
    if len(filters) > MAX_FILTERS:
        raise InputError(f"At most {MAX_FILTERS} filters; got {len(filters)}.")
    clean: dict[str, Scalar] = {}
    for key, value in filters.items():
        if not isinstance(key, str) or not key.strip():
            raise InputError(f"Filter names must be non-empty text; got {key!r}.")
        key = key.strip()
        shown = plain_text(key)[:40]
        if key.startswith("$") or _CONTROL.search(key) or len(key) > MAX_FILTER_KEY_CHARS:
            raise InputError(
                f"Filter name '{shown}' is not allowed: names are up to {MAX_FILTER_KEY_CHARS} printable "
                "characters and cannot start with '$'."
            )
        value = normalise_value(value, key)
        if isinstance(value, list | tuple | set | dict):
            raise InputError(
                f"Filter '{shown}' must equal one text, number or boolean; got {type(value).__name__} "
                f"{plain_text(repr(value))[:60]}. Filters are equalities, one value per name."
            )
        if not isinstance(value, str | int | float | bool):
            raise InputError(f"Filter '{shown}' must equal a text, number or boolean; got {value!r}.")
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"Filter '{shown}' must be a finite number; got {value}.")
        if isinstance(value, str) and len(value) > MAX_FILTER_VALUE_CHARS:
            raise InputError(
                f"Filter '{shown}' is {len(value)} characters long; the limit is {MAX_FILTER_VALUE_CHARS}."
            )
        clean[key] = value
    return clean


def parse_filters(filters: Mapping[str, Any] | Sequence[str] | str | None) -> dict[str, Scalar]:
    """The one filter parser. Takes a mapping (HTTP, MCP, Python), `key=value` strings (CLI flags) or text
    with one `key=value` per line (the app's sidebar); blank lines are skipped. Values follow the typing rule.
    """
    if filters is None:
        return {}
    if isinstance(filters, Mapping):
        return validate_filters(filters)
    if not isinstance(filters, str | Sequence):
        raise InputError(f"filters must be a mapping or key=value text; got {type(filters).__name__}.")
    lines = filters.splitlines() if isinstance(filters, str) else list(filters)
    pairs: dict[str, Any] = {}
    for line in lines:
        if not isinstance(line, str):
            raise InputError(f"Filters take key=value text; got {type(line).__name__}.")
        if not line.strip():
            continue
        key, sep, raw = line.partition("=")
        if not sep or not key.strip():
            raise InputError(f"Filters take key=value; got '{plain_text(line)[:80]}'.")
        value: Any = raw.strip()
        if value[:1] in "[{":
            with contextlib.suppress(json.JSONDecodeError, RecursionError):
                value = json.loads(value)
        pairs[key.strip()] = value
    return validate_filters(pairs)


def safe_upload_name(name: Any, fallback: str = "upload") -> str:
    """An uploaded file's name reduced to a safe base name: no folders, no drive, no leading dots,
    printable characters only, at most 120 characters, the extension kept."""
    raw = str(name or "")
    base = PureWindowsPath(PurePosixPath(raw.replace("\\", "/")).name).name
    base = unicodedata.normalize("NFC", base)
    base = re.sub(r"[^\w.\- ]", "_", plain_text(base)).strip(" .")
    if not base or base in {".", ".."}:
        base = fallback
    stem, dot, suffix = base.rpartition(".")
    if dot and len(suffix) <= 10:
        return f"{stem[: MAX_UPLOAD_NAME_CHARS - len(suffix) - 1]}.{suffix}" if stem else f"{fallback}.{suffix}"
    return base[:MAX_UPLOAD_NAME_CHARS]


def safe_file_stem(name: Any, fallback: str = "report") -> str:
    """The one way a name (a collection's, an experiment's) becomes the start of a file name: letters, digits,
    '-' and '_' only (no folder, no dot, no drive), at most 80 characters; `fallback` when nothing is left."""
    stem = re.sub(r"[^\w\-]+", "_", unicodedata.normalize("NFC", plain_text(str(name or "")))).strip("_")
    return stem[:80] or fallback


def parse_int_list(text: str, name: str) -> list[int]:
    """Whole numbers separated by commas or spaces ('10, 20 50'), for options such as a depth list."""
    values = []
    for part in text.replace(",", " ").split():
        try:
            values.append(int(part))
        except ValueError as exc:
            raise InputError(
                f"{name} takes whole numbers separated by commas, e.g. 10,20,50; got '{plain_text(part)[:20]}'."
            ) from exc
    if not values:
        raise InputError(f"{name} takes whole numbers separated by commas, e.g. 10,20,50.")
    return sorted(set(values))


def check_data_path(path: Any, roots: Sequence[Path], what: str = "path") -> Path:
    """A server-side path typed by an app user, allowed only inside one of `roots` (links followed first).

    InputError when it is outside them: the app must not read whatever the server can read.
    """
    text = str(path or "").strip()
    if not text or "\x00" in text:
        raise InputError(f"Type the {what} of a folder or file.")
    resolved = Path(text).expanduser().resolve()
    allowed = [Path(root).expanduser().resolve() for root in roots]
    if not any(resolved == root or resolved.is_relative_to(root) for root in allowed):
        listed = ", ".join(str(root) for root in allowed)
        raise InputError(
            f"'{plain_text(text)[:120]}' is outside the folders this app may read ({listed}). "
            "Set WORKBENCH_DATA_ROOTS to allow another folder."
        )
    return resolved


def validate_grade(grade: Any) -> int:
    """A grade on the scale (GRADE_SCALE: 0 not relevant ... 3 perfectly relevant); InputError otherwise."""
    if isinstance(grade, str) and grade.strip().lstrip("-").isdigit():
        grade = int(grade.strip())
    value = whole_number("grade", grade)
    if value not in GRADE_SCALE:
        scale = ", ".join(f"{g} {label}" for g, label in GRADE_SCALE.items())
        raise InputError(f"grade must be one of {scale}; got {value}.")
    return value


def validate_rater(rater: Any) -> str:
    """A rater's name: 1-64 visible characters (letters, digits, spaces and . _ : @ / -)."""
    if not isinstance(rater, str) or not _RATER.match(rater.strip()):
        raise InputError(
            f"rater must be 1-{MAX_RATER_CHARS} characters of letters, digits, spaces and . _ : @ / -; "
            f"got {plain_text(repr(rater))[:40]}."
        )
    return rater.strip()


_IDEMPOTENCY_KEY: Final = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")


def validate_idempotency_key(key: Any) -> str:
    """An idempotency key: 1-128 letters, digits and . _ : - (a UUID, say)."""
    if not isinstance(key, str) or not _IDEMPOTENCY_KEY.match(key):
        raise InputError(
            "idempotency key must be 1-128 letters, digits and . _ : - (a UUID, say); "
            f"got {plain_text(repr(key))[:40]}."
        )
    return key


def validate_model_id(value: Any) -> str:
    """A model id an outside caller may name: a folder name in WORKBENCH_MODELS_DIR or a hub id
    (`org/name`); InputError for a URL, an absolute path or a path that climbs out."""
    if not isinstance(value, str) or ".." in value or not _MODEL_ID.match(value):
        raise InputError(
            "a reranker is 'default', 'none' or a model id such as minilm-l6-scifact-reranker (a folder name or a "
            f"hub id, not a URL or a path); got {plain_text(repr(value))[:60]}."
        )
    return value


def validate_experiment_id(value: Any) -> str:
    """An experiment id as the workbench makes them: 12 lower-case hex digits. The message never echoes the
    value (it may come from a link anyone can craft)."""
    if not isinstance(value, str) or not _EXPERIMENT_ID.match(value):
        raise InputError("An experiment id is 12 hex digits (as `workbench experiments list` shows them).")
    return value


def validate_doc_id(doc_id: Any) -> str:
    """A document id: 1-512 characters of visible text."""
    if not isinstance(doc_id, str) or not doc_id.strip() or len(doc_id) > MAX_DOC_ID_CHARS or _CONTROL.search(doc_id):
        raise InputError(
            f"document id must be 1-{MAX_DOC_ID_CHARS} visible characters; got {plain_text(repr(doc_id))[:40]}."
        )
    return doc_id.strip()


def validate_policy(policy: Any) -> str:
    """How a pair's current grade is chosen: latest, majority or rater:NAME."""
    value = policy.strip() if isinstance(policy, str) else ""
    if value in JUDGMENT_POLICIES or (value.startswith(RATER_POLICY_PREFIX) and value[len(RATER_POLICY_PREFIX) :]):
        return value
    raise InputError(f"The judgment policy is latest, majority or rater:NAME; got {plain_text(repr(policy))[:40]}.")


def parse_chunking(value: Any) -> tuple[int, int]:
    """A chunking to compare, 'SIZE/OVERLAP' in characters ('500/50'; a size alone overlaps by a tenth): the size
    at least 50, the overlap under the size."""
    if isinstance(value, tuple):
        size, overlap = value
    else:
        text = str(value).strip()
        size_text, _, overlap_text = text.partition("/")
        if not size_text.isdigit() or (overlap_text and not overlap_text.isdigit()) or len(text) > 20:
            raise InputError(f"A chunking is SIZE/OVERLAP in characters, e.g. 500/50; got '{plain_text(text)[:20]}'.")
        size = int(size_text)
        overlap = int(overlap_text) if overlap_text else size // 10
    if not 50 <= size <= 100_000 or not 0 <= overlap < size:
        raise InputError(
            f"A chunking's size must be from 50 to 100,000 characters and its overlap under the size; got "
            f"{size}/{overlap}."
        )
    return int(size), int(overlap)


def read_user_file(path: str | Path, what: str, max_bytes: int) -> bytes:
    """The bytes of a file a user named (a log, a candidates file, a query set, an import), read under a cap.

    Refuses, in one line naming the file by its name only, what is not there, what is not a regular file (a
    folder, a device such as /dev/zero, a pipe or a socket: their size says nothing of what they hold) and what
    holds more than `max_bytes`: the cap is enforced on the bytes read, never on the size the file reports."""
    path = Path(path)
    name = plain_text(path.name)[:120] or str(path)[:120]
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"No {what} at {name}.") from None
    except OSError as exc:
        raise InputError(f"The {what} {name} cannot be read ({exc.strerror or type(exc).__name__}).") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"The {what} {name} is a folder: give a file.")
    if not stat.S_ISREG(mode):
        raise InputError(f"The {what} {name} is not a regular file (a device, pipe or socket): give a file.")
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(f"The {what} {name} cannot be read ({exc.strerror or type(exc).__name__}).") from None
    if len(data) > max_bytes:
        raise InputError(f"The {what} {name} is over {max_bytes:,} bytes: split it or sample it.")
    return data


def decode_text(data: bytes, name: str) -> str:
    """A user's file as text: UTF-8 (a BOM allowed), or UTF-16 with its BOM. Refuses, naming the byte, a file in
    another encoding (rather than reading it with replacement characters) and one holding NUL bytes (binary)."""
    shown_name = plain_text(name)[:120]
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{shown_name}: not UTF-8 text, nor UTF-16 past its byte-order mark (byte {exc.start}); save it as "
                "UTF-8."
            ) from None
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{shown_name}: not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8."
            ) from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise InputError(f"{shown_name}, line {line}: a NUL byte; it is a binary file, not text.")
    return text


CSV_FIELD_LIMIT: Final = 16 * 1024 * 1024  # one cell of a CSV a user gives (Python's default is 131,072)


def csv_records(text: str, name: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The columns (trimmed, lower case) and the (line number, row) pairs of a CSV a user gave, the header first.

    Python's `csv` errors (a newline in an unquoted field, a cell over the limit, ...) become one line naming the
    file and the line; a header that names a column twice is refused (the second would silently win)."""
    shown_name = plain_text(name)[:120]
    csv.field_size_limit(CSV_FIELD_LIMIT)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if not header:
            raise InputError(f"{shown_name}: the CSV has no header row.")
        columns = [plain_text(c).strip().lower() for c in header]
        repeated = sorted({c for c in columns if columns.count(c) > 1})
        if repeated:
            raise InputError(f"{shown_name}: the header names the column {', '.join(repeated)[:80]} more than once.")
        rows = []
        for cells in reader:
            if any(cell.strip() for cell in cells):
                rows.append((reader.line_num, dict(zip(columns, cells, strict=False))))
    except csv.Error as exc:
        raise InputError(
            f"{shown_name}, line {reader.line_num}: not a readable CSV ({plain_text(str(exc))[:80]})."
        ) from None
    return columns, rows


def _number(value: Any, words: str, fits: Callable[[float], bool]) -> float:
    """`value` as a float that `fits`, else InputError saying it is `words` and what was given."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not fits(number):  # nan fits no rule
        raise InputError(f"{words}; got '{plain_text(str(value))[:20]}'.")
    return number


def validate_budget_ms(value: Any) -> float:
    """A latency budget in milliseconds: a finite number above 0 (`nan`, `inf` and 0 would silently budget nothing)."""
    return _number(value, "A latency budget is a number of milliseconds above 0", lambda n: math.isfinite(n) and n > 0)


def validate_rerank_budget_ms(value: Any) -> float:
    """A rerank budget in milliseconds: a number from 1 to MAX_RERANK_BUDGET_MS (ten minutes); 0, negative, NaN,
    infinite, huge and text budgets are refused (each would silently serve every search unreranked, or never)."""
    if isinstance(value, bool):
        value = "true" if value else "false"
    return _number(
        value,
        f"A rerank budget is a number of milliseconds from 1 to {MAX_RERANK_BUDGET_MS:,}",
        lambda n: 1 <= n <= MAX_RERANK_BUDGET_MS,
    )


def validate_serve_concurrency(value: Any) -> int:
    """How many searches an evaluation served under a rerank budget runs at once (budgets bite under load): a whole
    number from 1 to MAX_SERVE_CONCURRENCY."""
    return _whole_in(value, "the serving concurrency", 1, MAX_SERVE_CONCURRENCY)


def validate_serving(budget_ms: Any, concurrency: Any) -> tuple[float | None, int]:
    """A rerank budget (None: none) and the concurrency it is served at, checked together: a concurrency above 1
    is the load a budget is measured under, so it goes with one."""
    budget = None if budget_ms is None else validate_rerank_budget_ms(budget_ms)
    load = 1 if concurrency is None else validate_serve_concurrency(concurrency)
    if load > 1 and budget is None:
        raise InputError(
            f"A serving concurrency ({load}) is the load a rerank budget is measured under: give a rerank budget too "
            "(--rerank-budget-ms, rerank_budget_ms)."
        )
    return budget, load


def validate_tolerance(value: Any) -> float:
    """A tolerance on a change in nDCG@10: a number above 0 and below 1."""
    return _number(value, "The tolerance is a number above 0 and below 1", lambda n: 0 < n < 1)


def _whole_in(value: Any, what: str, low: int, high: int) -> int:
    """A whole number from `low` to `high` (a string of one too), or InputError naming `what` and the range."""
    said = f"{what[0].upper()}{what[1:]} is a whole number from {low} to {high}"
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise InputError(f"{said}; got '{plain_text(value)[:20]}'.") from None
    number = whole_number(what, value)
    if not low <= number <= high:
        raise InputError(f"{said}; got {number}.")
    return number


def validate_bench_pairs(value: Any) -> int:
    """Pairs a round of `doctor --bench`: a whole number from 1 to MAX_BENCH_PAIRS."""
    return _whole_in(value, "pairs a round", 1, MAX_BENCH_PAIRS)


def validate_bench_lengths(value: Any) -> list[int]:
    """The lengths `doctor --bench` times at: tokens a pair, each a whole number in BENCH_LENGTH_RANGE (a list, or
    a comma-separated string), sorted, each once."""
    parts = [p for p in value.split(",") if p.strip()] if isinstance(value, str) else list(value or [])
    if not parts:
        raise InputError("Name at least one bench length (tokens a pair), e.g. 128,256.")
    low, high = BENCH_LENGTH_RANGE
    return sorted({_whole_in(part, "a bench length (tokens a pair)", low, high) for part in parts})


def validate_max_queries(value: Any) -> int | None:
    """How many judged queries an evaluation takes: None for all, else a whole number of 1 or more."""
    if value is None:
        return None
    count = whole_number("max queries", value)
    if count < 1:
        raise InputError(f"max queries must be 1 or more (leave it out for all); got {count}.")
    return count


def validate_looks(value: Any) -> int:
    """How many looks a run stopping when settled takes: a whole number from 1 to 1000."""
    return _whole_in(value, "the number of looks", 1, 1000)


def validate_seed(value: Any) -> int:
    """A random seed: a whole number from 0 to 2**32 - 1."""
    return _whole_in(value, "the seed", 0, 2**32 - 1)
