"""User text into Markdown, one way: `text_md` for any text that came from a user, a file or a store (ids, names,
tags, notes, queries, documents), `message_md` for a message of ours that quotes such text inside `code` spans.

Streamlit renders Markdown in titles, captions, alerts and labels: an image link would make the viewer's browser
fetch from any host, a link would be clickable, and `:red[...]` or `:icon:` would change what the text says.
"""

from __future__ import annotations

import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~$=\"'])")
# HTML-ish characters and ':' (Streamlit's :color[...] and :icon: directives) as entities: the Markdown parser
# shows them as text. Bare URLs and e-mail addresses are linked after parsing, from the text itself, so a word
# joiner (U+2060, invisible) goes inside '://', after 'www' and before '@'.
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", ":": "&#58;", "@": "\u2060&#64;"}
_JOIN = "\u2060"
_WWW = re.compile(r"(?i)(www)\\\.")


def text_md(text: object) -> str:
    """`text` as Markdown that renders literally: no links (not even bare URLs), images, HTML, LaTeX, colours
    or icons."""
    flat = " ".join(str(text).split())
    flat = _MARKDOWN_SPECIAL.sub(r"\\\1", flat)
    flat = "".join(_ENTITIES.get(ch, ch) for ch in flat).replace("&#58;//", f"&#58;{_JOIN}//")
    return _WWW.sub(rf"\1{_JOIN}&#46;", flat)


def message_md(message: object) -> str:
    """A message that may quote user text, as Markdown: its `code` spans stay code spans (whatever they hold shows
    literally) and everything else is `text_md`; an unpaired backtick shows as a backtick."""
    parts = str(message).split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: the last one opens nothing
        last = parts.pop()
        parts[-1] += "`" + last
    shown = []
    for i, part in enumerate(parts):
        if i % 2 and part.strip():
            shown.append(f"`{' '.join(part.split())}`")
        else:
            lead, trail = part[: len(part) - len(part.lstrip())], part[len(part.rstrip()) :]
            shown.append(f"{' ' if lead else ''}{text_md(part)}{' ' if trail else ''}" if part.strip() else part)
    return "".join(shown)
