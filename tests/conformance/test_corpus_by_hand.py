"""The loader, and the pins, against expectations read from a sample of corpus documents by hand."""

from __future__ import annotations

import pytest

from tests.conformance.corpus_by_hand import BY_HAND, by_hand_disagreements
from tests.conformance.corpus_outcomes import lint_outcome, load_expectations, xregistry_corpus
from tests.conftest import conformance_dir


@pytest.mark.parametrize("path", sorted(BY_HAND))
def test_loader_agrees_with_the_document_read_by_hand(path: str) -> None:
    conformance_dir("xregistry")
    outcome = lint_outcome(xregistry_corpus() / path).pinned()
    assert not by_hand_disagreements(path, outcome), (BY_HAND[path]["read"], by_hand_disagreements(path, outcome))


@pytest.mark.parametrize("path", sorted(BY_HAND))
def test_pin_agrees_with_the_document_read_by_hand(path: str) -> None:
    pin = load_expectations()["files"][path]
    assert not by_hand_disagreements(path, pin), (BY_HAND[path]["read"], by_hand_disagreements(path, pin))


def test_the_sample_spans_outcomes() -> None:
    # clean documents, dangling references, a left-out message, a parse error, several generations
    codes = {error.split("@")[0] for entry in BY_HAND.values() for error in entry["errors"]}  # type: ignore[attr-defined]
    assert {"dangling-ref", "message-left-out", "parse"} <= codes
    assert any(not entry["errors"] for entry in BY_HAND.values())
    assert any(path.endswith(".cereg") for path in BY_HAND) and any(path.endswith(".yaml") for path in BY_HAND)
