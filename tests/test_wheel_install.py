"""A newcomer's install path: the built wheel, in a fresh environment, with no dev tools.

Issue 15: a data scientist wants ``pip install`` into the environment they already use, not the
782 MB development venv. This test builds the wheel from a copy of the repository, installs it
into a fresh virtual environment (pinned by constraints.txt, nothing else), checks that no
development tool came along, runs the docs' "Without a notebook" example there with no key
(it must answer from the offline model and say so), loads the extension in IPython, then adds
the ``[tutorials]`` extra and ipykernel and runs tutorial 04 in a kernel of that environment.

Issue 36: ``jupyter-agent`` on PyPI is another project, so the distribution has a name of its own,
``jupyter-claude-agent``, while the import name stays ``jupyter_agent``. The wheel is checked for
both, and for the parts a wheel must carry (the prebuilt JupyterLab extension, ``py.typed``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import nbformat
import pytest
from fresh_env import (
    clean_environment,
    copy_repository,
    new_venv,
    outputs_of,
    pip_install,
    run_notebook,
    text_of,
)

from jupyter_agent import __version__

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[1]
SCRIPT_MARKER = "<!-- script-example:"
#: The distribution's name on PyPI (``jupyter-agent`` there is another project's package).
DISTRIBUTION = "jupyter-claude-agent"


def readme_script(readme: Path) -> str:
    """The Python block that follows the script-example marker in the README."""
    text = readme.read_text()
    after = text[text.index(SCRIPT_MARKER) :]
    match = re.search(r"```python\n(.*?)```", after, re.DOTALL)
    assert match, "no python block after the script-example marker"
    return match.group(1)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A copy of the repository as a clone has it, and the wheel ``pip wheel`` builds from it."""
    root = tmp_path_factory.mktemp("wheel")
    repo = root / "repo"
    copy_repository(repo)
    dist = root / "dist"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), "."],
        cwd=repo,
        env=clean_environment(),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (wheel,) = dist.glob("*.whl")
    return repo, wheel


def test_the_wheel_has_our_name_and_imports_as_jupyter_agent(built: tuple[Path, Path]) -> None:
    _, wheel = built
    stem = DISTRIBUTION.replace("-", "_")
    assert wheel.name == f"{stem}-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = f"{stem}-{__version__}.dist-info"
        meta = HeaderParser().parsestr(archive.read(f"{info}/METADATA").decode())
        shared = f"{stem}-{__version__}.data/data/share/jupyter/labextensions/jupyter-agent/"
        install = json.loads(archive.read(f"{shared}install.json"))
        built_package = json.loads(archive.read(f"{shared}package.json"))
    assert meta["Name"] == DISTRIBUTION and meta["Version"] == __version__
    assert set(meta.get_all("Provides-Extra") or []) >= {"mcp", "openai", "tutorials"}
    # one top-level package, the one ``%load_ext jupyter_agent`` imports
    top = {name.split("/")[0] for name in names} - {info, f"{stem}-{__version__}.data"}
    assert top == {"jupyter_agent"}, top
    assert "jupyter_agent/py.typed" in names
    assert meta["License-Expression"] == "MIT" and f"{info}/licenses/LICENSE" in names
    # the prebuilt JupyterLab extension, which names the distribution that uninstalls it
    assert install["packageName"] == DISTRIBUTION, install
    assert DISTRIBUTION in install["uninstallInstructions"], install
    assert built_package["version"] == __version__, "labextension/package.json's version"
    assert any(name.startswith(f"{shared}static/remoteEntry.") for name in names)
    assert "jupyter_agent/labextension/package.json" in names


def test_the_version_is_written_once() -> None:
    """``jupyter_agent/_version.py`` is the one place: pyproject reads it (hatch's dynamic
    version), and the labextension's package.json is held to it by the test above."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"], "pyproject.toml writes the version again"
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"] == {"path": "jupyter_agent/_version.py"}


def test_the_wheel_installs_and_works_offline(built: tuple[Path, Path], tmp_path: Path) -> None:
    repo, wheel = built
    env = clean_environment()

    python = new_venv(tmp_path / "venv")
    pip_install(python, "-c", str(repo / "constraints.txt"), str(wheel), cwd=tmp_path, env=env)
    missing = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.util as u; "
            "print([m for m in ('pytest', 'ruff', 'mypy', 'nbval', 'playwright', 'pandas') "
            "if u.find_spec(m)])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert missing.stdout.strip() == "[]", f"dev tools came with the wheel: {missing.stdout}"
    installed = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.metadata as m, jupyter_agent; "
            f"print(m.packages_distributions()['jupyter_agent'], m.version({DISTRIBUTION!r}), "
            "jupyter_agent.__version__)",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert installed.stdout.split() == [f"['{DISTRIBUTION}']", __version__, __version__]

    # the docs' script (the Python API page), in a folder with a CSV, no key: the offline model
    # answers, and says so
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    shutil.copy(repo / "notebooks" / "data" / "sales.csv", project / "data" / "sales.csv")
    script = project / "example.py"
    script.write_text(readme_script(repo / "docs" / "python" / "index.md"))
    ran = subprocess.run(
        [str(python), str(script)], cwd=project, env=env, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "offline demo model" in ran.stdout and "ANTHROPIC_API_KEY" in ran.stdout
    assert "data/sales.csv" in ran.stdout and "data rows" in ran.stdout

    # the README's check: %load_ext in IPython, then %agent config
    check = subprocess.run(
        [
            str(tmp_path / "venv" / "bin" / "ipython"),
            "--quick",
            "-c",
            "get_ipython().run_line_magic('load_ext', 'jupyter_agent'); "
            "get_ipython().run_line_magic('agent', 'config')",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stderr[-3000:]
    assert "AgentMagics.provider" in check.stdout and "'auto'" in check.stdout

    # the tutorials' extra makes tutorial 04 run (it needs pandas)
    pip_install(
        python,
        "-c",
        str(repo / "constraints.txt"),
        f"{wheel}[tutorials]",
        "ipykernel",
        cwd=tmp_path,
        env=env,
    )
    nb = nbformat.read(repo / "notebooks" / "04_data_analysis.ipynb", as_version=4)
    run_notebook(nb, python, tmp_path / "kernels", cwd=repo / "notebooks", env=env)
    outputs = outputs_of(nb)
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, "\n".join(text_of(o) or str(o.get("evalue")) for o in errors)
    assert "offline" in "\n".join(text_of(o) for o in outputs).lower()
