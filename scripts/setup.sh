#!/usr/bin/env bash
# Installs everything Rerank Workbench needs on a fresh machine, offline from any model hub:
# a virtual environment in .venv, torch pinned to the local CPU wheel, the package (editable) with its
# test tools, and with --browser Debian's Chromium for the browser tests. A second run does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

want_browser=0
for arg in "$@"; do
  case "$arg" in
    --browser) want_browser=1 ;;
    *) echo "usage: scripts/setup.sh [--browser]" >&2; exit 2 ;;
  esac
done

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$python" -m venv .venv
fi
pip=(.venv/bin/python -m pip --disable-pip-version-check -q)

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

if [ "$want_browser" = 1 ] && [ ! -x /usr/bin/chromium ]; then
  echo "setup: installing Debian's chromium for the browser tests"
  sudo_cmd=""
  [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq chromium >/dev/null
fi
echo "setup: ready (.venv)"
