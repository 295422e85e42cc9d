"""One reader for the adapters' options (integer, number, flag, text, with bounds), built on the core's
`gateway.config_values`, so that every adapter and gateway.yaml say a bad value the same way:

    NATS endpoint 'orders.in': option 'ackwait': expected a number above 0, found 'soon'

A bad option raises OptionError, which names the option: `xgate lint`, `run` and a reload locate it (the
document's `protocoloptions/<name>`, or gateway.yaml's `endpoints/<id>/options/<name>`) by that name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway import config_values
from gateway.config_values import ValueProblem, read_flag
from gateway.errors import AdapterError
from protocol_adapters.base import EndpointConfig

__all__ = ["ADDRESS", "OptionError", "OptionReader", "read_flag", "user_info_refusal"]

ADDRESS = "endpoints"  # the option name an address problem is reported under (protocoloptions.endpoints)


class OptionError(AdapterError):
    """An endpoint option no adapter can work with; `option` names it ("" when no single option is at fault)."""

    def __init__(self, message: str, option: str = "") -> None:
        self.option = option
        super().__init__(message)


class OptionReader:
    """Typed reads of one endpoint's options: `config.options` first, then (with `extra`) `config.extra`,
    where gateway.yaml puts the keys of an endpoint it does not know itself."""

    def __init__(self, config: EndpointConfig, protocol: str, *, extra: bool = True) -> None:
        self.config = config
        self.protocol = protocol
        self.extra = extra

    def fail(self, message: str, option: str = "") -> OptionError:
        return OptionError(f"{self.protocol} endpoint {self.config.endpoint_id!r}: {message}", option)

    def value(self, *names: str) -> Any:
        places: tuple[Mapping[str, Any], ...] = (self.config.options, self.config.extra) if self.extra \
            else (self.config.options,)
        for place in places:
            for name in names:
                value = place.get(name)
                # an old-generation document may write an option as a property definition {"value": ...}
                if isinstance(value, Mapping) and "value" in value:
                    value = value["value"]
                if value is not None:
                    return value
        return None

    def _read(self, names: tuple[str, ...], default: Any, reader: Any, **bounds: Any) -> Any:
        value = self.value(*names)
        if value is None:
            return default
        try:
            return reader(value, **bounds)
        except ValueProblem as problem:
            raise self.fail(f"option {names[0]!r}: {problem}", names[0]) from None

    def integer(self, *names: str, default: int | None, least: float | None = None, above: float | None = None,
                most: float | None = None) -> Any:
        return self._read(names, default, config_values.integer, least=least, above=above, most=most)

    def number(self, *names: str, default: float | None, least: float | None = None,
               above: float | None = None, most: float | None = None) -> Any:
        return self._read(names, default, config_values.number, least=least, above=above, most=most)

    def flag(self, *names: str, default: bool) -> bool:
        found: bool = self._read(names, default, config_values.flag)
        return found

    def text(self, *names: str, default: str | None = None, choices: tuple[str, ...] = (),
             lower: bool = False) -> Any:
        value = self.value(*names)
        if value is None or value == "":
            return default
        try:
            return config_values.text(value, choices=choices, lower=lower)
        except ValueProblem as problem:
            raise self.fail(f"option {names[0]!r}: {problem}", names[0]) from None


def user_info_refusal(uri: str) -> str | None:
    """Why a broker uri may not be used as written: it carries credentials (`scheme://user:secret@host`).

    Credentials come only from the settings (`username`, `password`, `password_file`), so that they are
    never written into a document or a uri that ends up in logs; the message shows the uri without them."""
    scheme, sep, rest = uri.partition("://")
    authority = rest.split("/", 1)[0] if sep else ""
    if "@" not in authority:
        return None
    hidden = f"{scheme}://***@{rest.split('@', 1)[1]}"
    return (f"uri {hidden!r} carries credentials: give them as username and password (or password_file) "
            "in gateway.yaml instead")
