"""A newcomer's first minutes, timed: from the README's first command, as written, to the first reranked answer on
screen. Clones this checkout into a temporary folder (with `../shared` linked beside it, as the README asks), runs
the README's first command there in a clean environment (no WORKBENCH_* variables, no virtual environment; only
`--port N` added, so that it never meets another app), and, once the page answers, types one sample query in
Chromium and waits for the reranked list. Then, as the docs say a newcomer goes on: Evaluate on the demo with the
page's defaults (the click on "Run evaluation" to the verdict on screen), and their own Chroma folder attached
(docs/how-to/own-index.md: a folder LangChain wrote with the workbench's own embedder, a `workbench.toml` table
whose key differs from the collection's name, `workbench collections`, then a search of it in the running app).

    python bench/newcomer_walk.py            # needs Debian's Chromium (scripts/setup.sh --test); about 8 minutes

Prints, in seconds from the command's start: the app answering (set-up, then the app's own start and the demo's
build), the query box on screen, and the reranked list on screen; and whether pip's download cache was warm (a
fresh machine downloads every wheel: the set-up then takes longer). Then, each in seconds of its own: Evaluate's
click to the verdict, the own folder written by LangChain, `workbench collections` listing it, and its first reranked
answer in the app. Measure on a quiet machine: the load is printed.
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
OWN_KEY, OWN_NAME = "myperks", "perks"  # the own-index guide's example: the key differs from the folder's name
OWN_PASSAGES = 300  # SciFact abstracts the "own pipeline" writes
OWN_QUERY = "vitamin D and bone density"
# The newcomer's own pipeline, as the own-index guide writes it: LangChain's Chroma over the workbench's embedder.
OWN_PIPELINE = """
import json, sys
from langchain_chroma import Chroma
from langchain_core.documents import Document
from workbench import Engine
from workbench.embeddings import EmbedderAsLangChain

corpus, folder, name, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with open(corpus, encoding="utf-8") as lines:
    rows = [json.loads(line) for _, line in zip(range(count), lines)]
docs = [Document(page_content=r["text"], metadata={"title": r["title"]}, id=r["_id"]) for r in rows]
embeddings = EmbedderAsLangChain(Engine().embedder("sentence-transformers/all-MiniLM-L6-v2"))
Chroma.from_documents(docs, embeddings, persist_directory=folder, collection_name=name)
"""
OWN_TABLE = """
[collections.{key}]
store = "chroma"
persist_dir = "{folder}"
collection = "{name}"
embedding_model = "sentence-transformers/all-MiniLM-L6-v2"
"""


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


def evaluate_demo(page) -> float:
    """Evaluate with the page's defaults on the demo: seconds from the click to the verdict on screen, and no
    progress bar left above it."""
    page.get_by_role("link", name="Evaluate").click()
    page.get_by_role("button", name="Run evaluation").wait_for()
    clicked = time.monotonic()
    page.get_by_role("button", name="Run evaluation").click()
    page.get_by_text("p-value (randomization)").first.wait_for()
    page.get_by_text("Reliability on held-out queries").first.wait_for()  # the report's last part
    seconds = time.monotonic() - clicked
    if page.locator("[data-testid='stProgress']").count():
        raise SystemExit("Evaluate left a progress bar on screen after its verdict.")
    return seconds


def attach_own_folder(page, url: str, checkout: Path, work: Path, env: dict[str, str]) -> dict[str, float]:
    """The own-index guide, followed: LangChain writes a Chroma folder with the workbench's embedder, a
    `workbench.toml` table names it (its key is not the collection's name), `workbench collections` lists it, and a
    search of it in the running app (the table is read without a restart) shows its reranked list."""
    folder = work / "rag-chroma"
    corpus = REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
    python, workbench = checkout / ".venv" / "bin" / "python", checkout / ".venv" / "bin" / "workbench"
    started = time.monotonic()
    subprocess.run([str(python), "-c", OWN_PIPELINE, str(corpus), str(folder), OWN_NAME, str(OWN_PASSAGES)],
                   cwd=work, env=env, check=True, capture_output=True)  # fmt: skip
    figures = {"own_folder_written_s": time.monotonic() - started}
    with (checkout / "workbench.toml").open("a", encoding="utf-8") as toml:
        toml.write(OWN_TABLE.format(key=OWN_KEY, folder=folder, name=OWN_NAME))
    started = time.monotonic()
    listed = subprocess.run([str(workbench), "collections"], cwd=checkout, env=env, capture_output=True, text=True)
    figures["own_collections_listed_s"] = time.monotonic() - started
    line = next((row for row in listed.stdout.splitlines() if OWN_KEY in row), "")
    if listed.returncode != 0 or str(OWN_PASSAGES) not in line:
        raise SystemExit(
            f"`workbench collections` did not list {OWN_KEY} with its {OWN_PASSAGES} chunks:\n"
            f"{listed.stdout}{listed.stderr}"
        )
    print(f"workbench collections: {line.strip()}")
    page.goto(url)  # Explore, in a new session: the collection is picked as a newcomer picks it
    picker = page.get_by_label("Collection", exact=True).first
    picker.click()
    picker.press_sequentially(OWN_KEY, delay=50)
    page.wait_for_timeout(500)
    picker.press("Enter")
    page.wait_for_timeout(1000)
    box = page.get_by_label("Query", exact=True)
    box.fill(OWN_QUERY)
    typed = time.monotonic()
    box.press("Enter")
    page.get_by_role("heading", name=re.compile(r"^Reranked · top \d+")).first.wait_for()
    figures["own_query_to_reranked_s"] = time.monotonic() - typed
    if page.get_by_text("Traceback").count():
        raise SystemExit("The own folder's search showed a traceback.")
    page.screenshot(path=str(work / "own-folder-answer.png"))
    return figures


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
            figures["evaluate_click_to_verdict_s"] = evaluate_demo(page)
            figures.update(attach_own_folder(page, f"http://127.0.0.1:{port}/", checkout, work, env))
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
    print(
        f"Evaluate on the demo with the page's defaults: the verdict {figures['evaluate_click_to_verdict_s']:.0f} s "
        "after the click"
    )
    written = figures["own_folder_written_s"]
    print(
        f"own Chroma folder ({OWN_PASSAGES} passages) written by LangChain in {written:.0f} s; "
        f"`workbench collections` listed it as {OWN_KEY!r} in {figures['own_collections_listed_s']:.1f} s; its "
        f"first reranked answer in the app {figures['own_query_to_reranked_s']:.1f} s after Enter"
    )
    keep(args, {"load": load, "pip_cache_mb": cache / 1e6, **figures})
    if args.keep:
        print(f"kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
