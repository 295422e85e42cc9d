"""An executor told to judge with the native core (XGATE_REQUIRE_CORE=1) refuses to judge without it, offline."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gateway.spark import shipping
from gateway.spark.shipping import REQUIRE_CORE, CoreMissing, bundle_from_paths, native_judge_for, require_core

DEMO = Path(__file__).resolve().parents[2] / "config" / "demo"


def test_required_and_missing_names_the_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_CORE, "1")
    monkeypatch.setattr(shipping, "native_available", lambda: False)
    with pytest.raises(CoreMissing, match="cannot be imported by " + sys.executable.replace(".", r"\.")):
        require_core()
    _, bundle = bundle_from_paths([DEMO])
    monkeypatch.setattr(shipping, "_judges", {})
    with pytest.raises(CoreMissing):  # before anything is compiled or cached
        native_judge_for(bundle)


@pytest.mark.parametrize("value", [None, "0", ""])
def test_not_required_judges_in_python(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv(REQUIRE_CORE, raising=False)
    else:
        monkeypatch.setenv(REQUIRE_CORE, value)
    monkeypatch.setattr(shipping, "native_available", lambda: False)
    require_core()  # the Python fallback stays allowed


def test_report_says_where_the_core_comes_from() -> None:
    report = shipping.core_report()
    assert report["python"] == sys.executable
    assert report["core"] is shipping.native_available()
    assert (report["core_file"] is not None) is report["core"]
