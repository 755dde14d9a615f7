"""Quickstart, async: quickstart.py with ``AsyncAgentGraph`` (every method a coroutine, paginators async
iterators; cancel the task to stop a call, leave the loop to stop a paginator). sdk-templates/python/tests/test_packaging.py runs it from a fresh venv.

    python quickstart_async.py <GraphQL endpoint URL> <access token>
"""
from __future__ import annotations

import asyncio
import json
import sys
from contextlib import aclosing

from agentgraph import AsyncAgentGraph
from agentgraph.types import CreateRoomInput


class StaticToken:
    """The simplest token provider: one access token (a real app asks its login or sidecar for a fresh one)."""

    def __init__(self, token: str) -> None:
        self._token = token

    async def get_token(self) -> str:
        return self._token

    async def refresh(self) -> str:
        return self._token


async def main(endpoint: str, token: str) -> None:
    async with AsyncAgentGraph(endpoint, token_provider=StaticToken(token)) as api:
        viewer = (await api.viewer()).data.viewer
        created = await api.create_room(input=CreateRoomInput(name="general"))
        rooms = [room.name async for room in api.paginate_rooms(first=2)]
        async with aclosing(api.paginate_rooms(first=2)) as pages:
            async for room in pages:
                first = room.name
                break  # stopping early: leaving the loop closes the paginator; no next page is requested
        print(json.dumps({
            "viewer": viewer.user.display_name if viewer else None,
            "created": created.data.create_room.room.id,
            "createdAt": created.data.create_room.room.created_at,
            "idempotencyKey": created.raw.idempotency_key,
            "rooms": rooms,
            "first": first,
        }))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
