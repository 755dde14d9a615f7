"""The durable outbox: messages are written to a SQLite file first (each with its idempotency key, kept across
restarts), then sent in order per room, retried with backoff while the device is offline or the server asks to
wait, and moved to the dead-letter list (POISON) when the server refuses one, or fails on it three times
(``failed_deliveries``). Prints one JSON line per entry, then the dead-letter export. Async only.
sdk-templates/python/tests/test_packaging.py runs it from a fresh venv.

    python outbox_basics.py <GraphQL endpoint URL> <access token> <room id> <outbox file>
"""
from __future__ import annotations

import asyncio
import json
import sys

from agentgraph import BY_NAME, AsyncAgentGraph, PrivacyPolicy
from agentgraph_runtime.outbox import Outbox, SqliteOutboxStore, client_send


class StaticToken:
    def __init__(self, token: str) -> None:
        self._token = token

    async def get_token(self) -> str:
        return self._token

    async def refresh(self) -> str:
        return self._token


async def main(endpoint: str, token: str, room_id: str, path: str) -> None:
    policy = PrivacyPolicy(("PUBLIC", "INTERNAL", "PERSONAL"))  # message bodies are PERSONAL
    async with AsyncAgentGraph(endpoint, token_provider=StaticToken(token), privacy_policy=policy) as api:
        outbox = await Outbox.open(SqliteOutboxStore.open(path), client_send(api.client, BY_NAME))
        try:
            # Entries hold the operation's name and its variables as sent (the wire names, JSON).
            for body in ("first", "second", "poison: the server refuses this one"):
                await outbox.enqueue(room_id, "PostMessage", {"roomId": room_id, "input": {"body": body}})
            await outbox.drain()  # until every entry is SENT, POISON or EXPIRED (start() runs it in the background)
            for entry in outbox.list():
                print(json.dumps({"body": entry.variables["input"]["body"], "state": entry.state,
                                  "attempts": entry.attempts, "failedDeliveries": entry.failed_deliveries,
                                  "error": entry.last_error.code if entry.last_error else None}))
            print(json.dumps({"deadLetters": json.loads(outbox.export_dead_letters())["entries"]}))
        finally:
            await outbox.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
