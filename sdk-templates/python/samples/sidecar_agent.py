"""A Python sidecar for the end-to-end test test/e2e/python-sidecar.test.ts: the generated SDK with its token from the
desktop host's broker (``BrokeredTokenProvider``, socket from $AGENTGRAPH_BROKER_SOCKET) and the sidecar's privacy
settings. It reads one JSON command per stdin line and answers each with one JSON line on stdout; logs (JSON,
metadata only) go to stderr. The token is never printed: probes report statuses and error codes only.

    /usr/bin/python3 sidecar_agent.py <gateway GraphQL URL>

Commands: {"do": "put", "workspaceId", "id", "content"} · {"do": "post", "roomId", "body"} ·
{"do": "exchange", "issuer"} (RFC 8693 at identity with the sidecar's token as subject) · {"do": "http", "url",
"body"} (POST JSON with the sidecar's token) · {"do": "audience", "issuer", "audience"} (PyJWT against identity's
JWKS) · {"do": "stats"}.
"""
from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any, Dict

import httpx
import jwt

from agentgraph import AgentGraphError, AsyncAgentGraph, PrivacyError
from agentgraph_runtime.logger import JsonLogger
from agentgraph_runtime.sidecar import BrokeredTokenProvider, BrokerError, sidecar_client_options
from agentgraph.types import PostMessageInput, PutMemoryInput

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"


async def handle(cmd: Dict[str, Any], sdk: AsyncAgentGraph, tokens: BrokeredTokenProvider, http: httpx.AsyncClient) -> Any:
    what = cmd["do"]
    try:
        if what == "put":
            r = await sdk.put_memory(id=cmd["id"], input=PutMemoryInput(
                workspace_id=cmd["workspaceId"], kind="observation", content=cmd["content"]))
            rec = r.data.put_memory.record
            return {"ok": True, "id": rec.id, "version": rec.version, "author": rec.author.id}
        if what == "post":
            m = (await sdk.post_message(room_id=cmd["roomId"], input=PostMessageInput(body=cmd["body"]))).data
            msg = m.post_message.message
            return {"ok": True, "id": msg.id, "seq": msg.seq, "author": msg.author.id}
        if what == "exchange":
            res = await http.post(f"{cmd['issuer']}/oauth/token", data={
                "grant_type": TOKEN_EXCHANGE, "client_id": "agentgraph-desktop",
                "subject_token": await tokens.get_token(), "subject_token_type": ACCESS_TOKEN_TYPE,
                "requested_token_type": ACCESS_TOKEN_TYPE})
            body = res.json()
            return {"status": res.status_code, "error": body.get("error"), "issued": "access_token" in body}
        if what == "http":
            res = await http.post(cmd["url"], json=cmd["body"],
                                  headers={"authorization": f"Bearer {await tokens.get_token()}"})
            try:
                body = res.json()
            except ValueError:
                body = None
            return {"status": res.status_code, "body": body}
        if what == "audience":
            token = await tokens.get_token()
            key = jwt.PyJWKClient(f"{cmd['issuer']}/.well-known/jwks.json").get_signing_key_from_jwt(token)
            try:
                jwt.decode(token, key.key, algorithms=["ES256"], audience=cmd["audience"], issuer=cmd["issuer"])
                return {"valid": True}
            except jwt.PyJWTError as exc:
                return {"valid": False, "error": type(exc).__name__}
        if what == "stats":
            return {"brokerRequests": tokens.requests}
        return {"error": f"unknown command {what}"}
    except PrivacyError as err:
        return {"refused": err.code, "refusals": [[r.path, r.reason] for r in err.refusals], "attempts": err.attempts}
    except AgentGraphError as err:
        return {"error": err.code, "status": err.status}
    except BrokerError as err:
        return {"brokerError": err.code}


async def main(base_url: str) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(message)s")
    logger = JsonLogger("agentgraph.sidecar")
    tokens = BrokeredTokenProvider(logger=logger)
    sdk = AsyncAgentGraph(base_url, token_provider=tokens, logger=logger, **sidecar_client_options())
    loop = asyncio.get_running_loop()
    async with httpx.AsyncClient() as http:
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                break
            answer = await handle(json.loads(line), sdk, tokens, http)
            print(json.dumps(answer), flush=True)
    await sdk.aclose()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: sidecar_agent.py <gateway GraphQL URL>  (broker socket in $AGENTGRAPH_BROKER_SOCKET)",
              file=sys.stderr)
        sys.exit(2)
    sys.exit(asyncio.run(main(sys.argv[1])))
