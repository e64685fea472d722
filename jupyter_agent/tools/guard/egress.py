"""Which hosts ``web_fetch`` may reach without asking: the user's list and this session's yeses.

Network egress is the third leg of the "lethal trifecta": a model that read a secret and a
hostile page can send one to the other in a URL (or a hostname: DNS alone carries it). So
``web_fetch`` asks the user before its first request to each host of a session — allow once,
allow the host for this session, deny — and the question is put *before* any DNS lookup: the gate
asks the tool (``needs_approval``), which only parses the URL. ``AgentMagics.web_allow`` lists
hosts that need no asking; an approval "for this session" adds the host here. A redirect to a
host not allowed is refused (the model can fetch that URL itself, and the user is asked).

One ``EgressHosts`` belongs to a session and survives the tools being rebuilt. The yeses "for
this session" are kept per asker (``approvals.asker``): the session's own agent, or one outside
client of ``%agent serve`` — a host one of them was allowed is not allowed to the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ...approvals import asker


def normal_host(host: str) -> str:
    """``Example.COM.`` → ``example.com``; ``[::1]`` → ``::1``."""
    return host.strip().strip("[]").rstrip(".").lower()


class EgressHosts:
    """Hosts reachable without asking: configured (``web_allow``) and allowed this session."""

    def __init__(self, configured: Iterable[str] = ()) -> None:
        self._configured: frozenset[str] = frozenset()
        self.configure(configured)
        #: asker (None: the session's agent) -> the hosts allowed it this session
        self._session: dict[str | None, set[str]] = {}
        #: The one line refusing a host beyond what an administrator allows at all (managed
        #: ``web_allow``), or None; such a host is never asked about, never reached.
        self.limit: Callable[[str], str | None] | None = None

    def beyond_limit(self, host: str) -> str | None:
        return self.limit(normal_host(host)) if self.limit is not None else None

    def configure(self, hosts: Iterable[str]) -> None:
        """Replace the user's list (``AgentMagics.web_allow``); ``*.example.com`` covers the
        subdomains of example.com."""
        self._configured = frozenset(normal_host(h) for h in hosts if str(h).strip())

    def allow_for_session(self, host: str) -> None:
        if self.beyond_limit(host) is None:
            self._session.setdefault(asker.get(), set()).add(normal_host(host))

    def allows(self, host: str) -> bool:
        host = normal_host(host)
        if self.beyond_limit(host) is not None:
            return False
        if host in self._session.get(asker.get(), ()) or host in self._configured:
            return True
        return any(
            pattern.startswith("*.") and (host.endswith(pattern[1:]) or host == pattern[2:])
            for pattern in self._configured
        )

    @property
    def configured(self) -> frozenset[str]:
        return self._configured
