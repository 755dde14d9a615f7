"""Quickstart, blocking: the generated Python SDK as an installed package (``pip install agentgraph``). Reads who
is calling (a query), creates a room (a mutation, sent with an idempotency key that every retry reuses) and lists
every room page by page (a connection), then prints one JSON line. quickstart_async.py is the same with
``AsyncAgentGraph``. sdk-templates/python/tests/test_packaging.py runs both with the python of a fresh venv.

    python quickstart.py <GraphQL endpoint URL> <access token>
"""
from __future__ import annotations

import json
import sys

from agentgraph import AgentGraph
from agentgraph.types import CreateRoomInput


class StaticToken:
    """The simplest token provider: one access token (a real app asks its login or sidecar for a fresh one)."""

    def __init__(self, token: str) -> None:
        self._token = token

    def get_token(self) -> str:
        return self._token

    def refresh(self) -> str:
        return self._token


def main(endpoint: str, token: str) -> None:
    with AgentGraph(endpoint, token_provider=StaticToken(token)) as api:
        viewer = api.viewer().data.viewer  # a ViewerDataViewer dataclass, snake_case fields
        created = api.create_room(input=CreateRoomInput(name="general"))
        rooms = [room.name for room in api.paginate_rooms(first=2)]  # RoomsDataRoomsEdgesNode, page after page
        pages = api.paginate_rooms(first=2)
        first = next(pages).name  # stopping early: the next page is never requested
        pages.close()
        print(json.dumps({
            "viewer": viewer.user.display_name if viewer else None,
            "created": created.data.create_room.room.id,
            "createdAt": created.data.create_room.room.created_at,
            "idempotencyKey": created.raw.idempotency_key,
            "rooms": rooms,
            "first": first,
        }))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
