"""A small JSON Schema (2020-12) validator for the keywords test/conformance/vector.schema.json uses (Debian has no
python3-jsonschema here). An unknown keyword is an error, so the schema cannot outgrow this file silently."""
from __future__ import annotations

import re
from typing import Any, Dict, List

KNOWN = {
    "$schema", "$id", "$defs", "$ref", "title", "description", "type", "properties", "required",
    "additionalProperties", "items", "anyOf", "oneOf", "allOf", "const", "enum", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern", "propertyNames", "minItems",
    "maxItems", "default", "examples", "$comment",
}


def _type_ok(value: Any, t: str) -> bool:
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "string":
        return isinstance(value, str)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "null":
        return value is None
    if t == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    raise ValueError(f"unknown type {t}")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


class Validator:
    def __init__(self, root: Dict[str, Any]) -> None:
        self.root = root

    def errors(self, value: Any, schema: Any = None, path: str = "$") -> List[str]:
        schema = self.root if schema is None else schema
        if schema is True:
            return []
        if schema is False:
            return [f"{path}: not allowed"]
        unknown = set(schema) - KNOWN
        if unknown:
            raise ValueError(f"json_schema.py does not support {sorted(unknown)}")
        out: List[str] = []
        if "$ref" in schema:
            ref = schema["$ref"]
            assert ref.startswith("#/"), ref
            target: Any = self.root
            for part in ref[2:].split("/"):
                target = target[part]
            out += self.errors(value, target, path)
        if "type" in schema:
            types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if not any(_type_ok(value, t) for t in types):
                return out + [f"{path}: expected {schema['type']}"]
        if "const" in schema and not _equal(value, schema["const"]):
            out.append(f"{path}: expected {schema['const']!r}")
        if "enum" in schema and not any(_equal(value, e) for e in schema["enum"]):
            out.append(f"{path}: not one of {schema['enum']}")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if "minimum" in schema and value < schema["minimum"]:
                out.append(f"{path}: below {schema['minimum']}")
            if "maximum" in schema and value > schema["maximum"]:
                out.append(f"{path}: above {schema['maximum']}")
            if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
                out.append(f"{path}: not above {schema['exclusiveMinimum']}")
            if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
                out.append(f"{path}: not below {schema['exclusiveMaximum']}")
        if isinstance(value, str):
            if "minLength" in schema and len(value) < schema["minLength"]:
                out.append(f"{path}: shorter than {schema['minLength']}")
            if "maxLength" in schema and len(value) > schema["maxLength"]:
                out.append(f"{path}: longer than {schema['maxLength']}")
            if "pattern" in schema and not re.search(schema["pattern"], value):
                out.append(f"{path}: does not match {schema['pattern']}")
        if isinstance(value, list):
            if "minItems" in schema and len(value) < schema["minItems"]:
                out.append(f"{path}: fewer than {schema['minItems']} items")
            if "maxItems" in schema and len(value) > schema["maxItems"]:
                out.append(f"{path}: more than {schema['maxItems']} items")
            if "items" in schema:
                for i, item in enumerate(value):
                    out += self.errors(item, schema["items"], f"{path}[{i}]")
        if isinstance(value, dict):
            props = schema.get("properties", {})
            for name in schema.get("required", []):
                if name not in value:
                    out.append(f"{path}.{name}: missing")
            for name, item in value.items():
                if "propertyNames" in schema:
                    out += self.errors(name, schema["propertyNames"], f"{path}.{name} (name)")
                if name in props:
                    out += self.errors(item, props[name], f"{path}.{name}")
                elif "additionalProperties" in schema:
                    out += self.errors(item, schema["additionalProperties"], f"{path}.{name}")
        if "allOf" in schema:
            for sub in schema["allOf"]:
                out += self.errors(value, sub, path)
        if "anyOf" in schema:
            if not any(not self.errors(value, sub, path) for sub in schema["anyOf"]):
                out.append(f"{path}: matches none of anyOf")
        if "oneOf" in schema:
            matches = sum(1 for sub in schema["oneOf"] if not self.errors(value, sub, path))
            if matches != 1:
                out.append(f"{path}: matches {matches} of oneOf (exactly one needed)")
        return out
