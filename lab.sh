#!/usr/bin/env bash
# Post-Training Lab: one entry point for setting up, starting the app and running the tests.
#   ./lab.sh app    set up .venv (first run only) and start the web app on http://localhost:8501
#   ./lab.sh test   set up .venv (first run only) and run the whole test suite
#   ./lab.sh setup  only set up
# Environment: PYTHON (default python3), LAB_PORT (default 8501), LAB_ADDRESS (default 127.0.0.1).
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
VENV=.venv

setup() {
  if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
  fi
  local stamp="$VENV/.lab-installed"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    "$VENV/bin/python" -m pip install -q --upgrade pip
    # torch first, pinned to the CPU-friendly 2.13.0, so nothing later pulls a multi-GB CUDA build.
    # A torch already in .venv (e.g. a CUDA build a GPU user installed) is kept.
    if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
      "$VENV/bin/python" -m pip install -q "torch==2.13.0"
    fi
    "$VENV/bin/python" -m pip install -q -e ".[test]"
    touch "$stamp"
  fi
  ensure_bubblewrap
}

ensure_bubblewrap() {
  # The agentic sandbox and the unit-test verifier run code under bubblewrap (namespaces); without it they refuse.
  if command -v bwrap >/dev/null 2>&1; then return; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing bubblewrap for the code sandbox..." >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
  else
    echo "note: bwrap not found; the code sandbox will refuse to run (apt-get install bubblewrap)" >&2
  fi
}

ensure_chromium() {
  # The browser smoke test needs Debian's headless Chromium and its driver.
  if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then return; fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium and chromium-driver for the browser smoke test..." >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    echo "note: chromium/chromedriver not found; the browser smoke test is skipped (apt-get install chromium chromium-driver)" >&2
  fi
}

case "${1:-}" in
  setup)
    setup ;;
  app)
    setup
    # The file watcher is off: Streamlit's watcher trips over torch.classes, and pages need no hot reload.
    exec "$VENV/bin/python" -m streamlit run app.py \
      --server.address "${LAB_ADDRESS:-127.0.0.1}" --server.port "${LAB_PORT:-8501}" \
      --server.fileWatcherType none --browser.gatherUsageStats false "${@:2}" ;;
  test)
    setup
    ensure_chromium
    exec "$VENV/bin/python" -m pytest "${@:2}" ;;
  *)
    echo "usage: ./lab.sh {app|test|setup} [extra args]" >&2; exit 2 ;;
esac
