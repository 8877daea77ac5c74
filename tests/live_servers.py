"""Real servers for the tests that need one (each such module is marked `live_server`): `workbench serve`
(uvicorn) in a subprocess, RabbitMQ on a private port, Infinity's path; started and stopped by the tests themselves.
The fixtures here (`rabbit`, `served_data`) reach every folder through tests/conftest.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from workbench.config import Settings
from workbench.engine import Engine

RABBIT_BIN = Path("/usr/lib/rabbitmq/bin")
INFINITY = Path(__file__).resolve().parents[1] / ".venv-infinity" / "bin" / "infinity_emb"  # scripts/setup.sh --test


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Rabbit:
    """A RabbitMQ node of its own (name, ports, data folder), so tests never touch a system broker."""

    def __init__(self) -> None:
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="wb-test-rabbit-"))
        self.node = f"wbtest{self.port}@localhost"
        (self.folder / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.port}\nloopback_users = none\n"
        )
        (self.folder / "enabled_plugins").write_text("[].\n")
        self.env = {
            **os.environ,
            "HOME": str(self.folder),
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_CONFIG_FILE": str(self.folder / "rabbitmq"),
            "RABBITMQ_MNESIA_BASE": str(self.folder / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.folder / "log"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.folder / "enabled_plugins"),
            "RABBITMQ_DIST_PORT": str(free_port()),
            "ERL_EPMD_PORT": str(free_port()),
        }
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    def start(self, timeout: float = 90) -> Rabbit:
        if not (RABBIT_BIN / "rabbitmq-server").exists():
            pytest.fail("RabbitMQ is missing: run `bash scripts/setup.sh --test` (installs Debian's rabbitmq-server).")
        log = open(self.folder / "server.out", "ab")  # noqa: SIM115 - kept open while the broker runs
        self.process = subprocess.Popen(
            [str(RABBIT_BIN / "rabbitmq-server")],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError((self.folder / "server.out").read_text(errors="replace")[-2000:])
            try:
                import pika

                pika.BlockingConnection(pika.URLParameters(self.url)).close()
                return self
            except Exception:
                time.sleep(0.3)
        raise TimeoutError(f"RabbitMQ did not start on port {self.port}")

    def kill(self) -> None:
        """kill -9 the whole broker (as a crash would)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        self.kill()
        epmd = shutil.which("epmd") or "/usr/bin/epmd"
        subprocess.run([epmd, "-port", self.env["ERL_EPMD_PORT"], "-kill"], capture_output=True, timeout=20)
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def rabbit() -> Iterator[Rabbit]:
    broker = Rabbit().start()
    try:
        yield broker
    finally:
        broker.stop()


class ApiServer:
    """`workbench serve` in a subprocess with its own data folder and the tiny models."""

    def __init__(self, data: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.data = data
        self.url = f"http://127.0.0.1:{self.port}"
        log = open(data / "serve.log", "w")  # noqa: SIM115 - closed in stop()
        self._log = log
        self.process = subprocess.Popen(
            [str(Path(sys.executable).parent / "workbench"), "serve", "--port", str(self.port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 120, status: str = "ready") -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError((self.data / "serve.log").read_text()[-2000:])
            try:
                health = httpx.get(f"{self.url}/health", timeout=2).json()
                if health["status"] != "starting":
                    assert health["status"] == status, health
                    return health
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.2)
        raise TimeoutError("the API did not become ready")

    def stop(self) -> str:
        self.process.terminate()
        self.process.wait(timeout=30)
        self._log.close()
        return (self.data / "serve.log").read_text(errors="replace")


def served_behind_token(settings: Settings, token: str) -> Iterator[ApiServer]:
    """`workbench serve` on the settings' data folder behind `token`, ready; on the way out its log holds no
    traceback and never the token (for a module fixture to `yield from`)."""
    server = ApiServer(Path(settings.data_dir), api_env(settings, WORKBENCH_API_TOKEN=token))
    server.wait_ready()
    yield server
    log = server.stop()
    assert "Traceback" not in log and token not in log, log[-3000:]


def api_env(settings: Settings, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "WORKBENCH_CONFIG": "",
        "WORKBENCH_DATA_DIR": str(settings.data_dir),
        "WORKBENCH_EMBEDDING_MODEL": settings.embedding_model,
        "RERANKER_MODEL": settings.reranker_model,
        "HF_HUB_OFFLINE": "1",
    }
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def served_data(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]) -> Settings:
    """A data folder holding the demo handbook as 'demo', ingested with the tiny embedder."""
    data = tmp_path_factory.mktemp("served")
    settings = Settings(
        data_dir=data,
        embedding_model=str(tiny_models["embedder"]),
        reranker_model=str(tiny_models["reranker"]),
        offline=True,
    )
    from workbench.services.demo import ensure_demo_collection

    ensure_demo_collection(Engine(settings))
    return settings


def port_closed(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def cli_experiment(settings: Settings, *arguments: str) -> str:
    """`workbench eval demo ... --json` in a subprocess on the settings' data folder: the kept experiment's id."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "workbench"), "eval", "demo", "--json", *arguments],
        env=api_env(settings), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)["experiment"]
