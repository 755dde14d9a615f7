"""Typed errors (port of sdk-templates/typescript/src/errors.ts).

``AgentGraphError`` is what every failed call raises; each code of schemas/errors.json gets a subclass
(``RATE_LIMITED`` -> ``RateLimitedError``); the client's own failures have fixed classes. A cancelled call raises asyncio's
``CancelledError`` (not an AgentGraphError: the caller stopped it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Type

GIVE_UP_REASONS = ("not-retryable", "not-idempotent", "unauthenticated", "attempts", "budget", "retry-after-cap")


class AgentGraphError(Exception):
    """A failed call. ``code`` is a table code or NETWORK_ERROR, TIMEOUT, PRIVACY_REFUSED, INVALID_RESPONSE,
    HTTP_ERROR, GRAPHQL_ERROR."""

    def __init__(
        self,
        code: str,
        message: str,
        retryable: bool,
        *,
        status: Optional[int] = None,
        retry_after_ms: Optional[float] = None,
        correlation_id: Optional[str] = None,
        path: Optional[Sequence[Any]] = None,
        errors: Optional[Sequence[Mapping[str, Any]]] = None,
        data: Any = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable
        self.status = status
        self.retry_after_ms = retry_after_ms
        self.correlation_id = correlation_id
        self.path = list(path) if path is not None else None
        self.errors: List[Mapping[str, Any]] = list(errors or [])
        self.data = data
        #: Requests sent for the logical call (set when the client gives up).
        self.attempts = 1
        #: Why the client stopped retrying (set when it gives up).
        self.give_up_reason: Optional[str] = None


class NetworkError(AgentGraphError):
    def __init__(self, message: str) -> None:
        super().__init__("NETWORK_ERROR", message, True)


class TimeoutError_(AgentGraphError):
    def __init__(self, message: str) -> None:
        super().__init__("TIMEOUT", message, True)


TimeoutError_.__name__ = "TimeoutError"
TimeoutError_.__qualname__ = "TimeoutError"
AgentGraphTimeoutError = TimeoutError_


class InvalidResponseError(AgentGraphError):
    pass


@dataclass(frozen=True)
class PrivacyRefusal:
    """One variable the privacy gate refused: the path and the rule, never the value."""

    path: str
    reason: str


class PrivacyError(AgentGraphError):
    def __init__(self, operation: str, refusals: Sequence[PrivacyRefusal]) -> None:
        listed = ", ".join(f"{r.path} ({r.reason})" for r in refusals)
        super().__init__(
            "PRIVACY_REFUSED",
            f"The privacy gate refused {operation}: {listed}. Nothing was sent. Remove these values, or allow their "
            "data class in the client's privacy policy if sending them is intended.",
            False,
        )
        self.refusals = list(refusals)


def error_class_name(code: str) -> str:
    """``RATE_LIMITED`` -> ``RateLimitedError``."""
    return "".join(p[0].upper() + p[1:] for p in code.lower().split("_") if p) + "Error"


@dataclass(frozen=True)
class ErrorTableEntry:
    code: str
    http: int
    retry: str
    description: str


class ErrorRegistry:
    """The error table as classes and lookups (generated code builds one from schemas/errors.json)."""

    def __init__(self, table: Mapping[str, Any], classes: Optional[Mapping[str, Type[AgentGraphError]]] = None):
        self.entries: Dict[str, ErrorTableEntry] = {}
        self.classes: Dict[str, Type[AgentGraphError]] = dict(classes or {})
        by_status: Dict[int, List[str]] = {}
        for raw in table["codes"]:
            entry = ErrorTableEntry(raw["code"], int(raw["http"]), raw["retry"], raw.get("description", ""))
            self.entries[entry.code] = entry
            if entry.code not in self.classes:
                name = error_class_name(entry.code)
                self.classes[entry.code] = type(name, (AgentGraphError,), {"__module__": __name__})
            by_status.setdefault(entry.http, []).append(entry.code)
        # A status stands for a code only when exactly one code has it.
        self._by_status = {s: codes[0] for s, codes in by_status.items() if len(codes) == 1}

    def entry(self, code: Optional[str]) -> Optional[ErrorTableEntry]:
        return None if code is None else self.entries.get(code)

    def code_for_status(self, status: int) -> Optional[str]:
        return self._by_status.get(status)

    def class_for(self, code: str) -> Type[AgentGraphError]:
        return self.classes.get(code, AgentGraphError)

    def create(self, code: str, message: str, retryable: bool, **kwargs: Any) -> AgentGraphError:
        cls = self.class_for(code)
        err = AgentGraphError.__new__(cls)
        AgentGraphError.__init__(err, code, message, retryable, **kwargs)
        return err
