"""A newcomer's first minutes, timed: from the README's first command, as written, to the first reranked answer on
screen. Clones this checkout into a temporary folder (with `../shared` linked beside it, as the README asks), runs
the README's first command there in a clean environment (no WORKBENCH_* variables, no virtual environment; only
`--port N` added, so that it never meets another app), and, once the page answers, types one sample query in
Chromium and waits for the reranked list.

    python bench/newcomer_walk.py            # needs Debian's Chromium (scripts/setup.sh --test); about 5 minutes

Prints, in seconds from the command's start: the app answering (set-up, then the app's own start and the demo's
build), the query box on screen, and the reranked list on screen; and whether pip's download cache was warm (a
fresh machine downloads every wheel: the set-up then takes longer). Measure on a quiet machine: the load is printed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from _output import add_json_option, keep
from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[1]
QUERY = "can I carry over unused vacation days?"  # the README tour's first question


def readme_first_command(readme: Path) -> str:
    """The first command of the README's first code block, without its comment."""
    block = re.search(r"```bash\n(.*?)```", readme.read_text(encoding="utf-8"), re.DOTALL)
    if block is None:
        raise SystemExit("The README has no ```bash block.")
    command = block.group(1).splitlines()[0].split("#", 1)[0].strip()
    if not command.endswith("workbench app"):
        raise SystemExit(f"The README's first command does not end by starting the app: {command!r}")
    return command


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def answering(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2)  # our own app on 127.0.0.1
        return True
    except OSError:
        return False


def pip_cache_bytes() -> int:
    cache = Path.home() / ".cache" / "pip"
    return sum(f.stat().st_size for f in cache.rglob("*") if f.is_file()) if cache.is_dir() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_json_option(parser)
    parser.add_argument("--keep", action="store_true", help="keep the temporary checkout (its path is printed)")
    parser.add_argument("--limit", type=float, default=1800, help="give up after this many seconds (1800)")
    args = parser.parse_args()
    command = readme_first_command(REPO / "README.md")
    port = free_port()
    work = Path(tempfile.mkdtemp(prefix="newcomer-"))
    checkout = work / "checkout"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(checkout)], check=True)
    (work / "shared").symlink_to(REPO.parent / "shared")
    unset = ("WORKBENCH_", "RERANKER_", "EMBEDDING_", "HF_")  # a newcomer has set none of these
    env = {k: v for k, v in os.environ.items() if not k.startswith(unset) and k != "VIRTUAL_ENV"}
    env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":") if ".venv" not in p)
    load, cache = os.getloadavg()[0], pip_cache_bytes()
    print(f"README's first command: {command} --port {port}  (in {checkout})")
    print(f"load {load:.2f} on {os.cpu_count()} cores; pip's download cache {cache / 1e6:,.0f} MB")
    log = (work / "command.log").open("w")
    started = time.monotonic()
    process = subprocess.Popen(
        ["bash", "-c", f"{command} --port {port}"], cwd=checkout, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    figures: dict[str, float] = {}
    try:
        while not answering(f"http://127.0.0.1:{port}/_stcore/health"):
            if process.poll() is not None:
                raise SystemExit(f"The command ended ({process.returncode}) before the app answered: {log.name}")
            if time.monotonic() - started > args.limit:
                raise SystemExit(f"No app after {args.limit:.0f} s: {log.name}")
            time.sleep(0.5)
        figures["app_answering_s"] = time.monotonic() - started
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(args.limit * 1000)
            page.goto(f"http://127.0.0.1:{port}/")
            box = page.get_by_label("Query", exact=True)
            box.wait_for()
            figures["query_box_s"] = time.monotonic() - started
            box.fill(QUERY)
            typed = time.monotonic()
            box.press("Enter")
            page.get_by_role("heading", name=re.compile(r"^Reranked · top \d+")).first.wait_for()
            figures["reranked_list_s"] = time.monotonic() - started
            figures["query_to_reranked_s"] = time.monotonic() - typed
            page.screenshot(path=str(work / "first-answer.png"))
            browser.close()
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
        log.close()
    print(f"app answering after {figures['app_answering_s']:.0f} s (set-up, the app's start, the demo's build)")
    print(f"query box on screen after {figures['query_box_s']:.0f} s")
    print(
        f"first reranked answer on screen after {figures['reranked_list_s']:.0f} s "
        f"({figures['query_to_reranked_s']:.1f} s from Enter)"
    )
    keep(args, {"load": load, "pip_cache_mb": cache / 1e6, **figures})
    if args.keep:
        print(f"kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
