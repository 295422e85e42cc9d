"""Remote xRegistry sources (gateway.yaml `sources:`): registries xgate follows beside its local files.

Each source is fetched as `GET <url>?inline` (the whole registry as one document, which is what xgate's own
`/registry?inline` serves) through the RemoteFetcher, so the `remote.allow` list, timeout and size cap apply.
The body is one more registry document, named by its URL: diagnostics name the source, and references inside
it resolve against that URL, never against local files (gateway/loader/refs.py keeps a fetched document's
relative and `file:` references on its server, where the same allow-list applies).

A poll sends If-None-Match when the server gave an ETag (304: unchanged); otherwise an answer with the same
body digest is unchanged (the registry `epoch` is kept for the log, but a root epoch does not rise when only a
nested message changes, so it cannot decide alone). A failed poll (refused, unreachable, an error status, a
body that is not a JSON object) keeps the last good copy of that source only.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from gateway.errors import Diagnostic, Severity
from gateway.loader.decode import decode_bytes
from gateway.loader.fetch import FetchError, RemoteFetcher

MIN_INTERVAL = 1.0
DEFAULT_INTERVAL = 30.0


@dataclass(frozen=True, slots=True)
class RegistrySource:
    """One entry of `sources:`: the registry root URL, its poll interval and the credentials it needs."""

    url: str                                       # the registry root, without `?inline`
    interval: float = DEFAULT_INTERVAL
    bearer_token: str | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def request_url(self) -> str:
        return self.url + "?inline"

    def headers(self) -> dict[str, str]:
        """The Authorization header, if the source has credentials."""
        if self.bearer_token is not None:
            return {"Authorization": f"Bearer {self.bearer_token}"}
        if self.username is not None and self.password is not None:
            token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode("ascii")
            return {"Authorization": f"Basic {token}"}
        return {}


class Outcome(str, Enum):
    CHANGED = "changed"
    UNCHANGED = "unchanged"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Poll:
    source: RegistrySource
    outcome: Outcome
    detail: str = ""               # why it failed, or what changed (epoch)


@dataclass
class _State:
    data: bytes | None = None      # the last good body
    etag: str | None = None
    digest: str | None = None
    epoch: Any = None
    error: str | None = None       # the last poll's failure, None after a success
    attempted: bool = False
    due: float = 0.0               # monotonic time of the next poll


class RegistrySources:
    """The sources in force and what was last fetched from each (kept across settings reloads per URL)."""

    def __init__(self, sources: Sequence[RegistrySource] = ()) -> None:
        self.sources: tuple[RegistrySource, ...] = ()
        self._states: dict[str, _State] = {}
        self.configure(sources)

    def configure(self, sources: Sequence[RegistrySource]) -> None:
        """Follow `sources` from now on; a URL still listed keeps its last good copy."""
        self.sources = tuple(sources)
        self._states = {s.url: self._states.get(s.url) or _State() for s in self.sources}

    def state(self, source: RegistrySource) -> _State:
        return self._states.get(source.url) or _State()

    def documents(self) -> dict[str, bytes]:
        """The last good body of each source, by URL, in the listed order (earlier wins on a duplicate)."""
        return {s.url: state.data for s in self.sources if (state := self._states[s.url]).data is not None}

    def unattempted(self) -> list[RegistrySource]:
        return [s for s in self.sources if not self._states[s.url].attempted]

    def due(self, now: float) -> list[RegistrySource]:
        return [s for s in self.sources if self._states[s.url].due <= now]

    def next_due(self) -> float | None:
        return min((self._states[s.url].due for s in self.sources), default=None)

    def start(self, fetcher: RemoteFetcher | None) -> list[Diagnostic]:
        """Fetch every source not fetched yet (startup, `xgate check`); a failure is a warning: xgate goes on
        with what it has and keeps polling."""
        polls = [self.poll(source, fetcher) for source in self.unattempted()]
        return [Diagnostic(Severity.WARNING, p.source.url, f"registry source not fetched ({p.detail}); "
                           "going on without it until a poll succeeds", code="source")
                for p in polls if p.outcome is Outcome.FAILED]

    def poll(self, source: RegistrySource, fetcher: RemoteFetcher | None) -> Poll:
        """Ask the source once (blocking: run it off the event loop) and keep its body if it changed."""
        state = self._states.get(source.url) or _State()
        state.attempted = True
        state.due = time.monotonic() + source.interval
        try:
            if fetcher is None:
                raise FetchError("remote fetching is off (gateway.yaml `remote.allow` lists no host)", refused=True)
            fetched = fetcher.poll(source.request_url, headers=source.headers(), etag=state.etag)
            if fetched.not_modified:
                return self._succeeded(state, source, Outcome.UNCHANGED, "")
            digest = hashlib.sha256(fetched.data).hexdigest()
            if digest == state.digest:  # the last good copy's body: read already, not parsed again
                state.etag = fetched.etag
                return self._succeeded(state, source, Outcome.UNCHANGED, "")
            epoch = _epoch(fetched.data, source.request_url)
        except (FetchError, ValueError) as exc:
            state.error = str(exc)
            return Poll(source, Outcome.FAILED, state.error)
        state.etag = fetched.etag
        state.data, state.digest, state.epoch = fetched.data, digest, epoch
        return self._succeeded(state, source, Outcome.CHANGED, f"epoch {epoch}")

    @staticmethod
    def _succeeded(state: _State, source: RegistrySource, outcome: Outcome, detail: str) -> Poll:
        state.error = None
        return Poll(source, outcome, detail)


def _epoch(data: bytes, url: str) -> Any:
    """The registry's `epoch`; ValueError when the body is not one JSON object within the document limits (a
    broken answer is a failed poll, not a new document)."""
    value, problem = decode_bytes(data, url, yaml_syntax=False)
    if problem is not None:
        raise ValueError(f"the answer is not JSON xgate reads ({problem.message})")
    if not isinstance(value, dict):
        raise ValueError(f"the answer is not a registry document (a JSON {type(value).__name__}, not an object)")
    return value.get("epoch")
