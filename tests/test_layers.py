"""The package's floors: each layer imports only the layers below it, and no module imports
itself back through others.

Every import counts — at module level, inside a function (the lazy ones that keep ``%load_ext``
cheap) and under ``TYPE_CHECKING`` — because each is a dependency a reader must hold in mind. The
floors, lowest first:

    _version, errors, approvals   (leaves: everyone speaks them)
    tools                         (the registry, the built-in tools, the workspace)
    events                        (what the agent streams; names tools' Image)
    providers                     (models: Anthropic, OpenAI-compatible, offline)
    mcp                           (MCP servers as tools: a Toolbox's, not an Agent's)
    agent                         (the Toolbox, the gate, the loop)
    notebook                      (the magics, the session, widgets)
    the package face (__init__)

Inside ``notebook/`` and ``tools/`` the modules live in wings (subpackages a newcomer can name);
``WINGS`` draws which sibling wing each may import, as measured when the wings were made. A wing
importing a sibling not drawn there fails, and so does a wing nobody drew: a new arrow between
wings is a decision, written here, not an accident. The modules at a layer's root are the
contract (``tools/base.py``, ``registry.py``, …) or shared leaves (``notebook/inert.py``,
``_ipython.py``, ``text.py``); the leaves import no wing, and ``tools/guard/`` — the floor of
the tools — imports nothing else of the tools.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "jupyter_agent"
FLOORS = [
    {"_version", "errors", "approvals"},
    {"tools"},
    {"events"},
    {"providers"},
    {"mcp"},
    {"agent"},
    {"notebook"},
    {"(face)"},
]

#: Layer -> wing -> the sibling wings it may import (measured; lowest wings first).
WINGS: dict[str, dict[str, set[str]]] = {
    "notebook": {
        "spend": set(),  # prices, budget, usage
        "runtime": set(),  # bridge, kernel comm, console, kernel loop, restarts, turn gc
        "views": {"runtime"},  # renderers, tool format, call records, widgets
        "asking": {"runtime", "views"},  # questions, approvals, forms
        "coauthor": {"runtime"},  # the link to the notebook, review diff, undo scope
        "kernel": {"runtime", "coauthor"},  # recorder, history, variables, proposals, figures
        "session": {"runtime", "spend", "asking", "coauthor", "kernel"},  # IPython-free session
        "serve": {"runtime", "views", "asking", "coauthor", "session"},  # %agent serve
        # turn records: kept, read from the page or the saved notebook, replayed
        "replay": {"runtime", "views", "coauthor", "session"},
        "front": {  # the magics and the cell turn: the top wing
            "replay",
            "runtime",
            "spend",
            "views",
            "asking",
            "coauthor",
            "kernel",
            "serve",
            "session",
        },
    },
    "tools": {
        "guard": set(),  # workspace, paths, journal, sandbox, processes, network
        "search": {"guard"},  # search_files / search_text
        "files": {"guard"},  # the file tools
    },
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports() -> dict[str, set[str]]:
    """Module → the package modules it imports (relative imports resolved)."""
    found: dict[str, set[str]] = defaultdict(set)
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    for path in PACKAGE.rglob("*.py"):
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                # ``from pkg import module`` depends on that module (as import-linter counts it)
                submodules = [
                    f"{stem}.{a.name}" for a in node.names if f"{stem}.{a.name}" in modules
                ]
                names_only = len(submodules) < len(node.names)
                targets = submodules + ([stem] if names_only else [])
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                if target in modules and target != name:
                    found[name].add(target)
    return found


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(face)"


def floor(module: str) -> int:
    return next(i for i, names in enumerate(FLOORS) if layer(module) in names)


def test_every_import_points_down_or_across_its_own_layer() -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in imports().items()
        for target in targets
        if floor(target) > floor(module)
        or (floor(target) == floor(module) and layer(target) != layer(module))
    )
    assert upward == []


def test_no_module_imports_itself_back() -> None:
    graph = imports()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                cycles.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert cycles == []


def wing(module: str) -> str | None:
    """The wing a module lives in (``notebook.views.render`` -> ``views``), else ``None``."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in WINGS and parts[2] in WINGS[parts[1]]:
        return parts[2]
    return None


def test_every_wing_is_drawn() -> None:
    for name, wings in WINGS.items():
        folders = {p.name for p in (PACKAGE / name).iterdir() if (p / "__init__.py").is_file()}
        assert folders == set(wings), name


def test_wings_import_only_the_sibling_wings_drawn() -> None:
    undrawn = sorted(
        f"{module} -> {target}"
        for module, targets in imports().items()
        for target in targets
        if (source := wing(module)) is not None
        and (other := wing(target)) is not None
        and layer(module) == layer(target)
        and other != source
        and other not in WINGS[layer(module)][source]
    )
    assert undrawn == []


def test_the_drawn_wings_have_no_circle() -> None:
    for name, wings in WINGS.items():
        placed: list[str] = []
        while len(placed) < len(wings):
            ready = [w for w in wings if w not in placed and wings[w] <= set(placed)]
            assert ready, f"{name}: a circle among {sorted(set(wings) - set(placed))}"
            placed.extend(ready)


#: ``tools/`` modules that import nothing of the package: text helpers any tool may use, the
#: guards included.
TOOLS_LEAVES = {"jupyter_agent.tools.cut_mark", "jupyter_agent.tools.one_line"}


def test_the_shared_leaves_import_no_wing() -> None:
    """``notebook/``'s root modules and ``tools/guard/`` sit below every wing of their layer;
    the tools' leaves import nothing of the package."""
    graph = imports()
    assert all(not graph.get(leaf) for leaf in TOOLS_LEAVES), {
        leaf: graph.get(leaf) for leaf in TOOLS_LEAVES
    }
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if layer(module) == layer(target)
        and (
            (
                layer(module) == "notebook"
                and module.count(".") == 2
                and wing(module) is None
                and wing(target) is not None
            )
            or (wing(module) == "guard" and wing(target) != "guard" and target not in TOOLS_LEAVES)
        )
    )
    assert upward == []
