"""Follow a room live with the generated Python SDK. ``api.client.subscriptions()`` streams with the client's own
endpoint (``<base_url>/stream``), HTTP client, headers, privacy policy and token provider, which it asks for a token
on every connect and reconnect. It resumes after the last message handled (``afterSeq``), drops duplicates and
reconnects with backoff when a stream breaks. Prints one JSON line per message (with how many times the token was
read so far); test/e2e/sdk-subscriptions.test.ts runs it against the platform.

    /usr/bin/python3 room_subscriber.py <baseUrl> <roomId> <count> <token file>
"""
from __future__ import annotations

import asyncio
import json
import sys
from contextlib import aclosing
from pathlib import Path

from agentgraph import AsyncAgentGraph, operations
from agentgraph_runtime.privacy import PrivacyPolicy


class TokenFile:
    """The access token from a file another process keeps fresh (a sidecar, a login): read on every call."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.reads = 0

    async def get_token(self) -> str:
        self.reads += 1
        return self.path.read_text().strip()

    async def refresh(self) -> str:
        return await self.get_token()


async def follow_room(base_url: str, room_id: str, count: int, token_file: str) -> None:
    tokens = TokenFile(token_file)
    # Message bodies are PERSONAL (schemas/coordination.graphql): this app's policy allows them.
    policy = PrivacyPolicy(("PUBLIC", "INTERNAL", "PERSONAL"))
    async with AsyncAgentGraph(base_url, token_provider=tokens, privacy_policy=policy) as api:
        subscriptions = api.client.subscriptions()  # the client's endpoint, token provider, headers, policy
        try:
            messages = subscriptions.subscribe(
                operations.OnRoomMessage,
                {"roomId": room_id},
                select=lambda data: data["roomMessages"],
                seq_of=lambda message: message["seq"],
                cursor_variable="afterSeq",
                after=0,  # from the first message; None: live only
            )
            async with aclosing(messages):  # leaving the loop closes the stream
                async for item in messages:
                    print(json.dumps({"seq": item.seq, "body": item.event["body"], "tokenReads": tokens.reads}),
                          flush=True)
                    if item.seq >= count:
                        break
        finally:
            await subscriptions.aclose()


if __name__ == "__main__":
    url, room, n, token_path = sys.argv[1:5]
    asyncio.run(follow_room(url, room, int(n), token_path))
