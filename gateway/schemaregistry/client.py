"""Requests to a Confluent-compatible registry, through the remote-fetch policy (allow-list, timeout, size
cap, cache) of gateway/loader/fetch.py, at load time only.

Endpoints used (the REST API Confluent Schema Registry, Karapace, Redpanda and Apicurio's ccompat layer
serve alike):

    GET /subjects/{subject}/versions/{version}  -> {"subject", "version", "id", "schema", "schemaType"}
    GET /subjects/{subject}/versions            -> [1, 2, 3]
    GET /schemas/ids/{id}                       -> {"schema", "schemaType"}

`schemaType` absent means AVRO. A schema with `references` (to other subjects) is refused: xgate would have
to fetch and compile them together, which it does not do yet.

A numbered version and an id never change, so they come from the fetcher's cache while it is fresh; the
list of a subject's versions does change, so it is asked again on every load (a reload sees a version
registered since), with the cached list standing in when the registry cannot be reached.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from gateway.errors import GatewayError
from gateway.loader.fetch import FetchError, RemoteFetcher
from gateway.schemaregistry.config import SchemaRegistrySettings
from gateway.schemaregistry.model import SCHEMA_TYPES, RegisteredSchema


class RegistryError(GatewayError):
    """What the registry would not or could not give; `refused` when policy forbade asking."""

    def __init__(self, message: str, *, refused: bool = False) -> None:
        self.refused = refused
        super().__init__(message)


class RegistryClient:
    """One registry during one load. `seen(url, sha256, stale)` is told of every answer (the snapshot
    digest covers what was fetched; a stale answer is reported)."""

    def __init__(self, settings: SchemaRegistrySettings, fetcher: RemoteFetcher,
                 seen: Callable[[str, str, str | None], None]) -> None:
        self.settings = settings
        self.fetcher = fetcher
        self.seen = seen
        self._answers: dict[str, Any] = {}

    def refusal(self) -> str | None:
        """Why policy forbids asking this registry at all (its host is not on `remote.allow`), or None."""
        return self.fetcher.refusal(self.settings.url + "/subjects")

    def _get(self, path: str, *, fresh: bool = False) -> Any:
        url = self.settings.url + path
        if url in self._answers:
            answer = self._answers[url]
            if isinstance(answer, RegistryError):
                raise answer
            return answer
        try:
            try:
                fetched = self.fetcher.fetch(url, headers=self.settings.headers(), max_age=0 if fresh else None)
            except FetchError as exc:
                raise RegistryError(f"GET {url}: {exc}", refused=exc.refused) from exc
            self.seen(url, hashlib.sha256(fetched.data).hexdigest(), fetched.stale)
            try:
                answer = json.loads(fetched.data)
            except ValueError as exc:
                raise RegistryError(f"GET {url}: the answer is not JSON ({exc})") from exc
        except RegistryError as exc:
            self._answers[url] = exc
            raise
        self._answers[url] = answer
        return answer

    def subject_version(self, subject: str, version: int) -> RegisteredSchema:
        path = f"/subjects/{quote(subject, safe='')}/versions/{version}"
        answer = self._get(path)
        found = _registered(answer, self.settings.url + path)
        got_version = answer.get("version")
        if got_version is not None and got_version != version:
            raise RegistryError(f"GET {self.settings.url + path}: the answer is version {got_version!r}")
        return RegisteredSchema(found.id, found.schema_type, found.schema, subject, version)

    def versions(self, subject: str) -> list[int]:
        path = f"/subjects/{quote(subject, safe='')}/versions"
        answer = self._get(path, fresh=True)
        if not isinstance(answer, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in answer):
            raise RegistryError(f"GET {self.settings.url + path}: expected a list of version numbers, "
                                f"found {_preview(answer)}")
        if not answer:
            raise RegistryError(f"GET {self.settings.url + path}: the subject {subject!r} has no versions")
        return sorted(set(answer))

    def schema(self, schema_id: int) -> RegisteredSchema:
        path = f"/schemas/ids/{schema_id}"
        found = _registered(self._get(path), self.settings.url + path, schema_id)
        return found


def _registered(answer: Any, url: str, schema_id: int | None = None) -> RegisteredSchema:
    if not isinstance(answer, dict):
        raise RegistryError(f"GET {url}: expected a JSON object, found {_preview(answer)}")
    found_id = answer.get("id", schema_id)
    if not isinstance(found_id, int) or isinstance(found_id, bool) or not 0 <= found_id < 2**32:
        raise RegistryError(f"GET {url}: the answer has no schema id (`id`)")
    schema = answer.get("schema")
    if not isinstance(schema, str):
        raise RegistryError(f"GET {url}: the answer has no `schema` text")
    schema_type = answer.get("schemaType") or "AVRO"
    if not isinstance(schema_type, str) or schema_type.upper() not in SCHEMA_TYPES:
        raise RegistryError(f"GET {url}: schemaType {schema_type!r} is not one of {', '.join(SCHEMA_TYPES)}")
    if answer.get("references"):
        raise RegistryError(f"GET {url}: the schema has `references` to other subjects, which xgate does not "
                            "follow; register a self-contained schema")
    return RegisteredSchema(found_id, schema_type.upper(), schema)


def _preview(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."
