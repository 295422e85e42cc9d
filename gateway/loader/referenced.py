"""What references point at beyond the documents being loaded: files inside the roots, and fetched URLs.

Every answer is a value or an `Unavailable` saying why not, so the resolver
can report it at the reference that asked. Each file and URL is read at most
once per load; URLs go through the RemoteFetcher (allow-list, timeout, size
cap, cache) and their bytes feed the snapshot digest, so a changed remote
schema is a changed configuration.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from gateway.errors import Diagnostic, Severity
from gateway.loader.bundle import RefUnavailable
from gateway.loader.confine import Confinement
from gateway.loader.decode import decode_text, read_document
from gateway.loader.fetch import Fetched, FetchError, RemoteFetcher
from gateway.loader.generations import normalize_document
from gateway.model import Doc, Ref

# plain schema files whose content is JSON (anything else, .proto or .xsd, stays text)
JSON_SCHEMA_SUFFIXES = (".json", ".avsc", ".jsonschema")
REMOTE_OFF = "remote fetching is off (gateway.yaml `remote.allow` lists no host)"


@dataclass(frozen=True, slots=True)
class Unavailable:
    reason: str
    # policy chose not to fetch (off, or the host is not allowed): not a failure of the document
    refused: bool = False


class ReferencedSources:
    def __init__(self, docs: dict[str, Doc], confinement: Confinement, fetcher: RemoteFetcher | None) -> None:
        self.docs = docs
        self.confinement = confinement
        self.fetcher = fetcher
        self.diagnostics: list[Diagnostic] = []
        # URL -> sha256 of what was fetched, for the snapshot digest
        self.fetched: dict[str, str] = {}
        self._documents: dict[str, Doc | Unavailable] = {}
        self._responses: dict[str, Fetched | Unavailable] = {}

    def remote_refusal(self, url: str) -> str | None:
        """Why policy alone keeps `url` from being fetched, or None."""
        return REMOTE_OFF if self.fetcher is None else self.fetcher.refusal(url)

    # -- registry documents ------------------------------------------------------------------------
    def document(self, ref: Ref) -> Doc | Unavailable:
        """The registry document a `file.json#/...` or `https://...#/...` reference points into."""
        # a URL the loader was given (a gateway.yaml source) answers its own `#/...` pointers without a refetch
        loaded = self.docs.get(ref.file) if ref.kind in ("local", "remote") else None
        if loaded is not None:
            return loaded
        known = self._documents.get(ref.file)
        if known is None:
            known = self._remote_document(ref.file) if ref.kind == "remote" else self._local_document(ref.file)
            self._documents[ref.file] = known
        return known

    def _local_document(self, file: str) -> Doc | Unavailable:
        path = Path(file)
        refusal = self.confinement.refusal(path)
        if refusal is not None:
            return Unavailable(refusal)
        if not path.is_file():
            return Unavailable(f"file {file} does not exist")
        data, problem = read_document(path)
        if data is None:
            return Unavailable(problem.message if problem else f"file {file} cannot be read")
        return _normalized(data, str(path.resolve()), yaml_syntax=path.name.lower().endswith((".yaml", ".yml")))

    def _remote_document(self, url: str) -> Doc | Unavailable:
        fetched = self._fetch(url)
        if isinstance(fetched, Unavailable):
            return fetched
        yaml_syntax = "yaml" in fetched.content_type.lower() or _url_suffix(url) in (".yaml", ".yml")
        return _normalized(fetched.data, url, yaml_syntax=yaml_syntax)

    # -- plain schema files ------------------------------------------------------------------------
    def schema(self, ref: Ref) -> tuple[Any, str] | Unavailable:
        """(content, file or URL) of a whole schema file: parsed when it is JSON, else text."""
        if ref.kind == "remote":
            fetched = self._fetch(ref.file)
            if isinstance(fetched, Unavailable):
                return fetched
            is_json = "json" in fetched.content_type.lower() or _url_suffix(ref.file) in JSON_SCHEMA_SUFFIXES
            return _schema_value(fetched.data, ref.file, is_json)
        path = Path(ref.file)
        refusal = self.confinement.refusal(path)
        if refusal is not None:
            return Unavailable(refusal)
        if not path.is_file():
            return Unavailable(f"file {ref.file} does not exist")
        data, problem = read_document(path)
        if data is None:
            return Unavailable(problem.message if problem else "cannot be read")
        return _schema_value(data, str(path), path.suffix.lower() in JSON_SCHEMA_SUFFIXES)

    def remote_json(self, url: str) -> Any:
        """The JSON document at `url` (a JSON Schema `$ref` target); RefUnavailable says why not."""
        fetched = self._fetch(url)
        if isinstance(fetched, Unavailable):
            raise RefUnavailable(fetched.reason)
        value = _schema_value(fetched.data, url, is_json=True)
        if isinstance(value, Unavailable):
            raise RefUnavailable(value.reason)
        return value[0]

    # -- fetching ----------------------------------------------------------------------------------
    def _fetch(self, url: str) -> Fetched | Unavailable:
        known = self._responses.get(url)
        if known is not None:
            return known
        result: Fetched | Unavailable
        if self.fetcher is None:
            result = Unavailable(REMOTE_OFF, refused=True)
        else:
            try:
                result = self.fetcher.fetch(url)
            except FetchError as exc:
                result = Unavailable(f"{url} is not fetched: {exc}", refused=exc.refused)
        if isinstance(result, Fetched):
            self.fetched[url] = hashlib.sha256(result.data).hexdigest()
            if result.stale is not None:
                self.diagnostics.append(Diagnostic(
                    Severity.WARNING, url, f"refetching failed ({result.stale}); the cached copy is used",
                    code="remote-stale"))
        self._responses[url] = result
        return result


def _url_suffix(url: str) -> str:
    return PurePosixPath(urlsplit(url).path).suffix.lower()


def _text(data: bytes, file: str) -> str | Unavailable:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return Unavailable(f"{file} is not UTF-8 text (byte {exc.start})")


def _normalized(data: bytes, file: str, *, yaml_syntax: bool) -> Doc | Unavailable:
    text = _text(data, file)
    if isinstance(text, Unavailable):
        return text
    raw, problem = decode_text(text, file, yaml_syntax=yaml_syntax)
    if problem is not None:
        return Unavailable(f"{problem.location()}: {problem.message}")
    doc, _ = normalize_document(raw, file)
    return doc


def _schema_value(data: bytes, file: str, is_json: bool) -> tuple[Any, str] | Unavailable:
    text = _text(data, file)
    if isinstance(text, Unavailable) or not is_json:
        return text if isinstance(text, Unavailable) else (text, file)
    value, problem = decode_text(text, file, yaml_syntax=False)
    if problem is not None:
        return Unavailable(f"{problem.location()}: {problem.message}")
    return value, file
