"""The shape of the code (ARCHITECTURE.md): floors that import only downwards, no import circle (function-local
imports included), the front ends' libraries kept in the front ends, and the app's options read by both ways of
starting it. Every module of the package must be placed on a floor here, so a new file is placed on purpose."""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "workbench"

# Lowest first. A module may import from its own floor or any floor below, never from one above.
FLOORS: dict[str, tuple[str, ...]] = {
    "ground": (
        "workbench.types",
        "workbench.errors",
        "workbench.config",
        "workbench.vocab",
        "workbench.paths",
        "workbench.redact",
        "workbench.extras",
        "workbench.inputs",
        "workbench.fusion",
        "workbench.passages",
        "workbench.models",
        "workbench.lineage",
        "workbench.service_calls",
        "workbench.spreadsheet",
        "workbench.heap",
    ),
    "stages": (
        "workbench.embeddings",
        "workbench.rerankers",
        "workbench.retrieval",
        "workbench.stores",
        "workbench.ingest",
        "workbench.ingest_status",
        "workbench.loaders",
        "workbench.serving",
    ),
    "engine": ("workbench.engine",),
    # The services floor, in its own order: measuring, then judgments, then saved experiments, then
    # blind preferences (sessions of two plans over a query set), then the services
    # the front ends call (each may import those before it, never one after it).
    # The parity audit (evaluation/parity.py) measures the backends with the engine's searches and nDCG: it is an
    # evaluation, on this floor, so the rerankers package imports nothing above it.
    "evaluation": ("workbench.evaluation",),
    "judgments": ("workbench.judgments",),
    "clicks": ("workbench.clicks",),
    "experiments": ("workbench.experiments",),
    "preferences": ("workbench.preferences",),
    "services": ("workbench.services",),
    "front ends": (
        "workbench.app",
        "workbench.cli",
        "workbench.api",
        "workbench.mcp",
        "workbench.mcp_tools",
        "workbench.streamlit_app",
        "workbench",  # the package's public face re-exports from every floor
    ),
}
FRONT_END_LIBRARIES = ("streamlit", "fastapi", "starlette", "uvicorn", "mcp")


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        modules[name] = path
    return modules


MODULES = _modules()


def _floor(module: str) -> int:
    best = None
    for level, (_, prefixes) in enumerate(FLOORS.items()):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[1]):
                best = (level, len(prefix))
    assert best is not None, f"{module} is on no floor: add it to FLOORS in tests/test_layout.py"
    return best[0]


def _imports(module: str) -> list[tuple[str, int, bool]]:
    """(imported name, line, inside a function) for every import statement of a module."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    local: set[int] = set()
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            local |= {id(n) for n in ast.walk(function) if isinstance(n, ast.Import | ast.ImportFrom)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno, id(node) in local) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            found.append((prefix, node.lineno, id(node) in local))
            found += [(f"{prefix}.{alias.name}", node.lineno, id(node) in local) for alias in node.names]
    return found


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        graph[module] = {name for name, _, _ in _imports(module) if name in MODULES and name != module}
    return graph


def test_every_module_is_on_a_floor() -> None:
    for module in MODULES:
        _floor(module)


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """Each import from a module to one on a floor above it."""
    return [
        f"{module} ({list(FLOORS)[_floor(module)]}) imports {target} ({list(FLOORS)[_floor(target)]})"
        for module, targets in graph.items()
        for target in sorted(targets)
        if _floor(target) > _floor(module)
    ]


def test_no_module_imports_from_a_floor_above_it() -> None:
    upward = _upward(_graph())
    assert not upward, "\n".join(upward)
    # the rule's positive control: the stages below the engine never import it
    assert _upward({"workbench.rerankers.factory": {"workbench.engine"}}) == [
        "workbench.rerankers.factory (stages) imports workbench.engine (engine)"
    ]


def test_the_package_root_holds_the_ground_the_stages_the_engine_and_the_entries_only() -> None:
    """Services live in `workbench/services/`, `evaluation/` and `judgments/`: a loose module at the root is a
    floor that only this file knows."""
    services_floor = list(FLOORS).index("services")
    loose = [
        name
        for name, path in MODULES.items()
        if path.parent == PACKAGE and path.name != "__init__.py" and _floor(name) == services_floor
    ]
    assert loose == [], f"{loose}: a service belongs in workbench/services/"
    assert sorted(p.stem for p in (PACKAGE / "services").glob("*.py")) == [
        "__init__",
        "backend_audit",
        "backend_bench",
        "comparisons",
        "demo",
        "evaluations",
        "events",
        "explain",
        "hints",
        "jobs",
        "preferences",
        "search",
        "sessions",
        "sources",
        "store_comparison",
    ]


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return circles


def _folder_graph(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The parts of `package` (each sub-package with everything in it, and each module; the package's own
    `__init__` left out) and, for each, the parts its modules import."""

    def part(module: str) -> str | None:
        if not module.startswith(package + "."):
            return None
        return f"{package}.{module[len(package) + 1 :].split('.')[0]}"

    folders: dict[str, set[str]] = {}
    for module, targets in graph.items():
        if (source := part(module)) is not None:
            folders.setdefault(source, set()).update(
                target for target in map(part, targets) if target is not None and target != source
            )
    return folders


def test_no_import_circle() -> None:
    """No circle over every import, function-local ones included: between modules, and between the folders and
    modules side by side in each package (evaluation -> rerankers -> evaluation is a circle no per-file check sees)."""
    graph = _graph()
    circles = _circles(graph)
    assert not circles, circles
    packages = sorted(name for name, path in MODULES.items() if path.name == "__init__.py")
    folder_circles = {package: _circles(_folder_graph(graph, package)) for package in packages}
    assert not any(folder_circles.values()), {p: c for p, c in folder_circles.items() if c}
    # the rules' positive controls: a circle of files, and one of folders whose files make no circle
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
    files = {"w.x.one": {"w.y.two"}, "w.y.two": {"w.x.three"}, "w.x.three": set()}
    assert not _circles(files) and _circles(_folder_graph(files, "w")) == [["w.x", "w.y"]]


def test_the_top_of_rerankers_holds_the_kinds_and_their_common_parts_only() -> None:
    """Issue 73: the local runtimes, the served kinds and the score stores are folders of their own; the top holds
    the protocol, the factory and the local kinds (at most 12 modules)."""
    top = sorted(path.stem for path in (PACKAGE / "rerankers").glob("*.py"))
    assert len(top) <= 12, top
    assert {"local", "served", "scores"} <= {p.name for p in (PACKAGE / "rerankers").iterdir() if p.is_dir()}


def test_function_local_imports_of_the_package_are_only_front_ends_deferring_a_slow_import() -> None:
    """A function-local import that dodges a cycle means the code is on the wrong floor; only a front end may
    defer importing another front end (the CLI does not load FastAPI for every command)."""
    local = [
        f"{module} line {line}: {target}"
        for module in MODULES
        for target, line, inside in _imports(module)
        if inside and target in MODULES and _floor(module) < len(FLOORS) - 1
    ]
    assert not local, "\n".join(local)


def test_streamlit_fastapi_and_mcp_are_imported_by_front_ends_only() -> None:
    below = [
        f"{module} line {line}: {target}"
        for module in MODULES
        if _floor(module) < len(FLOORS) - 1
        for target, line, _ in _imports(module)
        if target.split(".")[0] in FRONT_END_LIBRARIES
    ]
    assert not below, "\n".join(below)


@pytest.mark.parametrize("entry", ["app.py", "workbench/streamlit_app.py"])
def test_both_entry_scripts_read_the_apps_streamlit_options(entry: str, tmp_path: Path) -> None:
    """`streamlit run app.py` (a checkout) and `workbench app` (the package's entry script) find the same
    .streamlit/config.toml beside their script, from any current folder."""
    probe = (
        "import streamlit.config as c\n"
        f"c._main_script_path = {str(REPO / entry)!r}\n"
        "c.get_config_options(force_reparse=True)\n"
        "print(c.get_option('theme.primaryColor'), c.get_option('server.fileWatcherType'),"
        " c.get_option('browser.gatherUsageStats'), c.get_option('server.address'))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert out == ["#4f46e5", "none", "False", "127.0.0.1"]
    assert (REPO / ".streamlit" / "config.toml").resolve() == (PACKAGE / ".streamlit" / "config.toml").resolve()


def test_each_first_stage_is_registered_once_and_the_vocabulary_agrees() -> None:
    """A first stage is one class and one registry line; the retrieval modes every front end offers are exactly the
    registered stages, and the engine names none of them."""
    from workbench.retrieval.stages import FIRST_STAGES
    from workbench.vocab import RETRIEVAL, RETRIEVAL_MODES

    assert set(FIRST_STAGES) == set(RETRIEVAL_MODES) == set(RETRIEVAL)
    engine = (REPO / "workbench" / "engine.py").read_text(encoding="utf-8")
    assert not [mode for mode in RETRIEVAL_MODES if f'"{mode}"' in engine]


def test_each_store_kind_is_registered_once_and_everything_agrees() -> None:
    """The registry is built from the backend classes (each carries its kind); the vocabulary names the same kinds,
    each with a settings field for its server URL that an empty value leaves unset."""
    from typing import get_args

    from workbench.config import Settings
    from workbench.stores.registry import STORE_BACKENDS
    from workbench.vocab import STORE_KINDS, STORES, StoreKind

    assert set(STORE_BACKENDS) == set(STORES) == set(STORE_KINDS) == set(get_args(StoreKind))
    assert all(backend.kind == kind for kind, backend in STORE_BACKENDS.items())
    for kind, info in STORES.items():
        assert info.kind == kind and info.url_field in Settings.model_fields, kind
        assert getattr(Settings(**{info.url_field: ""}), info.url_field) is None, kind
        assert info.url_env in str(Settings.model_fields[info.url_field].validation_alias), kind


def test_every_word_of_the_vocabulary_is_read_somewhere() -> None:
    """Issue 38: one place for the vocabulary, and nothing in it that no module reads (a constant nobody uses is a
    second, silent spelling of what the code says elsewhere)."""
    vocab = (PACKAGE / "vocab.py").read_text(encoding="utf-8")
    names = re.findall(r"^([A-Z][A-Z0-9_]+)(?::[^=\n]*)? =", vocab, flags=re.M)
    others = "\n".join(path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py") if path.name != "vocab.py")
    unread = [name for name in names if not re.search(rf"\b{name}\b", others)]
    assert names and unread == [], f"vocab.py names these and no module reads them: {unread}"


PLAN_FIELDS = {"k", "top_n", "filters", "collection", "reranker", "retrieval", "min_score"}


def test_a_search_plan_is_never_passed_beside_its_own_fields() -> None:
    """Issue 38: below the front ends a configuration is one SearchPlan. A function that takes a plan takes none
    of its fields beside it (no keyword second dialect), and `Engine.search` takes the plan alone."""
    front_ends = list(FLOORS).index("front ends")
    beside = []
    for module, path in MODULES.items():
        if _floor(module) >= front_ends:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            takes_plan = any("SearchPlan" in ast.unparse(a.annotation) for a in arguments if a.annotation)
            loose = sorted(a.arg for a in arguments if a.arg in PLAN_FIELDS)
            if takes_plan and loose:
                beside.append(f"{module}.{node.name} takes a SearchPlan and {', '.join(loose)}")
    assert not beside, "\n".join(beside)
    from workbench.engine import Engine

    assert not hasattr(Engine, "as_plan")
    assert list(inspect.signature(Engine.search).parameters)[:3] == ["self", "query", "plan"]


def test_each_plug_in_kind_is_one_registry_line() -> None:
    """Issue 38: embedders and rerankers each have one registry of kinds (name, which ids, how to build); the
    factories ask it and hold no if-chain of their own, so a new kind is one file plus one line."""
    from workbench.embeddings import EMBEDDER_KINDS, create_embedder, embedder_kind
    from workbench.rerankers.factory import KINDS, create_reranker

    for kinds in (EMBEDDER_KINDS, KINDS):
        names = [kind.name for kind in kinds]
        assert len(names) == len(set(names)), names
    for factory in (create_embedder, create_reranker):  # no test of an id's form outside the registry
        assert "startswith" not in inspect.getsource(factory) and "SCHEMES" not in inspect.getsource(factory)
    named = {
        "http://127.0.0.1:7997": "service",
        "openai:text-embedding-3-small": "openai",
        "langchain:MyEmbeddings": "langchain",
        "sentence-transformers/all-MiniLM-L6-v2": "sentence-transformers",
    }
    assert {model_id: embedder_kind(model_id).name for model_id in named} == named


def test_every_reranker_kind_is_a_base_reranker_and_writes_only_how_it_scores() -> None:
    """Issue 38: the score cache, the usage counters and `score_pairs` live in `BaseReranker`; a kind is a
    subclass that writes `predict` and none of the bookkeeping again."""
    from workbench.rerankers import base, crossencoder
    from workbench.rerankers.served import remote

    kinds = [
        cls
        for module in (crossencoder, remote)
        for cls in vars(module).values()
        if inspect.isclass(cls) and cls.__module__ == module.__name__ and "predict" in vars(cls)
    ]
    assert kinds, "no reranker kind found"
    for kind in kinds:
        assert issubclass(kind, base.BaseReranker), kind.__name__
        assert not {"score", "usage", "model_calls"} & set(vars(kind)), f"{kind.__name__} keeps its own bookkeeping"


def test_one_default_reranker_value_and_one_plan_adapter_per_front_end() -> None:
    """Issue 38: 'default' (DEFAULT_RERANKER_CHOICE) is the one "the configured reranker" value, resolved in the
    engine alone; the CLI's commands build their plans through `cli.plans.plan_from`, and the API's plan request
    is derived from SearchPlan's own fields."""
    from workbench.api.bodies import PlanRequest
    from workbench.engine import Engine
    from workbench.types import SearchPlan
    from workbench.vocab import DEFAULT_RERANKER_CHOICE

    for function in (Engine.__init__, Engine.reranker):
        assert inspect.signature(function).parameters[
            "reranker" if function is Engine.__init__ else "model_id"
        ].default == DEFAULT_RERANKER_CHOICE  # fmt: skip
    assert SearchPlan().reranker == DEFAULT_RERANKER_CHOICE
    loose = [
        f"{path.name}: engine.plan("
        for module, path in MODULES.items()
        if module.startswith("workbench.cli.") and module != "workbench.cli.plans"
        and "engine.plan(" in path.read_text(encoding="utf-8")
    ]  # fmt: skip
    assert not loose, loose
    assert set(PlanRequest.model_fields) == set(SearchPlan.model_fields)
    for name, field in SearchPlan.model_fields.items():
        assert PlanRequest.model_fields[name].description == field.description


TESTS = REPO / "tests"
# Test folders that are not a package's: the real browser's (marked `browser`), which drives the app's pages.
NOT_A_PACKAGE = {"browser"}
STARTS_A_SERVER = re.compile(
    r"ApiServer\(|served_behind_token\(|\bRabbit\(|\brabbit\b|\bpostgres_url\b|\bchroma_server\b|\bINFINITY\b"
    r"|\brunning\(|silent_server\(|RerankApis\(|served_data\b"
)


def test_the_tests_mirror_the_package_and_live_servers_are_marked_not_foldered() -> None:
    """Issue 38: a test folder is named for the package it tests (tests/<package>/...), never for "needs a live
    server"; a test that starts a server is marked `live_server` (on its module, or on itself)."""
    packages = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists()}
    folders = {path.name for path in TESTS.iterdir() if path.is_dir() and not path.name.startswith((".", "__"))}
    assert folders - NOT_A_PACKAGE <= packages, sorted(folders - NOT_A_PACKAGE - packages)
    unmarked = []
    for path in sorted(TESTS.rglob("test_*.py")):
        if path.name == Path(__file__).name:
            continue
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        module_marked = any(
            isinstance(node, ast.Assign) and "pytestmark" in ast.unparse(node.targets[0]) and "live_server" in
            ast.unparse(node.value) for node in tree.body
        )  # fmt: skip
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not node.name.startswith("test_"):
                continue
            marked = module_marked or any("live_server" in ast.unparse(d) for d in node.decorator_list)
            uses = STARTS_A_SERVER.search(ast.get_source_segment(source, node) or "")
            fixtures = {a.arg for a in node.args.args}
            if not marked and (uses or fixtures & {"rabbit", "postgres_url", "chroma_server", "served_data"}):
                unmarked.append(f"{path.relative_to(REPO)}::{node.name}")
    assert not unmarked, "start a server but are not marked live_server:\n" + "\n".join(unmarked)


def test_whether_a_reranker_runs_here_is_asked_of_its_kind() -> None:
    """ "Is it local?" is a property of the kind (`runs_here`), never a comparison with the cross-encoder kind's name,
    so a new local kind (one file and one line) is never silently taken for a service."""
    compared = [
        f"{path.relative_to(REPO)}:{number}"
        for path in PACKAGE.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"[!=]=\s*CROSS_ENCODER_KIND|CROSS_ENCODER_KIND\s*[!=]=", line)
    ]
    assert compared == []


# What `services.evaluations.ready_evaluation` assembles: a command or a route that calls one of these itself
# readies an evaluation its own way (the Evaluate page still does: it saves uploads first).
READIED_PIECES = ("workbench.services.sources.judged_dataset", "workbench.evaluation.sample.corpus_sample")


def test_the_cli_and_the_api_ready_an_evaluation_through_the_request() -> None:
    """Issue 55 (and 73: every page): `eval`, `gate`, `tune`, `long-documents`, the API's experiments and the pages
    take an `EvaluationRequest` (and `ready_evaluation` or `judged_queries_of`); none of them reads judged queries or
    draws a corpus sample itself."""
    assembled = [
        f"{module} imports {name} (line {line})"
        for module in MODULES
        if module.startswith(("workbench.cli", "workbench.api", "workbench.app"))
        for name, line, _ in _imports(module)
        if name in READIED_PIECES
    ]
    assert assembled == []


SETTINGS_COPY_FOR_A_BACKEND = re.compile(
    r"update\s*=\s*\{[^}]*[\"']reranker_backend[\"']|Settings\([^)]*\breranker_backend\s*=|"
    r"environ\[[\"']RERANKER_BACKEND[\"']\]\s*="
)


def test_a_backend_travels_as_an_argument_never_as_a_settings_copy() -> None:
    """Issue 55: a backend other than RERANKER_BACKEND is named in the reranker id (`model@onnx`) and reaches the
    cross-encoder as its `backend` argument (as sentence-transformers' `backend=`), never as a copy of Settings."""
    copies = [
        f"{path.relative_to(REPO)}: {match.group(0)[:60]}"
        for path in PACKAGE.rglob("*.py")
        for match in SETTINGS_COPY_FOR_A_BACKEND.finditer(path.read_text(encoding="utf-8"))
    ]
    assert copies == []
    assert SETTINGS_COPY_FOR_A_BACKEND.search('settings.model_copy(update={"reranker_backend": "onnx"})')


def test_every_local_family_is_one_line_of_the_local_families_table() -> None:
    """Issue 55: a local folder's family (`families.model_family`) is made by its line of `LOCAL_FAMILIES`; a family
    named without a line would silently load as a cross-encoder."""
    from typing import get_args

    from workbench.rerankers.factory import LOCAL_FAMILIES
    from workbench.rerankers.families import FamilyName

    assert set(get_args(FamilyName)) == {"cross-encoder", "refused", *LOCAL_FAMILIES}


def test_no_router_imports_another_and_each_api_body_has_one_name() -> None:
    """Issue 73: the bodies and the work the routers share live in `api/bodies.py`; a router imports no other
    router, and no class of the API is named as a service's class is (one name per concept)."""
    routers = [name for name in MODULES if name.startswith("workbench.api.routers.")]
    crossed = [
        f"{module} imports {target}"
        for module in routers
        for target, _, _ in _imports(module)
        if target in MODULES and target.startswith("workbench.api.routers.") and target != module
    ]
    assert not crossed, crossed
    api_classes = {
        node.name
        for name, path in MODULES.items()
        if name.startswith("workbench.api")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
    }
    service_classes = {
        node.name
        for name, path in MODULES.items()
        if not name.startswith(("workbench.api", "workbench.app", "workbench.cli"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
    }
    assert not api_classes & service_classes, sorted(api_classes & service_classes)
