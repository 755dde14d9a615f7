"""Subscriptions over graphql-sse (distinct connections, over httpx streaming) that resume, deduplicate and verify
(port of the stream half of sdk-templates/typescript/src/subscriptions).

- POST ``{query, operationName, variables}`` to ``<base_url>/stream`` with ``Accept: text/event-stream``, the
  bearer token and the resume variable (``cursor_variable``) set to the last sequence handled.
- ``next`` events become events by ``select(data)``; an event whose ``seq_of(event)`` is not above the last one
  handled is dropped, so the iterator yields strictly increasing sequences, each once, across reconnects.
- A stream that breaks, ends, completes (``complete`` means a server restart unless ``complete_ends``) or stays
  silent for ``idle_timeout_ms`` is reopened after the runtime's decorrelated-jitter backoff (retry index =
  consecutive failures - 1); a server-requested wait replaces it up to ``max_retry_after_ms``. UNAUTHENTICATED
  refreshes the token once and reconnects at once; other refusals end the iteration with the typed error.
- ``verify(event)`` (e.g. the intent verifier): a raise does not stop the stream; the event is yielded as
  ``type="rejected"`` with the error, and counts as handled.
- Defaults are the client's (``client.subscriptions()`` or ``Subscriptions(client)``): its token provider (asked
  for a token on every connect and reconnect), its extra headers, its HTTP client (connection pool and transport),
  clock, logger, privacy policy and detectors. A keyword argument given here wins.
Not ported yet: the polling fallback of the TypeScript SDK (servers that do not stream).
"""
from __future__ import annotations

import asyncio
import json
import random as _random
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, Mapping, Optional

import httpx

from .backoff import DecorrelatedJitterBackoff
from .classify import HttpAnswer, error_from_answer, wants_token_refresh
from .client import AgentGraphClient, OperationSpec, TokenProvider, to_json
from .clock import Clock
from .errors import AgentGraphError, NetworkError, TimeoutError_
from .privacy import apply_privacy_gate
from .sse import SseEvent, SseParser

EVENT_STREAM = "text/event-stream"


@dataclass
class SubscriptionItem:
    type: str  # "event" | "rejected"
    seq: int
    event: Any
    verified: Any = None
    error: Optional[AgentGraphError] = None
    source: str = "stream"


class _Drop(Exception):
    """The stream broke, ended or idled: reconnect after a wait."""

    def __init__(self, error: AgentGraphError) -> None:
        super().__init__(str(error))
        self.error = error


class Subscriptions:
    def __init__(
        self,
        client: AgentGraphClient,
        *,
        stream_url: Optional[str] = None,
        transport: Optional[httpx.AsyncBaseTransport] = None,
        token_provider: Optional[TokenProvider] = None,
        clock: Optional[Clock] = None,
        random: Optional[Callable[[], float]] = None,
        idle_timeout_ms: float = 45_000,
        connect_timeout_ms: float = 10_000,
        complete_ends: bool = False,
        logger: Any = None,
    ) -> None:
        self._client = client
        self._url = stream_url or client.base_url.rstrip("/") + "/stream"
        # The client's HTTP client (its pool and transport) unless a transport is given; streams have no timeout.
        self._owns_http = transport is not None
        self._http = httpx.AsyncClient(transport=transport, timeout=None) if transport is not None else client._http  # noqa: SLF001
        self._headers = dict(client._headers)  # noqa: SLF001 - the client's extra headers (never logged)
        self._tokens = token_provider if token_provider is not None else client._tokens  # noqa: SLF001
        self._clock: Clock = clock or client._clock  # noqa: SLF001
        self._random = random or _random.random
        self._idle = idle_timeout_ms
        self._connect = connect_timeout_ms
        self._complete_ends = complete_ends
        self._logger = logger or client._logger  # noqa: SLF001 - the same metadata-only logger

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def subscribe(
        self,
        op: OperationSpec,
        variables: Mapping[str, Any],
        *,
        select: Callable[[Any], Any],
        seq_of: Callable[[Any], int],
        cursor_variable: str,
        after: Optional[int] = None,
        verify: Optional[Callable[[Any], Awaitable[Any]]] = None,
    ) -> AsyncIterator[SubscriptionItem]:
        settings = self._client.settings.retry
        gated = apply_privacy_gate(op.name, dict(variables), op.privacy, self._client._policy,  # noqa: SLF001
                                   self._client._detectors)  # noqa: SLF001
        last = after
        failures = 0
        refreshed = False
        token: Optional[str] = None
        backoff = DecorrelatedJitterBackoff(settings.base_delay_ms, settings.max_delay_ms, self._random)
        base = {"operation": op.name, "mode": "stream"}
        while True:
            if token is None and self._tokens is not None:  # a fresh token per connect (unless just refreshed)
                token = await self._tokens.get_token()
            body_vars = dict(gated.variables)
            if last is not None:
                body_vars[cursor_variable] = last
            headers = {**self._headers, "content-type": "application/json", "accept": EVENT_STREAM}
            if token is not None:
                headers["authorization"] = f"Bearer {token}"
            token = None
            body = to_json({"query": op.document, "operationName": op.name, "variables": body_vars})
            error: Optional[AgentGraphError] = None
            delivered = False
            try:
                async with self._http.stream("POST", self._url, content=body.encode(), headers=headers,
                                             timeout=None) as response:
                    ctype = response.headers.get("content-type", "").lower()
                    if response.status_code != 200 or not ctype.startswith(EVENT_STREAM):
                        text = (await response.aread()).decode("utf-8", errors="replace")
                        try:
                            parsed = json.loads(text) if text else None
                        except ValueError:
                            parsed = None
                        answer = HttpAnswer(response.status_code, {k.lower(): v for k, v in response.headers.items()},
                                            parsed)
                        raise _Refused(error_from_answer(self._client.errors, answer, self._clock.now()))
                    self._logger.log({**base, "event": "stream-open", "failures": failures})
                    parser = SseParser()
                    chunks = response.aiter_bytes()
                    while True:
                        try:
                            chunk = await asyncio.wait_for(chunks.__anext__(), self._idle / 1000)
                        except StopAsyncIteration:
                            raise _Drop(NetworkError("The stream ended; reconnecting resumes it.")) from None
                        except asyncio.TimeoutError:
                            raise _Drop(TimeoutError_(f"The stream was silent for {self._idle:g} ms.")) from None
                        for item in parser.feed(chunk):
                            if not isinstance(item, SseEvent):
                                continue
                            if item.event == "complete":
                                if self._complete_ends:
                                    self._logger.log({**base, "event": "end", "reason": "complete"})
                                    return
                                raise _Drop(NetworkError("The server completed the stream (restart); reconnecting."))
                            if item.event != "next":
                                continue
                            payload = json.loads(item.data)
                            if payload.get("errors"):
                                answer = HttpAnswer(200, {}, {"errors": payload["errors"]})
                                raise _Refused(error_from_answer(self._client.errors, answer, self._clock.now()))
                            event = select(payload.get("data"))
                            if event is None:
                                continue
                            seq = seq_of(event)
                            if last is not None and seq <= last:
                                continue
                            last = seq
                            delivered = True
                            failures = 0
                            refreshed = False  # progress: a later UNAUTHENTICATED may refresh again
                            if verify is None:
                                yield SubscriptionItem("event", seq, event)
                                continue
                            try:
                                verified = await verify(event)
                            except AgentGraphError as err:
                                self._logger.log({**base, "event": "rejected", "code": err.code})
                                yield SubscriptionItem("rejected", seq, event, error=err)
                            except Exception as err:  # noqa: BLE001 - any verifier failure is a rejection
                                wrapped = AgentGraphError("VERIFICATION_FAILED", type(err).__name__, False)
                                yield SubscriptionItem("rejected", seq, event, error=wrapped)
                            else:
                                yield SubscriptionItem("event", seq, event, verified=verified)
            except _Refused as refused:
                error = refused.error
                if wants_token_refresh(error):
                    if refreshed or self._tokens is None:
                        error.give_up_reason = "unauthenticated"
                        raise error from None
                    refreshed = True
                    self._logger.log({**base, "event": "token-refresh"})
                    token = await self._tokens.refresh()
                    continue
                if not error.retryable:
                    error.give_up_reason = "not-retryable"
                    raise error from None
            except _Drop as drop:
                error = drop.error
            except (httpx.TransportError, OSError) as exc:
                error = NetworkError(f"The stream request failed: {type(exc).__name__}")
            failures = 1 if delivered else failures + 1
            delay = backoff.next(failures - 1)
            if error is not None and error.retry_after_ms is not None:
                if error.retry_after_ms > settings.max_retry_after_ms:
                    error.give_up_reason = "retry-after-cap"
                    raise error
                delay = error.retry_after_ms
            self._logger.log({**base, "event": "reconnect-wait", "failures": failures, "delayMs": delay,
                              "code": error.code if error else None})
            await self._clock.sleep(delay)


class _Refused(Exception):
    def __init__(self, error: AgentGraphError) -> None:
        super().__init__(str(error))
        self.error = error


__all__ = ["Subscriptions", "SubscriptionItem", "Dict"]
