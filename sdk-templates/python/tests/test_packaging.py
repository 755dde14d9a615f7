"""The Python SDK installs like any package: both wheels (agentgraph-runtime from sdk-templates/python, agentgraph
from the generated sdks/python) built from source with Debian's build tools and no network, installed into a fresh
venv, and samples/quickstart.py run by that venv's python outside the repository (no PYTHONPATH), blocking and async (quickstart_async.py), against a GraphQL
over HTTP server on loopback that answers the SDK's real requests.

Needs (Debian): python3-build, python3-setuptools, python3-wheel, python3-venv (with python3-pip-whl), python3-httpx,
python3-tenacity. The builds run in copies of the two projects, so no build/ or .egg-info lands in the repository."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

RUNTIME_SRC = Path(__file__).resolve().parents[1]  # sdk-templates/python
SDK_SRC = RUNTIME_SRC.parents[1] / "sdks" / "python"
TOKEN = "test-access-token"


def runtime_version() -> str:
    project = (RUNTIME_SRC / "pyproject.toml").read_text()
    match = re.search(r'^version = "([^"]+)"$', project, re.M)
    assert match, "sdk-templates/python/pyproject.toml has no version"
    return match.group(1)


def run(args: List[str], cwd: Path, timeout: float = 180) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PIP_INDEX_URL")}
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def build_wheel(project: Path, parts: List[str], work: Path, dist: Path) -> Path:
    """Builds the wheel of a copy of `project` holding only `parts` (what the sdist would hold)."""
    copy = work / "src" / project.relative_to(RUNTIME_SRC.parents[1])
    copy.mkdir(parents=True)
    for part in parts:
        source = project / part
        if source.is_dir():
            shutil.copytree(source, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, copy / part)
    before = set(dist.glob("*.whl"))
    run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(copy)], work)
    (wheel,) = set(dist.glob("*.whl")) - before
    return wheel


class GraphQLServer(BaseHTTPRequestHandler):
    """GraphQL over HTTP on loopback, answering Viewer, CreateRoom and PostMessage (only with an Idempotency-Key
    header equal to the $idempotencyKey variable; a body starting with "poison" is refused as BAD_USER_INPUT) and
    Rooms in two pages. Records every request it got."""

    seen: List[Dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                          "body": body})
        status, answer = self.answer(body)
        payload = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/graphql-response+json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def answer(self, body: Dict[str, Any]) -> Any:
        if self.headers.get("authorization") != f"Bearer {TOKEN}":
            return 401, {"errors": [{"message": "no token", "extensions": {"code": "UNAUTHENTICATED"}}]}
        name, variables = body.get("operationName"), body.get("variables") or {}
        if name == "Viewer":
            return 200, {"data": {"viewer": {"role": "OWNER", "tenant": {"id": "t1", "name": "Acme"},
                                             "user": {"id": "u1", "email": "ada@example.com", "displayName": "Ada"}}}}
        if name in ("CreateRoom", "PostMessage"):
            key = self.headers.get("idempotency-key")
            if not key or key != variables.get("idempotencyKey"):
                return 400, {"errors": [{"message": "Idempotency-Key header missing or not the variable",
                                         "extensions": {"code": "BAD_USER_INPUT"}}]}
        if name == "PostMessage":
            body = variables["input"]["body"]
            if body.startswith("poison"):
                return 400, {"errors": [{"message": "refused", "extensions": {"code": "BAD_USER_INPUT"}}]}
            message = {"id": f"m-{len(self.seen)}", "seq": len(self.seen), "body": body,
                       "createdAt": "2026-12-02T00:00:00Z", "author": {"id": "u1", "displayName": "Ada"}}
            return 200, {"data": {"postMessage": {"message": message}}}
        if name == "CreateRoom":
            room = {"id": "room-new", "name": variables["input"]["name"], "createdAt": "2026-12-02T00:00:00Z"}
            return 200, {"data": {"createRoom": {"room": room}}}
        if name == "Rooms":
            names = ["general", "random"] if variables.get("after") is None else ["support"]
            edges = [{"cursor": f"c-{n}", "node": {"id": f"r-{n}", "name": n, "createdAt": "2026-12-01T00:00:00Z"}}
                     for n in names]
            more = variables.get("after") is None
            info = {"hasNextPage": more, "endCursor": edges[-1]["cursor"]}
            return 200, {"data": {"rooms": {"edges": edges, "pageInfo": info}}}
        return 400, {"errors": [{"message": f"unexpected operation {name}",
                                 "extensions": {"code": "GRAPHQL_VALIDATION_FAILED"}}]}


@pytest.fixture()
def server() -> Iterator[str]:
    GraphQLServer.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), GraphQLServer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/graphql"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_both_wheels_install_into_a_fresh_venv_and_the_quickstart_runs_outside_the_repo(
    tmp_path: Path, server: str
) -> None:
    version = runtime_version()
    dist = tmp_path / "dist"
    dist.mkdir()
    runtime_wheel = build_wheel(RUNTIME_SRC, ["pyproject.toml", "README.md", "agentgraph_runtime"], tmp_path, dist)
    sdk_wheel = build_wheel(SDK_SRC, ["pyproject.toml", "README.md", "agentgraph"], tmp_path, dist)
    assert runtime_wheel.name == f"agentgraph_runtime-{version}-py3-none-any.whl"
    assert sdk_wheel.name == f"agentgraph-{version}-py3-none-any.whl"

    with zipfile.ZipFile(runtime_wheel) as wheel:
        names = set(wheel.namelist())
        assert "agentgraph_runtime/py.typed" in names and "agentgraph_runtime/outbox.py" in names
        metadata = wheel.read(f"agentgraph_runtime-{version}.dist-info/METADATA").decode()
        assert re.search(r"^Requires-Dist: httpx", metadata, re.M)
        assert re.search(r"^Requires-Dist: tenacity", metadata, re.M)
        assert re.search(r"^License: Apache-2.0$", metadata, re.M)
    with zipfile.ZipFile(sdk_wheel) as wheel:
        names = set(wheel.namelist())
        assert "agentgraph/py.typed" in names and "agentgraph/client.py" in names
        assert not [n for n in names if n.startswith(("agentgraph/runtime/", "agentgraph_runtime/"))], \
            "the generated wheel must not carry a copy of the runtime"
        metadata = wheel.read(f"agentgraph-{version}.dist-info/METADATA").decode()
        assert re.search(rf"^Requires-Dist: agentgraph-runtime ?\(?==\s?{re.escape(version)}\)?$", metadata, re.M), \
            metadata

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], tmp_path)
    python = venv / "bin" / "python"
    run([str(python), "-m", "pip", "install", "--no-index", "--find-links", str(dist), "agentgraph"], tmp_path)

    app = tmp_path / "app"  # outside the repository: only the venv can provide agentgraph and agentgraph_runtime
    app.mkdir()
    where = run([str(python), "-c", "import agentgraph, agentgraph_runtime; "
                 "print(agentgraph.__file__); print(agentgraph_runtime.__file__)"], app).split()
    assert all(Path(p).is_relative_to(venv) for p in where), where

    for sample in ("quickstart.py", "quickstart_async.py"):
        GraphQLServer.seen = []
        shutil.copy2(SDK_SRC / "samples" / sample, app / sample)
        out = run([str(python), sample, server, TOKEN], app, timeout=60)
        result = json.loads(out.strip().splitlines()[-1])
        assert result["viewer"] == "Ada", sample
        assert (result["created"], result["createdAt"]) == ("room-new", "2026-12-02T00:00:00Z"), sample
        assert result["rooms"] == ["general", "random", "support"] and result["first"] == "general", sample

        seen = GraphQLServer.seen
        assert [s["body"]["operationName"] for s in seen] == ["Viewer", "CreateRoom"] + ["Rooms"] * 3, sample
        create = seen[1]
        assert create["headers"]["idempotency-key"] == create["body"]["variables"]["idempotencyKey"] \
            == result["idempotencyKey"]
        assert create["body"]["variables"]["input"] == {"name": "general"}
        assert "idempotency-key" not in seen[0]["headers"]
        assert [s["body"]["variables"].get("after") for s in seen[2:]] == [None, "c-random", None]  # then stopped
        assert all(s["body"]["variables"].get("first") == 2 for s in seen[2:])
        assert all(s["headers"]["accept"].startswith("application/graphql-response+json") for s in seen)

    GraphQLServer.seen = []
    shutil.copy2(SDK_SRC / "samples" / "privacy_gate.py", app / "privacy_gate.py")
    out = json.loads(run([str(python), "privacy_gate.py", server, TOKEN, "room-1"], app, timeout=60).splitlines()[-1])
    assert out == {"sent": "Lunch at noon?", "refusals": [{"path": "input.body", "reason": "class:PERSONAL"},
                                                         {"path": "input.body", "reason": "api-key"}]}
    # Only the allowed message reached the server; both refused calls sent nothing.
    assert [s["body"]["variables"]["input"]["body"] for s in GraphQLServer.seen] == ["Lunch at noon?"]

    GraphQLServer.seen = []
    shutil.copy2(SDK_SRC / "samples" / "outbox_basics.py", app / "outbox_basics.py")
    lines = run([str(python), "outbox_basics.py", server, TOKEN, "room-1", str(app / "outbox.db")], app,
                timeout=60).splitlines()
    entries = [json.loads(line) for line in lines[:-1]]
    assert entries == [
        {"body": "first", "state": "SENT", "attempts": 1, "failedDeliveries": 0, "error": None},
        {"body": "second", "state": "SENT", "attempts": 1, "failedDeliveries": 0, "error": None},
        {"body": "poison: the server refuses this one", "state": "POISON", "attempts": 1, "failedDeliveries": 0,
         "error": "BAD_USER_INPUT"},
    ]
    (dead,) = json.loads(lines[-1])["deadLetters"]
    assert dead["state"] == "POISON" and dead["lastError"]["code"] == "BAD_USER_INPUT"
    sent_keys = [s["headers"]["idempotency-key"] for s in GraphQLServer.seen]
    assert len(sent_keys) == 3 and len(set(sent_keys)) == 3 and dead["idempotencyKey"] == sent_keys[-1]

    GraphQLServer.seen = []
    shutil.copy2(SDK_SRC / "samples" / "error_handling.py", app / "error_handling.py")
    out = json.loads(run([str(python), "error_handling.py", server, "a-revoked-token"], app, timeout=60).splitlines()[-1])
    assert out == {"class": "UnauthenticatedError", "code": "UNAUTHENTICATED", "status": 401, "retryable": False,
                   "attempts": 2, "giveUpReason": "unauthenticated"}
    assert len(GraphQLServer.seen) == 2  # the first try and one resend after the token refresh
