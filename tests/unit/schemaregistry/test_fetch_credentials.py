"""What the schema registry client added to the remote fetcher: request headers (credentials) that stay with
their origin and their own cache entries, and `max_age` for answers that change."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.loader.fetch import FetchError, RemoteFetcher, RemotePolicy

AUTH = {"Authorization": "Basic eGdhdGU6cHc="}


class Scripted(RemoteFetcher):
    """Answers from a script of url -> (status, location); records what each request carried."""

    def __init__(self, script: dict[str, tuple[int, str | None]]) -> None:
        super().__init__(RemotePolicy(allow=("registry.test", "other.test")))
        self.script = script
        self.sent: list[tuple[str, dict[str, str]]] = []
        self.version = 0

    def _request(self, url: str, deadline: float, headers: Any = None,
                 meta: Any = None) -> tuple[int, str | None, str, bytes]:
        self.sent.append((url, dict(headers or {})))
        status, location = self.script[url]
        self.version += 1
        return status, location, "application/json", str(self.version).encode()


def test_headers_are_sent_and_follow_a_redirect_on_the_same_origin_only() -> None:
    fetcher = Scripted({"http://registry.test/a": (302, "/b"), "http://registry.test/b": (302, "http://other.test/c"),
                        "http://other.test/c": (200, None)})
    fetcher.fetch("http://registry.test/a", headers=AUTH)
    assert fetcher.sent == [("http://registry.test/a", AUTH), ("http://registry.test/b", AUTH),
                            ("http://other.test/c", {})]


def test_an_answer_fetched_with_credentials_is_not_served_without_them() -> None:
    fetcher = Scripted({"http://registry.test/a": (200, None)})
    assert fetcher.fetch("http://registry.test/a", headers=AUTH).data == b"1"
    assert fetcher.fetch("http://registry.test/a", headers=AUTH).data == b"1"  # cached
    assert fetcher.fetch("http://registry.test/a").data == b"2"
    assert len(fetcher.sent) == 2


def test_max_age_zero_asks_again_and_falls_back_to_the_cached_answer() -> None:
    fetcher = Scripted({"http://registry.test/list": (200, None)})
    assert fetcher.fetch("http://registry.test/list", max_age=0).data == b"1"
    assert fetcher.fetch("http://registry.test/list", max_age=0).data == b"2"
    fetcher.script["http://registry.test/list"] = (500, None)
    stale = fetcher.fetch("http://registry.test/list", max_age=0)
    assert stale.data == b"2" and stale.stale == "HTTP status 500"


def test_the_policy_still_decides() -> None:
    fetcher = Scripted({})
    with pytest.raises(FetchError) as refused:
        fetcher.fetch("http://elsewhere.test/subjects", headers=AUTH)
    assert refused.value.refused and fetcher.sent == []
