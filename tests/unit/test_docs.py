"""The documentation site builds in strict mode, and nothing a user reads points outside the repository."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """mkdocs.yml turns every broken link, missing anchor and page left out of `nav` into a warning, and
    strict mode makes a warning fail the build."""
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                            "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path)],
                           capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert built.returncode == 0, built.stdout + built.stderr
    built_pages = {path.relative_to(tmp_path).parent.name or "index" for path in tmp_path.rglob("index.html")}
    assert {page.stem for page in PAGES} <= built_pages


@pytest.mark.parametrize("page", [ROOT / "README.md", *PAGES], ids=lambda page: page.name)
def test_nothing_points_outside_the_repository(page: Path) -> None:
    text = page.read_text("utf-8")
    assert "../shared" not in text and "CONFORMANCE.md" not in text and "DESIGN.md" not in text
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a web address, or a place on the same page
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(ROOT) and path.exists(), f"{page.name}: {target}"


def test_the_registry_api_page_cites_tests_that_exist() -> None:
    """docs/registry-api.md names, per point, the test that holds it: `file.py::test_name`, then further
    `test_name`s of the same file. Each must exist, so the page cannot cite a test that was renamed away."""
    page = (ROOT / "docs" / "registry-api.md").read_text("utf-8")
    cited = 0
    for row in (line for line in page.splitlines() if line.startswith("|")):
        current: Path | None = None
        for name, test in re.findall(r"`(?:([\w/]+\.py)(?:::))?(test_\w+)?`", row):
            if name:
                current = ROOT / name if "/" in name else ROOT / "tests" / "unit" / "registry_api" / name
                assert current.exists(), f"registry-api.md cites a missing file: {name}"
            if test:
                assert current is not None, f"registry-api.md names {test} before its file"
                assert re.search(rf"^(async )?def {test}\(", current.read_text("utf-8"), re.MULTILINE), \
                    f"registry-api.md cites {current.name}::{test}, which does not exist"
                cited += 1
    assert cited >= 40
