"""gateway.yaml `console`: the operator's web console under `/ui` on the metrics address (gateway/console).

```yaml
console:                      # present (even empty) turns the console on; absent or `false` leaves it off
  show_bodies: true           # payloads and header values in the console (default: on when the metrics
                              # address is a loopback one, off otherwise)
  redact: [/card/number, authorization]   # JSON pointers into payloads, and header or attribute names,
                                          # always shown as "(redacted)"
  dead_letters: 50            # the latest nonconformant and unmatched messages kept per route
  max_bytes: 4194304          # and at most this many bytes of them in all (the oldest go first)
```

The console is read-only and served with the metrics server's TLS and basic auth (`metrics:`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway import config_values

KEYS = ("show_bodies", "redact", "dead_letters", "max_bytes")
DEFAULT_DEAD_LETTERS = 50
DEFAULT_MAX_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ConsoleSettings:
    show_bodies: bool | None = None   # None: on for a loopback metrics address, off otherwise
    redact: tuple[str, ...] = ()
    dead_letters: int = DEFAULT_DEAD_LETTERS
    max_bytes: int = DEFAULT_MAX_BYTES


def read_console(present: bool, raw: Any, problems: list[str]) -> ConsoleSettings | None:
    """The `console` section: None when absent or `false`; `console:` alone, `true` or a mapping turn it on."""
    where = "/console"
    if not present or raw is False:
        return None
    if raw is None or raw is True:
        return ConsoleSettings()
    found = len(problems)
    section = config_values.section(raw, where, KEYS, problems)
    if section is None:
        return None
    show: bool | None = None
    if section.get("show_bodies") is not None:
        show = config_values.read_flag(section["show_bodies"])
        if show is None:
            problems.append(f"{where}/show_bodies: expected true or false, found {section['show_bodies']!r}")
    redact = section.get("redact") or []
    if not isinstance(redact, list) or not all(isinstance(item, str) and item for item in redact):
        problems.append(f"{where}/redact: expected a list of JSON pointers and header names, found {redact!r}")
        redact = []
    kept = config_values.optional_integer(section, "dead_letters", where, problems, least=1)
    cap = config_values.optional_integer(section, "max_bytes", where, problems, least=1024)
    if len(problems) > found:
        return None
    return ConsoleSettings(show, tuple(redact), kept or DEFAULT_DEAD_LETTERS, cap or DEFAULT_MAX_BYTES)
