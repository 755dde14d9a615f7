"""The retry decision after a failed attempt, one pure function (port of retry.ts). In order:

1. UNAUTHENTICATED (or a bare 401): refresh once and resend at once, unless already refreshed or no token
   provider (``unauthenticated``), or the attempts are spent (``attempts``).
2. Not retryable (``not-retryable``); a keyless mutation (``not-idempotent``); maxAttempts sent (``attempts``).
3. Draw the jitter delay (one random number, retry index = waits so far); a server-requested wait replaces it
   exactly; above maxRetryAfterMs -> ``retry-after-cap``; ending after budgetMs -> ``budget``; else wait.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .backoff import DecorrelatedJitterBackoff
from .classify import wants_token_refresh
from .errors import AgentGraphError
from .settings import RetrySettings


@dataclass(frozen=True)
class RetryDecision:
    action: str  # "refresh" | "wait" | "give-up"
    delay_ms: float = 0.0
    reason: Optional[str] = None


@dataclass
class RetryState:
    attempts: int
    retries: int
    refreshed: bool
    can_refresh: bool
    may_retry: bool
    started_at: float


def decide_retry(
    error: AgentGraphError,
    state: RetryState,
    settings: RetrySettings,
    backoff: DecorrelatedJitterBackoff,
    now_ms: float,
) -> RetryDecision:
    def give_up(reason: str) -> RetryDecision:
        return RetryDecision("give-up", reason=reason)

    if wants_token_refresh(error):
        if state.refreshed or not state.can_refresh:
            return give_up("unauthenticated")
        if state.attempts >= settings.max_attempts:
            return give_up("attempts")
        return RetryDecision("refresh")
    if not error.retryable:
        return give_up("not-retryable")
    if not state.may_retry:
        return give_up("not-idempotent")
    if state.attempts >= settings.max_attempts:
        return give_up("attempts")
    delay = backoff.next(state.retries)
    if error.retry_after_ms is not None:
        if error.retry_after_ms > settings.max_retry_after_ms:
            return give_up("retry-after-cap")
        delay = error.retry_after_ms
    if now_ms - state.started_at + delay > settings.budget_ms:
        return give_up("budget")
    return RetryDecision("wait", delay_ms=delay)
