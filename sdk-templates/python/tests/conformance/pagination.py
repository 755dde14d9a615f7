"""Executor of `pagination` vectors (port of ts/pagination.ts): iterate a connection, optionally aborting. Python
aborts the asyncio way: the iterating task is cancelled (before it starts, after `abortAfterNodes` nodes while the
consumer awaits its own work, or by the transport while a page request is in flight) and the vector's ABORTED error
is the CancelledError that ends it; the iterator is closed and no further page is requested."""
from __future__ import annotations

import asyncio
import json
from contextlib import aclosing
from typing import Any, Dict, List, Optional

from .harness import FakeClock, Harness, ScriptedRandom, describe, error_problems, fail, json_equal, \
    operation_of, sleeps_problems


def select(data: Any, path: str) -> Any:
    value = data
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


async def run(vector: Dict[str, Any], file: str, clock: FakeClock, random: ScriptedRandom) -> None:
    h = Harness(vector.get("config"), vector["exchanges"], clock, random)
    problems: List[str] = []
    nodes: List[Any] = []
    expect = vector["expect"]
    abort_after = vector.get("abortAfterNodes")
    task: Optional[asyncio.Task] = None

    def abort() -> None:
        assert task is not None
        task.cancel()

    h.transport.abort_caller = abort

    async def consume() -> None:
        iterator = h.client.paginate(
            operation_of(vector["operation"]),
            vector.get("variables", {}),
            lambda data: select(data, vector["connectionPath"]),
        )
        async with aclosing(iterator):
            async for node in iterator:
                nodes.append(node)
                if len(nodes) == abort_after:
                    abort()
                    await asyncio.sleep(0)  # the consumer's own work between nodes: the cancellation lands here

    task = asyncio.ensure_future(consume())
    if abort_after == 0:
        abort()
    try:
        await task
        if "error" in expect:
            problems.append(f"expected error {expect['error']['code']}, but iteration completed")
    except (Exception, asyncio.CancelledError) as err:  # noqa: BLE001
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
