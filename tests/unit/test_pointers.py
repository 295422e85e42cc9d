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
