"""The app is part of the installed package: the built wheel, installed into a clean virtual environment, runs
`workbench app` away from the source tree and serves the demo (its pages, favicon and corpus are package data);
and installing it keeps the torch a user already has."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import free_port, wait_for_http
from workbench.extras import EXTRAS

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheels = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [built] = wheels.glob("rerank_workbench-*.whl")
    return built


def _new_venv(venv: Path) -> tuple[Path, Path]:
    """A new virtual environment: (its python, its site-packages)."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    return python, site


def _see_these_dependencies(site: Path) -> None:
    """Let a venv's Python see this environment's packages as a plain path (its .pth files, and with them the
    editable install of this checkout, are not read). Only after any real install: pip would otherwise see this
    checkout's own install through it, and replace it."""
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")


def test_installing_the_package_keeps_the_torch_a_user_has(wheel: Path, tmp_path: Path) -> None:
    """The package asks for a lower bound on torch, so a newer torch already installed (a CUDA build, say) stays:
    pip, offline, plans to install no torch. With an exact pin it would have to replace it, and fail offline."""
    python, site = _new_venv(tmp_path / "venv")
    newer = site / "torch-99.0.dist-info"
    newer.mkdir()
    (newer / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 99.0\n")
    (newer / "INSTALLER").write_text("pip\n")
    (newer / "RECORD").write_text("")
    _see_these_dependencies(site)
    report = tmp_path / "report.json"
    # Without the machine's pip configuration: a constraint there (this one caps torch at the wheel it holds) is the
    # machine's, not the package's, and would hide what the package itself asks for.
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--dry-run", "--no-index", "--report", str(report), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PIP_CONFIG_FILE": os.devnull},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    planned = {
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    assert "torch" not in planned, planned
    assert "rerank-workbench" in planned
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format", "json"], capture_output=True, text=True, check=True
    ).stdout
    assert {"name": "torch", "version": "99.0"} in json.loads(listed)


def test_the_wheel_carries_the_app_and_serves_the_demo(wheel: Path, tmp_path: Path, real_reranker_dir: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    for needed in (
        "workbench/app/main.py",
        "workbench/app/pages/explore.py",
        "workbench/streamlit_app.py",
        "workbench/.streamlit/config.toml",
        "workbench/app/static/favicon.png",
        "workbench/demo_data/queries.jsonl",
        "workbench/demo_data/qrels/test.tsv",
        "workbench/demo_data/docs/leave-policy.md",
        "workbench/py.typed",
    ):
        assert needed in names, needed
    assert not [n for n in names if n.startswith(("tests/", "bench/"))]

    venv = tmp_path / "venv"
    python, site = _new_venv(venv)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    _see_these_dependencies(site)
    where = subprocess.run(
        [str(python), "-c", "import workbench.app; print(workbench.app.ENTRY_SCRIPT)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.strip()
    assert where.startswith(str(venv)), where

    port = free_port()
    data = tmp_path / "data"
    env = {
        **os.environ,
        "WORKBENCH_CONFIG": "",
        "WORKBENCH_DATA_DIR": str(data),
        "HF_HUB_OFFLINE": "1",
        "WORKBENCH_MODELS_DIR": str(real_reranker_dir.parent),
        "RERANKER_MODEL": real_reranker_dir.name,
    }
    env.pop("PYTHONPATH", None)
    log = open(tmp_path / "app.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [str(venv / "bin" / "workbench"), "app", "--port", str(port), "--headless"],
        cwd=tmp_path,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/_stcore/health", timeout=240, process=process)
        import httpx

        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=30).status_code == 200
        # a browser on a host with many cookies sends a Cookie line over 8,192 bytes: the page's websocket still
        # opens (it hung for ever, with no answer and no log: the handshake parser's default line limit)
        from websockets.sync.client import connect

        cookies = "; ".join(f"other{i}={'x' * 1000}" for i in range(9))
        with connect(
            f"ws://127.0.0.1:{port}/_stcore/stream", additional_headers={"Cookie": cookies},
            subprotocols=["streamlit"], open_timeout=60,  # type: ignore[list-item]
        ) as socket:  # fmt: skip
            assert socket.protocol.state.name == "OPEN"
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
    output = (tmp_path / "app.log").read_text()
    assert "Demo collection ready: 150 passages" in output and "Traceback" not in output, output[-2000:]
    assert (data / "chroma").is_dir() and (data / "judgments.sqlite3").exists()  # the demo's judgments


# What the extras install (their packages' folders and metadata in site-packages), absent from a core-only view.
EXTRA_PACKAGES = ("streamlit", "fastapi", "uvicorn", "mcp", "qdrant_client", "psycopg", "pika", "langchain_openai",
                  "openvino", "optimum_intel", "ray")  # fmt: skip


def _see_only_the_core(site: Path, view: Path) -> None:
    """Like `_see_these_dependencies`, through a view of this environment's packages without the extras': as if
    the wheel had been installed without them (nothing can be downloaded here to install the core alone)."""
    view.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        stem = entry.name.split("-")[0].split(".")[0].lower()
        if not stem.startswith(EXTRA_PACKAGES) and not entry.name.endswith(".pth"):
            (view / entry.name).symlink_to(entry)
    (site / "dependencies.pth").write_text(str(view) + "\n")


def test_the_engine_and_cli_install_alone_and_each_extra_is_named_when_missing(
    wheel: Path, tmp_path: Path, tiny_models: dict[str, Path], corpus_dir: Path
) -> None:
    """The wheel without extras, in a fresh virtual environment where every extra's modules are absent: the wheel
    asks for none of them, ingest and query work, and each optional part is one line naming its extra."""
    metadata = next(n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/METADATA"))
    required = [
        line.split(":", 1)[1].strip()
        for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]
    optional = {"streamlit", "fastapi", "uvicorn", "mcp", "qdrant-client", "psycopg", "psycopg-pool", "pika"}
    assert not [r for r in required if r.split("[")[0].split(">")[0].split("<")[0].strip().lower() in optional]
    assert not [r for r in required if "openvino" in r or "langchain-openai" in r]

    venv = tmp_path / "venv"
    python, site = _new_venv(venv)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True, capture_output=True, timeout=300, env={**os.environ, "PIP_CONFIG_FILE": os.devnull},
    )  # fmt: skip
    _see_only_the_core(site, tmp_path / "core-only")
    env = {
        **os.environ, "WORKBENCH_CONFIG": "", "WORKBENCH_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1",
        "WORKBENCH_EMBEDDING_MODEL": str(tiny_models["embedder"]), "RERANKER_MODEL": str(tiny_models["reranker"]),
        "WORKBENCH_CALIBRATE_BACKENDS": "1",
    }  # fmt: skip
    env.pop("PYTHONPATH", None)

    def workbench(*args: str) -> subprocess.CompletedProcess[str]:
        command = [str(venv / "bin" / "workbench"), *args]
        return subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)

    blocked = subprocess.run(
        [str(python), "-c", "import streamlit"], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert blocked.returncode != 0 and "No module named 'streamlit'" in blocked.stderr  # the extras are absent
    for extra in EXTRAS:
        check = f"from workbench.extras import has_extra; assert not has_extra({extra!r})"
        absent = subprocess.run([str(python), "-c", check], env=env, cwd=tmp_path, capture_output=True, text=True)
        assert absent.returncode == 0, (extra, absent.stderr[-500:])
    ingested = workbench("ingest", str(corpus_dir), "--collection", "alone")
    assert ingested.returncode == 0, ingested.stderr[-2000:]
    found = workbench("query", "rivers", "--collection", "alone", "-k", "6", "-n", "3", "--json")
    assert found.returncode == 0, found.stderr[-2000:]
    result = json.loads(found.stdout)
    assert len(result["reranked"]) == 3 and result["reranker_backend"].startswith(("torch", "onnx"))
    for args, extra in [
        (["serve"], "server"), (["app", "--headless"], "app"), (["mcp"], "mcp"),
        (["ingest", str(corpus_dir), "--collection", "alone", "--store", "qdrant"], "qdrant"),
    ]:  # fmt: skip
        refused = workbench(*args)
        assert refused.returncode == 2, (args, refused.stdout, refused.stderr[-1500:])
        assert f"pip install 'rerank-workbench[{extra}]'" in refused.stderr and "Traceback" not in refused.stderr
    env["WORKBENCH_SCORE_EXECUTOR"] = "ray"  # scoring an evaluation's pairs on Ray's workers
    refused = workbench("eval", "demo", "--max-queries", "2", "-k", "5", "-n", "3", "--no-save", "--depth", "none")
    assert refused.returncode == 2 and "pip install 'rerank-workbench[ray]'" in refused.stderr, refused.stderr[-1500:]
    assert "Traceback" not in refused.stderr
