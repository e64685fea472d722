"""A hostile model plants files that run later by themselves; the file tools refuse them.

Issue 20 point 3 (SPEC "Nothing the model writes runs by itself later"): ``ipykernel_launcher.py``
or ``uuid.py`` in the notebook folder (a kernel's working folder, first on its ``sys.path``) runs
at the next kernel start; with the workspace at ``~``, ``~/.bashrc`` and IPython start-up scripts
are writable. The kernel test restarts a real kernel after the agent's write.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from jupyter_agent.tools.context import ToolContext
from jupyter_agent.tools.files.files import (
    EditFileTool,
    MkdirTool,
    ReadFileTool,
    WriteFileTool,
)
from jupyter_agent.tools.files.move import MoveTool

ROOT = Path(__file__).resolve().parents[3]


def _run(coro: object) -> str:
    try:
        return str(asyncio.run(coro))  # type: ignore[arg-type]
    except Exception as exc:
        return f"ERROR {type(exc).__name__}: {exc}"


@pytest.fixture
def start_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace that is the kernel's start folder (the process's working folder)."""
    workspace = tmp_path / "nb"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    return workspace.resolve()


@pytest.mark.parametrize(
    "path",
    [
        "ipykernel_launcher.py",
        "uuid.py",
        "IPython.py",
        "ipykernel/__init__.py",
        "jupyter_agent/__init__.py",
        "jupyter_agent/extension.py",
        "email/__init__.py",
        "json.cpython-312-x86_64-linux-gnu.so",
        "sub/lib/site-packages/evil.pth",
        "sitecustomize.py",
        "deep/usercustomize.py",
        "jupyter_server_config.py",
        "deep/jupyter_notebook_config.json",
        "ipython_kernel_config.py",
        ".ipynb_checkpoints/analysis-checkpoint.ipynb",
        "sub/.ipynb_checkpoints/x.py",
        "x/profile_default/startup/00-evil.py",
        ".envrc",
    ],
)
def test_write_file_refuses_what_runs_later(start_folder: Path, path: str) -> None:
    tool = WriteFileTool(ToolContext(start_folder))
    result = _run(tool.execute({"file_path": path, "content": "print('pwned')\n"}))
    assert result.startswith("ERROR WorkspaceError: Refusing to create or change"), result
    assert "write it yourself" in result
    assert not (start_folder / path).exists()


def test_ordinary_files_stay_writable(start_folder: Path) -> None:
    tool = WriteFileTool(ToolContext(start_folder))
    # (``sub/uuid.py`` is refused since review F1: any folder may become a kernel's start folder)
    for path in ("analysis.py", "mypkg/__init__.py", "sub/uuid_tools.py", "test/a.py", "data.json"):
        result = _run(tool.execute({"file_path": path, "content": "x = 1\n"}))
        assert result.startswith("Wrote"), (path, result)
    assert _run(MkdirTool(ToolContext(start_folder)).execute({"path": "email"})).startswith(
        "Created folder"
    )  # an empty folder is a namespace portion: the stdlib package still wins


def test_edit_mkdir_and_move_go_through_the_same_guard(start_folder: Path) -> None:
    context = ToolContext(start_folder)
    (start_folder / "helper.py").write_text("x = 1\n")
    (start_folder / "sub").mkdir()
    (start_folder / "sub" / "uuid.py").write_text("x = 1\n")
    (start_folder / "pkg").mkdir()
    (start_folder / "pkg" / "__init__.py").write_text("x = 1\n")
    (start_folder / "stuff").mkdir()
    (start_folder / "stuff" / "a.pth").write_text("import os\n")

    moves = [
        {"source": "helper.py", "destination": "ipykernel_launcher.py"},
        {"source": "sub/uuid.py", "destination": "."},  # lands as ./uuid.py
        {"source": "pkg", "destination": "jupyter_agent"},  # a regular package, shadowing
        {"source": "stuff", "destination": "site"},  # holds a .pth
        {"source": "helper.py", "destination": ".ipython/profile_default/startup/x.py"},
    ]
    for args in moves:
        result = _run(MoveTool(context).execute(args))
        assert result.startswith("ERROR") and "Refusing to create or change" in result, (
            args,
            result,
        )
    assert (start_folder / "helper.py").exists() and (start_folder / "sub" / "uuid.py").exists()
    assert not (start_folder / "uuid.py").exists() and not (start_folder / "jupyter_agent").exists()

    result = _run(MkdirTool(context).execute({"path": ".ipython/profile_default/startup"}))
    assert "Refusing to create or change" in result and not (start_folder / ".ipython").exists()
    result = _run(
        EditFileTool(context).execute(
            {"file_path": "pkg/__init__.py", "old_string": "x = 1", "new_string": "x = 2"}
        )
    )
    assert result.startswith("Edited") or "Refusing" not in result, result


def test_home_workspace_start_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The workspace is a (fake) home folder: its start files are refused."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("IPYTHONDIR", raising=False)
    monkeypatch.delenv("JUPYTER_CONFIG_DIR", raising=False)
    monkeypatch.delenv("JUPYTER_DATA_DIR", raising=False)
    tool = WriteFileTool(ToolContext(home))
    for path in (
        ".bashrc",
        ".profile",
        ".zshrc",
        ".bash_logout",
        ".config/fish/config.fish",
        ".config/autostart/x.desktop",
        ".ipython/profile_default/startup/x.py",
        ".jupyter/jupyter_server_config.py",
        ".local/share/jupyter/kernels/python3/kernel.json",
        ".local/share/jupyter/jupyter_agent/signing_key",
        ".ssh/rc",
    ):
        result = _run(tool.execute({"file_path": path, "content": "echo pwned\n"}))
        assert "Refusing" in result, (path, result)
        assert not (home / path).exists()
    assert _run(tool.execute({"file_path": "notes.md", "content": "ok"})).startswith("Wrote")


def test_agent_folders_are_out_of_reach_at_any_depth(tmp_path: Path) -> None:
    """A journal planted in a sub-folder (for a later workspace there) cannot be written, and
    the agent's records are not read either."""
    context = ToolContext(tmp_path)
    target = "sub/.jupyter_agent/undo/000001/steps.jsonl"
    result = _run(WriteFileTool(context).execute({"file_path": target, "content": "{}"}))
    assert "Refusing" in result and ".jupyter_agent" in result
    assert not (tmp_path / "sub").exists()
    (tmp_path / ".jupyter_agent").mkdir()
    (tmp_path / ".jupyter_agent" / "session.md").write_text("secret")
    result = _run(ReadFileTool(context).execute({"file_path": ".jupyter_agent/session.md"}))
    assert result.startswith("ERROR") and "secret" not in result
    result = _run(MkdirTool(context).execute({"path": "a/.jupyter_agent"}))
    assert "Refusing" in result


def test_editable_install_sources_stay_writable(tmp_path: Path) -> None:
    """A top-level module of an editable install whose project is the workspace is the user's:
    writable (``six``, a name the kernel may import at start), while a stdlib name next to it
    is not (a real ``*.dist-info`` with
    ``direct_url.json``, in a child process whose path holds it)."""
    project = tmp_path / "proj"
    (project / "six").mkdir(parents=True)
    (project / "six" / "__init__.py").write_text("")
    site = tmp_path / "site"
    info = site / "six_tools-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: six-tools\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("six\n")
    (info / "RECORD").write_text("")
    (info / "direct_url.json").write_text(
        json.dumps({"url": project.as_uri(), "dir_info": {"editable": True}})
    )
    script = textwrap.dedent(
        """
        import asyncio, sys
        from jupyter_agent.tools.context import ToolContext
        from jupyter_agent.tools.files.files import WriteFileTool
        tool = WriteFileTool(ToolContext("."))
        for path in ("six/__init__.py", "six/moves.py", "uuid.py", "six/types.py",
                     "six/sub/json.py", "tools/uuid.py"):
            try:
                print(path, asyncio.run(tool.execute({"file_path": path, "content": "x = 1"})))
            except Exception as exc:
                print(path, "ERROR", exc)
        """
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{site}"}
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=project, env=env, capture_output=True, text=True
    )
    lines = out.stdout.splitlines()
    assert lines[0].startswith("six/__init__.py Wrote"), out
    assert lines[1].startswith("six/moves.py Wrote"), out
    assert lines[2].startswith("uuid.py ERROR Refusing"), out
    # below the package's top, its modules may take any name (they are its sources, which run
    # whenever the user imports it), while another folder of the project may not shadow one
    assert lines[3].startswith("six/types.py Wrote"), out
    assert lines[4].startswith("six/sub/json.py Wrote"), out
    assert lines[5].startswith("tools/uuid.py ERROR Refusing"), out


@pytest.mark.slow
def test_planted_launcher_never_runs_at_kernel_restart(tmp_path: Path) -> None:
    """The agent (in the kernel, workspace = the notebook folder) writes ipykernel_launcher.py
    and uuid.py; the kernel restarts; nothing of them ran."""
    from jupyter_client.manager import start_new_kernel

    marker = tmp_path / "PLANTED_LAUNCHER_RAN"
    uuid_marker = tmp_path / "PLANTED_UUID_RAN"
    launcher = textwrap.dedent(
        f"""
        open({str(marker)!r}, "w").write("ran")
        from ipykernel import kernelapp as app
        app.launch_new_instance()
        """
    )
    uuid = textwrap.dedent(  # runs, then hands over to the real uuid module
        f"""
        open({str(uuid_marker)!r}, "w").write("ran")
        import importlib.util, os, sys, sysconfig
        _spec = importlib.util.spec_from_file_location(
            "uuid", os.path.join(sysconfig.get_paths()["stdlib"], "uuid.py"))
        _module = importlib.util.module_from_spec(_spec)
        sys.modules["uuid"] = _module
        _spec.loader.exec_module(_module)
        """
    )
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        code = textwrap.dedent(
            f"""
            from jupyter_agent.tools.context import ToolContext
            from jupyter_agent.tools.files.files import WriteFileTool
            _tool = WriteFileTool(ToolContext("."))
            for _path, _text in (("ipykernel_launcher.py", {launcher!r}), ("uuid.py", {uuid!r})):
                try:
                    print(_path, await _tool.execute({{"file_path": _path, "content": _text}}))
                except Exception as _exc:
                    print(_path, "ERROR", _exc)
            """
        )
        out: list[str] = []
        reply = client.execute_interactive(code, timeout=60, output_hook=_printer(out))
        assert reply["content"]["status"] == "ok", out
        manager.restart_kernel(now=True)
        client.wait_for_ready(timeout=60)
        reply = client.execute_interactive("import uuid; uuid.uuid4()", timeout=60)
        assert reply["content"]["status"] == "ok"
        time.sleep(0.5)
        assert not marker.exists(), "the planted ipykernel_launcher.py ran at the kernel restart"
        assert not uuid_marker.exists(), "the planted uuid.py ran at the kernel restart"
        text = "".join(out)
        assert "ipykernel_launcher.py ERROR Refusing" in text, text
        assert "uuid.py ERROR Refusing" in text, text
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _printer(sink: list[str]):  # type: ignore[no-untyped-def]
    def hook(message: dict[str, object]) -> None:
        content = message.get("content")
        if message.get("msg_type") == "stream" and isinstance(content, dict):
            sink.append(str(content.get("text", "")))
        elif message.get("msg_type") == "error" and isinstance(content, dict):
            sink.append(str(content.get("evalue", "")))

    return hook


def test_search_skips_the_agent_folders(tmp_path: Path) -> None:
    """What the journal keeps (earlier file contents) is not found by a search either."""
    from jupyter_agent.tools.search.search import SearchTextTool

    kept = tmp_path / "sub" / ".jupyter_agent" / "undo" / "000001"
    kept.mkdir(parents=True)
    (kept / "kept-1").write_text("needle in the journal\n")
    (tmp_path / "visible.txt").write_text("needle here\n")
    result = _run(SearchTextTool(ToolContext(tmp_path)).execute({"pattern": "needle"}))
    assert "visible.txt" in result and ".jupyter_agent" not in result, result


def test_the_users_own_imported_module_stays_writable(start_folder: Path) -> None:
    """A helper module next to the notebook that the user imported is loaded, but it shadows
    nothing: the agent may still edit it."""
    import importlib

    (start_folder / "my_helpers_20.py").write_text("VALUE = 1\n")
    sys.path.insert(0, str(start_folder))
    try:
        importlib.import_module("my_helpers_20")
        tool = WriteFileTool(ToolContext(start_folder))
        result = _run(tool.execute({"file_path": "my_helpers_20.py", "content": "VALUE = 2\n"}))
        assert result.startswith("Wrote"), result
    finally:
        sys.path.remove(str(start_folder))
        sys.modules.pop("my_helpers_20", None)


def test_what_the_distribution_requires_is_protected_before_it_is_imported(
    tmp_path: Path,
) -> None:
    """A module the package requires but a kernel has not imported yet (html-to-markdown loads
    on the first web_fetch, mistune on the first Markdown render) is refused all the same: the
    guard finds it through the installed distribution's requirements, so it must look that
    distribution up by the name it is installed under."""
    folder = tmp_path / "nb"
    folder.mkdir()
    script = textwrap.dedent(
        """
        import asyncio, sys
        from jupyter_agent.tools.context import ToolContext
        from jupyter_agent.tools.files.files import WriteFileTool

        for module in ("html_to_markdown", "mistune", "jupyter_ui_poll"):
            assert module not in sys.modules, module  # protected by requirement, not by load
            tool = WriteFileTool(ToolContext("."))
            try:
                result = asyncio.run(tool.execute({"file_path": module + ".py", "content": ""}))
            except Exception as exc:
                result = f"ERROR {type(exc).__name__}: {exc}"
            print(module, str(result).splitlines()[0])
        """
    )
    ran = subprocess.run(
        [sys.executable, "-c", script], cwd=folder, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    lines = ran.stdout.splitlines()
    assert len(lines) == 3, ran.stdout
    for line in lines:
        assert "ERROR WorkspaceError: Refusing to create or change" in line, line
    assert not list(folder.glob("*.py"))
