"""Managed settings: what an administrator sets and locks in ``jupyter_agent_managed.json``.

On a shared host (JupyterHub, a lab server, a managed laptop) an admin puts the file in one of
Jupyter's *system* config folders. Each setting it names is set, and locked: the user may make it
stricter — ``%config``, their own config files, ``%agent_tools``, the tools panel, ``%agent
model``, ``--budget`` — never looser; an attempt is refused in one line naming the file.

Which folders count. ``jupyter_core.paths.jupyter_config_path()`` lists the user's own folder
(``JUPYTER_CONFIG_DIR``, ``~/.jupyter``) and ``JUPYTER_CONFIG_PATH`` first; both are the user's to
set (a kernel's environment is theirs), so a lock read from them could be escaped by unsetting a
variable. Only the folders no environment variable of the user can take away are read: the Python
environment's ``{sys.prefix}/etc/jupyter`` and the system's (``/usr/local/etc/jupyter``,
``/etc/jupyter`` always, plus what ``jupyter_core`` lists, which ``JUPYTER_PLATFORM_DIRS`` moves;
``%PROGRAMDATA%\\jupyter`` on Windows), and of those only the ones outside the user's home (taken
from the password database, not ``$HOME``): a folder in the home is the user's, not an admin's.
Files from several folders all apply; the strictest value wins, so a folder a variable adds can
only add locks.

Strictness, per setting: a tool's ``enabled`` false over true; its policy ``deny`` over ``ask``
over ``allow`` (``deny`` always wins, whoever set it); ``providers``, ``models``, ``web_allow``
and ``mcp_servers`` are lists of what may be used (the user's choice must be in them); the spend
caps are maxima; ``shell_network``, ``allow_private_network`` and ``serve`` false over true.

A file that is not JSON, or holds a value of the wrong kind, is a one-line problem at load, and
every setting it names (a top-level key, a tool name under ``tools``) is locked to its strictest
value; a file that cannot be read at all locks everything.

What this is not: a sandbox against the user. The kernel runs as the user, who can run any Python
there; the locks bind the agent's own ways of changing settings. Hard limits belong to the host
(an API proxy with spend limits, a network policy, the spawner).

Kept free of IPython: the magics ask it (``check``, ``clamp``); the registry and the policy gate
take its two questions as plain functions (``tool_off``, ``policy_ceiling``).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ...approvals import POLICIES, Policy
from ...errors import ManagedSettingError

if TYPE_CHECKING:
    from ...agent.toolbox import Toolbox

FILE_NAME = "jupyter_agent_managed.json"

#: Policies from loosest to strictest.
_STRICTNESS: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
_BOOL_SETTINGS = ("shell_network", "allow_private_network", "serve")
_LIST_SETTINGS = ("providers", "models", "web_allow", "mcp_servers")
_CAP_SETTINGS = ("budget", "session_budget")
SETTINGS = ("tools", *_LIST_SETTINGS, *_CAP_SETTINGS, *_BOOL_SETTINGS)
#: The ``AgentMagics`` settings a managed file can lock.
MANAGED_TRAITS = (
    "provider",
    "model",
    "budget",
    "session_budget",
    "web_allow",
    "shell_network",
    "allow_private_network",
    "mcp_servers",
)

T = TypeVar("T")


@dataclass(frozen=True)
class Locked(Generic[T]):
    """A managed value and the file that set it."""

    value: T
    source: str


@dataclass(frozen=True)
class ToolRule:
    """What a file says of the tools whose names match ``pattern`` (``fnmatch``: ``*__*`` is
    every MCP server's tools)."""

    pattern: str
    source: str
    enabled: bool | None = None
    policy: Policy | None = None


def system_config_dirs() -> list[Path]:
    """The folders read for the managed file: the environment's and the system's config folders
    outside the user's home (see the module docstring for why not the user's)."""
    from jupyter_core import paths

    home = _real_home()
    # jupyter_core's system folders move with JUPYTER_PLATFORM_DIRS (and XDG_CONFIG_DIRS), which
    # the user sets: the classic ones are read as well, so a variable can add folders (more
    # locks), never drop one.
    classic = [] if os.name == "nt" else ["/usr/local/etc/jupyter", "/etc/jupyter"]
    folders: list[Path] = []
    for entry in [*paths.ENV_CONFIG_PATH, *paths.SYSTEM_CONFIG_PATH, *classic]:
        folder = Path(entry)
        if home is not None and folder.resolve().is_relative_to(home):
            continue
        if folder not in folders:
            folders.append(folder)
    return folders


def _real_home() -> Path | None:
    """The user's home from the password database (``$HOME`` is the user's to change)."""
    try:
        import pwd

        home = Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()
        return None if home == Path(home.anchor) else home  # a home of "/" holds everything
    except (ImportError, KeyError, OSError):
        return Path.home().resolve() if sys.platform == "win32" else None


@dataclass
class ManagedSettings:
    """The managed settings of this host: every file's locks, merged to the strictest."""

    tools: list[ToolRule] = field(default_factory=list)
    providers: Locked[tuple[str, ...]] | None = None
    models: Locked[tuple[str, ...]] | None = None
    web_allow: Locked[tuple[str, ...]] | None = None
    mcp_servers: Locked[tuple[str, ...]] | None = None
    budget: Locked[float] | None = None
    session_budget: Locked[float] | None = None
    shell_network: Locked[bool] | None = None
    allow_private_network: Locked[bool] | None = None
    serve: Locked[bool] | None = None
    #: The files read, and one line for each that could not be used as it is.
    files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: Tools already given what a file sets (``install``): set once, then the user's.
    _seen: set[str] = field(default_factory=set, repr=False)

    # -- loading -----------------------------------------------------------------------------

    @classmethod
    def load(cls, folders: Iterable[str | os.PathLike[str]] | None = None) -> ManagedSettings:
        """The managed file of each of ``folders`` (default: ``system_config_dirs()``)."""
        managed = cls()
        for folder in system_config_dirs() if folders is None else [Path(f) for f in folders]:
            path = Path(folder) / FILE_NAME
            try:
                if not stat.S_ISREG(path.stat().st_mode):
                    continue
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError:  # cannot even look (a folder only root may enter): fail closed
                pass
            managed.read(path)
        return managed

    @property
    def active(self) -> bool:
        return bool(self.files)

    def read(self, path: Path) -> None:
        """Merge the file ``path``: its locks join those read before (the strictest wins)."""
        source = str(path)
        self.files.append(source)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:  # what it names is unknown: everything
            self._problem(source, f"cannot be read ({exc.__class__.__name__})")
            self._lock_named(["*", *SETTINGS], source)
            return
        try:
            data = json.loads(text)
        except ValueError as exc:
            self._problem(source, f"is not JSON ({exc})")
            self._lock_named(_quoted_words(text), source)
            return
        if not isinstance(data, dict):
            self._problem(source, "is not a JSON object")
            self._lock_named(_quoted_words(text), source)
            return
        for key, value in data.items():
            try:
                self._take(key, value, source)
            except ValueError as exc:
                self._problem(source, f"{key}: {exc}")
                self._lock_named([key, *_quoted_words(json.dumps(value))], source, only=key)

    def _problem(self, source: str, text: str) -> None:
        self.problems.append(
            f"jupyter-agent: the managed settings file {source} {text}; "
            "what it names is locked to the strictest value"
        )

    def _lock_named(self, words: Iterable[str], source: str, only: str | None = None) -> None:
        """Lock each setting in ``words`` (and, under ``tools``, each other word as a tool
        name) to its strictest value: what a file that cannot be read as meant says."""
        words = list(words)
        keys = [only] if only is not None else [word for word in words if word in SETTINGS]
        for key in keys:
            if key == "tools":
                names = [w for w in words if w not in SETTINGS and w not in ("enabled", "policy")]
                for name in names:
                    self.tools.append(ToolRule(name, source, enabled=False, policy="deny"))
            elif key in _BOOL_SETTINGS:
                self._merge(key, Locked(False, source))
            elif key in _CAP_SETTINGS:
                self._merge(key, Locked(0.0, source))
            elif key in _LIST_SETTINGS:
                self._merge(key, Locked((), source))

    def _take(self, key: str, value: Any, source: str) -> None:
        if key == "tools":
            if not isinstance(value, dict):
                raise ValueError("must be an object of tool names")
            for name, rule in value.items():
                self.tools.append(_tool_rule(str(name), rule, source))
        elif key in _BOOL_SETTINGS:
            if not isinstance(value, bool):
                raise ValueError("must be true or false")
            self._merge(key, Locked(value, source))
        elif key in _CAP_SETTINGS:
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError("must be a number of dollars, 0 or more")
            if not math.isfinite(value):
                raise ValueError("must be a finite number of dollars")
            self._merge(key, Locked(float(value), source))
        elif key in _LIST_SETTINGS:
            if value is False:
                value = []
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError("must be a list of strings")
            self._merge(key, Locked(tuple(v.strip() for v in value if v.strip()), source))
        else:
            raise ValueError(f"is not a managed setting (settings: {', '.join(SETTINGS)})")

    def _merge(self, key: str, new: Locked[Any]) -> None:
        """Keep the stricter of ``new`` and what an earlier file set."""
        old: Locked[Any] | None = getattr(self, key)
        if old is not None:
            if key in _BOOL_SETTINGS:
                new = old if not old.value else new
            elif key in _CAP_SETTINGS:
                new = old if old.value <= new.value else new
            else:  # lists: what both allow; the later file is named
                both = tuple(v for v in new.value if v in old.value)
                new = Locked(both, f"{old.source} and {new.source}")
        setattr(self, key, new)

    # -- the tools ---------------------------------------------------------------------------

    def _rules(self, name: str) -> list[ToolRule]:
        return [rule for rule in self.tools if fnmatchcase(name, rule.pattern)]

    def tool_off(self, name: str) -> str | None:
        """The file that turns tool ``name`` off (the user cannot turn it on), or None."""
        for rule in self._rules(name):
            if rule.enabled is False or rule.policy == "deny":
                return rule.source
        return None

    def tool_on(self, name: str) -> bool:
        """Whether a file turns tool ``name`` on (it starts enabled; the user may turn it off)."""
        rules = self._rules(name)
        return self.tool_off(name) is None and any(rule.enabled for rule in rules)

    def policy_ceiling(self, name: str) -> tuple[Policy, str] | None:
        """The loosest policy tool ``name`` may have, and the file that says so, or None."""
        ceiling: tuple[Policy, str] | None = None
        for rule in self._rules(name):
            if rule.policy is not None and (
                ceiling is None or _STRICTNESS[rule.policy] > _STRICTNESS[ceiling[0]]
            ):
                ceiling = (rule.policy, rule.source)
        return ceiling

    def check_policy(self, name: str, policy: str) -> str | None:
        """The one-line refusal of setting tool ``name``'s policy to ``policy``, or None."""
        ceiling = self.policy_ceiling(name)
        if ceiling is not None and _STRICTNESS.get(policy, 0) < _STRICTNESS[ceiling[0]]:
            return _refusal(f"tool {name}'s policy", ceiling[1], f"at most {ceiling[0]!r}")
        return None

    def check_enable(self, name: str) -> str | None:
        source = self.tool_off(name)
        return None if source is None else _refusal(f"tool {name}", source, "kept off")

    # -- the other settings ------------------------------------------------------------------

    def check(self, setting: str, value: Any) -> str | None:
        """The one-line refusal of ``AgentMagics.<setting> = value`` (looser than managed), or
        None when the value is allowed (as strict as managed, or stricter)."""
        what = f"AgentMagics.{setting}"
        if setting in ("shell_network", "allow_private_network"):
            lock: Locked[Any] | None = getattr(self, setting)
            if lock is not None and value and not lock.value:
                return _refusal(what, lock.source, "kept False")
        elif setting in _CAP_SETTINGS:
            lock = getattr(self, setting)
            if lock is not None and (value is None or value > lock.value):
                return _refusal(what, lock.source, f"at most ${lock.value:g}")
        elif setting == "provider" and self.providers is not None:
            if not self.provider_allowed(value):
                allowed = ", ".join(self.providers.value) or "none"
                return _refusal(what, self.providers.source, f"one of: {allowed}")
        elif setting == "model" and self.models is not None:
            # "" is the provider's default, which the environment can name: not allowed.
            if not value or not self.model_allowed(value):
                allowed = ", ".join(self.models.value) or "none"
                return _refusal(what, self.models.source, f"one of: {allowed}")
        elif setting == "web_allow" and self.web_allow is not None:
            outside = [host for host in value if not self.host_allowed(str(host))]
            if outside:
                allowed = ", ".join(self.web_allow.value) or "none"
                return _refusal(f"{what} ({outside[0]})", self.web_allow.source, f"in: {allowed}")
        elif setting == "mcp_servers" and self.mcp_servers is not None:
            for name, config in dict(value).items():
                refused = self.check_mcp_server(str(name), config)
                if refused is not None:
                    return refused
        return None

    def clamp(self, setting: str, value: Any) -> Any:
        """``value``, or the managed value in its place when ``value`` is looser (a user's
        config file read at load: the extension still loads, on the managed value)."""
        if self.check(setting, value) is None:
            return value
        if setting in ("shell_network", "allow_private_network"):
            return False
        if setting in _CAP_SETTINGS:
            return getattr(self, setting).value
        if setting == "provider":
            assert self.providers is not None
            return next(iter(self.providers.value), "offline")
        if setting == "model":
            assert self.models is not None
            return next((m for m in self.models.value if not _is_pattern(m)), "")
        if setting == "web_allow":
            return [host for host in value if self.host_allowed(str(host))]
        if setting == "mcp_servers":
            return {k: v for k, v in dict(value).items() if self.check_mcp_server(k, v) is None}
        return value

    def provider_allowed(self, kind: str) -> bool:
        """``auto`` counts as ``anthropic`` (without a key it is the offline demo, which reaches
        no network)."""
        if self.providers is None:
            return True
        allowed = self.providers.value
        if kind == "auto":  # what select_default_provider will follow
            kind = os.environ.get("JUPYTER_AGENT_PROVIDER", "").strip().lower() or "anthropic"
        return kind in allowed

    def model_allowed(self, model: str) -> bool:
        if self.models is None:
            return True
        return any(fnmatchcase(model, pattern) for pattern in self.models.value)

    def host_allowed(self, host: str) -> bool:
        """Whether ``host`` (or a ``*.domain`` pattern of the user's) is within the managed
        ``web_allow``."""
        if self.web_allow is None:
            return True
        host = host.strip().strip("[]").rstrip(".").lower()
        for allowed in self.web_allow.value:
            allowed = allowed.lower()
            if host == allowed:
                return True
            if allowed.startswith("*.") and (host.endswith(allowed[1:]) or host == allowed[2:]):
                return True
        return False

    def host_refusal(self, host: str) -> str | None:
        """The line refusing ``host`` to web_fetch (outside the managed ``web_allow``)."""
        if self.host_allowed(host):
            return None
        assert self.web_allow is not None
        allowed = ", ".join(self.web_allow.value) or "none"
        return (
            f"{host} is not among the hosts an administrator lets web_fetch reach "
            f"({allowed}; managed by {self.web_allow.source}); do not retry it"
        )

    def check_turn(
        self,
        settings: Mapping[str, Any],
        provider: str | None,
        model: str | None,
        budget: float | None,
    ) -> None:
        """``ManagedSettingError`` (one line) when a cell's ``--provider``, ``--model`` or
        ``--budget``, or the settings it runs on, are looser than managed (``auto`` follows the
        environment, which may have changed since they were set)."""
        cell = (("provider", provider), ("model", model), ("budget", budget))
        for setting, value in cell:
            if value is not None:
                self.refuse(self._cell_check(setting, value))
        for setting, value in cell[:2]:
            if value is None and settings.get("provider") != "offline":
                self.refuse(self.check(setting, settings.get(setting)))

    def _cell_check(self, setting: str, value: Any) -> str | None:
        refused = self.check(setting, value)
        return None if refused is None else refused.replace("AgentMagics.", "--", 1)

    def check_serve(self) -> str | None:
        if self.serve is not None and not self.serve.value:
            return _refusal("%agent serve", self.serve.source, "off")
        return None

    def check_mcp_server(self, name: str, config: Any) -> str | None:
        """The refusal of MCP server ``name`` (an ``mcp_servers`` entry, or a config object
        with ``url``/``command``/``args``), or None when ``mcp_servers`` allows it: its URL, or
        its command line joined by spaces, matches one of the managed patterns."""
        if self.mcp_servers is None:
            return None
        for line in _server_lines(config):
            if any(fnmatchcase(line, pattern) for pattern in self.mcp_servers.value):
                return None
        allowed = ", ".join(self.mcp_servers.value) or "none"
        return _refusal(f"MCP server {name!r}", self.mcp_servers.source, f"one of: {allowed}")

    @staticmethod
    def refuse(refusal: str | None) -> None:
        """Raise ``ManagedSettingError(refusal)`` when there is one."""
        if refusal is not None:
            raise ManagedSettingError(refusal)

    def initial(self, current: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
        """The settings a managed file *sets* (at load): for each one the user's config does
        not name, the managed value in place of the default (``shell_network``: true turns it
        on; a spend cap is the default cap; ``web_allow`` the hosts reached without asking)."""
        named = config.get("AgentMagics", {}) if "AgentMagics" in config else {}
        values: dict[str, Any] = {}
        for setting in ("shell_network", "allow_private_network", *_CAP_SETTINGS):
            lock = getattr(self, setting)
            if lock is not None and setting not in named:
                values[setting] = lock.value
        if self.web_allow is not None and "web_allow" not in named:
            values["web_allow"] = list(self.web_allow.value)
        for setting in ("provider", "model"):
            value = current.get(setting)
            if value is not None and self.check(setting, value) is not None:
                values[setting] = self.clamp(setting, value)
        if self.models is not None and not current.get("model") and "model" not in named:
            literal = next((m for m in self.models.value if not _is_pattern(m)), None)
            if literal is not None:
                values["model"] = literal
        return values

    def install(self, toolbox: Toolbox) -> None:
        """Lock ``toolbox``'s tools: the registry keeps locked tools off, the gate judges no
        policy looser than managed; tools seen for the first time get what a file sets."""
        toolbox.registry.lock = self.check_enable
        toolbox.gate.ceiling = self.policy_ceiling
        for name in toolbox.registry.get_tool_names():
            if name in self._seen:
                continue
            self._seen.add(name)
            if self.tool_on(name):
                toolbox.registry.set_enabled(name, True)
            ceiling = self.policy_ceiling(name)
            if ceiling is not None and name not in toolbox.gate.policies:
                toolbox.gate.set_policy(name, ceiling[0])

    # -- %agent config -----------------------------------------------------------------------

    def describe(self) -> list[tuple[str, str]]:
        """Rows for ``%agent config``: each managed setting, its value and its file."""
        rows: list[tuple[str, str]] = []
        for rule in self.tools:
            said = [] if rule.enabled is None else [f"enabled={rule.enabled}"]
            said += [] if rule.policy is None else [f"policy={rule.policy}"]
            rows.append((f"managed: tools.{rule.pattern}", f"{', '.join(said)}  ({rule.source})"))
        for key in SETTINGS[1:]:
            lock = getattr(self, key)
            if lock is not None:
                value = list(lock.value) if isinstance(lock.value, tuple) else lock.value
                rows.append((f"managed: {key}", f"{value!r}  ({lock.source})"))
        return rows


def _tool_rule(name: str, rule: Any, source: str) -> ToolRule:
    if not isinstance(rule, dict):
        raise ValueError(f"tools.{name} must be an object with 'enabled' and/or 'policy'")
    unknown = set(rule) - {"enabled", "policy"}
    if unknown:
        raise ValueError(f"tools.{name}: unknown key {sorted(unknown)[0]!r}")
    enabled = rule.get("enabled")
    policy = rule.get("policy")
    if enabled is not None and not isinstance(enabled, bool):
        raise ValueError(f"tools.{name}.enabled must be true or false")
    if policy is not None and policy not in POLICIES:
        raise ValueError(f"tools.{name}.policy must be one of {', '.join(POLICIES)}")
    return ToolRule(name, source, enabled=enabled, policy=policy)


def _refusal(what: str, source: str, allowed: str) -> str:
    return (
        f"{what} is managed by {source} ({allowed}): it can be made stricter, not looser; "
        "nothing was changed"
    )


def _is_pattern(text: str) -> bool:
    return any(char in text for char in "*?[")


def _quoted_words(text: str) -> list[str]:
    """The strings quoted in ``text`` (a file that is not JSON still names what it meant)."""
    return re.findall(r'"([^"\\]{1,200})"', text)


def _server_lines(config: Any) -> list[str]:
    """How an MCP server's entry is matched: its URL, and its command line."""

    def get(key: str) -> Any:
        return config.get(key) if isinstance(config, Mapping) else getattr(config, key, None)

    lines = []
    url = get("url")
    if isinstance(url, str) and url:
        lines.append(url)
    command = get("command")
    if isinstance(command, str) and command:  # an mcpServers entry: command and args
        lines.append(" ".join([command, *(str(a) for a in get("args") or [])]))
    elif isinstance(command, list | tuple) and command:  # a parsed config: the command line
        lines.append(" ".join(str(part) for part in command))
    return lines
