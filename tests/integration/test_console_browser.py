"""The console (issue 37) in a real browser: Debian's headless Chromium, driven by Selenium through Debian's
chromedriver (deploy/browser/chromium.sh installs both; nothing is downloaded at test time), against a real
`xgate run` between Kafka topics with mixed traffic.

It checks what an operator relies on: the routes page's counts are /metrics' counts; a dead-lettered message's
violation is highlighted at its pointer; "Try a message" gives `xgate check`'s verdict; bodies are hidden when
gateway.yaml says so; no request leaves 127.0.0.1. With XGATE_CONSOLE_SCREENSHOTS=DIR it saves a screenshot of
each page there (the README's come from `XGATE_CONSOLE_SCREENSHOTS=docs/images pytest` on this test).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.harness import REPO, Collector, Gateway, World, prepare, publish, wait_until_live
from tests.integration.profiles import PROFILES
from tests.integration.traffic import KINDS, kind_of_record, message, mixed

pytestmark = pytest.mark.integration

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
COUNT = 300


def _browser(tmp_path: Path) -> Any:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.fail("Debian's chromium and chromedriver are missing: `make browser` installs them")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,1000", f"--user-data-dir={tmp_path / 'chromium'}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def _console_on(world: World, show_bodies: bool) -> None:
    path = world.config_dir / "gateway.yaml"
    settings = yaml.safe_load(path.read_text())
    settings["console"] = {"show_bodies": show_bodies}
    path.write_text(yaml.safe_dump(settings))


def _shadow_candidate(world: World) -> None:
    """DIR/shadow/: the same registry with `v` held to at most 100, so the candidate disagrees on the rest."""
    document = json.loads((world.config_dir / "registry.json").read_text())
    schema = document["endpoints"]["in"]["messages"]["reading"]["dataschema"]
    schema["properties"]["v"]["maximum"] = 100
    (world.config_dir / "shadow").mkdir()
    (world.config_dir / "shadow" / "registry.json").write_text(json.dumps(document))


def _metric(text: str, verdict: str) -> int:
    found = re.search(rf'^xgate_messages_total\{{endpoint="in",verdict="{verdict}"\}} (\S+)$', text, re.MULTILINE)
    return int(float(found.group(1))) if found else 0


def _saved(driver: Any, name: str) -> None:
    folder = os.environ.get("XGATE_CONSOLE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / f"console-{name}.png"))


def _requests_stay_here(driver: Any, base: str) -> None:
    """Every resource the page loaded (and every navigation) came from the gateway's own address."""
    names = driver.execute_script("return performance.getEntriesByType('navigation')"
                                  ".concat(performance.getEntriesByType('resource'))"
                                  ".map(function (e) { return e.name; })")
    assert names and all(name.startswith(base) for name in names), names


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    driver = _browser(tmp_path)
    try:
        yield driver
    finally:
        driver.quit()


def _run(world: World, records: list[dict[str, Any]]) -> tuple[Gateway, Collector]:
    """A gateway with its traffic through: every record arrived where it belongs."""
    expected = world.expected(records)

    async def main() -> tuple[Gateway, Collector]:
        async with Collector(world) as collector:
            gateway = Gateway(world.config_dir)
            try:
                await wait_until_live(world, collector)
                await publish(world, records)
                await collector.wait_for(expected, 120)
            except BaseException:
                gateway.stop()
                raise
            assert all(not (expected[d] - collector.bodies[d]) for d in expected), gateway.output()[-3000:]
            return gateway, collector
    return asyncio.run(main())


def test_the_console_in_a_browser(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    world = prepare(PROFILES["KAFKA"], tmp_path)
    _console_on(world, show_bodies=True)
    _shadow_candidate(world)
    records = mixed("KAFKA", COUNT)
    gateway, _ = _run(world, records)
    base = f"http://127.0.0.1:{gateway.metrics_port}"
    try:
        # routes: the counts shown are /metrics' counts (traffic is over, so neither moves)
        browser.get(f"{base}/ui/routes")
        shown = {e.get_attribute("data-verdict"): int(e.text)
                 for e in browser.find_elements(By.CSS_SELECTOR, 'span.count[data-route="in"]')}
        _, metrics = gateway.scrape("/metrics")
        assert shown == {v: _metric(metrics, v) for v in ("conformant", "nonconformant", "unmatched")}
        assert shown["nonconformant"] > 0 and shown["conformant"] > 0
        _requests_stay_here(browser, base)
        _saved(browser, "routes")

        # dead letters: one whose violation is in the payload, highlighted at its pointer
        browser.get(f"{base}/ui/dead-letters")
        _saved(browser, "dead-letters")
        rows = browser.find_elements(By.CSS_SELECTOR, "table.letters tbody tr")
        assert rows
        link = next(row.find_element(By.TAG_NAME, "a") for row in rows if "dataschema:/" in row.text)
        link.click()
        WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "ol.violations"))
        violation = browser.find_element(By.CSS_SELECTOR, "ol.violations li#v1 code").text
        assert violation.startswith("dataschema:/")
        mark = browser.find_element(By.CSS_SELECTOR, f'mark.bad[data-pointer="{violation[len("dataschema:"):]}"]')
        assert mark.is_displayed() and mark.value_of_css_property("background-color") != "rgba(0, 0, 0, 0)"
        _requests_stay_here(browser, base)
        _saved(browser, "dead-letter")

        browser.get(f"{base}/ui/registry")
        assert "must be" in browser.find_element(By.CSS_SELECTOR, "dl.defs").text
        _saved(browser, "registry")

        # try a message: the verdict `xgate check` gives the same record
        record = next(r for r in records if kind_of_record(r) == "bad-structured")
        checked = subprocess.run([sys.executable, "-m", "gateway.cli", "check", "--registry", str(world.config_dir)],
                                 input=json.dumps(record) + "\n", capture_output=True, text=True, cwd=REPO, check=False)
        expected_verdict = json.loads(checked.stdout.splitlines()[0])["verdict"]
        browser.get(f"{base}/ui/try")
        box = browser.find_element(By.NAME, "message")
        box.clear()
        browser.execute_script("arguments[0].value = arguments[1];", box, json.dumps(record, indent=1))
        browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
        answer = WebDriverWait(browser, 10).until(lambda d: d.find_element(By.ID, "verdict"))
        assert answer.get_attribute("data-verdict") == expected_verdict
        _requests_stay_here(browser, base)
        _saved(browser, "try")
        # shadow: the candidate's disagreements, each with both verdicts
        browser.get(f"{base}/ui/changes")
        disagreements = browser.find_elements(By.CSS_SELECTOR, "details.disagreement")
        assert disagreements and "candidate nonconformant" in disagreements[0].text.replace("\n", " ")
        disagreements[0].click()
        _saved(browser, "changes")
    finally:
        assert gateway.stop() == 0

    # bodies hidden when gateway.yaml says so: the same route started again, a few more messages through
    _console_on(world, show_bodies=False)
    gateway, _ = _run(world, [message("KAFKA", COUNT + seq, KINDS[seq % len(KINDS)]) for seq in range(60)])
    try:
        browser.get(f"http://127.0.0.1:{gateway.metrics_port}/ui/dead-letters")
        browser.find_element(By.CSS_SELECTOR, "table.letters tbody tr a").click()
        WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "section.payload"))
        assert "console.show_bodies is off" in browser.find_element(By.CSS_SELECTOR, "section.payload").text
        assert not browser.find_elements(By.CSS_SELECTOR, "section.payload pre")
    finally:
        assert gateway.stop() == 0
    shutil.rmtree(tmp_path / "chromium", ignore_errors=True)
