"""Files that run later by themselves: the paths the file tools never create or change.

Python, IPython, Jupyter and the shell run files they find at start, without the user doing
anything: a module in the kernel's start folder (its working folder, first on ``sys.path``) that
shadows one the kernel imports (``ipykernel_launcher.py``, ``uuid.py``, a ``jupyter_agent/``
package), a ``.pth`` file or ``sitecustomize.py`` in a site folder, an IPython startup script or
profile, Jupyter's configuration, a shell start file. A model that wrote one would have code of
its making run at the next kernel start, unsandboxed and with the API key (the precedent is
CVE-2022-21699). ``refusal`` says, for one resolved path a tool is about to create, change, move
or remove, why it must not (or None); ``Workspace.resolve_for_writing`` asks it for every
mutating path, so no tool can forget. The undo journal's folders (``.jupyter_agent/``, at any
depth) and the folder of the agent's signing key are out of the tools' reach for reading too
(``refusal_to_read``).

The user's own package sources stay writable: a top-level module of an editable install whose
project lies in the workspace (found through ``direct_url.json``) is theirs to change.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

__all__ = [
    "AGENT_FOLDER",
    "agent_data_dir",
    "is_protected",
    "protected_module_names",
    "refusal",
    "refusal_to_read",
]

#: The agent's own folder in a workspace (undo journal, session file); never a tool's to touch.
AGENT_FOLDER = ".jupyter_agent"

#: Shell and desktop start files: run by a login or an interactive shell, wherever HOME is.
SHELL_START_FILES = frozenset(
    {
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".bash_aliases",
        ".profile",
        ".zshrc",
        ".zshenv",
        ".zprofile",
        ".zlogin",
        ".zlogout",
        ".cshrc",
        ".tcshrc",
        ".login",
        ".logout",
        ".kshrc",
        ".mkshrc",
        ".xprofile",
        ".xinitrc",
        ".xsession",
        ".xsessionrc",
        ".pam_environment",
        ".envrc",
        ".pythonrc",
        ".pythonrc.py",
    }
)
#: Folders under ``.config`` whose files a login or the desktop runs.
CONFIG_START_FOLDERS = frozenset({"fish", "autostart", "environment.d", "systemd", "bash", "zsh"})
#: Folders (at any depth) whose files run, or are trusted, at start: what each holds.
START_FOLDERS = {
    ".ipython": "IPython's profiles and start-up scripts, which IPython runs",
    ".jupyter": "Jupyter's configuration, which Jupyter runs at start",
    ".ipynb_checkpoints": "Jupyter's checkpoints, restored as the user's own notebooks",
    ".ssh": "ssh's keys and start files",
}
#: Files Python runs at start from any site folder.
SITE_FILES = frozenset({"sitecustomize", "usercustomize"})
#: Suffixes that make a file importable as a module.
MODULE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyw", ".so", ".pyd")
#: Modules a kernel imports at start whatever is loaded in this process (and their helpers).
KERNEL_START_MODULES = frozenset(
    {
        "ipykernel_launcher",
        "ipykernel",
        "IPython",
        "jupyter_agent",
        "jupyter_client",
        "jupyter_core",
        "traitlets",
        "zmq",
        "tornado",
        "comm",
        "debugpy",
        "matplotlib_inline",
        "nest_asyncio",
        "nest_asyncio2",
        "psutil",
        "packaging",
        "platformdirs",
        "prompt_toolkit",
        "pygments",
        "decorator",
        "jedi",
        "parso",
        "pexpect",
        "ptyprocess",
        "stack_data",
        "executing",
        "asttokens",
        "pure_eval",
        "wcwidth",
        "dateutil",
        "six",
        "typing_extensions",
        "_distutils_hack",
        "setuptools",
        "pkg_resources",
        "site",
        "sitecustomize",
        "usercustomize",
        "ipywidgets",
        "anthropic",
        "httpx",
        "pydantic",
    }
)
#: Distributions whose requirements (recursively) a started kernel with the agent imports: ours
#: by the name it is installed under (pyproject's ``name``; ``jupyter-agent`` is another project's).
_ROOT_DISTRIBUTIONS = ("ipykernel", "jupyter-claude-agent")


@functools.lru_cache(maxsize=1)
def _distribution_modules() -> frozenset[str]:
    """Top-level modules of ipykernel, this package and everything they require."""
    try:
        by_module = metadata.packages_distributions()
    except Exception:
        return frozenset()
    by_distribution: dict[str, set[str]] = {}
    for module, distributions in by_module.items():
        for name in distributions:
            by_distribution.setdefault(_normal(name), set()).add(module)
    seen: set[str] = set()
    pending = [_normal(name) for name in _ROOT_DISTRIBUTIONS]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for requirement in requires:
            if "extra ==" in requirement:
                continue
            pending.append(_normal(_requirement_name(requirement)))
    return frozenset(module for name in seen for module in by_distribution.get(name, ()))


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _requirement_name(requirement: str) -> str:
    for index, char in enumerate(requirement):
        if not (char.isalnum() or char in "-_."):
            return requirement[:index]
    return requirement


def protected_module_names() -> frozenset[str]:
    """Module names a file in the kernel's start folder must not take (see ``is_protected``):
    the standard library, the top-level modules loaded in this (kernel) process — everything a
    started kernel imported — and those of ipykernel, this package and what they require."""
    loaded = {name.partition(".")[0] for name in list(sys.modules)}
    return _always_protected() | frozenset(loaded)


@functools.lru_cache(maxsize=1)
def _always_protected() -> frozenset[str]:
    return frozenset(sys.stdlib_module_names) | KERNEL_START_MODULES | _distribution_modules()


def is_protected(module: str, folder: str) -> bool:
    """True if a module ``module`` in the start folder ``folder`` would shadow one the kernel
    imports. A loaded module that was imported from ``folder`` itself (the user's own
    ``helpers.py`` next to the notebook) shadows nothing and stays the user's to change."""
    if module in _always_protected():
        return True
    loaded = sys.modules.get(module)
    if loaded is None:
        return False
    origin = getattr(loaded, "__file__", None)
    if isinstance(origin, str):
        with contextlib.suppress(OSError, ValueError):
            if _inside(os.path.realpath(origin), folder):
                return False
    return True


@functools.lru_cache(maxsize=1)
def _editable_sources() -> tuple[tuple[str, frozenset[str]], ...]:
    """``(project folder, top-level modules)`` of every editable install (``direct_url.json``)."""
    try:
        by_module = metadata.packages_distributions()
    except Exception:
        by_module = {}
    modules_of: dict[str, set[str]] = {}
    for module, distributions in by_module.items():
        for name in distributions:
            modules_of.setdefault(_normal(name), set()).add(module)
    found: list[tuple[str, frozenset[str]]] = []
    for distribution in metadata.distributions():
        try:
            text = distribution.read_text("direct_url.json")
            name = distribution.metadata["Name"]
        except Exception:
            continue
        if not text or not name:
            continue
        try:
            info = json.loads(text)
            editable = bool(info.get("dir_info", {}).get("editable"))
            url = str(info.get("url", ""))
        except (ValueError, AttributeError):
            continue
        if not editable or not url.startswith("file://"):
            continue
        project = os.path.realpath(url.removeprefix("file://"))
        modules = set(modules_of.get(_normal(name), ()))
        # an editable install's RECORD often lists no module: its name and top_level.txt do
        modules.add(name.replace("-", "_").replace(".", "_"))
        with contextlib.suppress(Exception):
            modules.update((distribution.read_text("top_level.txt") or "").split())
        found.append((project, frozenset(modules)))
    return tuple(found)


def _is_users_own(folder: str, module: str) -> bool:
    """True if ``folder/module`` is the source of an editable install's top-level module, or a
    module inside one (``mypkg/types.py`` of the user's ``mypkg``: its sources, which run
    whenever the user imports it anyway)."""
    for project, modules in _editable_sources():
        if not (folder == project or folder.startswith(project + os.sep)):
            continue
        if module in modules:
            return True
        inside = folder[len(project) :].split(os.sep)
        if any(part in modules for part in inside):
            return True
    return False


def _start_folders() -> set[str]:
    """Folders whose modules a kernel imports before anything else: its working folder (first
    on ``sys.path``; a new kernel starts in the notebook's folder, which is this one) and every
    folder on ``sys.path``."""
    folders = set()
    for entry in [os.getcwd(), *sys.path]:
        try:
            folders.add(os.path.realpath(entry or os.curdir))
        except (OSError, ValueError):
            continue
    return folders


def _jupyter_folders() -> list[str]:
    """Jupyter's configuration, data and runtime folders, and IPython's, wherever set."""
    folders: list[str] = []
    try:
        from jupyter_core import paths

        folders += [
            paths.jupyter_config_dir(),
            paths.jupyter_data_dir(),
            paths.jupyter_runtime_dir(),
            *paths.jupyter_config_path(),
            *paths.jupyter_path(),
        ]
    except Exception:
        folders.append(str(agent_data_dir().parent))
    folders += [os.environ.get(name, "") for name in ("IPYTHONDIR", "JUPYTER_CONFIG_DIR")]
    return [os.path.realpath(folder) for folder in folders if folder]


def agent_data_dir() -> Path:
    """``<Jupyter data folder>/jupyter_agent``: where the signing key lives, outside any
    workspace (like Jupyter's own notebook-signing secret)."""
    try:
        from jupyter_core.paths import jupyter_data_dir

        base = jupyter_data_dir()
    except Exception:
        base = os.environ.get("JUPYTER_DATA_DIR") or os.path.join(
            os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "jupyter"
        )
    return Path(os.path.realpath(base)) / "jupyter_agent"


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def refusal_to_read(real: Path, parts: Iterable[str]) -> str | None:
    """Why a tool may not even read ``real`` (its workspace-relative ``parts``), or None."""
    if AGENT_FOLDER in parts:
        return (
            f"it is inside a {AGENT_FOLDER} folder, where the agent keeps its undo journal and "
            "session records; no tool reads or changes them (use %agent undo)"
        )
    if _inside(str(real), str(agent_data_dir())):
        return "it is the agent's own data folder (its signing key); no tool reads or changes it"
    return None


def _module_name(leaf: str) -> str | None:
    """The module a file of this name would be imported as, or None if it is none."""
    for suffix in MODULE_SUFFIXES:
        if leaf.endswith(suffix):
            # "uuid.cpython-312-x86_64-linux-gnu.so" is module "uuid"
            return leaf[: -len(suffix)].partition(".")[0] or None
    return None


def refusal(real: Path, parts: list[str]) -> str | None:
    """Why no file tool may create, change, move or remove ``real`` (resolved, inside the
    workspace; ``parts`` is its workspace-relative path), or None if it may.

    The reason names the rule; the caller adds what the user can do.
    """
    reason = refusal_to_read(real, parts)
    if reason is not None:
        return reason
    lowered = [part.lower() for part in parts]
    leaf = lowered[-1] if lowered else ""
    for index, part in enumerate(lowered):
        following = lowered[index + 1] if index + 1 < len(lowered) else ""
        if part in START_FOLDERS:
            return f"it is inside a {parts[index]} folder, which holds {START_FOLDERS[part]}"
        if part.startswith("profile_") and (
            following == "startup" or following.startswith("ipython_")
        ):
            return "it is in an IPython profile, whose start-up files IPython runs"
        if part == ".config" and following in CONFIG_START_FOLDERS:
            return f"it is in .config/{parts[index + 1]}, whose files a shell or login runs"
    if leaf.endswith(".pth"):
        return "it is a .pth file, whose 'import' lines Python runs at every start"
    if _module_name(leaf) in SITE_FILES:
        return f"{parts[-1]} is a module Python runs at every start"
    if leaf in SHELL_START_FILES:
        return f"{parts[-1]} is a shell start file, which a shell runs when it starts"
    if leaf.startswith("jupyter_") and leaf.endswith(("_config.py", "_config.json")):
        return f"{parts[-1]} is a Jupyter configuration file, which Jupyter runs or reads at start"
    if leaf.startswith("ipython_") and leaf.endswith(("_config.py", "_config.json")):
        return f"{parts[-1]} is an IPython configuration file, which IPython runs at start"
    text = str(real)
    for folder in _jupyter_folders():
        if _inside(text, folder):
            return "it is in a Jupyter or IPython configuration, data or runtime folder"
    root = real.parents[len(parts) - 1] if parts else real
    later = _later_start_folders(real, root)
    if leaf.endswith(".ipynb"):
        reason = notebook_folder_refusal(real.parent, real.parent)
        if reason is not None:
            return reason
    return _shadowing(real, later)


def _later_start_folders(real: Path, root: Path) -> list[str]:
    """The folders of the workspace where a *later* kernel may start, above ``real``: every one,
    from the root down to ``real``'s own folder. A kernel starts in its notebook's folder, with
    that folder first on its import path, and the user may put a notebook in any folder later;
    asking which folders hold one today would also race with a notebook written by another tool
    call of the same reply (both checks done before either wrote)."""
    folders = [str(root)]
    current = root
    for part in real.relative_to(root).parts[:-1]:
        current = current / part
        folders.append(str(current))
    return folders


def notebook_folder_refusal(listed: Path, start: Path) -> str | None:
    """Why no notebook may be created in ``start`` (or None) whose entries are those of
    ``listed`` (the same folder, or a folder about to be moved there): a kernel started for it
    would run there, and a module among them would shadow one the kernel imports at start."""
    try:
        with os.scandir(listed) as scanned:
            entries = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in scanned]
    except OSError:
        return None
    folder = str(start)
    for name, is_folder in entries:
        if is_folder:
            try:
                inside = os.listdir(listed / name)
            except OSError:
                continue
            if not inside:
                continue
            below = [name, "__init__.py" if "__init__.py" in inside else inside[0]]
        else:
            below = [name]
        reason = _shadows(folder, below)
        if reason is not None:
            return (
                f"a notebook there would make it a kernel's start folder, where {name} is "
                f"found first: {reason}"
            )
    return None


def _shadowing(real: Path, later: Iterable[str] = ()) -> str | None:
    """Why ``real`` would be (or be part of) a module that shadows one the kernel imports when
    it starts (this kernel, or a later one started in one of the ``later`` folders), or None."""
    text = str(real)
    for folder in {*_start_folders(), *later}:
        if not text.startswith(folder.rstrip(os.sep) + os.sep):
            continue
        below = text[len(folder.rstrip(os.sep)) + 1 :].split(os.sep)
        reason = _shadows(folder, below)
        if reason is not None:
            return reason
    return None


def _shadows(folder: str, below: list[str]) -> str | None:
    """Why ``folder/below...`` would shadow a module a kernel started in ``folder`` imports."""
    if not below:
        return None
    first = below[0]
    module = _module_name(first) if len(below) == 1 else first
    if len(below) == 1 and module is None:
        return None  # a folder of that name alone is a namespace portion: it shadows nothing
    if (
        len(below) > 1
        and first in sys.stdlib_module_names
        and not _is_package_part(folder, first, below)
    ):
        # a folder without __init__ is a namespace portion, which the standard library's
        # regular module outranks; for any other name an import hook (an editable install's
        # finder runs after the path) could lose to it, so no file goes there at all
        return None
    if module is None or not is_protected(module, folder) or _is_users_own(folder, module):
        return None
    return (
        f"a module named {module!r} there would shadow the {module!r} that a kernel "
        f"imports when it starts ({folder} is first on the import path of a kernel started "
        "there), so it would run at that kernel's start"
    )


def _is_package_part(folder: str, first: str, below: list[str]) -> bool:
    """True if ``folder/first/...`` is, or would become, part of a regular package ``first``:
    it makes an ``__init__`` module, or ``first`` already has one."""
    if len(below) == 2 and _module_name(below[1].lower()) == "__init__":
        return True
    package = os.path.join(folder, first)
    try:
        return any(_module_name(name) == "__init__" for name in os.listdir(package))
    except OSError:
        return False
