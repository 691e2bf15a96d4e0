"""The forges' published JSON schemas (tests/forge_schemas) as validators."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

SCHEMAS = Path(__file__).resolve().parent.parent / "forge_schemas"


def validator(name: str, pointer: str = "") -> Draft202012Validator:
    schemas = {p.name: json.loads(p.read_text()) for p in SCHEMAS.glob("*.json")}
    registry: Registry[Any] = Registry().with_resources(
        (name, Resource.from_contents(schema)) for name, schema in schemas.items()
    )
    schema = {"$ref": f"{name}{pointer}"}
    return Draft202012Validator(schema, registry=registry)
