"""Detectors for secrets and personal data: a literal port of sdk-templates/typescript/src/detectors.ts (see its
table). The regular expressions use only constructs JavaScript, .NET and Python read the same way (no flags, letter
case spelled out, fixed-width lookbehinds, numbered groups); the values the anchored patterns (``$``) see never hold
a line break, so Python's ``$`` (which also matches before a final newline) reads like JavaScript's."""
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


def _any_case(word: str) -> str:
    """``password`` → ``[Pp][Aa][Ss][Ss][Ww][Oo][Rr][Dd]``: any letter case without a flag."""
    return "".join(f"[{ch.upper()}{ch}]" if "a" <= ch <= "z" else ch for ch in word)


def _regex(id_: str, data_class: str, source: str) -> Detector:
    pattern = re.compile(source)
    return Detector(id_, data_class, lambda value: pattern.search(value) is not None)


API_KEY_PATTERNS = [
    "(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}",
    "gh[pousr]_[A-Za-z0-9]{36,}",
    "github_pat_[A-Za-z0-9_]{22,}",
    "glpat-[A-Za-z0-9_-]{20,}",
    "xox[abposr]-[A-Za-z0-9-]{10,}",
    "hooks\\.slack\\.com/(?:services|workflows)/[A-Za-z0-9_/-]{20,}",
    "(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
    "sk-[A-Za-z0-9_-]{20,}",
    "AIza[0-9A-Za-z_-]{35}",
    "npm_[A-Za-z0-9]{36}",
    "pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
    "SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}",
    "shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
    "do[opr]_v1_[a-f0-9]{64}",
    "hvs\\.[A-Za-z0-9_-]{90,}",
    "hf_[A-Za-z]{34}",
    "dapi[a-f0-9]{32}",
    "PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}",
    "lin_api_[A-Za-z0-9]{40}",
    "dp\\.pt\\.[A-Za-z0-9]{43}",
    "AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
    "sq0(?:atp-[0-9A-Za-z_-]{22}|csp-[0-9A-Za-z_-]{43})",
    "discord(?:app)?\\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]{60,}",
    "[0-9]{8,10}:AA[A-Za-z0-9_-]{33}",
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


#: The value after a secret keyword: at least this many characters…
HIGH_ENTROPY_MIN_LENGTH = 16
#: …and at least this many bits per character (Shannon entropy over the value's own characters).
HIGH_ENTROPY_MIN_BITS = 3.0

_UUID = re.compile("^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$")
_PATH_START = re.compile("^(?:/|\\.\\.?/|~/)")
_LONE_JWT_PART = re.compile("^eyJ[A-Za-z0-9_-]*=*$")
_DIGIT_RUN = re.compile("[0-9]+")
_SEGMENT_SEPARATORS = re.compile("[-_./+~=]")
_LETTER, _DIGIT = re.compile("[A-Za-z]"), re.compile("[0-9]")
_LOWER, _UPPER, _BASE64_SYMBOL = re.compile("[a-z]"), re.compile("[A-Z]"), re.compile("[+/]")


def looks_generated(value: str) -> bool:
    """Whether a value after a secret keyword looks generated rather than named (see the TypeScript table)."""
    if len(value) < HIGH_ENTROPY_MIN_LENGTH:
        return False
    if not _LETTER.search(value) or not _DIGIT.search(value):
        return False
    if _UUID.search(value) or _PATH_START.search(value) or _LONE_JWT_PART.search(value):
        return False
    digit_runs = len(_DIGIT_RUN.findall(value))
    base64_mixed = bool(_BASE64_SYMBOL.search(value) and _LOWER.search(value) and _UPPER.search(value))
    if digit_runs < 2 and not base64_mixed:
        return False
    mixed_segment = any(
        len(seg) > 3 and _LETTER.search(seg) and _DIGIT.search(seg) for seg in _SEGMENT_SEPARATORS.split(value)
    )
    if not mixed_segment:
        return False
    return shannon_entropy(value) >= HIGH_ENTROPY_MIN_BITS


_SECRET_KEYWORD = (
    f"(?=[SsTtKkCcAa])(?<!{_any_case('public')})(?<!{_any_case('public')}[_.-])"
    f"(?:{'|'.join(_any_case(w) for w in ['secret', 'token', 'key', 'credential', 'auth'])})[Ss]?"
    f"(?:[_.-](?:{'|'.join(_any_case(w) for w in ['base', 'value', 'prod', 'live', 'dev', 'test', 'staging'])}))?"
)
#: Group 1: the value after a secret keyword.
_SECRET_ASSIGNMENT = re.compile(
    f"{_SECRET_KEYWORD}['\"\\]]?(?:[ \\t]*(?:=>|:=|[:=])[ \\t]*|[ \\t]+)['\"`]?([A-Za-z0-9+/=_.~-]{{16,}})"
)


def _high_entropy(value: str) -> bool:
    return any(looks_generated(m.group(1)) for m in _SECRET_ASSIGNMENT.finditer(value))


_PASSWORD_KEYWORD = (
    f"(?:{'|'.join(_any_case(w) for w in ['password', 'passwd', 'passphrase', 'pwd'])}|[_.-]{_any_case('pass')})"
)
_UNQUOTED_VALUE = "[^ \\t\\r\\n\"'`;,&<>]+"
#: Groups: 1–3 the value after ``=``, ``:=`` or ``=>`` (double-quoted, single-quoted, bare); 4–6 after ``:`` (a bare
#: value there must end the line, or be followed by ``,``, ``}``, ``]`` or ``#``).
_PASSWORD_ASSIGNMENT = re.compile(
    f"{_PASSWORD_KEYWORD}['\"\\]]?[ \\t]*(?:(?:=>|:=|=)[ \\t]*(?:\"([^\"\\r\\n]*)\"|'([^'\\r\\n]*)'|({_UNQUOTED_VALUE}))"
    f"|:[ \\t]*(?:\"([^\"\\r\\n]*)\"|'([^'\\r\\n]*)'|({_UNQUOTED_VALUE})(?=[ \\t]*(?:[,}}\\]#]|(?![^\\r\\n])))))"
)

PLACEHOLDER_WORDS = [
    "null", "none", "nil", "undefined", "true", "false", "empty", "required", "optional", "string", "text",
    "password", "passwd", "secret", "redacted", "hidden", "masked", "placeholder", "example", "changeme",
    "your_password", "yourpassword",
]
_PLACEHOLDER_WORD = re.compile(f"^(?:{'|'.join(_any_case(w) for w in PLACEHOLDER_WORDS)})$")
_PLACEHOLDER_START = re.compile("^(?:[$<{%!\\[]|#\\{)")
_MASK = re.compile("^(?:\\*+|x+|X+|\\.+|\u2022+)$")
_ENV_NAME = re.compile("^[A-Z][A-Z0-9]*_[A-Z0-9_]*$")
_DOTTED_NAME = re.compile("^[A-Za-z_]+(?:\\.[A-Za-z_]+)+$")
_CALL = re.compile("^[A-Za-z_][A-Za-z0-9_.]*\\(")


def is_password_value(value: str) -> bool:
    """Whether a password value is a real one rather than a placeholder, a mask, a reference or a path."""
    if len(value) < 4:
        return False
    if _PLACEHOLDER_START.search(value) or _MASK.search(value) or _PATH_START.search(value):
        return False
    if _PLACEHOLDER_WORD.search(value):
        return False
    return not (_ENV_NAME.search(value) or _DOTTED_NAME.search(value) or _CALL.search(value))


def _password_assignment(value: str) -> bool:
    for match in _PASSWORD_ASSIGNMENT.finditer(value):
        password = next((g for g in match.groups() if g is not None), None)
        if password is not None and is_password_value(password):
            return True
    return False


DETECTORS: Sequence[Detector] = (
    _regex("pem-private-key", "SECRET", "-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    _regex("jwt", "SECRET", f"{NOT_AFTER_ALNUM}eyJ[A-Za-z0-9_-]{{8,}}\\.eyJ[A-Za-z0-9_-]{{8,}}\\.[A-Za-z0-9_-]*"),
    _regex("api-key", "SECRET", f"{NOT_AFTER_ALNUM}(?:{'|'.join(API_KEY_PATTERNS)})"),
    _regex(
        "bearer-token",
        "SECRET",
        f"{NOT_AFTER_ALNUM}(?:{_any_case('bearer')}[ \\t]+(?![A-Z_]{{16,}}(?![A-Za-z0-9._~+/=-]))[A-Za-z0-9._~+/-]{{16,}}=*"
        f"|{_any_case('authorization')}['\"]?:[ \\t]*['\"]?{_any_case('basic')}[ \\t]+[A-Za-z0-9+/]{{12,}}=*)",
    ),
    _regex("url-password", "SECRET", "(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^ \\t\\r\\n/?#@:]{0,256}:(?![$<{%\\[])(?!\\*+@)[^ \\t\\r\\n/?#@]{1,256}@"),
    Detector("password-assignment", "SECRET", _password_assignment),
    Detector("high-entropy", "SECRET", _high_entropy),
    Detector("card-number", "SECRET", _card_number),
    _regex(
        "ssn",
        "PERSONAL",
        f"{NOT_AFTER_ALNUM}(?!000|666|9[0-9]{{2}})[0-9]{{3}}-(?!00)[0-9]{{2}}-(?!0000)[0-9]{{4}}{NOT_BEFORE_ALNUM}",
    ),
)


def detect(value: str, detectors: Sequence[Detector] = DETECTORS) -> List[Detector]:
    """The detectors that fire on ``value``."""
    return [d for d in detectors if d.test(value)]
