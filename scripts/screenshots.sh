#!/usr/bin/env bash
# Refreshes the README's screenshots (docs/screenshots/*.png) by running the browser tests against the real app
# with the real models. Test runs never write tracked files; this script is the one explicit way to do it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
WORKBENCH_SCREENSHOTS_DIR="$PWD/docs/screenshots" .venv/bin/python -m pytest tests/browser -q -p no:cacheprovider
echo "screenshots: docs/screenshots/ refreshed"
