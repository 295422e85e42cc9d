"""Reading configuration values the way gateway.yaml and documents write them: one reader per kind, with
bounds, and one message form (`expected <what>, found <value>`) for gateway.yaml settings and adapter options;
`${VAR}` expansion, secrets from `<name>_file`, and problems as Diagnostics, for every gateway.yaml section's
reader (gateway/settings.py and gateway/schemaregistry/config.py both use them; neither imports the other back).

Text counts where a number or flag is expected: `${XGATE_INFLIGHT:-1000}` expands to text, and so does a
value from an environment variable. A value of the wrong kind raises ValueProblem, whose text is the reason.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gateway.errors import Diagnostic, GatewayError, Severity

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")


class ValueProblem(GatewayError, ValueError):
    """A value that is not of the kind expected; str() is the reason, `expected ..., found ...`."""


def read_flag(value: Any) -> bool | None:
    """A boolean written as true/false, or as the text true/false, 1/0, yes/no; None when it is none of those."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    return None


def flag(value: Any) -> bool:
    found = read_flag(value)
    if found is None:
        raise ValueProblem(f"expected true or false, found {value!r}")
    return found


def _bounds(least: float | None, above: float | None, most: float | None) -> str:
    parts = [f"of at least {least:g}" if least is not None else "", f"above {above:g}" if above is not None else "",
             f"of at most {most:g}" if most is not None else ""]
    return " " + " and ".join(p for p in parts if p) if any(parts) else ""


def _check(number: float, kind: str, value: Any, least: float | None, above: float | None,
           most: float | None) -> None:
    if (least is not None and number < least) or (above is not None and number <= above) or \
            (most is not None and number > most):
        raise ValueProblem(f"expected {kind}{_bounds(least, above, most)}, found {value!r}")


def integer(value: Any, *, least: float | None = None, above: float | None = None,
            most: float | None = None) -> int:
    """An integer (or its decimal, 0x hexadecimal text, or an integral float) within the bounds."""
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            number = int(text, 10)
        except ValueError:
            try:
                number = int(text, 0)  # 0x83
            except ValueError:
                number = None
    if number is None:
        raise ValueProblem(f"expected an integer{_bounds(least, above, most)}, found {value!r}")
    _check(number, "an integer", value, least, above, most)
    return number


def number(value: Any, *, least: float | None = None, above: float | None = None,
           most: float | None = None) -> float:
    """A finite number (or its text) within the bounds."""
    found: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        found = float(value)
    elif isinstance(value, str):
        try:
            found = float(value.strip())
        except ValueError:
            found = None
    if found is None or not math.isfinite(found):
        raise ValueProblem(f"expected a number{_bounds(least, above, most)}, found {value!r}")
    _check(found, "a number", value, least, above, most)
    return found


def text(value: Any, *, choices: tuple[str, ...] = (), lower: bool = False) -> str:
    """Non-empty text; with `choices`, one of them (compared case-insensitively when `lower`)."""
    if not isinstance(value, str) or not value.strip():
        what = f"one of {', '.join(choices)}" if choices else "non-empty text"
        raise ValueProblem(f"expected {what}, found {value!r}")
    found = value.strip().lower() if lower else value
    if choices and found not in choices:
        raise ValueProblem(f"expected one of {', '.join(choices)}, found {value!r}")
    return found


def optional_integer(raw: dict[str, Any], key: str, where: str, problems: list[str], *,
                     least: float | None = None) -> int | None:
    """A section's optional integer setting `raw[key]`: None when absent or null, else the integer within the
    bounds, or None with the problem said (`<where>/<key>: expected ...`)."""
    if raw.get(key) is None:
        return None
    try:
        return integer(raw[key], least=least)
    except ValueProblem as problem:
        problems.append(f"{where}/{key}: {problem}")
        return None


def section(raw: Any, where: str, keys: tuple[str, ...], problems: list[str]) -> dict[str, Any] | None:
    """A settings mapping, each unknown key a problem; None when absent or not a mapping (said)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a mapping ({', '.join(keys)})")
        return None
    problems.extend(unknown_settings(raw, keys, where))
    return raw


def unknown_settings(raw: dict[Any, Any], known: Iterable[str], where: str) -> list[str]:
    """One problem per key of a settings mapping that is not a known setting, naming the known ones."""
    names = tuple(known)
    return [f"{where}/{key}: unknown setting (known: {', '.join(names)})"
            for key in sorted(set(raw) - set(names), key=str)]


def expand_env(value: Any, where: str, problems: list[str]) -> Any:
    """`${VAR}` and `${VAR:-default}` from the environment, recursively."""
    if isinstance(value, str):
        def replace(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in os.environ:
                return os.environ[name]
            if default is not None:
                return default
            problems.append(f"{where}: environment variable {name} is not set")
            return ""
        return _ENV.sub(replace, value)
    if isinstance(value, dict):
        return {k: expand_env(v, f"{where}/{k}", problems) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, f"{where}/{i}", problems) for i, v in enumerate(value)]
    return value


def read_secret(raw: dict[str, Any], name: str, where: str, problems: list[str]) -> str | None:
    """`name` as written (usually `${ENV_VAR}`), or the content of the file `<name>_file` names."""
    if raw.get(name) is not None and raw.get(f"{name}_file") is not None:
        problems.append(f"{where}/{name}_file: give either {name} or {name}_file, not both")
    if raw.get(name) is not None:
        return str(raw[name])
    path = raw.get(f"{name}_file")
    if path is None:
        return None
    try:
        return Path(str(path)).read_text("utf-8").strip()
    except OSError as exc:
        problems.append(f"{where}/{name}_file: cannot read {path}: {exc.strerror}")
        return None


def settings_diagnostics(path: str | Path, problems: list[str]) -> list[Diagnostic]:
    """Errors of gateway.yaml from "pointer: reason" texts, as every section's reader collects them."""
    return [Diagnostic(Severity.ERROR, str(path), text.split(": ", 1)[1], pointer=text.split(": ", 1)[0],
                       code="settings") for text in problems]
