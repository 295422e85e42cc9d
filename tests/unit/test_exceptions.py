"""Every exception class xgate defines derives from GatewayError (gateway/errors.py: the root of every
exception xgate raises on purpose), private ones too: a caller that catches GatewayError catches all of
xgate's, and `retriable` is there on each."""

from __future__ import annotations

import importlib
import inspect

from gateway.errors import GatewayError
from tests.unit.test_imports_alone import module_names


def test_every_exception_class_of_the_project_is_a_gateway_error() -> None:
    strays = []
    for name in module_names():
        module = importlib.import_module(name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if value.__module__ == name and issubclass(value, BaseException) and not issubclass(value, GatewayError):
                strays.append(f"{name}.{value.__qualname__}")
    assert strays == []
