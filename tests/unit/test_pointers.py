"""RFC 6901 escapes (gateway/pointers.py), the one copy every diagnostic, violation and reference uses."""

from __future__ import annotations

import pytest

from gateway import pointers


@pytest.mark.parametrize(("key", "token"), [("a/b", "a~1b"), ("m~n", "m~0n"), ("~1", "~01"), ("/~", "~1~0"),
                                            ("", ""), ("plain", "plain")])
def test_a_key_escapes_and_comes_back(key: str, token: str) -> None:
    assert pointers.escape(key) == token
    assert pointers.unescape(token) == key


def test_the_pointer_of_segments_follows_rfc_6901_examples() -> None:
    assert pointers.pointer([]) == ""
    assert pointers.pointer(["foo", 0]) == "/foo/0"
    assert pointers.pointer(["a/b", "m~n", ""]) == "/a~1b/m~0n/"


def test_follow_reads_a_fragment_and_says_when_nothing_is_there() -> None:
    document = {"a/b": [{"~x": 1}], "n": None}
    assert pointers.follow(document, "/a~1b/0/~0x") == (True, 1)
    assert pointers.follow(document, "") == (True, document)
    assert pointers.follow(document, "/n") == (True, None)  # a null found is not a miss
    assert pointers.follow(document, "/a~1b/1") == (False, None)
    assert pointers.follow(document, "/missing") == (False, None)
