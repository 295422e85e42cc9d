"""Compiler: a resolved registry -> a Ruleset of closures (pure, synchronous, no I/O)."""

from gateway.compiler.ruleset import Ruleset, compile_registry

__all__ = ["Ruleset", "compile_registry"]
