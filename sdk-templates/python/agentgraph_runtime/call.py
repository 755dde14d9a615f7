"""One logical call, the part the async and the sync client share (as Stainless' ``BaseClient`` holds what
``AsyncAPIClient`` and ``SyncAPIClient`` have in common): ``ClientCore`` holds the options; ``CallPlan`` prepares a
call (idempotency key made once -> privacy gate -> payload cap -> the body), keeps its retry bookkeeping for
tenacity (``should_retry``, ``wait``, the exact delay to sleep), builds each attempt's request and turns each answer
or transport failure into the result or a typed error. The clients only run the loop: ``await`` or block.
"""
from __future__ import annotations

import json
import random as _random
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Union

import httpx
from tenacity import RetryCallState

from .backoff import DecorrelatedJitterBackoff
from .classify import HttpAnswer, error_from_answer, graphql_errors_of
from .detectors import DETECTORS, Detector
from .errors import AgentGraphError, ErrorRegistry, NetworkError, TimeoutError_
from .idempotency import IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_VARIABLE, random_key, resolve_idempotency_key
from .logger import Logger, silent_logger
from .privacy import DEFAULT_PRIVACY_POLICY, PrivacyPolicy, PrivacyRule, apply_privacy_gate
from .retry import RetryDecision, RetryState, decide_retry
from .settings import EffectiveSettings, apply_capabilities, resolve_settings

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


class ClientCore:
    """The options both clients take and what they derive from them (settings, error classes, privacy gate)."""

    def __init__(
        self,
        base_url: str,
        error_table: Mapping[str, Any],
        *,
        headers: Optional[Mapping[str, str]],
        now: Callable[[], float],
        random: Optional[Callable[[], float]],
        new_key: Optional[Callable[[], str]],
        timeout_ms: Optional[float],
        retry: Optional[Mapping[str, Any]],
        max_payload_bytes: Optional[float],
        privacy_policy: Optional[PrivacyPolicy],
        detectors: Sequence[Detector],
        logger: Optional[Logger],
        capabilities: Optional[Mapping[str, Any]],
        error_classes: Optional[Mapping[str, type]],
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
        self._headers = dict(headers or {})
        self._now = now
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

    def _plan(self, op: OperationSpec, variables: Optional[Mapping[str, Any]], idempotency_key: Optional[str],
              timeout_ms: Optional[float], can_refresh: bool) -> "CallPlan":
        return CallPlan(self, op, variables, idempotency_key, timeout_ms, can_refresh)


class CallPlan:
    """A prepared call and its retry state. Raises the gate's or the payload cap's error before anything is sent."""

    def __init__(self, core: ClientCore, op: OperationSpec, variables: Optional[Mapping[str, Any]],
                 idempotency_key: Optional[str], timeout_ms: Optional[float], can_refresh: bool) -> None:
        self._core = core
        self.op = op
        self.settings = core.settings
        self.timeout_ms = timeout_ms or self.settings.timeout_ms
        self.started_at = core._now()
        self._can_refresh = can_refresh
        self._base = {"method": "POST", "operation": op.name, "kind": op.kind}
        self.bytes = 0
        self.status: Optional[int] = None
        self.attempts = 0
        self.retries = 0
        self.refreshed = False
        self.refresh_pending = False
        self.delay: Optional[float] = None
        self.last_error: Optional[AgentGraphError] = None
        self.decisions: Dict[int, RetryDecision] = {}
        self._backoff = DecorrelatedJitterBackoff(self.settings.retry.base_delay_ms, self.settings.retry.max_delay_ms,
                                                  core._random)
        vars_: Dict[str, Any] = dict(variables or {})

        # 1. Idempotency key, once per logical call.
        self.key: Optional[str] = None
        if op.kind == "mutation" and op.idempotent:
            self.key = resolve_idempotency_key(idempotency_key, vars_.get(IDEMPOTENCY_KEY_VARIABLE), core._new_key)
            vars_[IDEMPOTENCY_KEY_VARIABLE] = self.key
        self.may_retry = op.kind == "query" or self.key is not None

        # 2. Privacy gate, before serialization.
        try:
            gated = apply_privacy_gate(op.name, vars_, op.privacy, core._policy, core._detectors)
        except AgentGraphError as err:
            raise self.give_up(err, "not-retryable") from None
        if gated.dropped:
            core._logger.log({**self._base, "event": "privacy-drop", "attempts": 0, "dropped": gated.dropped})

        # 3. Serialize and check the payload cap.
        self.body = to_json({"query": op.document, "operationName": op.name, "variables": gated.variables})
        payload = self.body.encode("utf-8")
        self.bytes = len(payload)
        if len(payload) > self.settings.max_payload_bytes:
            err = core.errors.create(
                "PAYLOAD_TOO_LARGE",
                f"The request for {op.name} is {len(payload)} bytes, above the {self.settings.max_payload_bytes:g}-byte "
                "payload limit. Nothing was sent; send less data per call.",
                False,
            )
            raise self.give_up(err, "not-retryable")

    def give_up(self, error: AgentGraphError, reason: str) -> AgentGraphError:
        error.attempts = self.attempts
        error.give_up_reason = reason
        entry = {**self._base, "event": "call", "attempts": self.attempts,
                 "latencyMs": self._core._now() - self.started_at}
        entry.update(bytes=self.bytes, code=error.code, giveUpReason=reason)
        if self.status is not None:
            entry["status"] = self.status
        self._core._logger.log(entry)
        return error

    # tenacity's retry predicate, wait and the delay its sleep takes ------------------------------------------

    def should_retry(self, rs: RetryCallState) -> bool:
        outcome = rs.outcome
        if outcome is None or not outcome.failed:
            return False
        error = outcome.exception()
        if not isinstance(error, AgentGraphError) or error.give_up_reason is not None:
            return False  # cancellation, a bug, or an error already given up on: raised as it is
        decision = decide_retry(
            error,
            RetryState(attempts=self.attempts, retries=self.retries, refreshed=self.refreshed,
                       can_refresh=self._can_refresh, may_retry=self.may_retry, started_at=self.started_at),
            self.settings.retry,
            self._backoff,
            self._core._now(),
        )
        self.decisions[rs.attempt_number] = decision
        if decision.action == "give-up":
            self.give_up(error, decision.reason or "not-retryable")
            return False
        if decision.action == "refresh":
            self.refreshed = True
            self.refresh_pending = True
            self.delay = None
            return True
        self.retries += 1
        self.delay = decision.delay_ms
        self._core._logger.log({**self._base, "event": "retry", "attempts": self.attempts, "code": error.code,
                                "delayMs": decision.delay_ms})
        return True

    def wait(self, rs: RetryCallState) -> float:
        return 0.0 if self.delay is None else self.delay / 1000

    def take_delay(self) -> Optional[float]:
        """The exact milliseconds decided (tenacity hands seconds; no float round trip); None: resend at once."""
        delay, self.delay = self.delay, None
        return delay

    def refresh_failed(self) -> AgentGraphError:
        assert self.last_error is not None
        return self.give_up(self.last_error, "unauthenticated")

    # one attempt --------------------------------------------------------------------------------------------

    def request(self, http: Union[httpx.Client, httpx.AsyncClient], token: Optional[str]) -> httpx.Request:
        self.attempts += 1
        self.status = None
        headers = {**self._core._headers, "content-type": "application/json", "accept": ACCEPT}
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        if self.key is not None:
            headers[IDEMPOTENCY_KEY_HEADER] = self.key
        return http.build_request("POST", self._core.base_url, content=self.body.encode("utf-8"), headers=headers,
                                  timeout=self.timeout_ms / 1000)

    def timed_out(self) -> AgentGraphError:
        return self._failed(TimeoutError_(
            f"No complete answer within {self.timeout_ms:g} ms. The request may or may not have been processed; a "
            "retry with the same idempotency key is safe."
        ))

    def transport_failed(self, exc: BaseException) -> AgentGraphError:
        return self._failed(NetworkError(f"The request failed before an HTTP answer arrived: {type(exc).__name__}"))

    def answered(self, response: httpx.Response) -> ExecuteResult:
        """The result of a 2xx answer with data and no errors; anything else raises its typed error."""
        text = response.content.decode("utf-8", errors="replace")
        try:
            parsed: Any = json.loads(text) if text else None
        except ValueError:
            parsed = None
        self.status = response.status_code
        if 200 <= response.status_code <= 299 and isinstance(parsed, dict) and not graphql_errors_of(parsed):
            data = parsed.get("data")
            if data is not None:
                ext = parsed.get("extensions") if isinstance(parsed.get("extensions"), dict) else None
                self._core._logger.log({**self._base, "event": "call", "attempts": self.attempts, "bytes": self.bytes,
                                        "status": self.status, "latencyMs": self._core._now() - self.started_at})
                return ExecuteResult(data=data, replayed=bool(ext and ext.get("idempotentReplay") is True),
                                     attempts=self.attempts, extensions=ext, idempotency_key=self.key)
        answer = HttpAnswer(response.status_code, {k.lower(): v for k, v in response.headers.items()}, parsed)
        raise self._failed(error_from_answer(self._core.errors, answer, self._core._now()))

    def _failed(self, error: AgentGraphError) -> AgentGraphError:
        self.last_error = error
        return error
