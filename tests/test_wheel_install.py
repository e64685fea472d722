"""A newcomer's install path: the built wheel, in a fresh environment, with no dev tools.

Issue 15: a data scientist wants ``pip install`` into the environment they already use, not the
782 MB development venv. This test builds the wheel from a copy of the repository, installs it
into a fresh virtual environment (pinned by constraints.txt, nothing else), checks that no
development tool came along, runs the docs' "Without a notebook" example there with no key
(it must answer from the offline model and say so), loads the extension in IPython, then adds
the ``[tutorials]`` extra and ipykernel and runs tutorial 04 in a kernel of that environment.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
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

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SCRIPT_MARKER = "<!-- script-example:"


def readme_script(readme: Path) -> str:
    """The Python block that follows the script-example marker in the README."""
    text = readme.read_text()
    after = text[text.index(SCRIPT_MARKER) :]
    match = re.search(r"```python\n(.*?)```", after, re.DOTALL)
    assert match, "no python block after the script-example marker"
    return match.group(1)


def test_the_wheel_installs_and_works_offline(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    copy_repository(repo)
    env = clean_environment()

    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), "."],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = dist.glob("jupyter_agent-*.whl")

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
