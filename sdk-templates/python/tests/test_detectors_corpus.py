"""The detectors against the labelled corpus shared with the TypeScript and C# SDKs and the server filter
(test/secrets-corpus/corpus.json, README there): recall >= 0.97 and precision >= 0.95, a secret counting as found
only when its labelled detector fires. A failure lists every misclassified case."""
from __future__ import annotations

import json

import pytest

from agentgraph_runtime import detect
from agentgraph_runtime.detectors import is_password_value, looks_generated
from conformance.harness import REPO

CASES = json.loads((REPO / "test" / "secrets-corpus" / "corpus.json").read_text(encoding="utf-8"))["cases"]


def test_the_detectors_reach_the_corpus_targets() -> None:
    assert len(CASES) >= 200
    tp = fp = fn = 0
    wrong = []
    for case in CASES:
        ids = [d.id for d in detect(case["value"])]
        if case["label"] == "secret":
            if case["detector"] in ids:
                tp += 1
            else:
                fn += 1
                wrong.append(f"missed {case['id']} (expected {case['detector']}, got {ids})")
        elif ids:
            fp += 1
            wrong.append(f"false positive {case['id']} ({ids})")
    recall, precision = tp / (tp + fn), tp / (tp + fp)
    assert recall >= 0.97 and precision >= 0.95, (
        f"recall {recall:.3f}, precision {precision:.3f}; misclassified:\n" + "\n".join(wrong)
    )


@pytest.mark.parametrize(
    "value, detector",
    [
        ("redis://:password@host", "url-password"),
        ("password: s3cr3t-Pa55", "password-assignment"),
        ("client_secret: Zq3xT9vLk2Wm8PbR4nYc7HsJ1dFg6KeUa0VtQi5O", "high-entropy"),
        ("Password=${DB_PASSWORD}", None),
        ("pk_live_51H8xYzAbCdEfGhIjKlMnOpQrStUvWxYz0123456789", None),
        ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", None),
        ("Reset your password: click the link", None),
        ("use Zq3xT9vLk2Wm8PbR4nYc7HsJ1dFg6KeUa0VtQi5O for the API", None),
    ],
)
def test_keyword_rules_and_the_issue_cases(value: str, detector: str | None) -> None:
    ids = [d.id for d in detect(value)]
    assert (detector in ids) if detector else ids == []


def test_value_checks() -> None:
    assert looks_generated("Zq3xT9vLk2Wm8PbR4nYc7HsJ1dFg6KeUa0VtQi5O")
    assert not looks_generated("ThisIsAVeryLongCamelCaseIdentifier2024")
    assert not looks_generated("550e8400-e29b-41d4-a716-446655440000")
    assert is_password_value("hunter2!")
    for v in ["${DB_PASSWORD}", "********", "NULL", "DB_PASSWORD", "process.env.PW", "abc"]:
        assert not is_password_value(v), v
