"""Payload validators: one compiled validator per schema, judged per message."""

from __future__ import annotations

from gateway.model.formats import SchemaFormat, implied_content_types, normalize_schema_format

from .base import PayloadValidator
from .compile import compile_payload_validator

__all__ = [
    "PayloadValidator",
    "SchemaFormat",
    "compile_payload_validator",
    "implied_content_types",
    "normalize_schema_format",
]
