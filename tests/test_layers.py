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
