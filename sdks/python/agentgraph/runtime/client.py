"""AgentGraphClient: the core every generated method goes through (port of client.ts, docs/architecture.md#sdks).

``execute(op, variables, ...)`` runs one logical call: idempotency key (made once, sent on every attempt) -> privacy
gate -> payload cap -> attempts over ``httpx.AsyncClient`` (injectable transport), driven by tenacity
``AsyncRetrying`` whose retry predicate is ``decide_retry`` (retry.py) and whose wait is the decorrelated-jitter
delay or the server's exact Retry-After; the token refresh resend neither waits nor draws a random number.
"""
from __future__ import annotations

import asyncio
import json
import random as _random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Dict, Mapping, Optional, Protocol, Sequence

import httpx
from tenacity import AsyncRetrying, RetryCallState, stop_never

from .backoff import DecorrelatedJitterBackoff
from .classify import HttpAnswer, error_from_answer, graphql_errors_of
from .clock import AbortSignal, Clock, system_clock
from .detectors import DETECTORS, Detector
from .errors import AbortError, AgentGraphError, ErrorRegistry, NetworkError, TimeoutError_
from .idempotency import IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_VARIABLE, random_key, resolve_idempotency_key
from .logger import Logger, silent_logger
from .pagination import paginate
from .privacy import DEFAULT_PRIVACY_POLICY, PrivacyPolicy, PrivacyRule, apply_privacy_gate
from .retry import RetryDecision, RetryState, decide_retry
from .settings import CAPABILITIES_DOCUMENT, EffectiveSettings, apply_capabilities, resolve_settings

if TYPE_CHECKING:
    from .subscriptions import Subscriptions

GRAPHQL_RESPONSE_JSON = "application/graphql-response+json"
ACCEPT = f"{GRAPHQL_RESPONSE_JSON}, application/json;q=0.9"


@dataclass(frozen=True)
class OperationSpec:
    """What generated code passes for each operation."""

    name: str
    document: str
    kind: str  # "query" | "mutation"
    idempotent: bool
    privacy: Mapping[str, PrivacyRule] = field(default_factory=dict)


class TokenProvider(Protocol):
    async def get_token(self) -> str: ...

    async def refresh(self) -> str: ...


@dataclass
class ExecuteResult:
    data: Any
    replayed: bool
    attempts: int
    extensions: Optional[Dict[str, Any]] = None
    idempotency_key: Optional[str] = None


def to_json(value: Any) -> str:
    """Compact JSON, byte-for-byte what JSON.stringify writes for JSON data."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class AgentGraphClient:
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
        if not isinstance(base_url, str) or not base_url:
            raise ValueError("AgentGraphClient: base_url is required (the GraphQL endpoint URL).")
        if not isinstance(error_table, Mapping) or not isinstance(error_table.get("codes"), list):
            raise ValueError("AgentGraphClient: error_table is required (schemas/errors.json, from generated code).")
        self.base_url = base_url
        self.errors = ErrorRegistry(error_table, error_classes)  # type: ignore[arg-type]
        self._settings = resolve_settings(retry, max_payload_bytes, timeout_ms)
        if capabilities:
            self._settings = apply_capabilities(self._settings, capabilities)
        self._owns_http = http_client is None
        self._http = http_client or httpx.AsyncClient(transport=transport)
        self._headers = dict(headers or {})
        self._tokens = token_provider
        self._clock: Clock = clock or system_clock
        self._random = random or _random.random
        self._new_key = new_key or random_key
        self._policy = privacy_policy or DEFAULT_PRIVACY_POLICY
        self._detectors = detectors
        self._logger: Logger = logger or silent_logger

    @property
    def settings(self) -> EffectiveSettings:
        return self._settings

    def apply_capabilities(self, capabilities: Mapping[str, Any]) -> None:
        self._settings = apply_capabilities(self._settings, capabilities)

    async def refresh_capabilities(self) -> Mapping[str, Any]:
        op = OperationSpec("Capabilities", CAPABILITIES_DOCUMENT, "query", False, {})
        result = await self.execute(op, {})
        self.apply_capabilities(result.data["capabilities"])
        return result.data["capabilities"]

    def subscriptions(self, **options: Any) -> "Subscriptions":
        """The stream client for this client's subscriptions: the same endpoint (``<base_url>/stream``), token
        provider (asked on every connect and reconnect), headers, HTTP client, clock, logger and privacy gate.
        Keyword arguments (``stream_url``, ``token_provider``, ``idle_timeout_ms``, ...) override them."""
        from .subscriptions import Subscriptions

        return Subscriptions(self, **options)

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
        *,
        signal: Optional[AbortSignal] = None,
        timeout_ms: Optional[float] = None,
    ) -> AsyncIterator[Any]:
        """Every node of a connection, page after page (``after`` is set from each page's endCursor)."""

        async def fetch_page(after: Optional[str], sig: Optional[AbortSignal]) -> Mapping[str, Any]:
            page_vars = dict(variables) if after is None else {**variables, "after": after}
            result = await self.execute(op, page_vars, signal=sig, timeout_ms=timeout_ms)
            return select(result.data)

        return paginate(fetch_page, signal)

    async def execute(
        self,
        op: OperationSpec,
        variables: Optional[Mapping[str, Any]] = None,
        *,
        signal: Optional[AbortSignal] = None,
        idempotency_key: Optional[str] = None,
        timeout_ms: Optional[float] = None,
    ) -> ExecuteResult:
        if signal is not None:
            signal.throw_if_aborted()
        settings = self._settings
        started_at = self._clock.now()
        vars_: Dict[str, Any] = dict(variables or {})

        # 1. Idempotency key, once per logical call.
        key: Optional[str] = None
        if op.kind == "mutation" and op.idempotent:
            key = resolve_idempotency_key(idempotency_key, vars_.get(IDEMPOTENCY_KEY_VARIABLE), self._new_key)
            vars_[IDEMPOTENCY_KEY_VARIABLE] = key
        may_retry = op.kind == "query" or key is not None
        base = {"method": "POST", "operation": op.name, "kind": op.kind}
        state = {"bytes": 0, "status": None}

        def give_up(error: AgentGraphError, attempts: int, reason: str) -> AgentGraphError:
            error.attempts = attempts
            error.give_up_reason = reason
            entry = {**base, "event": "call", "attempts": attempts, "latencyMs": self._clock.now() - started_at}
            entry.update(bytes=state["bytes"], code=error.code, giveUpReason=reason)
            if state["status"] is not None:
                entry["status"] = state["status"]
            self._logger.log(entry)
            return error

        # 2. Privacy gate, before serialization.
        try:
            gated = apply_privacy_gate(op.name, vars_, op.privacy, self._policy, self._detectors)
        except AgentGraphError as err:
            raise give_up(err, 0, "not-retryable") from None
        if gated.dropped:
            self._logger.log({**base, "event": "privacy-drop", "attempts": 0, "dropped": gated.dropped})

        # 3. Serialize and check the payload cap.
        body = to_json({"query": op.document, "operationName": op.name, "variables": gated.variables})
        payload = body.encode("utf-8")
        state["bytes"] = len(payload)
        if len(payload) > settings.max_payload_bytes:
            err = self.errors.create(
                "PAYLOAD_TOO_LARGE",
                f"The request for {op.name} is {len(payload)} bytes, above the {settings.max_payload_bytes:g}-byte "
                "payload limit. Nothing was sent; send less data per call.",
                False,
            )
            raise give_up(err, 0, "not-retryable")

        # 4. Attempts, driven by tenacity.
        backoff = DecorrelatedJitterBackoff(settings.retry.base_delay_ms, settings.retry.max_delay_ms, self._random)
        loop = {"attempts": 0, "retries": 0, "refreshed": False, "refresh_pending": False, "delay": None}
        decisions: Dict[int, RetryDecision] = {}

        def should_retry(rs: RetryCallState) -> bool:
            outcome = rs.outcome
            if outcome is None or not outcome.failed:
                return False
            error = outcome.exception()
            if not isinstance(error, AgentGraphError) or error.give_up_reason is not None:
                return False
            decision = decide_retry(
                error,
                RetryState(
                    attempts=loop["attempts"],
                    retries=loop["retries"],
                    refreshed=loop["refreshed"],
                    can_refresh=self._tokens is not None,
                    may_retry=may_retry,
                    started_at=started_at,
                ),
                settings.retry,
                backoff,
                self._clock.now(),
            )
            decisions[rs.attempt_number] = decision
            if decision.action == "give-up":
                give_up(error, loop["attempts"], decision.reason or "not-retryable")
                return False
            if decision.action == "refresh":
                loop["refreshed"] = True
                loop["refresh_pending"] = True
                loop["delay"] = None
                return True
            loop["retries"] += 1
            loop["delay"] = decision.delay_ms
            self._logger.log(
                {**base, "event": "retry", "attempts": loop["attempts"], "code": error.code, "delayMs": decision.delay_ms}
            )
            return True

        def wait(rs: RetryCallState) -> float:
            delay = loop["delay"]
            return 0.0 if delay is None else delay / 1000

        async def sleep(_seconds: float) -> None:
            # Tenacity hands seconds; the clock gets the exact milliseconds decided (no float round trip). A token
            # refresh resend does not wait at all.
            delay = loop["delay"]
            loop["delay"] = None
            if delay is None:
                return
            await self._clock.sleep(delay, signal)

        retrying = AsyncRetrying(stop=stop_never, wait=wait, retry=should_retry, sleep=sleep, reraise=True)
        last_error: Dict[str, Optional[AgentGraphError]] = {"error": None}
        async for attempt in retrying:
            with attempt:
                token: Optional[str] = None
                if loop["refresh_pending"]:
                    loop["refresh_pending"] = False
                    try:
                        token = await self._tokens.refresh()  # type: ignore[union-attr]
                    except Exception:
                        previous = last_error["error"]
                        assert previous is not None
                        raise give_up(previous, loop["attempts"], "unauthenticated") from None
                elif self._tokens is not None:
                    token = await self._tokens.get_token()
                if signal is not None:
                    signal.throw_if_aborted()
                loop["attempts"] += 1
                try:
                    result = await self._attempt(op, body, token, key, signal, timeout_ms or settings.timeout_ms, state)
                except AgentGraphError as err:
                    last_error["error"] = err
                    raise
                self._logger.log(
                    {**base, "event": "call", "attempts": loop["attempts"], "bytes": state["bytes"],
                     "status": state["status"], "latencyMs": self._clock.now() - started_at}
                )
                result.attempts = loop["attempts"]
                result.idempotency_key = key
                return result
        raise AssertionError("unreachable: tenacity either returns or reraises")  # pragma: no cover

    async def _send_abortable(
        self, request: httpx.Request, timeout_ms: float, signal: Optional[AbortSignal]
    ) -> httpx.Response:
        """One exchange within the per-attempt timeout; the caller's signal cancels it while in flight."""
        task = asyncio.ensure_future(asyncio.wait_for(self._http.send(request), timeout_ms / 1000))
        if signal is None:
            return await task
        signal.add_listener(task.cancel)
        try:
            return await task
        finally:
            signal.remove_listener(task.cancel)

    async def _attempt(
        self,
        op: OperationSpec,
        body: str,
        token: Optional[str],
        key: Optional[str],
        signal: Optional[AbortSignal],
        timeout_ms: float,
        state: Dict[str, Any],
    ) -> ExecuteResult:
        headers = {**self._headers, "content-type": "application/json", "accept": ACCEPT}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        if key is not None:
            headers[IDEMPOTENCY_KEY_HEADER] = key
        state["status"] = None
        request = self._http.build_request(
            "POST", self.base_url, content=body.encode("utf-8"), headers=headers,
            extensions={"agentgraph_signal": signal},
        )
        try:
            response = await self._send_abortable(request, timeout_ms, signal)
            text = response.content.decode("utf-8", errors="replace")
        except asyncio.CancelledError:
            # Our own cancellation on abort (the caller's cancellation is re-raised unchanged).
            if signal is not None and signal.aborted:
                raise AbortError(signal.reason) from None
            raise
        except asyncio.TimeoutError:
            if signal is not None:
                signal.throw_if_aborted()
            raise TimeoutError_(
                f"No complete answer within {timeout_ms:g} ms. The request may or may not have been processed; a "
                "retry with the same idempotency key is safe."
            ) from None
        except httpx.TimeoutException:
            if signal is not None:
                signal.throw_if_aborted()
            raise TimeoutError_(
                f"No complete answer within {timeout_ms:g} ms. The request may or may not have been processed; a "
                "retry with the same idempotency key is safe."
            ) from None
        except (httpx.TransportError, OSError) as exc:
            if signal is not None:
                signal.throw_if_aborted()
            raise NetworkError(f"The request failed before an HTTP answer arrived: {type(exc).__name__}") from None
        except AbortError:
            raise
        if signal is not None:
            signal.throw_if_aborted()
        try:
            parsed: Any = json.loads(text) if text else None
        except ValueError:
            parsed = None
        state["status"] = response.status_code
        answer = HttpAnswer(response.status_code, {k.lower(): v for k, v in response.headers.items()}, parsed)
        if 200 <= response.status_code <= 299 and isinstance(parsed, dict) and not graphql_errors_of(parsed):
            data = parsed.get("data")
            if data is not None:
                ext = parsed.get("extensions") if isinstance(parsed.get("extensions"), dict) else None
                return ExecuteResult(
                    data=data,
                    replayed=bool(ext and ext.get("idempotentReplay") is True),
                    attempts=0,
                    extensions=ext,
                )
        raise error_from_answer(self.errors, answer, self._clock.now())
