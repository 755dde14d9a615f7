"""The privacy gate (port of privacy.ts), run on the variables before serialization and before any transport call:
a forbidden optional field is dropped, a forbidden required one refuses the call, BIOMETRIC is always forbidden;
every string under a rule is scanned by the detectors. Refusals name the path and rule, never the value."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from .detectors import DETECTORS, Detector, detect
from .errors import PrivacyError, PrivacyRefusal

DATA_CLASSES = ("PUBLIC", "INTERNAL", "PERSONAL", "SECRET", "BIOMETRIC")


@dataclass(frozen=True)
class PrivacyRule:
    data_class: str
    required: bool


@dataclass(frozen=True)
class PrivacyPolicy:
    """Which classes may leave the process. BIOMETRIC never does, even when listed."""

    allow: Sequence[str] = ("PUBLIC", "INTERNAL")


DEFAULT_PRIVACY_POLICY = PrivacyPolicy()

#: variable path ("input.body", "inputs[].note") -> rule
PrivacyTable = Mapping[str, PrivacyRule]


def privacy_table(raw: Mapping[str, Any]) -> Dict[str, PrivacyRule]:
    """A table from its JSON form ``{path: {class, required}}`` (or PrivacyRule values)."""
    out: Dict[str, PrivacyRule] = {}
    for path, rule in raw.items():
        out[path] = rule if isinstance(rule, PrivacyRule) else PrivacyRule(rule["class"], bool(rule["required"]))
    return out


def class_allowed(policy: PrivacyPolicy, data_class: str) -> bool:
    return data_class != "BIOMETRIC" and data_class in policy.allow


@dataclass
class PrivacyGateResult:
    variables: Dict[str, Any]
    dropped: List[str] = field(default_factory=list)


_DROP = object()


def apply_privacy_gate(
    operation: str,
    variables: Mapping[str, Any],
    table: PrivacyTable,
    policy: PrivacyPolicy,
    detectors: Sequence[Detector] = DETECTORS,
) -> PrivacyGateResult:
    refusals: List[PrivacyRefusal] = []
    dropped: List[str] = []

    def walk(value: Any, path: str, pattern: str, inherited: Optional[PrivacyRule]) -> Any:
        own = table.get(pattern)
        rule = own or inherited
        if value is None:
            return value
        if own is not None and not class_allowed(policy, own.data_class):
            if own.required:
                refusals.append(PrivacyRefusal(path, f"class:{own.data_class}"))
                return value
            dropped.append(path)
            return _DROP
        if isinstance(value, str):
            if rule is not None:
                hit = next((d for d in detect(value, detectors) if not class_allowed(policy, d.data_class)), None)
                if hit is not None:
                    refusals.append(PrivacyRefusal(path, hit.id))
            return value
        if isinstance(value, (list, tuple)):
            out_list = []
            for i, item in enumerate(value):
                kept = walk(item, f"{path}[{i}]", f"{pattern}[]", rule)
                if kept is _DROP:
                    refusals.append(PrivacyRefusal(f"{path}[{i}]", f"class:{table[pattern + '[]'].data_class}"))
                else:
                    out_list.append(kept)
            return out_list
        if isinstance(value, dict):
            out_obj = {}
            for key, item in value.items():
                kept = walk(item, f"{path}.{key}", f"{pattern}.{key}", rule)
                if kept is not _DROP:
                    out_obj[key] = kept
            return out_obj
        return value

    out: Dict[str, Any] = {}
    for name, value in variables.items():
        kept = walk(value, name, name, None)
        if kept is not _DROP:
            out[name] = kept
    if refusals:
        raise PrivacyError(operation, refusals)
    return PrivacyGateResult(out, dropped)
