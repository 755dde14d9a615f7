"""A client process for the exactly-once test (test/e2e/python-exactly-once.test.ts): the generated Python SDK with
its durable outbox (sqlite3) posts room messages. ``enqueue`` writes every message into the outbox first (one
idempotency key each, persisted), then sends; ``resume`` only sends what the outbox still holds (after the first
process was killed). Prints one JSON line per SENT entry ({"sent": n}) and {"done": true, ...} at the end.

    /usr/bin/python3 outbox_poster.py <baseUrl> <outbox file> <rooms csv> <per room> <enqueue|resume>  (token on stdin)
"""
from __future__ import annotations

import asyncio
import json
import sys

from agentgraph import BY_NAME, AsyncAgentGraph
from agentgraph_runtime.outbox import Outbox, SqliteOutboxStore, client_send
from agentgraph_runtime.privacy import PrivacyPolicy


class StaticToken:
    def __init__(self, token: str) -> None:
        self._token = token

    async def get_token(self) -> str:
        return self._token

    async def refresh(self) -> str:
        return self._token


async def main(base_url: str, file: str, rooms: list, per_room: int, mode: str, token: str) -> int:
    sdk = AsyncAgentGraph(
        base_url,
        token_provider=StaticToken(token),
        # Message bodies are PERSONAL (schemas/coordination.graphql); this app's policy allows them to be sent.
        privacy_policy=PrivacyPolicy(("PUBLIC", "INTERNAL", "PERSONAL")),
        retry={"base_delay_ms": 20, "max_delay_ms": 500, "max_attempts": 5, "budget_ms": 30_000},
        timeout_ms=10_000,
    )
    sent = 0

    def on_change(entry) -> None:  # type: ignore[no-untyped-def]
        nonlocal sent
        if entry.state == "SENT":
            sent += 1
            print(json.dumps({"sent": sent}), flush=True)

    outbox = await Outbox.open(
        SqliteOutboxStore.open(file),
        client_send(sdk.client, BY_NAME),
        concurrency=len(rooms),
        # Between outbox-level resends (after the client's own retries gave up): short, the network is only lossy.
        delay_for=lambda attempt, failure: 50,
        on_change=on_change,
    )
    if mode == "enqueue":
        for i in range(per_room):
            for room in rooms:
                await outbox.enqueue(room, "PostMessage", {"roomId": room, "input": {"body": f"{room}#{i}"}})
    await outbox.drain()
    dead = len(outbox.dead_letters())
    print(json.dumps({"done": True, "counters": outbox.counts, "dead": dead}), flush=True)
    await outbox.close()
    await sdk.aclose()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 6:
        print("usage: outbox_poster.py <baseUrl> <outbox file> <rooms csv> <per room> <enqueue|resume>", file=sys.stderr)
        sys.exit(2)
    _, url, path, room_csv, count, run_mode = sys.argv
    sys.exit(asyncio.run(main(url, path, room_csv.split(","), int(count), run_mode, sys.stdin.read().strip())))
