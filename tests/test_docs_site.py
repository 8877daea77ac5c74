"""The manual: the site builds strictly (a broken link, a missing page or a page left out of the navigation fails),
its reference lists everything the code defines (every command and option of the parsers, every setting), the
settings it names by hand exist, and the README stays a short front door whose links all lead somewhere."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference", REPO / "scripts" / "docs_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    built = subprocess.run(
        [str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "workbench judgments clicks" in cli and "reference:cli" not in cli  # generated, not left as a marker
    settings = (tmp_path / "site" / "reference" / "settings" / "index.html").read_text(encoding="utf-8")
    assert "WORKBENCH_JUDGMENT_POLICY" in settings


def test_the_cli_reference_lists_every_command_and_option() -> None:
    import argparse

    from workbench.cli.parsers import build_parser

    reference = _reference()
    text = reference.cli_reference()
    commands = list(reference._commands(build_parser(), "workbench"))
    assert len(commands) > 30
    for path, _, parser in commands:
        assert f"`{path}`" in text, path
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            for option in action.option_strings:
                assert f"`{option}`" in text.split(f"`{path}`", 1)[1], f"{path} {option}"


def test_the_settings_reference_lists_every_setting_and_its_variables() -> None:
    from pydantic import AliasChoices

    from workbench.config import Settings

    text = _reference().settings_reference()
    for name, field in Settings.model_fields.items():
        assert f"`{name}`" in text, name
        alias = field.validation_alias
        for choice in alias.choices if isinstance(alias, AliasChoices) else []:
            assert f"`{choice}`" in text, choice


def test_the_variables_the_settings_page_names_by_hand_exist() -> None:
    page = (REPO / "docs" / "reference" / "settings.md").read_text(encoding="utf-8")
    source = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "workbench").rglob("*.py"))
    named = set(re.findall(r"`([A-Z][A-Z0-9_]{3,})`", page))
    assert len(named) > 30
    assert [n for n in sorted(named) if f'"{n}"' not in source] == []


def test_the_readme_is_a_short_front_door_whose_links_lead_somewhere() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    assert len(lines) <= 160
    assert lines[2:6] == [
        "```bash",
        "bash scripts/setup.sh && .venv/bin/workbench app                 # start the app on the demo collection",
        "bash scripts/setup.sh --test && .venv/bin/python -m pytest       # run the whole test suite",
        "```",
    ]
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    assert links and [link for link in links if not link.startswith("http") and not (REPO / link).exists()] == []


def test_the_python_how_to_imports_from_the_package_face_only() -> None:
    """The how-to's code imports every name from `workbench` itself (its public face), and each one is there."""
    import ast

    import workbench

    page = (REPO / "docs" / "how-to" / "python.md").read_text(encoding="utf-8")
    code = "\n".join(re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL))
    imports = [node for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Import | ast.ImportFrom)]
    inner = [
        n.module for n in imports if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("workbench.")
    ]
    assert inner == []
    named = {
        alias.name for n in imports if isinstance(n, ast.ImportFrom) and n.module == "workbench" for alias in n.names
    }
    assert {"Engine", "evaluate_dataset"} <= named and named <= set(workbench.__all__)
    assert all(getattr(workbench, name) is not None for name in named)


def test_the_architecture_page_names_every_module_below_the_front_ends() -> None:
    """Issue 55: the page named none of 19 modules below the front ends; a module added is named there too."""
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    front_ends = {"app", "cli", "api"}
    modules = [
        path for path in sorted((REPO / "workbench").rglob("*.py"))
        if path.name != "__init__.py" and "__pycache__" not in path.parts
        and not front_ends & set(path.relative_to(REPO / "workbench").parts[:-1])
    ]  # fmt: skip
    unnamed = [str(p.relative_to(REPO)) for p in modules if not re.search(rf"(?<!\w){re.escape(p.stem)}(?!\w)", page)]
    assert len(modules) > 100 and unnamed == []
