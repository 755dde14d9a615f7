"""The privacy gate: every variable has a data class (PUBLIC, INTERNAL, PERSONAL, SECRET, BIOMETRIC, from the
schema's @privacy); the client's policy says which classes may leave the process, and strings are scanned for
secrets. A refused call raises PrivacyError before a request is built: nothing is sent. Prints one JSON line.
sdk-templates/python/tests/test_packaging.py runs it from a fresh venv.

    python privacy_gate.py <GraphQL endpoint URL> <access token> <room id>
"""
from __future__ import annotations

import json
import sys

from agentgraph import AgentGraph, PrivacyError, PrivacyPolicy
from agentgraph.types import PostMessageInput


class StaticToken:
    def __init__(self, token: str) -> None:
        self._token = token

    def get_token(self) -> str:
        return self._token

    def refresh(self) -> str:
        return self._token


def main(endpoint: str, token: str, room_id: str) -> None:
    refusals = []
    # The default policy allows PUBLIC and INTERNAL; message bodies are PERSONAL: without it, no message leaves.
    with AgentGraph(endpoint, token_provider=StaticToken(token)) as api:
        try:
            api.post_message(room_id=room_id, input=PostMessageInput(body="Lunch at noon?"))
        except PrivacyError as err:
            refusals += [{"path": r.path, "reason": r.reason} for r in err.refusals]

    # This app may send personal data; a value that holds a secret is still refused.
    policy = PrivacyPolicy(("PUBLIC", "INTERNAL", "PERSONAL"))
    with AgentGraph(endpoint, token_provider=StaticToken(token), privacy_policy=policy) as api:
        sent = api.post_message(room_id=room_id, input=PostMessageInput(body="Lunch at noon?"))
        try:
            api.post_message(room_id=room_id, input=PostMessageInput(body="deploy key AKIAIOSFODNN7EXAMPLE"))
        except PrivacyError as err:
            refusals += [{"path": r.path, "reason": r.reason} for r in err.refusals]
    print(json.dumps({"sent": sent.data.post_message.message.body, "refusals": refusals}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
