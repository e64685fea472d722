"""The places no tool may look into: credential stores and Jupyter's own folders.

One list for both users of it. ``run_bash``'s sandbox (``sandbox.py``) mounts an empty folder or
``/dev/null`` over each; the file and search tools refuse a path inside one (``Workspace.resolve``
calls ``refuse_hidden``) and the searches skip them — which matters when the workspace is the home
folder, the normal case for a notebook at the top of it.

What is on the list:

* the usual credential stores under ``$HOME`` (``HIDDEN_HOME_PATHS``: ``~/.ssh``, ``~/.aws``,
  ``~/.netrc``, ``~/.git-credentials``, ``~/.config/gh``, ``~/.docker``, ``~/.kube``, …);
* every folder Jupyter keeps its runtime files, data and configuration in, as
  ``jupyter_core.paths`` computes them from the environment (``JUPYTER_RUNTIME_DIR``,
  ``JUPYTER_DATA_DIR``, ``XDG_DATA_HOME``, ``JUPYTER_CONFIG_DIR``, ``JUPYTER_PLATFORM_DIRS``, …):
  a kernel's connection file holds the key that lets whoever reads it run code in the kernel,
  outside every sandbox, and the server's runtime files hold its token;
* ``XDG_RUNTIME_DIR`` (agent sockets: ssh, gpg, keyrings);
* the agent's own config and state (``agent_folders``): the MCP OAuth tokens
  (``~/.config/jupyter-agent``, ``$XDG_CONFIG_HOME/jupyter-agent``,
  ``$JUPYTER_AGENT_CONFIG_DIR``), its state folder (``$XDG_STATE_HOME/jupyter-agent``) and the
  signing key's folder (in Jupyter's data folder, listed above).

A folder on the list that is the workspace or one of its parents is left out: the tools must
still see the workspace. The list is computed again only when one of the variables it depends on
changes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping

from ...errors import HiddenPathError

__all__ = [
    "HIDDEN_HOME_PATHS",
    "HiddenPathError",
    "agent_folders",
    "hidden_paths",
    "hidden_within",
    "jupyter_folders",
    "refuse_hidden",
]

#: Credential stores under ``$HOME``, relative to it. Jupyter's default folders are listed too,
#: for when ``jupyter_core`` cannot say (they are also what it answers by default on Linux).
HIDDEN_HOME_PATHS = (
    ".local/share/jupyter",
    ".jupyter",
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".kube",
    ".docker",
    ".gnupg",
    ".password-store",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".pgpass",
    ".my.cnf",
)

#: The environment variables the list depends on.
_DEPENDS_ON = (
    "HOME",
    "JUPYTER_CONFIG_DIR",
    "JUPYTER_DATA_DIR",
    "JUPYTER_RUNTIME_DIR",
    "JUPYTER_PLATFORM_DIRS",
    "JUPYTER_NO_CONFIG",
    "JUPYTER_PREFER_ENV_PATH",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "XDG_RUNTIME_DIR",
    "XDG_STATE_HOME",
    "JUPYTER_AGENT_CONFIG_DIR",
    "APPDATA",
    "PROGRAMDATA",
)


def jupyter_folders() -> list[str]:
    """Jupyter's runtime, data and configuration folders, as ``jupyter_core.paths`` computes them
    from the current environment (the folders need not exist)."""
    try:
        from jupyter_core import paths
    except ImportError:  # pragma: no cover - a dependency; the defaults are listed anyway
        return []
    folders = []
    for where in (paths.jupyter_runtime_dir, paths.jupyter_data_dir, paths.jupyter_config_dir):
        try:
            folders.append(where())
        except Exception:  # a broken setting must not break the file tools
            continue
    return folders


def agent_folders(home: str) -> list[str]:
    """The package's own config and state folders, wherever the environment puts them: the
    MCP OAuth tokens (``mcp.oauth.tokens_dir``) live in the first."""
    folders = [os.environ.get("JUPYTER_AGENT_CONFIG_DIR", "")]
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")
    folders += [
        os.path.join(config, "jupyter-agent"),
        os.path.join(home, ".config", "jupyter-agent"),
    ]
    folders += [os.path.join(state, "jupyter-agent")]
    return [folder for folder in folders if folder]


_lock = threading.Lock()
#: (environment key, the hidden places, the same as prefixes ending in a separator)
_cached: tuple[tuple[object, ...], tuple[str, ...], tuple[str, ...]] | None = None


def _environment_key() -> tuple[object, ...]:
    """The values of the variables the list depends on, read as ``os.environ`` stores them
    (every file tool call asks: a dozen dictionary look-ups, no decoding)."""
    data: Mapping[object, object] | None = getattr(os.environ, "_data", None)
    if data is None:
        return tuple(os.environ.get(name) for name in _DEPENDS_ON)
    return tuple(data.get(key) for key in _ENCODED_NAMES)


_encode: Callable[[str], object] = getattr(os.environ, "encodekey", lambda name: name)
_ENCODED_NAMES = tuple(_encode(name) for name in _DEPENDS_ON)


def _listed() -> tuple[tuple[str, ...], tuple[str, ...]]:
    global _cached
    key = _environment_key()
    cached = _cached
    if cached is not None and cached[0] == key:
        return cached[1], cached[2]
    with _lock:
        home = os.environ.get("HOME") or os.path.expanduser("~")
        candidates = [os.path.join(home, relative) for relative in HIDDEN_HOME_PATHS]
        candidates += jupyter_folders()
        candidates += [os.environ.get("JUPYTER_RUNTIME_DIR", "")]
        candidates += [os.environ.get("XDG_RUNTIME_DIR", "")]
        candidates += agent_folders(home)
        found: set[str] = set()
        for path in candidates:
            if not path:
                continue
            path = os.path.abspath(os.path.expanduser(path))
            if path == os.sep:
                continue
            found.add(path)
            found.add(os.path.realpath(path))
        listed = tuple(sorted(found, key=lambda p: (len(p), p)))
        prefixes = tuple(path.rstrip(os.sep) + os.sep for path in listed)
        _cached = (key, listed, prefixes)
        return listed, prefixes


def hidden_paths() -> tuple[str, ...]:
    """Every hidden place as an absolute path, with its real path too where a symlink leads
    elsewhere; shortest first. Computed again when the environment it depends on changes."""
    return _listed()[0]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def refuse_hidden(real: str, workspace: str, shown: str) -> None:
    """Raise ``HiddenPathError`` if the resolved path ``real`` lies in a hidden place that is not
    the workspace itself nor one of its parents."""
    listed, prefixes = _listed()
    probe = real + os.sep  # the place itself as well as what is inside it
    if not probe.startswith(prefixes):  # the usual case: one C-level pass over the prefixes
        return
    for hidden in listed:
        if _inside(real, hidden) and not _inside(workspace, hidden):
            raise HiddenPathError(
                f"Refusing to use {shown}: it is inside {hidden}, a credential store, one of "
                "Jupyter's own folders or the agent's (kernel keys, server and OAuth tokens), "
                "which the tools never read or change"
            )


def hidden_within(workspace: str) -> list[str]:
    """The hidden places strictly inside ``workspace``, relative to it (``/``-separated): what
    the searches skip."""
    inside = []
    for hidden in hidden_paths():
        if hidden != workspace and _inside(hidden, workspace):
            relative = os.path.relpath(hidden, workspace).replace(os.sep, "/")
            if relative not in inside:
                inside.append(relative)
    return inside
