"""SyncAgentGraphClient: the blocking twin of ``AgentGraphClient`` for scripts and threads without an event loop
(as openai-python ships ``OpenAI`` beside ``AsyncOpenAI``). The same call (``call.py``: idempotency key, privacy
gate, payload cap, retry decisions, typed errors), run over ``httpx.Client`` by tenacity's ``Retrying``, waiting
with a ``SyncClock``'s blocking sleep. Its token provider answers synchronously. Subscriptions and the outbox are
async only (they hold streams and background sends): use ``AgentGraphClient`` for them.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Optional, Protocol, Sequence, TypeVar

import httpx
from tenacity import Retrying, stop_never

from .call import ClientCore, ExecuteResult, OperationSpec
from .clock import SyncClock, system_sync_clock
from .detectors import DETECTORS, Detector
from .logger import Logger
from .pagination import paginate_sync
from .privacy import PrivacyPolicy
from .settings import CAPABILITIES_DOCUMENT

T = TypeVar("T")


class SyncTokenProvider(Protocol):
    def get_token(self) -> str: ...

    def refresh(self) -> str: ...


class SyncAgentGraphClient(ClientCore):
    def __init__(
        self,
        base_url: str,
        error_table: Mapping[str, Any],
        *,
        transport: Optional[httpx.BaseTransport] = None,
        http_client: Optional[httpx.Client] = None,
        headers: Optional[Mapping[str, str]] = None,
        token_provider: Optional[SyncTokenProvider] = None,
        clock: Optional[SyncClock] = None,
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
        self._clock: SyncClock = clock or system_sync_clock
        super().__init__(base_url, error_table, headers=headers, now=self._clock.now, random=random, new_key=new_key,
                         timeout_ms=timeout_ms, retry=retry, max_payload_bytes=max_payload_bytes,
                         privacy_policy=privacy_policy, detectors=detectors, logger=logger,
                         capabilities=capabilities, error_classes=error_classes)
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(transport=transport)
        self._tokens = token_provider

    def refresh_capabilities(self) -> Mapping[str, Any]:
        op = OperationSpec("Capabilities", CAPABILITIES_DOCUMENT, "query", False, {})
        result = self.execute(op, {})
        self.apply_capabilities(result.data["capabilities"])
        return result.data["capabilities"]

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> "SyncAgentGraphClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def paginate(
        self,
        op: OperationSpec,
        variables: Mapping[str, Any],
        select: Callable[[Any], Mapping[str, Any]],
        item: Callable[[Any], T] = lambda node: node,
        *,
        timeout_ms: Optional[float] = None,
    ) -> Iterator[T]:
        """Every node of a connection as ``item(node)``, page after page (``after`` from each page's endCursor)."""

        def fetch_page(after: Optional[str]) -> Mapping[str, Any]:
            page_vars = dict(variables) if after is None else {**variables, "after": after}
            return select(self.execute(op, page_vars, timeout_ms=timeout_ms).data)

        return paginate_sync(fetch_page, item)

    def execute(
        self,
        op: OperationSpec,
        variables: Optional[Mapping[str, Any]] = None,
        *,
        idempotency_key: Optional[str] = None,
        timeout_ms: Optional[float] = None,
    ) -> ExecuteResult:
        call = self._plan(op, variables, idempotency_key, timeout_ms, self._tokens is not None)

        def sleep(_seconds: float) -> None:
            delay = call.take_delay()
            if delay is not None:
                self._clock.sleep(delay)

        retrying = Retrying(stop=stop_never, wait=call.wait, retry=call.should_retry, sleep=sleep, reraise=True)
        for attempt in retrying:
            with attempt:
                token: Optional[str] = None
                if call.refresh_pending:
                    call.refresh_pending = False
                    try:
                        token = self._tokens.refresh()  # type: ignore[union-attr]
                    except Exception:
                        raise call.refresh_failed() from None
                elif self._tokens is not None:
                    token = self._tokens.get_token()
                request = call.request(self._http, token)
                try:
                    response = self._http.send(request)
                except httpx.TimeoutException:
                    raise call.timed_out() from None
                except (httpx.TransportError, OSError) as exc:
                    raise call.transport_failed(exc) from None
                return call.answered(response)
        raise AssertionError("unreachable: tenacity either returns or reraises")  # pragma: no cover


__all__ = ["SyncAgentGraphClient", "SyncTokenProvider"]
