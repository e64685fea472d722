#!/usr/bin/env bash
# The two things a newcomer runs:
#   ./dev.sh demo   open the quickstart notebook in JupyterLab (offline demo model without a key;
#                   as root it passes --allow-root); the URL it prints opens the quickstart too
#   ./dev.sh test   lint, type-check, build the sdist and wheel (twine check) and the docs (warnings
#                   are errors), and run every test: the extension's (jest), unit, notebooks
#                   (nbval), Binder, browser
#   ./dev.sh quick  the install, the tests that are not slow (no browser, tools or install
#                   tests), and the quickstart (nbval): what CI runs on each other Python
# Each creates .venv from pyproject.toml (pinned by constraints.txt) on first use, with python3
# (PYTHON=... for another interpreter; JUPYTER_AGENT_VENV=... for another venv folder).
set -euo pipefail
cd "$(dirname "$0")"

VENV="${JUPYTER_AGENT_VENV:-.venv}"
PY="${PYTHON:-python3}"

# One line to stderr, then stop.
fail() {
  echo "==> $*" >&2
  exit 1
}

# Why pip failed, in one line, from its output: the resolver's conflict, the pin no release
# matches, and the Python a pinned version needs (pip prints them over many lines).
pip_failure() {
  "$VENV/bin/python" - "$1" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
lines = [" ".join(line.split()) for line in text.splitlines()]
found = re.search(r"The conflict is caused by:\n((?:[ \t]+\S.*\n?)+)", text)
reasons = [" ".join(l.split()) for l in found.group(1).splitlines()] if found else []
unfit = re.search(r"no matching distributions available for your environment:\n((?:[ \t]+\S.*\n?)+)", text)
if unfit:
    names = ", ".join(l.strip() for l in unfit.group(1).splitlines())
    reasons.append(f"no release of {names} allowed here fits this Python/platform")
reasons += [l[7:] for l in lines if l.startswith(("ERROR: No matching", "ERROR: Could not find"))]
ignored = " ".join(l for l in lines if "require a different python version" in l)
for name, version in re.findall(r"([\w.-]+) ?==([\w.+!-]+)", " ".join(reasons)):
    needs = re.search(rf"(?<![\w.]){re.escape(version)} Requires-Python ([^;]+)", ignored)
    if needs:
        reasons.append(f"{name} {version} needs Python {needs.group(1).strip()}")
if not reasons:
    errors = [l for l in lines if l.startswith("ERROR:")] or [l for l in lines if l] or ["?"]
    reasons = [errors[0]]
print("; ".join(dict.fromkeys(r for r in reasons if r))[:500])
PY
}

ensure_env() {
  # a venv that has no pip is one an earlier run could not finish (no ensurepip): made again
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    command -v "$PY" >/dev/null 2>&1 || fail "no $PY: install Python 3.11 or newer, or set PYTHON"
    local version
    version="$("$PY" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
    "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
      || fail "$PY is Python $version; jupyter-agent needs 3.11 or newer (set PYTHON)"
    local made=no out
    [ -e "$VENV" ] || made=yes
    echo "==> creating $VENV with $PY (Python $version)"
    if ! out="$("$PY" -m venv "$VENV" 2>&1)" || ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1
    then
      [ "$made" = no ] || rm -rf "$VENV"  # no half-made venv for the next run to trip on
      # Debian and Ubuntu ship venv's ensurepip apart from python3 (the python3-venv package)
      case "$out" in *ensurepip*)
        fail "$PY (Python $version) cannot create a venv: it has no ensurepip; on Debian/Ubuntu: sudo apt install python3-venv (or set PYTHON to another Python)"
      esac
      fail "$PY -m venv $VENV failed: $(printf '%s\n' "$out" | grep -m1 .)"
    fi
  fi
  local stamp="$VENV/.jupyter-agent-installed"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
    local log="$VENV/pip-install.log"
    # the link build_labextension makes: an editable install copies the extension's files into
    # the venv's share/, through it into jupyter_agent/labextension itself, and the next editable
    # build then found install.json twice and failed (it is linked again after the install)
    local link="$VENV/share/jupyter/labextensions/jupyter-agent"
    [ ! -L "$link" ] || rm -f "$link" jupyter_agent/labextension/install.json
    echo "==> installing jupyter-agent and its dev tools into $VENV, a few minutes (pip's output: $log)"
    if ! { "$VENV/bin/python" -m pip install --upgrade pip \
        && "$VENV/bin/python" -m pip install -c constraints.txt -e ".[dev]"; } >"$log" 2>&1; then
      fail "pip could not install jupyter-agent on $("$VENV/bin/python" -V 2>&1): $(
        pip_failure "$log") (pip's output: $log)"
    fi
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

# What a release uploads, checked: the sdist and, built from it, the wheel (python -m build, into
# a folder of its own), then twine check --strict (PyPI's metadata and README rendering rules).
release_check() {
  echo "==> release check (python -m build, twine check --strict)"
  local dist
  dist="$(mktemp -d "${TMPDIR:-/tmp}/jupyter-agent-dist.XXXXXX")"
  if ! "$VENV/bin/python" -m build --outdir "$dist" . >"$dist/build.log" 2>&1; then
    tail -n 20 "$dist/build.log" >&2
    fail "python -m build failed (its output: $dist/build.log)"
  fi
  rm "$dist/build.log"
  ls -l "$dist" | awk 'NR > 1 {print "    " $5, $9}'
  "$VENV/bin/twine" check --strict "$dist"/*
  rm -rf "$dist"
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
    # the quickstart as the start page, not as a file to open: a file is opened only in the
    # browser Jupyter starts, while the URL it prints (--no-browser, a remote machine) opens
    # default_url — JupyterLab's Launcher unless it is the notebook's page
    exec "$VENV/bin/jupyter" lab --LabApp.default_url=/lab/tree/notebooks/01_quickstart.ipynb "$@"
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
    release_check
    echo "==> docs (sphinx-build, warnings are errors: build/docs)"
    "$VENV/bin/sphinx-build" -W --keep-going -q -b html docs build/docs
    echo "==> jest (the JupyterLab extension's unit tests)"
    [ -x labextension/node_modules/.bin/jest ] \
      || (cd labextension && npm ci --no-audit --no-fund --loglevel=error)
    (cd labextension && npm test --silent)
    echo "==> pytest (unit tests, notebooks, Binder environment, browser)"
    "$VENV/bin/python" -m pytest tests notebooks --nbval-lax -p no:cacheprovider "$@"
    ;;
  quick)
    # What .ci/run runs on each other interpreter: the install, the tests of what differs between
    # interpreters (the agent's loop, the providers' SDKs, IPython and the kernel, the MCP SDK and
    # its processes) that need no browser, conformance suite or fresh venv, and the quickstart
    # tutorial under nbval. The tools' own tests (pure Python, ~2 min) run in the full suite.
    ensure_env
    build_labextension
    shift
    echo "==> pytest (quick: the agent, providers, notebook and MCP client tests that are not slow; nbval over the quickstart)"
    "$VENV/bin/python" -m pytest -p no:cacheprovider -m "not slow and not browser" \
      tests/agent tests/providers tests/notebook tests/mcp \
      --ignore=tests/mcp/test_conformance.py --ignore=tests/mcp/test_pypi_servers.py \
      tests/test_public_api.py tests/test_core_imports.py tests/test_layers.py \
      tests/test_errors_tree.py tests/test_dev_script.py \
      notebooks/01_quickstart.ipynb --nbval-lax "$@"
    ;;
  *)
    echo "usage: ./dev.sh demo | ./dev.sh test [pytest args] | ./dev.sh quick [pytest args]" >&2
    exit 2
    ;;
esac
