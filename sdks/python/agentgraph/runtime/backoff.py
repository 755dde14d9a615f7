"""Decorrelated-jitter backoff, exactly Polly v8's ``DecorrelatedJitterBackoffV2`` (port of backoff.ts).

    t = attempt + random();  next = 2^t * tanh(sqrt(4 t));  delay = (next - prev) * (1/1.4) * f

in .NET ticks (f = baseDelayMs * 10 000), truncated to a whole tick, capped at maxDelayMs. Milliseconds out.
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Tuple

P_FACTOR = 4.0
RP_SCALING_FACTOR = 1 / 1.4
TICKS_PER_MS = 10_000
MAX_TIMESPAN_TICKS = float(9_223_372_036_854_775_807) - 1000


def decorrelated_jitter_backoff_v2(
    attempt: int, base_delay_ms: float, prev: float, random: Callable[[], float]
) -> Tuple[float, float]:
    """One step of the formula: (delay in ms, next state)."""
    if base_delay_ms == 0:
        return 0.0, prev
    target_ticks = base_delay_ms * TICKS_PER_MS
    t = attempt + random()
    try:
        nxt = math.pow(2, t) * math.tanh(math.sqrt(P_FACTOR * t))
    except OverflowError:
        nxt = math.inf
    if not math.isfinite(nxt):
        return MAX_TIMESPAN_TICKS / TICKS_PER_MS, nxt
    ticks = math.trunc(min((nxt - prev) * RP_SCALING_FACTOR * target_ticks, MAX_TIMESPAN_TICKS))
    return ticks / TICKS_PER_MS, nxt


class DecorrelatedJitterBackoff:
    """The series of one logical call: ``next(attempt)`` draws one random number per retry."""

    def __init__(self, base_delay_ms: float, max_delay_ms: Optional[float], random: Callable[[], float]) -> None:
        self._base = base_delay_ms
        self._max = max_delay_ms
        self._random = random
        self._prev = 0.0

    def next(self, attempt: int) -> float:
        delay, self._prev = decorrelated_jitter_backoff_v2(attempt, self._base, self._prev, self._random)
        if self._max is not None and delay > self._max:
            return self._max
        return delay
