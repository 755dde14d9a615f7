"""Retry classification (port of classify.ts): an HTTP answer with errors -> a typed AgentGraphError.

- a table code: its ``retry`` column decides (backoff, after retry; never, refresh-once do not);
- no known code: the status decides (408, 429, 5xx retry);
- several errors: the first gives code and class; retryable only if all are;
- no GraphQL body: the one table code with that status, else HTTP_ERROR; the status decides.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional

from .errors import AgentGraphError, ErrorRegistry, InvalidResponseError
from .retry_after import parse_retry_after


def status_is_retryable(status: int) -> bool:
    return status == 408 or status == 429 or 500 <= status <= 599


def error_is_retryable(registry: ErrorRegistry, code: Optional[str], status: int) -> bool:
    entry = registry.entry(code)
    if entry is not None:
        return entry.retry in ("backoff", "after")
    return status_is_retryable(status)


def wants_token_refresh(error: AgentGraphError) -> bool:
    return error.code == "UNAUTHENTICATED" or (error.status == 401 and len(error.errors) == 0)


@dataclass
class HttpAnswer:
    status: int
    headers: Mapping[str, str]
    """Lower-case header names."""
    body: Any
    """The parsed JSON body, or None when it was not JSON."""
    bytes: int = 0


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def requested_delay_ms(errors: List[Dict[str, Any]], headers: Mapping[str, str], now_ms: float) -> Optional[float]:
    ext = (errors[0].get("extensions") or {}) if errors else {}
    value = ext.get("retryAfterMs")
    if _number(value) and value >= 0:
        return value
    return parse_retry_after(headers.get("retry-after"), now_ms)


def graphql_errors_of(body: Any) -> Optional[List[Dict[str, Any]]]:
    if not isinstance(body, dict):
        return None
    errors = body.get("errors")
    if not isinstance(errors, list) or len(errors) == 0:
        return None
    out: List[Dict[str, Any]] = []
    for e in errors:
        entry = e if isinstance(e, dict) else {}
        shape: Dict[str, Any] = {"message": entry["message"] if isinstance(entry.get("message"), str) else "Unknown error"}
        if isinstance(entry.get("path"), list):
            shape["path"] = entry["path"]
        if isinstance(entry.get("extensions"), dict):
            shape["extensions"] = entry["extensions"]
        out.append(shape)
    return out


def _code_of(e: Mapping[str, Any]) -> Optional[str]:
    code = (e.get("extensions") or {}).get("code")
    return code if isinstance(code, str) else None


def error_from_answer(registry: ErrorRegistry, answer: HttpAnswer, now_ms: float) -> AgentGraphError:
    status, headers, body = answer.status, answer.headers, answer.body
    errors = graphql_errors_of(body)
    if errors:
        first = errors[0]
        code = _code_of(first) or (
            (registry.code_for_status(status) or "HTTP_ERROR") if status >= 400 else "GRAPHQL_ERROR"
        )
        retryable = all(error_is_retryable(registry, _code_of(e) or code, status) for e in errors)
        corr = (first.get("extensions") or {}).get("correlationId")
        data = body.get("data") if isinstance(body, dict) else None
        return registry.create(
            code,
            first["message"],
            retryable,
            status=status,
            errors=errors,
            retry_after_ms=requested_delay_ms(errors, headers, now_ms),
            correlation_id=corr if isinstance(corr, str) else headers.get("x-correlation-id"),
            path=first.get("path"),
            data=data,
        )
    correlation_id = headers.get("x-correlation-id")
    retry_after_ms = parse_retry_after(headers.get("retry-after"), now_ms)
    if 200 <= status < 300:
        return InvalidResponseError(
            "INVALID_RESPONSE",
            f'The server answered {status} without a GraphQL response (no "data" or "errors"). Check the base URL.',
            False,
            status=status,
            retry_after_ms=retry_after_ms,
            correlation_id=correlation_id,
        )
    retryable = status_is_retryable(status)
    code = registry.code_for_status(status) or "HTTP_ERROR"
    return registry.create(
        code,
        f"The server answered HTTP {status} without GraphQL errors{'; retrying may help' if retryable else ''}.",
        retryable,
        status=status,
        retry_after_ms=retry_after_ms,
        correlation_id=correlation_id,
    )
