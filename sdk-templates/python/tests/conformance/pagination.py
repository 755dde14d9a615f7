"""Executor of `pagination` vectors (port of ts/pagination.ts): iterate a connection, optionally aborting."""
from __future__ import annotations

import json
from typing import Any, Dict, List

from agentgraph_runtime import AbortController

from .harness import FakeClock, Harness, ScriptedRandom, describe, error_problems, fail, json_equal, \
    operation_of, sleeps_problems


def select(data: Any, path: str) -> Any:
    value = data
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


async def run(vector: Dict[str, Any], file: str, clock: FakeClock, random: ScriptedRandom) -> None:
    h = Harness(vector.get("config"), vector["exchanges"], clock, random)
    controller = AbortController()
    h.transport.abort_caller = controller.abort
    problems: List[str] = []
    nodes: List[Any] = []
    expect = vector["expect"]
    abort_after = vector.get("abortAfterNodes")
    if abort_after == 0:
        controller.abort()
    try:
        iterator = h.client.paginate(
            operation_of(vector["operation"]),
            vector.get("variables", {}),
            lambda data: select(data, vector["connectionPath"]),
            signal=controller.signal,
        )
        async for node in iterator:
            nodes.append(node)
            if len(nodes) == abort_after:
                controller.abort()
        if "error" in expect:
            problems.append(f"expected error {expect['error']['code']}, but iteration completed")
    except Exception as err:  # noqa: BLE001
        if "error" in expect:
            problems += error_problems(expect["error"], err)
        else:
            problems.append(f"expected the iteration to complete, got {describe(err)}")
    finally:
        await h.client.aclose()
    if not json_equal(expect["nodes"], nodes):
        problems.append(f"nodes: expected {json.dumps(expect['nodes'])}, got {json.dumps(nodes)}")
    if "randomConsumed" in expect and expect["randomConsumed"] != random.consumed:
        problems.append(f"randomConsumed: expected {expect['randomConsumed']}, got {random.consumed}")
    problems += h.transport.final_problems() + h.problems + sleeps_problems(expect["sleeps"], clock.sleeps)
    fail(file, problems)
