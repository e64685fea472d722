#!/usr/bin/env bash
# The two things a newcomer runs:
#   ./dev.sh demo   open the quickstart notebook in JupyterLab (offline demo model without a key;
#                   as root it passes --allow-root)
#   ./dev.sh test   lint, type-check and run every test: unit, notebooks (nbval), Binder, browser
# Both create .venv from pyproject.toml (pinned by constraints.txt) on first use.
set -euo pipefail
cd "$(dirname "$0")"

VENV="${JUPYTER_AGENT_VENV:-.venv}"
PY="${PYTHON:-python3}"

ensure_env() {
  if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating $VENV"
    "$PY" -m venv "$VENV"
  fi
  local stamp="$VENV/.jupyter-agent-installed"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
    echo "==> installing jupyter-agent and its dev tools into $VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -c constraints.txt -e ".[dev]"
    touch "$stamp"
  fi
}

# The JupyterLab extension (labextension/ → jupyter_agent/labextension): built from the sources
# with the lockfile's exact packages when the built files are missing or older than the sources,
# and linked into the venv so JupyterLab and Notebook 7 load this checkout's build. Needs Node.js
# and npm (a wheel carries the built files: its users need neither).
build_labextension() {
  local built=jupyter_agent/labextension/package.json
  if [ "${1:-}" = optional ] && ! command -v npm >/dev/null 2>&1 && [ ! -f "$built" ]; then
    echo "==> no npm: the notebook co-authoring extension is not built (the demo runs without it)" >&2
    return 0
  fi
  if [ ! -f "$built" ] || [ -n "$(find labextension/src labextension/style labextension/package.json \
      labextension/package-lock.json labextension/tsconfig.json -newer "$built" -print -quit)" ]; then
    echo "==> building the JupyterLab extension (npm ci, tsc, jupyter-builder)"
    local venv_bin
    venv_bin="$(cd "$VENV/bin" && pwd)"  # jupyter-builder
    (cd labextension && npm ci --no-audit --no-fund --loglevel=error \
      && PATH="$venv_bin:$PATH" npm run --silent build:prod >/dev/null)
    touch "$built"
  fi
  local target="$VENV/share/jupyter/labextensions/jupyter-agent"
  if [ "$(readlink "$target" 2>/dev/null)" != "$PWD/jupyter_agent/labextension" ]; then
    # the editable install copied the files it found then; a link follows later builds
    mkdir -p "$(dirname "$target")"
    rm -rf "$target"
    ln -s "$PWD/jupyter_agent/labextension" "$target"
  fi
}

case "${1:-}" in
  demo)
    ensure_env
    build_labextension optional
    shift
    if [ "$(id -u)" = 0 ]; then
      # Docker and many cloud images run as root; Jupyter refuses that without --allow-root.
      echo "==> running as root: passing --allow-root to Jupyter" >&2
      set -- "$@" --allow-root
    fi
    exec "$VENV/bin/jupyter" lab notebooks/01_quickstart.ipynb "$@"
    ;;
  test)
    ensure_env
    build_labextension
    shift
    echo "==> ruff"
    "$VENV/bin/ruff" check .
    "$VENV/bin/ruff" format --check .
    echo "==> mypy"
    "$VENV/bin/mypy"
    echo "==> pytest (unit tests, notebooks, Binder environment, browser)"
    "$VENV/bin/python" -m pytest tests notebooks --nbval-lax -p no:cacheprovider "$@"
    ;;
  *)
    echo "usage: ./dev.sh demo | ./dev.sh test [pytest args]" >&2
    exit 2
    ;;
esac
