"""Contract compatibility from the documents themselves (issue 33): what changed between two registries and
whom each change breaks (change.py), definition by definition (definitions.py), payload schemas by their
format's own rules (jsonschema.py, avro.py, protobuf.py)."""

from gateway.compat.change import Breaks, Change, Mode
from gateway.compat.definitions import compare_registries

__all__ = ["Breaks", "Change", "Mode", "compare_registries"]
