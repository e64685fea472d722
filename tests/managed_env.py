"""A Python environment of its own for the managed-settings tests: the test venv's packages, a
``sys.prefix`` that is a temporary folder.

An admin's ``jupyter_agent_managed.json`` goes in a *system* config folder — ``/etc/jupyter`` or
the environment's ``{sys.prefix}/etc/jupyter`` — which no environment variable of the user moves
(that is the point). A test must not write ``/etc/jupyter`` (other runs share the host) nor the
test venv's own ``etc/jupyter`` (every other test would see it), so it makes a venv whose
``sys.prefix`` is a temporary folder and whose ``site-packages`` adds the test venv's (a ``.pth``
line, so editable installs resolve too), and runs kernels and JupyterHub's single-user servers
with its Python: their ``{sys.prefix}/etc/jupyter`` is the test's to write.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from kernel_frontend import Kernel

FILE_NAME = "jupyter_agent_managed.json"


class ManagedEnv:
    """A venv at ``root`` that runs the test venv's packages; ``etc/jupyter`` is its own."""

    def __init__(self, root: Path, base_python: str = sys.executable) -> None:
        """``base_python``: the interpreter the venv is made from (the same minor version as
        the test venv's: its packages are shared)."""
        self.root = root
        if not (root / "pyvenv.cfg").exists():
            subprocess.run(
                [base_python, "-m", "venv", "--without-pip", str(root)],
                check=True,
                capture_output=True,
                timeout=120,
            )
            purelib = Path(
                sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)})
            )
            ours = [path for path in site.getsitepackages() if Path(path).is_dir()]
            lines = [f"import site; site.addsitedir({path!r})" for path in ours]
            (purelib / "_test_venv_packages.pth").write_text("\n".join(lines) + "\n")
        self.python = root / "bin" / "python"
        self.bin = root / "bin"
        self.config_dir = root / "etc" / "jupyter"
        self.config_dir.mkdir(parents=True, exist_ok=True)
        kernels = root / "share" / "jupyter" / "kernels" / "managed"
        kernels.mkdir(parents=True, exist_ok=True)
        spec = {
            "argv": [str(self.python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python (managed test env)",
            "language": "python",
        }
        (kernels / "kernel.json").write_text(json.dumps(spec))
        self.kernel_dirs = [str(kernels.parent)]

    def write_managed(self, settings: dict[str, Any] | str) -> Path:
        """Put the admin's file in this environment's system config folder."""
        path = self.config_dir / FILE_NAME
        path.write_text(settings if isinstance(settings, str) else json.dumps(settings))
        return path

    def sys_prefix(self) -> str:
        return subprocess.run(
            [str(self.python), "-c", "import sys; print(sys.prefix)"],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout.strip()


class ManagedKernel(Kernel):
    """A real kernel run by ``env``'s Python (so its system config folder is ``env``'s)."""

    def __init__(self, cwd: Path, env: ManagedEnv, environ: dict[str, str] | None = None) -> None:
        specs = KernelSpecManager(kernel_dirs=env.kernel_dirs)
        self.manager = KernelManager(kernel_name="managed", kernel_spec_manager=specs)
        self.manager.start_kernel(cwd=str(cwd), env=dict(os.environ) | (environ or {}))
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
