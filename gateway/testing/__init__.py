"""Test and demo helpers that are real implementations, not mocks."""
