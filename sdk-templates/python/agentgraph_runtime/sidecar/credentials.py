"""``BrokeredTokenProvider``: the sidecar's token provider for ``AgentGraphClient``. Tokens come only from the
desktop host's broker (a Unix socket: the ``socket_path`` argument, else ``$AGENTGRAPH_BROKER_SOCKET``); the current
one is held in memory only (never written to disk, never logged or shown by ``repr``), and replaced before it
expires: when less than ``refresh_margin_ms`` (60 s) or ``refresh_fraction`` (20 %) of its life remains. Concurrent
callers share one broker request. ``refresh()`` (the client calls it after UNAUTHENTICATED) always asks again."""
from __future__ import annotations

import asyncio
import os
from typing import Awaitable, Callable, Optional

from ..clock import Clock, system_clock
from ..logger import Logger, silent_logger
from .broker_protocol import BROKER_SOCKET_ENV, BrokerError, BrokerGrant, ask_broker

#: (socket_path, audience, scope, timeout_s) -> grant; tests inject a fake, production uses ``ask_broker``.
AskBroker = Callable[[str, Optional[str], Optional[str], float], Awaitable[BrokerGrant]]


class BrokeredTokenProvider:
    def __init__(
        self,
        socket_path: Optional[str] = None,
        *,
        audience: Optional[str] = None,
        scope: Optional[str] = "api:read api:write",
        clock: Optional[Clock] = None,
        refresh_margin_ms: float = 60_000,
        refresh_fraction: float = 0.2,
        timeout_ms: float = 5_000,
        logger: Optional[Logger] = None,
        ask: Optional[AskBroker] = None,
    ) -> None:
        path = socket_path or os.environ.get(BROKER_SOCKET_ENV)
        if not path:
            raise ValueError(
                f"BrokeredTokenProvider: no broker socket. Pass socket_path or set {BROKER_SOCKET_ENV} to the "
                "desktop host's broker socket."
            )
        if not 0 <= refresh_fraction < 1 or refresh_margin_ms < 0:
            raise ValueError("BrokeredTokenProvider: refresh_fraction must be in [0, 1) and refresh_margin_ms >= 0.")
        self.socket_path = path
        self._audience = audience
        self._scope = scope
        self._clock: Clock = clock or system_clock
        self._margin_ms = refresh_margin_ms
        self._fraction = refresh_fraction
        self._timeout_s = timeout_ms / 1000
        self._logger: Logger = logger or silent_logger
        self._ask: AskBroker = ask or ask_broker
        self._token: Optional[str] = None
        self._refresh_at = 0.0
        self._expires_at = 0.0
        self._pending: Optional["asyncio.Future[str]"] = None
        #: Broker requests made (tests and metrics; never the token).
        self.requests = 0

    def __repr__(self) -> str:
        state = "empty" if self._token is None else f"token until {self._expires_at:.0f}"
        return f"BrokeredTokenProvider(socket_path={self.socket_path!r}, {state})"

    @property
    def expires_at(self) -> Optional[float]:
        """When the held token expires (ms since the epoch), or None."""
        return None if self._token is None else self._expires_at

    async def get_token(self) -> str:
        """The held token while it is fresh; otherwise a new one from the broker."""
        if self._token is not None and self._clock.now() < self._refresh_at:
            return self._token
        return await self._fetch()

    async def refresh(self) -> str:
        """A new token from the broker (the held one was refused); callers arriving meanwhile share it."""
        self._token = None
        return await self._fetch()

    def clear(self) -> None:
        """Forgets the held token (e.g. on sign-out of the host)."""
        self._token = None

    async def _fetch(self) -> str:
        if self._pending is not None:
            return await asyncio.shield(self._pending)
        loop = asyncio.get_running_loop()
        pending: "asyncio.Future[str]" = loop.create_future()
        self._pending = pending
        try:
            token = await self._request()
        except BaseException as exc:
            pending.set_exception(exc)
            pending.exception()  # marks it retrieved when no one else waits
            raise
        else:
            pending.set_result(token)
            return token
        finally:
            self._pending = None

    async def _request(self) -> str:
        started = self._clock.now()
        self.requests += 1
        try:
            grant = await self._ask(self.socket_path, self._audience, self._scope, self._timeout_s)
        except BrokerError as err:
            self._token = None
            self._logger.log({"event": "broker-token", "outcome": "error", "code": err.code,
                              "latencyMs": self._clock.now() - started})
            raise
        life_ms = grant.expires_in * 1000
        # Measured from before the request: the token is never taken for fresher than it is.
        self._expires_at = started + life_ms
        self._refresh_at = self._expires_at - max(self._margin_ms, self._fraction * life_ms)
        self._token = grant.access_token
        self._logger.log({"event": "broker-token", "outcome": "issued", "expiresIn": grant.expires_in,
                          "latencyMs": self._clock.now() - started})
        return grant.access_token
