"""The one start-up every command shares: gateway.yaml read once, the documents loaded as it allows (http(s)
references fetched as `remote` says, each `sources` registry fetched once), compiled with its limits, and every
problem found reported in one form.

`run`, `capture`, `replay`, `export` and `lint` read the whole gateway.yaml, as `run` does; `check`, `explain`
and `diff` only the sections judging needs (gateway.settings.load_judging_settings), so that they work where
run's routes and secrets are not.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from gateway.compiler import Ruleset, compile_registry
from gateway.errors import Diagnostic, Severity
from gateway.exit_code import ExitCode
from gateway.loader import Snapshot, load_snapshot
from gateway.loader.fetch import fetcher_for
from gateway.loader.sources import RegistrySources
from gateway.routes.credentials import credential_warnings
from gateway.routes.endpoint_checks import endpoint_problems
from gateway.routes.resolve import endpoint_config
from gateway.schemaregistry import registry_schemas
from gateway.settings import SETTINGS_FILES, Settings, load_judging_settings, load_settings, load_settings_file
from protocol_adapters.base import EndpointConfig


@dataclass(frozen=True)
class Loaded:
    """What a command starts from. `problems` are gateway.yaml's and its registry sources'; the documents' own
    are in the snapshot, the compiler's in the ruleset."""

    snapshot: Snapshot
    ruleset: Ruleset
    settings: Settings
    problems: tuple[Diagnostic, ...] = ()

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Every problem, in the order found: the settings are read first."""
        return [*self.problems, *self.snapshot.diagnostics, *self.ruleset.diagnostics]


def settings_file_for(paths: Sequence[str], given: str | None) -> str | None:
    """The gateway.yaml given, or the first one in a given directory."""
    if given is not None:
        return given
    beside = (Path(p) / name for p in paths if Path(p).is_dir() for name in SETTINGS_FILES)
    return next((str(candidate) for candidate in beside if candidate.is_file()), None)


def load_documents(paths: Sequence[str | Path], settings: Settings, problems: Sequence[Diagnostic] = (),
                   sources: RegistrySources | None = None) -> tuple[Snapshot, tuple[Diagnostic, ...]]:
    """The documents of `paths` and of the settings' registry sources (each fetched once, into `sources` when
    given, for a reloader to follow). A source that cannot be fetched is a warning: the command goes on with what
    it has."""
    fetcher = fetcher_for(settings.remote)
    sources = sources if sources is not None else RegistrySources()
    sources.configure(settings.sources)
    problems = (*problems, *sources.start(fetcher))
    snapshot = load_snapshot(list(paths), fetcher=fetcher, schemas=registry_schemas(settings.schemaregistries),
                             documents=sources.documents())
    return snapshot, problems


def load(paths: Sequence[str | Path], settings: Settings, problems: Sequence[Diagnostic] = (),
         sources: RegistrySources | None = None) -> Loaded:
    snapshot, problems = load_documents(paths, settings, problems, sources)
    return Loaded(snapshot, compile_registry(snapshot.registry, snapshot.digest, settings.runtime.limits), settings,
                  problems)


def load_config(config_dir: str | Path, sources: RegistrySources | None = None) -> Loaded:
    """A config directory as `xgate run` starts from it: its whole gateway.yaml, then its documents."""
    settings, problems = load_settings(config_dir)
    return load([config_dir], settings, problems, sources)


def load_registry(paths: Sequence[str], settings_file: str | None = None, *, whole_settings: bool = False) -> Loaded:
    """Documents and directories as the offline commands judge them: with the sections of gateway.yaml (given, or
    the first in a given directory) that judging needs, or with all of it (`lint` reports on the whole file)."""
    path = settings_file_for(paths, settings_file)
    read = load_settings_file if whole_settings else load_judging_settings
    settings, problems = (Settings(), []) if path is None else read(Path(path))
    return load(paths, settings, problems)


def report(diagnostics: Sequence[Diagnostic], stream: TextIO | None = None) -> int:
    """Every diagnostic on stderr, one line each (a document met twice is not news); the number of errors."""
    errors = 0
    for diagnostic in diagnostics:
        if diagnostic.code == "duplicate" and diagnostic.severity is Severity.WARNING:
            continue
        errors += diagnostic.severity is Severity.ERROR
        print(diagnostic, file=stream or sys.stderr)
    return errors


def unusable(command: str, loaded: Loaded, *, strict: bool, endpoint: str | None) -> ExitCode | None:
    """Report the load problems; the exit code when the ruleset cannot be used as asked (validation rule 7),
    else None."""
    errors = report(loaded.diagnostics)
    if strict and errors:
        print(f"xgate {command}: {errors} load error(s) and --strict is set", file=sys.stderr)
        return ExitCode.USAGE
    if not any(rules.definitions for rules in loaded.ruleset.endpoints.values()):
        print(f"xgate {command}: no endpoint with message definitions could be compiled", file=sys.stderr)
        return ExitCode.USAGE
    if endpoint and endpoint not in loaded.ruleset.endpoints:
        print(f"xgate {command}: --endpoint {endpoint!r} is not in the registry "
              f"(known: {', '.join(sorted(loaded.ruleset.endpoints)) or 'none'})", file=sys.stderr)
        return ExitCode.USAGE
    return None


def connecting_diagnostics(loaded: Loaded) -> list[Diagnostic]:
    """The problems of a command that connects to brokers (`run`, `capture`, `replay`): besides the load's, the
    credentials a document should not carry."""
    return [*loaded.diagnostics, *credential_warnings(loaded.snapshot.registry)]


def endpoint_to_connect(config_dir: str, endpoint_id: str, command: str, role: str) -> EndpointConfig | None:
    """The endpoint a capture (role "source") or replay ("sink") talks to, or None after saying why it cannot:
    checked as `run` checks a route's endpoints, before connecting."""
    loaded = load_config(config_dir)
    report(connecting_diagnostics(loaded))
    registry = loaded.snapshot.registry
    if endpoint_id not in registry.endpoints:
        print(f"xgate {command}: endpoint {endpoint_id!r} is not in the registry "
              f"(known: {', '.join(sorted(registry.endpoints)) or 'none'})", file=sys.stderr)
        return None
    config = endpoint_config(registry, endpoint_id, loaded.settings)
    problems = endpoint_problems(registry, loaded.settings, config, role, f"the endpoint of xgate {command}")
    for problem in problems:
        print(problem, file=sys.stderr)
    return None if problems else config


def add_settings_option(command: argparse.ArgumentParser) -> None:
    command.add_argument("--settings", metavar="FILE",
                         help="gateway.yaml whose `remote` section allows fetching http(s) references "
                              "(default: a gateway.yaml in a given directory; without one nothing is fetched)")
