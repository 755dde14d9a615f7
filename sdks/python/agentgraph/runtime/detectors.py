"""Detectors for secrets and personal data: a literal port of sdk-templates/typescript/src/detectors.ts (see its
table). The regular expressions use only constructs JavaScript, .NET and Python read the same way."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, List, Sequence

NOT_AFTER_ALNUM = "(?<![A-Za-z0-9])"
NOT_BEFORE_ALNUM = "(?![A-Za-z0-9])"


@dataclass(frozen=True)
class Detector:
    id: str
    data_class: str
    test: Callable[[str], bool]


def _regex(id_: str, data_class: str, source: str) -> Detector:
    pattern = re.compile(source)
    return Detector(id_, data_class, lambda value: pattern.search(value) is not None)


API_KEY_PATTERNS = [
    "(?:AKIA|ASIA)[0-9A-Z]{16}",
    "gh[pousr]_[A-Za-z0-9]{36,}",
    "github_pat_[A-Za-z0-9_]{22,}",
    "glpat-[A-Za-z0-9_-]{20,}",
    "xox[abposr]-[A-Za-z0-9-]{10,}",
    "(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
    "sk-[A-Za-z0-9_-]{20,}",
    "AIza[0-9A-Za-z_-]{35}",
    "npm_[A-Za-z0-9]{36}",
]


def luhn_valid(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


_CARD = re.compile("(?<![0-9])[2-6][0-9](?:[ -]?[0-9]){11,17}(?![0-9])")
_SEPARATORS = re.compile("[ -]")


def _card_number(value: str) -> bool:
    for match in _CARD.finditer(value):
        digits = _SEPARATORS.sub("", match.group(0))
        if 13 <= len(digits) <= 19 and luhn_valid(digits):
            return True
    return False


def shannon_entropy(text: str) -> float:
    counts: dict = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    entropy = 0.0
    for count in counts.values():
        p = count / len(text)
        entropy -= p * math.log2(p)
    return entropy


HIGH_ENTROPY_MIN_LENGTH = 32
HIGH_ENTROPY_MIN_BITS = 4.5
_RUN = re.compile("[A-Za-z0-9+/=_-]{32,}")
_LOWER, _UPPER, _DIGIT = re.compile("[a-z]"), re.compile("[A-Z]"), re.compile("[0-9]")


def _high_entropy(value: str) -> bool:
    for match in _RUN.finditer(value):
        run = match.group(0)
        if not (_LOWER.search(run) and _UPPER.search(run) and _DIGIT.search(run)):
            continue
        if shannon_entropy(run) >= HIGH_ENTROPY_MIN_BITS:
            return True
    return False


DETECTORS: Sequence[Detector] = (
    _regex("pem-private-key", "SECRET", "-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    _regex("jwt", "SECRET", f"{NOT_AFTER_ALNUM}eyJ[A-Za-z0-9_-]{{8,}}\\.eyJ[A-Za-z0-9_-]{{8,}}\\.[A-Za-z0-9_-]*"),
    _regex("api-key", "SECRET", f"{NOT_AFTER_ALNUM}(?:{'|'.join(API_KEY_PATTERNS)})"),
    _regex("bearer-token", "SECRET", f"{NOT_AFTER_ALNUM}[Bb][Ee][Aa][Rr][Ee][Rr][ \\t]+[A-Za-z0-9._~+/-]{{16,}}=*"),
    _regex("url-password", "SECRET", "[A-Za-z][A-Za-z0-9+.-]*://[^ \\t\\r\\n/?#@:]*:[^ \\t\\r\\n/?#@]+@"),
    Detector("card-number", "SECRET", _card_number),
    _regex(
        "ssn",
        "PERSONAL",
        f"{NOT_AFTER_ALNUM}(?!000|666|9[0-9]{{2}})[0-9]{{3}}-(?!00)[0-9]{{2}}-(?!0000)[0-9]{{4}}{NOT_BEFORE_ALNUM}",
    ),
    Detector("high-entropy", "SECRET", _high_entropy),
)


def detect(value: str, detectors: Sequence[Detector] = DETECTORS) -> List[Detector]:
    """The detectors that fire on ``value``."""
    return [d for d in detectors if d.test(value)]
