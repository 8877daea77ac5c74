"""Secrets never reach a screen or a log: user info and key parameters are removed from URLs and messages.

`redact_url` is for a URL the workbench shows (a store's location); `redact_text` scrubs any message,
including ones a client library wrote, before a front end prints it; `plain_text` removes control characters
(terminal escapes); `shown` does both, for any text that reaches a user.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import PurePath
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
SECRET_PARAMS = frozenset(
    {
        "api_key",
        "apikey",
        "api-key",
        "key",
        "token",
        "access_token",
        "auth",
        "password",
        "passwd",
        "pwd",
        "secret",
        "client_secret",
        "sig",
        "signature",
    }
)
_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.\-]*://)(?P<userinfo>[^/@\s?#]+)@")
# In free text only names that cannot be ordinary words ("key=value" is how filters are written).
_TEXT_SECRET_NAMES = (
    "api_key",
    "apikey",
    "api-key",
    "access_token",
    "token",
    "password",
    "passwd",
    "client_secret",
    "secret",
    "signature",
)
_PARAM = re.compile(
    r"(?P<name>(?<![A-Za-z0-9_/.\-])(?:"
    + "|".join(re.escape(p) for p in _TEXT_SECRET_NAMES)
    + r"))(?P<sep>\s*[=:]\s*)(?P<quote>['\"]?)(?P<value>[^\s&'\"#,;)}]+)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?P<scheme>\b(?:Bearer|Basic|Token)\s+)(?P<value>[A-Za-z0-9._~+/=\-]{6,})", re.IGNORECASE)


def _credential_like(value: str) -> bool:
    """A value after "token: " or "Bearer " that could be a credential: with a digit or a symbol, or long. A plain
    word ("token expired", "passwd: no such file") is prose and stays."""
    return len(value) >= 20 or not value.isalpha()


def _masked_param(found: re.Match[str]) -> str:
    prose = found["name"].lower() == "token" and ":" in found["sep"] and found["sep"].strip() != found["sep"]
    if prose and not _credential_like(found["value"]):
        return found[0]  # "token: expired" is a sentence; a password is masked whatever it looks like
    return f"{found['name']}{found['sep']}{found['quote']}{MASK}"


_OPENAI_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
# C0 and C1 control characters other than tab and newline: terminal escapes, NULs, bells; and lone surrogates,
# which no encoder writes (a message echoing one could not be sent).
CONTROL_CHARACTERS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def plain_text(text: str) -> str:
    """`text` with control characters (terminal escapes, NUL, bell) replaced by spaces: safe to print."""
    return CONTROL_CHARACTERS.sub(" ", text)


# An absolute POSIX path that is not part of a URL ("http://host/x" keeps its path).
_SERVER_PATH = re.compile(r"(?<![\w:/.\-])/(?P<top>[\w.\-]+)(?:/[\w.\-]*)*[\w\-]?/?")
SERVER_FOLDER = "<server folder>"


@functools.cache  # the machine's top-level folders do not change while the process runs
def _top_folders() -> frozenset[str]:
    try:
        return frozenset(entry.name for entry in os.scandir("/") if entry.is_dir())
    except OSError:
        return frozenset()


def hide_paths(text: str) -> str:
    """`text` with the server's absolute paths replaced by '<server folder>': a remote client (the API, an MCP
    client) learns nothing of the machine's layout. Only paths under one of this machine's top-level folders
    are server paths: a route ('POST /judgments') or what a client wrote stays as it is."""
    top = _top_folders()
    return _SERVER_PATH.sub(lambda m: SERVER_FOLDER if m["top"] in top else m[0], text)


def is_local_path(value: str) -> bool:
    """True for a folder or file written as a path (absolute, ./, ../ or ~), not a hub id ('org/name')."""
    return value.startswith(("/", "./", "../", "~", "\\")) or re.match(r"^[A-Za-z]:[\\/]", value) is not None


def public_name(value: str | None) -> str | None:
    """A model id, URL or location as a remote client may see it: a URL without its user info and with secret
    parameters masked, a path by its last part (the folder's name, never where it is), anything else as it is."""
    if not value:
        return value
    if "://" in value:
        return redact_url(value)
    if is_local_path(value):
        return PurePath(value.rstrip("/\\")).name or SERVER_FOLDER
    return value


def shown(text: object) -> str:
    """Any text safe to show a user: control characters removed, secrets masked."""
    return redact_text(plain_text(str(text)))


def redact_url(url: str | None) -> str:
    """The URL without its user info (user:password@) and with secret query parameters masked."""
    if not url:
        return url or ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_text(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if k.lower() in SECRET_PARAMS else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


_known_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """A secret's value (an API key read from the environment), masked wherever it appears from now on."""
    if value and len(value) >= 6:
        _known_secrets.add(value)


def redact_text(text: str) -> str:
    """Any message with URL user info, key=value secrets, bearer tokens, API keys and every registered secret
    value masked."""
    if not text:
        return text
    for secret in _known_secrets:
        text = text.replace(secret, MASK)
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    text = _PARAM.sub(_masked_param, text)
    text = _BEARER.sub(lambda m: f"{m['scheme']}{MASK}" if _credential_like(m["value"]) else m[0], text)
    return _OPENAI_KEY.sub(f"sk-{MASK}", text)
