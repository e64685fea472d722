"""The core never imports IPython or ipywidgets: it must import with both blocked."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

CORE_PACKAGES = ("jupyter_agent.tools", "jupyter_agent.agent", "jupyter_agent.providers")
#: Core modules that sit at the top of the package, not in a core sub-package.
CORE_MODULES = ("jupyter_agent.errors", "jupyter_agent.events")

SCRIPT = textwrap.dedent(
    """
    import sys
    for blocked in ("IPython", "ipywidgets"):
        sys.modules[blocked] = None  # any import of it now raises ImportError

    import importlib, pkgutil
    import jupyter_agent

    imported = []
    for module_name in {modules!r}:
        importlib.import_module(module_name)
        imported.append(module_name)
    for package_name in {packages!r}:
        package = importlib.import_module(package_name)
        for info in pkgutil.walk_packages(package.__path__, package_name + "."):
            importlib.import_module(info.name)
            imported.append(info.name)

    # every public name whose module is in the core resolves too
    for name, module in jupyter_agent._EXPORTS.items():
        if module.startswith({packages!r}) or module in {modules!r}:
            getattr(jupyter_agent, name)

    leaked = [m for m in sys.modules if m.split(".")[0] in ("IPython", "ipywidgets")
              and sys.modules[m] is not None]
    assert not leaked, leaked
    print("\\n".join(imported))
    """
).format(packages=CORE_PACKAGES, modules=CORE_MODULES)


def test_core_imports_without_ipython() -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    imported = set(result.stdout.split())
    for module in (
        "jupyter_agent.tools.registry",
        "jupyter_agent.tools.decorator",
        "jupyter_agent.tools.files.files",
        "jupyter_agent.tools.files.reading",
        "jupyter_agent.tools.search.search",
        "jupyter_agent.tools.search.ripgrep",
        "jupyter_agent.tools.files.session_file",
        "jupyter_agent.tools.factory",
        "jupyter_agent.tools.guard.workspace",
        "jupyter_agent.events",
        "jupyter_agent.providers.base",
    ):
        assert module in imported, module


def test_blocking_really_blocks() -> None:
    """The check above would be empty if blocking did not work; prove that it does."""
    script = "import sys; sys.modules['IPython'] = None\nimport IPython"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode != 0 and "import of IPython halted" in result.stderr


def test_a_session_runs_without_the_mcp_extra(tmp_path: Path) -> None:
    """``pip install jupyter-claude-agent`` without ``[mcp]``: no ``mcp``, no ``regex``. The
    session's toolbox still builds (its MCP manager imports neither until a server is added)."""
    script = textwrap.dedent(
        f"""
        import sys
        for blocked in ("mcp", "regex", "uvicorn"):
            sys.modules[blocked] = None
        from jupyter_agent.notebook.session.session import NotebookSession, SessionSettings

        session = NotebookSession(SessionSettings(workspace={str(tmp_path)!r}, provider="offline"))
        outcome = session.run("Which files are here?")
        session.close()
        print(outcome.answer is not None)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "True"
