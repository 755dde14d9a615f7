"""Cancellation is asyncio's (no AbortSignal in the API): cancelling the task of a call stops its request in flight
or its backoff wait; a paginator whose consumer stops or is cancelled requests no further page; the outbox's
``stop(abort=True)`` cancels running sends and puts their entries back with their keys."""
from __future__ import annotations

import asyncio
from contextlib import aclosing
from pathlib import Path
from typing import Any, List

import httpx
import pytest

from agentgraph_runtime import AgentGraphClient, OperationSpec
from agentgraph_runtime.outbox import Outbox, SqliteOutboxStore
from conformance.harness import ERROR_TABLE, ScriptedRandom

QUERY = OperationSpec("Rooms", "query Rooms($after: String) { rooms(after: $after) { edges { node { id } } "
                      "pageInfo { hasNextPage endCursor } } }", "query", False, {})


class HangingClock:
    """now() moves only when told; sleep() never returns by itself (a long backoff wait)."""

    def __init__(self) -> None:
        self.sleeping = asyncio.Event()

    def now(self) -> float:
        return 1_700_000_000_000.0

    async def sleep(self, ms: float) -> None:
        self.sleeping.set()
        await asyncio.get_running_loop().create_future()


def test_cancelling_a_call_stops_its_request_in_flight() -> None:
    sent: List[httpx.Request] = []

    async def run() -> None:
        started = asyncio.Event()

        async def handler(request: httpx.Request) -> httpx.Response:
            sent.append(request)
            started.set()
            await asyncio.get_running_loop().create_future()  # the server never answers
            raise AssertionError("unreachable")

        async with AgentGraphClient("https://api.test/graphql", ERROR_TABLE,
                                    transport=httpx.MockTransport(handler)) as client:
            call = asyncio.ensure_future(client.execute(QUERY, {}))
            await started.wait()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call

    asyncio.run(run())
    assert len(sent) == 1


def test_cancelling_a_call_during_its_backoff_wait_sends_nothing_more() -> None:
    sent: List[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(503, json={"errors": [{"message": "busy", "extensions": {"code": "SERVICE_UNAVAILABLE"}}]})

    async def run() -> None:
        clock = HangingClock()
        async with AgentGraphClient("https://api.test/graphql", ERROR_TABLE, transport=httpx.MockTransport(handler),
                                    clock=clock, random=ScriptedRandom([0.5], "cancel")) as client:
            call = asyncio.ensure_future(client.execute(QUERY, {}))
            await clock.sleeping.wait()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call

    asyncio.run(run())
    assert len(sent) == 1


def page(ids: List[str], end: str, more: bool) -> httpx.Response:
    edges = [{"node": {"id": i}} for i in ids]
    return httpx.Response(200, json={"data": {"rooms": {"edges": edges,
                                                        "pageInfo": {"hasNextPage": more, "endCursor": end}}}})


def test_a_paginator_requests_no_page_after_its_consumer_stops_or_is_cancelled() -> None:
    afters: List[Any] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        import json

        after = json.loads(request.content)["variables"].get("after")
        afters.append(after)
        if after is None:
            return page(["a", "b"], "c1", True)
        await asyncio.get_running_loop().create_future()  # page 2 never arrives
        raise AssertionError("unreachable")

    async def run() -> None:
        async with AgentGraphClient("https://api.test/graphql", ERROR_TABLE,
                                    transport=httpx.MockTransport(handler)) as client:
            # break after the first node: page 2 is never requested
            got: List[str] = []
            async with aclosing(client.paginate(QUERY, {}, lambda d: d["rooms"], lambda n: n["id"])) as rooms:
                async for room in rooms:
                    got.append(room)
                    break
            assert got == ["a"] and afters == [None]

            # cancelled while page 2 is in flight: CancelledError, nothing after it
            seen: List[str] = []

            async def consume() -> None:
                async for room in client.paginate(QUERY, {}, lambda d: d["rooms"], lambda n: n["id"]):
                    seen.append(room)

            task = asyncio.ensure_future(consume())
            while afters[-1] != "c1":
                await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert seen == ["a", "b"] and afters == [None, None, "c1"]

    asyncio.run(run())


def test_outbox_stop_with_abort_cancels_running_sends_and_requeues_them(tmp_path: Path) -> None:
    cancelled: List[str] = []

    async def run() -> None:
        started = asyncio.Event()

        async def send(entry: Any) -> Any:
            started.set()
            try:
                await asyncio.get_running_loop().create_future()
            except asyncio.CancelledError:
                cancelled.append(entry.idempotency_key)
                raise

        store = SqliteOutboxStore.open(str(tmp_path / "outbox.db"))
        outbox = await Outbox.open(store, send, new_key=iter(["key-1"]).__next__)
        await outbox.enqueue("room-a", "PostMessage", {"body": "hi"})
        outbox.start()
        await started.wait()
        await outbox.stop(abort=True)
        (entry,) = outbox.list()
        assert (entry.state, entry.idempotency_key, entry.attempts) == ("QUEUED", "key-1", 1)
        await outbox.close()

    asyncio.run(run())
    assert cancelled == ["key-1"]
