"""Executor of `call` and `privacy` vectors (port of test/conformance/ts/call.ts): one logical execute() call."""
from __future__ import annotations

import json
from typing import Any, Dict, List

from .harness import (
    ELAPSED_TOLERANCE_MS,
    FakeClock,
    Harness,
    ScriptedRandom,
    describe,
    error_problems,
    fail,
    json_equal,
    operation_of,
    sleeps_problems,
)


async def run(vector: Dict[str, Any], file: str, clock: FakeClock, random: ScriptedRandom) -> None:
    start = clock.now()
    h = Harness(vector.get("config"), vector["exchanges"], clock, random)
    problems: List[str] = []
    outcome = vector["expect"]["outcome"]
    try:
        result = await h.client.execute(
            operation_of(vector["operation"]),
            vector.get("variables", {}),
            idempotency_key=(vector.get("callOptions") or {}).get("idempotencyKey"),
        )
    except Exception as err:  # noqa: BLE001 - every outcome is compared
        if "error" in outcome:
            problems += error_problems(outcome["error"], err)
        else:
            problems.append(f"expected success, got {describe(err)}")
    else:
        if "error" in outcome:
            problems.append(f"expected error {outcome['error']['code']}, but the call succeeded")
        else:
            if not json_equal(outcome["data"], result.data):
                problems.append(f"data: expected {json.dumps(outcome['data'])}, got {json.dumps(result.data)}")
            for name, got in (("replayed", result.replayed), ("attempts", result.attempts),
                              ("idempotencyKey", result.idempotency_key)):
                if name in outcome and outcome[name] != got:
                    problems.append(f"{name}: expected {outcome[name]}, got {got}")
    finally:
        await h.client.aclose()
    problems += h.transport.final_problems() + h.problems + sleeps_problems(vector["expect"]["sleeps"], clock.sleeps)
    expect = vector["expect"]
    for name, got in (("randomConsumed", random.consumed), ("keysMade", h.counters["keysMade"]),
                      ("tokenRefreshes", h.counters["tokenRefreshes"])):
        if name in expect and expect[name] != got:
            problems.append(f"{name}: expected {expect[name]}, got {got}")
    elapsed = clock.now() - start
    if "elapsedMs" in expect and abs(elapsed - expect["elapsedMs"]) > ELAPSED_TOLERANCE_MS:
        problems.append(f"elapsedMs: expected {expect['elapsedMs']}, got {elapsed}")
    fail(file, problems)
