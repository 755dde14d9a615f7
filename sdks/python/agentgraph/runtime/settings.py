"""Client settings: defaults, the caller's options, and the server's ``capabilities`` (port of settings.ts)."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional

DEFAULT_MAX_PAYLOAD_BYTES = 5 * 1024 * 1024
DEFAULT_TIMEOUT_MS = 10_000.0
CAPABILITIES_DOCUMENT = (
    "query Capabilities { capabilities { limits { maxPayloadBytes } "
    "client { retryMaxAttempts retryBudgetMs pollIntervalMs telemetryEnabled } } }"
)


@dataclass(frozen=True)
class RetrySettings:
    max_attempts: int = 5
    budget_ms: float = 30_000
    base_delay_ms: float = 200
    max_delay_ms: float = 30_000
    max_retry_after_ms: float = 60_000


@dataclass(frozen=True)
class EffectiveSettings:
    retry: RetrySettings
    max_payload_bytes: float = DEFAULT_MAX_PAYLOAD_BYTES
    timeout_ms: float = DEFAULT_TIMEOUT_MS
    poll_interval_ms: Optional[float] = None
    telemetry_enabled: Optional[bool] = None


def _check(name: str, value: Any, minimum: float) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value < minimum:
        raise ValueError(f"AgentGraphClient: {name} must be a number >= {minimum}, got {value!r}.")
    return value


_RETRY_KEYS = {
    "maxAttempts": "max_attempts",
    "budgetMs": "budget_ms",
    "baseDelayMs": "base_delay_ms",
    "maxDelayMs": "max_delay_ms",
    "maxRetryAfterMs": "max_retry_after_ms",
}


def retry_settings(values: Optional[Mapping[str, Any]] = None) -> RetrySettings:
    """RetrySettings from snake_case or camelCase keys (the vectors use camelCase)."""
    merged = RetrySettings()
    for key, value in (values or {}).items():
        merged = replace(merged, **{_RETRY_KEYS.get(key, key): value})
    return RetrySettings(
        max_attempts=int(math.floor(_check("retry.max_attempts", merged.max_attempts, 1))),
        budget_ms=_check("retry.budget_ms", merged.budget_ms, 0),
        base_delay_ms=math.floor(_check("retry.base_delay_ms", merged.base_delay_ms, 0)),
        max_delay_ms=_check("retry.max_delay_ms", merged.max_delay_ms, 0),
        max_retry_after_ms=_check("retry.max_retry_after_ms", merged.max_retry_after_ms, 0),
    )


def resolve_settings(
    retry: Optional[Mapping[str, Any]], max_payload_bytes: Optional[float], timeout_ms: Optional[float]
) -> EffectiveSettings:
    return EffectiveSettings(
        retry=retry_settings(retry),
        max_payload_bytes=_check(
            "max_payload_bytes", DEFAULT_MAX_PAYLOAD_BYTES if max_payload_bytes is None else max_payload_bytes, 1
        ),
        timeout_ms=_check("timeout_ms", DEFAULT_TIMEOUT_MS if timeout_ms is None else timeout_ms, 1),
    )


def _positive(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def apply_capabilities(settings: EffectiveSettings, capabilities: Mapping[str, Any]) -> EffectiveSettings:
    """Settings after the server's capabilities (absent or invalid values are left alone): the server's word wins."""
    retry = settings.retry
    out = settings
    client = capabilities.get("client") or {}
    limits = capabilities.get("limits") or {}
    if _positive(client.get("retryMaxAttempts")):
        retry = replace(retry, max_attempts=int(math.floor(client["retryMaxAttempts"])))
    if _positive(client.get("retryBudgetMs")):
        retry = replace(retry, budget_ms=client["retryBudgetMs"])
    if _positive(client.get("pollIntervalMs")):
        out = replace(out, poll_interval_ms=client["pollIntervalMs"])
    if isinstance(client.get("telemetryEnabled"), bool):
        out = replace(out, telemetry_enabled=client["telemetryEnabled"])
    if _positive(limits.get("maxPayloadBytes")):
        out = replace(out, max_payload_bytes=limits["maxPayloadBytes"])
    return replace(out, retry=retry)
