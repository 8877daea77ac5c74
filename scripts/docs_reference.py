"""The manual's reference, generated from the code, never typed: the CLI from its parsers, the HTTP API from its
OpenAPI document, the settings from `Settings`, the vocabulary and limits from `workbench.vocab`, the floors of the
architecture from `tests/test_layout.py`. `scripts/mkdocs_hooks.py` writes each where a page says
`<!-- reference:NAME -->`; `tests/test_docs_site.py` checks that each lists everything its source defines.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import tokenize
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _commands(parser: argparse.ArgumentParser, prefix: str) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(command path, help, parser) for every command and sub-command, depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                path = f"{prefix} {name}"
                yield path, helps.get(name) or "", sub
                yield from _commands(sub, path)


def _has_subcommands(parser: argparse.ArgumentParser) -> bool:
    return any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


def option_rows(parser: argparse.ArgumentParser) -> list[tuple[str, str, str]]:
    """(the argument as typed, its help, its default) for each argument of a command, help left out."""
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        name = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest.upper()}`"
        if action.choices and not isinstance(action, argparse._SubParsersAction):
            name += " " + "\\|".join(str(c) for c in action.choices)
        default = action.default
        shown = "" if default in (None, False, argparse.SUPPRESS) or action.option_strings == [] else f"`{default}`"
        help_text = (action.help or "") % {"default": default, "prog": parser.prog} if action.help else ""
        rows.append((name, help_text, shown))
    return rows


def cli_reference() -> str:
    """Every `workbench` command with its help and a table of its arguments."""
    from workbench.cli.parsers import build_parser

    parser = build_parser()
    parts = [
        "Every command, as `workbench --help` and `workbench COMMAND --help` print it. A command that fails prints "
        "one line starting `error:` and exits 2.\n"
    ]
    for path, help_text, sub in _commands(parser, "workbench"):
        level = "##" if path.count(" ") == 1 else "###"
        parts.append(f"{level} `{path}`\n\n{_cell(help_text)}\n")
        if _has_subcommands(sub):
            continue
        rows = option_rows(sub)
        if rows:
            parts.append("| argument | what it does | default |\n| --- | --- | --- |")
            parts += [f"| {name} | {_cell(text)} | {default} |" for name, text, default in rows]
            parts.append("")
    return "\n".join(parts)


def _schema_type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(_schema_type(s) for s in schema["anyOf"])
    if schema.get("type") == "array":
        return f"list of {_schema_type(schema.get('items', {}))}"
    if "enum" in schema:
        return " \\| ".join(json.dumps(v) for v in schema["enum"])
    return str(schema.get("type", "any"))


def openapi_document() -> dict[str, Any]:
    """The API's OpenAPI document, from the application `workbench serve` runs (no model is loaded)."""
    from workbench.api.app import create_app
    from workbench.config import Settings

    return create_app(Settings(), warm=False).openapi()


def http_reference() -> str:
    """Every route with its summary and request body, then every schema with its fields."""
    spec = openapi_document()
    parts = [
        "Every route of `workbench serve`, from its OpenAPI document (served at `/openapi.json`, behind the token "
        'when `WORKBENCH_API_TOKEN` is set). Errors answer `{"detail": ...}`: 422 for a request that cannot be '
        "taken, 404 for what is not there, 503 for what the server cannot do as configured.\n",
        "## Routes\n",
        "| method | path | what it does | body |\n| --- | --- | --- | --- |",
    ]
    for path, methods in sorted(spec["paths"].items()):
        for method, operation in methods.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            what = operation.get("summary") or operation.get("operationId", "")
            described = (operation.get("description") or "").split("\n\n")[0]
            parts.append(
                f"| {method.upper()} | `{path}` | {_cell(what)}{': ' + _cell(described) if described else ''} | "
                f"{_schema_type(body) if body else ''} |"
            )
    parts.append("\n## Schemas\n")
    for name, schema in sorted(spec.get("components", {}).get("schemas", {}).items()):
        parts.append(f"### {name}\n\n{_cell(schema.get('description', ''))}\n")
        properties = schema.get("properties", {})
        if properties:
            required = set(schema.get("required", []))
            parts.append("| field | type | required | description |\n| --- | --- | --- | --- |")
            parts += [
                f"| `{field}` | {_cell(_schema_type(spec_))} | {'yes' if field in required else ''} | "
                f"{_cell(spec_.get('description', ''))} |"
                for field, spec_ in properties.items()
            ]
            parts.append("")
    return "\n".join(parts)


def _comments_above(source: str) -> dict[int, str]:
    """Line number -> the comment block that ends on the line before it (a group's heading in a class body)."""
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT and token.line.strip().startswith("#"):
            comments[token.start[0]] = token.string.lstrip("#").strip()
    return comments


def settings_rows() -> list[tuple[str, str, str, str, str]]:
    """(group, field, environment variables, type, default) for every field of `Settings`, in source order."""
    from pydantic import AliasChoices

    from workbench.config import Settings

    source = (REPO / "workbench" / "config.py").read_text(encoding="utf-8")
    comments = _comments_above(source)
    tree = ast.parse(source)
    settings = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Settings")
    group, rows = "", []
    lines = {
        n.target.id: n.lineno for n in settings.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    for name, field in Settings.model_fields.items():
        line = lines.get(name, 0)
        above = line - 1
        while above in comments:
            group = re.sub(r"\s*\([^)]*\.md[^)]*\)", "", comments[above])  # a design note's citation left out
            above -= 1
        alias = field.validation_alias
        names = (
            [c for c in alias.choices if isinstance(c, str) and c != name] if isinstance(alias, AliasChoices) else []
        )
        default = "" if field.is_required() else repr(field.get_default(call_default_factory=False))
        if field.default_factory is not None:
            default = "(computed)"
        kind = field.annotation
        annotation = (
            kind.__name__ if isinstance(kind, type) else str(kind).replace("typing.", "").replace("pathlib.", "")
        )
        rows.append((group, name, ", ".join(f"`{n}`" for n in names), annotation, default))
    return rows


def settings_reference() -> str:
    """Every setting: its name in `workbench.toml`, its environment variables, its type and default."""
    parts = [
        "Every setting of `workbench.Settings`, read from the environment (the names below), then `workbench.toml` "
        "(the field name), then the default. A value out of range stops the start with one line naming it.\n",
        "| setting | environment | type | default | about |\n| --- | --- | --- | --- | --- |",
    ]
    for group, name, env, kind, default in settings_rows():
        parts.append(f"| `{name}` | {env} | {_cell(kind)} | {_cell(default)[:80]} | {_cell(group)} |")
    return "\n".join(parts) + "\n"


def vocabulary_rows() -> list[tuple[str, str, str]]:
    """(name, value, its comment) for every constant `workbench.vocab` defines."""
    import workbench.vocab as vocab

    source = (REPO / "workbench" / "vocab.py").read_text(encoding="utf-8")
    trailing: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            trailing[token.start[0]] = token.string.lstrip("#").strip()
    rows = []
    for node in ast.parse(source).body:
        target = (
            node.target
            if isinstance(node, ast.AnnAssign)
            else node.targets[0]
            if isinstance(node, ast.Assign)
            else None
        )
        if isinstance(target, ast.Name) and target.id.isupper() and not target.id.startswith("_"):
            value = getattr(vocab, target.id, None)
            comment = trailing.get(node.lineno) or trailing.get(node.lineno - 1, "")
            rows.append((target.id, repr(value), comment))
    return rows


def vocabulary_reference() -> str:
    """Every name, kind, metric and limit the workbench defines once, in `workbench/vocab.py`."""
    parts = [
        "Every kind, mode, metric name and limit, defined once in `workbench/vocab.py` (what the CLI, the API, the "
        "app and the checks all read).\n",
        "| name | value | about |\n| --- | --- | --- |",
    ]
    for name, value, comment in vocabulary_rows():
        shown = value if len(value) <= 90 else value[:87] + "…"
        parts.append(f"| `{name}` | `{_cell(shown).replace('`', '')}` | {_cell(comment)} |")
    return "\n".join(parts) + "\n"


def floors() -> dict[str, tuple[str, ...]]:
    """The floors `tests/test_layout.py` holds the package to, read from its FLOORS table."""
    tree = ast.parse((REPO / "tests" / "test_layout.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "FLOORS":
            return ast.literal_eval(node.value)
    raise LookupError("tests/test_layout.py has no FLOORS table")


def floors_reference() -> str:
    """The floors, lowest first, as the layout test checks them."""
    parts = [
        "The floors, lowest first, as `tests/test_layout.py` checks them: a module imports only from its own floor "
        "or those below, never through a function-local import, and nothing below the front ends imports "
        "Streamlit, FastAPI, Starlette, uvicorn or MCP.\n",
        "| floor | modules |\n| --- | --- |",
    ]
    parts += [f"| {floor} | {', '.join(f'`{m}`' for m in modules)} |" for floor, modules in floors().items()]
    return "\n".join(parts) + "\n"


REFERENCES: dict[str, Callable[[], str]] = {
    "cli": cli_reference,
    "http": http_reference,
    "settings": settings_reference,
    "vocabulary": vocabulary_reference,
    "floors": floors_reference,
}
