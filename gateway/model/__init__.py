"""Typed values for registry documents after normalization."""

from gateway.model.entities import Doc, Entity, Origin, Ref

__all__ = ["Doc", "Entity", "Origin", "Ref"]
