"""AgentGraphClient: the async core every generated ``AsyncAgentGraph`` method goes through (port of client.ts,
docs/architecture.md#sdks); ``sync_client.SyncAgentGraphClient`` is its blocking twin. Both share ``call.py``.

``execute(op, variables, ...)`` runs one logical call: idempotency key (made once, sent on every attempt) -> privacy
gate -> payload cap -> attempts over ``httpx.AsyncClient`` (injectable transport), driven by tenacity
``AsyncRetrying`` whose retry predicate is ``decide_retry`` (retry.py) and whose wait is the decorrelated-jitter
delay or the server's exact Retry-After; the token refresh resend neither waits nor draws a random number.

Cancellation is asyncio's: cancel the task awaiting a call (or leave ``asyncio.timeout``) and the request in flight
or the backoff wait stops at once, ``CancelledError`` propagates and nothing more is sent. A paginator stops when
its consumer stops (``break``, ``aclose()``, a cancelled task): no further page is requested.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Mapping, Optional, Protocol, Sequence, TypeVar

import httpx
from tenacity import AsyncRetrying, stop_never

from .call import ACCEPT, GRAPHQL_RESPONSE_JSON, ClientCore, ExecuteResult, OperationSpec, to_json
from .clock import Clock, system_clock
from .detectors import DETECTORS, Detector
from .logger import Logger
from .pagination import paginate
from .privacy import PrivacyPolicy
from .settings import CAPABILITIES_DOCUMENT

if TYPE_CHECKING:
    from .subscriptions import Subscriptions

T = TypeVar("T")


class TokenProvider(Protocol):
    async def get_token(self) -> str: ...

    async def refresh(self) -> str: ...


class AgentGraphClient(ClientCore):
    def __init__(
        self,
        base_url: str,
        error_table: Mapping[str, Any],
        *,
        transport: Optional[httpx.AsyncBaseTransport] = None,
        http_client: Optional[httpx.AsyncClient] = None,
        headers: Optional[Mapping[str, str]] = None,
        token_provider: Optional[TokenProvider] = None,
        clock: Optional[Clock] = None,
        random: Optional[Callable[[], float]] = None,
        new_key: Optional[Callable[[], str]] = None,
        timeout_ms: Optional[float] = None,
        retry: Optional[Mapping[str, Any]] = None,
        max_payload_bytes: Optional[float] = None,
        privacy_policy: Optional[PrivacyPolicy] = None,
        detectors: Sequence[Detector] = DETECTORS,
        logger: Optional[Logger] = None,
        capabilities: Optional[Mapping[str, Any]] = None,
        error_classes: Optional[Mapping[str, type]] = None,
    ) -> None:
        self._clock: Clock = clock or system_clock
        super().__init__(base_url, error_table, headers=headers, now=self._clock.now, random=random, new_key=new_key,
                         timeout_ms=timeout_ms, retry=retry, max_payload_bytes=max_payload_bytes,
                         privacy_policy=privacy_policy, detectors=detectors, logger=logger,
                         capabilities=capabilities, error_classes=error_classes)
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(transport=transport)
        self._tokens = token_provider

    async def refresh_capabilities(self) -> Mapping[str, Any]:
        op = OperationSpec("Capabilities", CAPABILITIES_DOCUMENT, "query", False, {})
        result = await self.execute(op, {})
        self.apply_capabilities(result.data["capabilities"])
        return result.data["capabilities"]

    def subscriptions(
        self,
        *,
        stream_url: Optional[str] = None,
        token_provider: Optional[TokenProvider] = None,
        transport: Optional[httpx.AsyncBaseTransport] = None,
        clock: Optional[Clock] = None,
        random: Optional[Callable[[], float]] = None,
        idle_timeout_ms: Optional[float] = None,
        connect_timeout_ms: Optional[float] = None,
        complete_ends: Optional[bool] = None,
        logger: Optional[Logger] = None,
    ) -> "Subscriptions":
        """The stream client for this client's subscriptions: the same endpoint (``<base_url>/stream``), token
        provider (asked on every connect and reconnect), headers, HTTP client, clock, logger and privacy gate.
        Keyword arguments override them; None keeps the client's (or the subscriber's default)."""
        from .subscriptions import Subscriptions

        given = {"stream_url": stream_url, "token_provider": token_provider, "transport": transport, "clock": clock,
                 "random": random, "idle_timeout_ms": idle_timeout_ms, "connect_timeout_ms": connect_timeout_ms,
                 "complete_ends": complete_ends, "logger": logger}
        return Subscriptions(self, **{k: v for k, v in given.items() if v is not None})

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> "AgentGraphClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def paginate(
        self,
        op: OperationSpec,
        variables: Mapping[str, Any],
        select: Callable[[Any], Mapping[str, Any]],
        item: Callable[[Any], T] = lambda node: node,
        *,
        timeout_ms: Optional[float] = None,
    ) -> AsyncIterator[T]:
        """Every node of a connection as ``item(node)``, page after page (``after`` from each page's endCursor)."""

        async def fetch_page(after: Optional[str]) -> Mapping[str, Any]:
            page_vars = dict(variables) if after is None else {**variables, "after": after}
            result = await self.execute(op, page_vars, timeout_ms=timeout_ms)
            return select(result.data)

        return paginate(fetch_page, item)

    async def execute(
        self,
        op: OperationSpec,
        variables: Optional[Mapping[str, Any]] = None,
        *,
        idempotency_key: Optional[str] = None,
        timeout_ms: Optional[float] = None,
    ) -> ExecuteResult:
        call = self._plan(op, variables, idempotency_key, timeout_ms, self._tokens is not None)

        async def sleep(_seconds: float) -> None:
            delay = call.take_delay()
            if delay is not None:
                await self._clock.sleep(delay)

        retrying = AsyncRetrying(stop=stop_never, wait=call.wait, retry=call.should_retry, sleep=sleep, reraise=True)
        async for attempt in retrying:
            with attempt:
                token: Optional[str] = None
                if call.refresh_pending:
                    call.refresh_pending = False
                    try:
                        token = await self._tokens.refresh()  # type: ignore[union-attr]
                    except Exception:
                        raise call.refresh_failed() from None
                elif self._tokens is not None:
                    token = await self._tokens.get_token()
                request = call.request(self._http, token)
                try:
                    response = await asyncio.wait_for(self._http.send(request), call.timeout_ms / 1000)
                except (asyncio.TimeoutError, httpx.TimeoutException):
                    raise call.timed_out() from None
                except (httpx.TransportError, OSError) as exc:
                    raise call.transport_failed(exc) from None
                return call.answered(response)
        raise AssertionError("unreachable: tenacity either returns or reraises")  # pragma: no cover


__all__ = ["ACCEPT", "GRAPHQL_RESPONSE_JSON", "AgentGraphClient", "ExecuteResult", "OperationSpec", "TokenProvider",
           "to_json"]
