"""Spark runner: the shared compiler on executors (bytes shipped, compiled once per digest)."""

from gateway.spark.shipping import RegistryBundle, bundle_from_paths, bundle_from_snapshot, ruleset_for
from gateway.spark.validate import validate_frame

__all__ = ["RegistryBundle", "bundle_from_paths", "bundle_from_snapshot", "ruleset_for", "validate_frame"]
