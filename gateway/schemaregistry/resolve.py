"""Resolve a message definition's registry reference at load time into a RegistryPayloadSchema.

The loader's Resolver asks `SchemaRegistries.resolve` first for every schema reference; None means the
reference is not a registry's and the Resolver goes on as before. Outcomes, as for other references
(docs/decisions.md): a registry that policy keeps from being asked (remote fetching off, or its
host not on `remote.allow`) is a warning and the payload is not validated; a reference to a registry
that is not configured, a subject outside the registry's `subjects`, or an answer that is an error,
is an error and the message is left out (validating it without its schema would let anything through).

Allowed ids (what a payload's wire-format header may carry):

- `.../versions/<n>`: the id of that version only;
- `.../versions/latest`: the ids of every version the subject has when loading (at most the newest
  MAX_VERSIONS), so producers still on an older registered version pass; a version registered later is
  allowed from the next reload on;
- `.../schemas/ids/<id>`: that id.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from gateway.loader.context import Reporter, Resolved
from gateway.loader.referenced import REMOTE_OFF, ReferencedSources
from gateway.model import Origin, Ref
from gateway.model.formats import normalize_schema_format
from gateway.schemaregistry.client import RegistryClient, RegistryError
from gateway.schemaregistry.config import SchemaRegistrySettings
from gateway.schemaregistry.model import SCHEMA_TYPES, RegisteredSchema, RegistryPayloadSchema
from gateway.schemaregistry.references import RegistryRef, parse_reference

MAX_VERSIONS = 100
CODE = "schema-registry"


def registry_schemas(settings: Mapping[str, SchemaRegistrySettings]) -> Callable[[ReferencedSources], SchemaRegistries]:
    """What `load_snapshot(schemas=...)` takes: the configured registries, made for each load's sources."""
    return functools.partial(SchemaRegistries, settings)


class SchemaRegistries:
    """The configured registries during one load: clients, and the ids seen per registry."""

    def __init__(self, settings: Mapping[str, SchemaRegistrySettings], sources: ReferencedSources) -> None:
        self.settings = dict(settings)
        self.sources = sources
        self._clients: dict[str, RegistryClient] = {}
        self._known: dict[str, dict[int, str]] = {}

    def resolve(self, ref: Ref, fmt: Any, where: Origin, resolver: Reporter) -> Resolved | None:
        """(schema, note, ok) as `Resolver._follow_schema` returns, or None for a reference that is not a
        registry's."""
        if ref.kind != "remote":
            return None
        parsed = parse_reference(ref.file, self.settings)
        if parsed is None:
            return None
        if isinstance(parsed, str):
            resolver.error(where, f"schema registry reference {parsed}", CODE)
            return None, None, False
        if self.sources.fetcher is None:
            return self._not_fetched(parsed, REMOTE_OFF, where, resolver)
        if parsed.registry is None:
            known = ", ".join(sorted(self.settings)) or "none"
            resolver.error(where, f"{parsed.text!r} names the schema registry {parsed.name!r}, which gateway.yaml "
                           f"`schemaregistries` does not configure (configured: {known})", CODE)
            return None, None, False
        client = self._client(parsed.registry, resolver, where)
        refusal = client.refusal()
        if refusal is not None:
            return self._not_fetched(parsed, refusal, where, resolver)
        subjects = parsed.registry.subjects
        if parsed.subject is not None and subjects and parsed.subject not in subjects:
            resolver.error(where, f"{parsed.text!r}: subject {parsed.subject!r} is not one of schemaregistries."
                           f"{parsed.registry.name}.subjects ({', '.join(subjects)})", CODE)
            return None, None, False
        try:
            allowed = self._allowed(client, parsed, resolver, where)
        except RegistryError as exc:
            resolver.error(where, f"schema registry reference {parsed.text!r} does not resolve: {exc}", CODE)
            return None, None, False
        return self._payload(parsed, allowed, fmt, client, where, resolver)

    # -- steps ------------------------------------------------------------------------------------------
    def _not_fetched(self, parsed: RegistryRef, reason: str, where: Origin, resolver: Reporter) -> Resolved:
        note = f"schema {parsed.text} is not fetched, so the payload is not validated: {reason}"
        resolver.warn(where, note, "remote-schema")
        return None, note, True

    def _client(self, registry: SchemaRegistrySettings, resolver: Reporter, where: Origin) -> RegistryClient:
        client = self._clients.get(registry.name)
        if client is None:
            assert self.sources.fetcher is not None

            def seen(url: str, sha: str, stale: str | None) -> None:
                self.sources.fetched[url] = sha  # the snapshot digest covers what the registry said
                if stale is not None:
                    resolver.warn(Origin(url, ""), f"asking the schema registry again failed ({stale}); the answer "
                                  "fetched before is used", "remote-stale")
            client = self._clients[registry.name] = RegistryClient(registry, self.sources.fetcher, seen)
            self._known[registry.name] = {}
            if client.refusal() is None:
                self._prefetch(client, resolver, where)
        return client

    def _prefetch(self, client: RegistryClient, resolver: Reporter, where: Origin) -> None:
        """The configured `subjects`, so that their ids are known (an id of theirs that a definition does
        not allow is then reported as not allowed, not as unknown)."""
        for subject in client.settings.subjects:
            try:
                for version in client.versions(subject)[-MAX_VERSIONS:]:
                    self._remember(client, client.subject_version(subject, version))
            except RegistryError as exc:
                resolver.warn(where, f"subject {subject!r} of schema registry {client.settings.name!r} was not "
                              f"fetched: {exc}", CODE)

    def _remember(self, client: RegistryClient, schema: RegisteredSchema) -> RegisteredSchema:
        self._known[client.settings.name].setdefault(schema.id, schema.label)
        return schema

    def _allowed(self, client: RegistryClient, parsed: RegistryRef, resolver: Reporter,
                 where: Origin) -> tuple[RegisteredSchema, ...]:
        if parsed.schema_id is not None:
            return (self._remember(client, client.schema(parsed.schema_id)),)
        assert parsed.subject is not None
        if parsed.version is not None:
            return (self._remember(client, client.subject_version(parsed.subject, parsed.version)),)
        versions = client.versions(parsed.subject)
        if len(versions) > MAX_VERSIONS:
            resolver.warn(where, f"subject {parsed.subject!r} has {len(versions)} versions; the newest "
                          f"{MAX_VERSIONS} are allowed", CODE)
            versions = versions[-MAX_VERSIONS:]
        return tuple(self._remember(client, client.subject_version(parsed.subject, v)) for v in versions)

    def _payload(self, parsed: RegistryRef, allowed: tuple[RegisteredSchema, ...], fmt: Any, client: RegistryClient,
                 where: Origin, resolver: Reporter) -> Resolved:
        default = allowed[-1]  # the named version or id; the newest version for `latest`
        declared = normalize_schema_format(fmt) if isinstance(fmt, str) else None
        for schema in allowed:
            kind = normalize_schema_format(SCHEMA_TYPES[schema.schema_type])
            if declared is not None and kind is not None and declared.kind != kind.kind:
                resolver.error(where, f"dataschemaformat {fmt!r} does not match schema {schema.label} of "
                               f"{parsed.text!r}, which the registry holds as {schema.schema_type}", CODE)
                return None, None, False
        name = fmt if declared is not None and isinstance(fmt, str) else SCHEMA_TYPES[default.schema_type]
        known = MappingProxyType(self._known[client.settings.name])
        url = parsed.url(client.settings.url)
        return RegistryPayloadSchema(name, default.schema, parsed.selector, Origin(url, ""), client.settings.name,
                                     parsed.text, allowed, default.id, known), None, True
