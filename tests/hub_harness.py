"""A real JupyterHub on loopback with two real local users, for the shared-host tests.

JupyterHub (the pinned dev dependency) with ``DummyAuthenticator`` and ``LocalProcessSpawner``,
configurable-http-proxy from npm (``npm_packages.py``), two Linux users (``jahub_a``,
``jahub_b``, made with ``useradd`` when the tests run as root). Each user's single-user server —
and so each kernel — runs as that user, with the Python of a ``ManagedEnv`` built on the system's
Python (``/usr/bin/python3``; the test venv's own may live in root's home, which no other user can
enter), so its ``{sys.prefix}/etc/jupyter`` is the admin's folder the test writes.

The test talks to the hub's REST API with a service token (admin scopes), starts servers, opens
kernels and runs cells over the kernel's websocket, as a notebook page would.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import websocket
from managed_env import ManagedEnv
from npm_packages import npm_package, unavailable

#: configurable-http-proxy, the proxy JupyterHub drives (Node; from the npm registry).
CHP = "configurable-http-proxy@5.3.0"
USERS = ("jahub_a", "jahub_b")
SYSTEM_PYTHON = "/usr/bin/python3"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def local_users() -> dict[str, pwd.struct_passwd]:
    """The two test users, created (with homes) when missing and the tests run as root."""
    found: dict[str, pwd.struct_passwd] = {}
    for name in USERS:
        try:
            found[name] = pwd.getpwnam(name)
            continue
        except KeyError:
            pass
        if os.geteuid() != 0:
            pytest.skip(
                f"the JupyterHub tests need the local users {', '.join(USERS)}: run as "
                "root once to create them (useradd), or create them yourself"
            )
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
        found[name] = pwd.getpwnam(name)
    return found


def as_user(user: str, *command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``command`` as ``user`` (``runuser``: we are root), in their home, with a plain
    environment."""
    return subprocess.run(
        [
            "runuser",
            "-u",
            user,
            "--",
            "env",
            "-i",
            f"HOME={pwd.getpwnam(user).pw_dir}",
            "PATH=/usr/bin:/bin",
            *command,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd="/",
    )


@dataclass
class Hub:
    """A running hub: its URL, the service token, the managed environment its users run."""

    url: str
    token: str
    env: ManagedEnv
    fake_api_url: str

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"token {self.token}"}
        return httpx.request(method, f"{self.url}{path}", headers=headers, timeout=30, **kwargs)

    def start_servers(self, users: tuple[str, ...], timeout: float = 90) -> None:
        """Start each user's single-user server (it runs as that user); wait until all are up."""
        for user in users:  # spawning together: each takes seconds
            response = self.api("POST", f"/hub/api/users/{user}/server")
            assert response.status_code in (201, 202, 400), response.text  # 400: running
        for user in users:
            self._wait_ready(user, timeout)

    def _wait_ready(self, user: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            model = self.api("GET", f"/hub/api/users/{user}").json()
            server = model.get("servers", {}).get("")
            if server and server.get("ready"):
                return
            time.sleep(0.5)
        raise AssertionError(f"{user}'s server did not start: {model}")

    def kernel(self, user: str) -> HubKernel:
        """A new kernel on ``user``'s server, connected over its websocket."""
        response = self.api("POST", f"/user/{user}/api/kernels", json={"name": "python3"})
        assert response.status_code == 201, response.text
        kernel_id = response.json()["id"]
        ws_url = (
            self.url.replace("http://", "ws://") + f"/user/{user}/api/kernels/{kernel_id}/channels"
        )
        return HubKernel(self, user, kernel_id, ws_url)


class HubKernel:
    """One kernel of a user's server, driven over its websocket as a notebook page does."""

    def __init__(self, hub: Hub, user: str, kernel_id: str, ws_url: str) -> None:
        self.hub, self.user, self.kernel_id = hub, user, kernel_id
        self.session = uuid.uuid4().hex
        self.socket = websocket.create_connection(
            ws_url, header=[f"Authorization: token {hub.token}"], timeout=60
        )

    def close(self) -> None:
        self.socket.close()
        self.hub.api("DELETE", f"/user/{self.user}/api/kernels/{self.kernel_id}")

    def execute(self, code: str, timeout: float = 90) -> tuple[str, str]:
        """Run ``code``: the reply's status, the outputs as text (streams, errors, plain text)."""
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "msg_type": "execute_request",
            "session": self.session,
            "username": "test",
            "version": "5.3",
            "date": "2026-11-28T00:00:00Z",
        }
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        message = {
            "header": header,
            "parent_header": {},
            "metadata": {},
            "content": content,
            "channel": "shell",
            "buffers": [],
        }
        self.socket.send(json.dumps(message))
        texts: list[str] = []
        status: str | None = None
        idle = False
        deadline = time.monotonic() + timeout
        while status is None or not idle:
            assert time.monotonic() < deadline, f"timed out running {code!r}: {texts}"
            self.socket.settimeout(max(0.1, deadline - time.monotonic()))
            reply = json.loads(self.socket.recv())
            if reply.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, body = reply["msg_type"], reply["content"]
            if kind == "stream":
                texts.append(body["text"])
            elif kind == "error":
                texts.append(f"{body['ename']}: {body['evalue']}\n")
            elif kind in ("display_data", "execute_result"):
                texts.append(body.get("data", {}).get("text/plain", "") + "\n")
            elif kind == "execute_reply":
                status = body["status"]
            elif kind == "status" and body["execution_state"] == "idle":
                idle = True
        return status, "".join(texts)


def _hub_config(
    folder: Path, env: ManagedEnv, port: int, token: str, chp: Path, environment: dict[str, str]
) -> Path:
    config = folder / "jupyterhub_config.py"
    settings = {
        "port": port,
        "hub_port": free_port(),
        "proxy_api": free_port(),
        "chp": str(chp),
        "python": str(env.python),
        "db": f"sqlite:///{folder / 'hub.sqlite'}",
        "secret": str(folder / "cookie_secret"),
        "pid": str(folder / "proxy.pid"),
        "token": token,
        "users": list(USERS),
        "environment": environment,
    }
    config.write_text(
        "import json\n"
        f"s = json.loads({json.dumps(json.dumps(settings))})\n"
        "c.JupyterHub.bind_url = f\"http://127.0.0.1:{s['port']}\"\n"
        "c.JupyterHub.hub_ip = '127.0.0.1'\n"
        "c.JupyterHub.hub_port = s['hub_port']\n"
        "c.ConfigurableHTTPProxy.api_url = f\"http://127.0.0.1:{s['proxy_api']}\"\n"
        "c.ConfigurableHTTPProxy.command = [s['chp']]\n"
        "c.ConfigurableHTTPProxy.pid_file = s['pid']\n"
        "c.JupyterHub.db_url = s['db']\n"
        "c.JupyterHub.cookie_secret_file = s['secret']\n"
        "c.JupyterHub.authenticator_class = 'dummy'\n"
        "c.Authenticator.allowed_users = set(s['users'])\n"
        "c.JupyterHub.spawner_class = 'localprocess'\n"
        "c.Spawner.cmd = [s['python'], '-m', 'jupyterhub.singleuser']\n"
        "c.Spawner.environment = s['environment']\n"
        "c.Spawner.start_timeout = 90\n"
        "c.Spawner.http_timeout = 90\n"
        "c.JupyterHub.services = [{'name': 'tests', 'api_token': s['token']}]\n"
        "c.JupyterHub.load_roles = [{'name': 'tests', 'services': ['tests'], 'scopes': "
        "['admin:users', 'admin:servers', 'access:servers']}]\n"
        "c.JupyterHub.cleanup_servers = True\n"
    )
    return config


@contextmanager
def running_hub(fake_api_url: str) -> Iterator[Hub]:
    """A hub on loopback for the two users, their servers on the managed environment."""
    if sys.platform != "linux" or not Path(SYSTEM_PYTHON).exists():
        unavailable(f"the JupyterHub tests need Linux and {SYSTEM_PYTHON}")
    local_users()
    chp = npm_package(CHP) / "bin" / "configurable-http-proxy"
    folder = Path(tempfile.mkdtemp(prefix="jahub-"))
    folder.chmod(0o755)  # the users' Python lives here; the admin's folder is root's
    env = ManagedEnv(folder / "env", base_python=SYSTEM_PYTHON)
    probe = as_user(USERS[0], str(env.python), "-c", "import jupyter_agent, jupyterhub, ipykernel")
    if probe.returncode != 0:
        unavailable(
            "the test users cannot import the test environment's packages (is the checkout in "
            f"a folder only root can read?): {probe.stderr.strip()[-300:]}"
        )
    token = secrets.token_hex(16)
    port = free_port()
    environment = {
        "ANTHROPIC_BASE_URL": fake_api_url,
        "ANTHROPIC_API_KEY": "sk-test",
        "JUPYTER_AGENT_PROVIDER": "anthropic",
    }
    config = _hub_config(folder, env, port, token, chp, environment)
    log = open(folder / "hub.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterhub", "-f", str(config)],
        cwd=folder,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"},
    )
    hub = Hub(f"http://127.0.0.1:{port}", token, env, fake_api_url)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (folder / "hub.log").read_text()[-3000:]
            try:
                if hub.api("GET", "/hub/api/").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, (folder / "hub.log").read_text()[-3000:]
            time.sleep(0.3)
        yield hub
    finally:
        process.terminate()  # the hub stops the users' servers (cleanup_servers) and the proxy
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)
