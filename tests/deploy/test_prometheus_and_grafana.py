"""deploy/prometheus and deploy/grafana: promtool checks, rule unit tests, and the metric names and labels they use.

Every PromQL expression in the rules file and in the dashboard may only name series that
gateway/metrics/names.py exports, and only with labels those metrics carry (plus job and instance,
which Prometheus adds, and le on histogram buckets). promtool comes from deploy/prometheus/install.sh.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.metrics import names
from gateway.metrics.instruments import ACTIONS, VERDICTS
from gateway.verdict import Rule

REPO = Path(__file__).resolve().parents[2]
PROMETHEUS = REPO / "deploy" / "prometheus"
INSTALL = PROMETHEUS / "install.sh"
CONFIG = PROMETHEUS / "prometheus.yml"
RULES = PROMETHEUS / "rules" / "xgate.rules.yml"
RULE_TESTS = PROMETHEUS / "rules" / "xgate.rules.test.yml"
DASHBOARD = REPO / "deploy" / "grafana" / "xgate-dashboard.json"
REGISTRY_UNREACHABLE = 75  # install.sh's exit code when no package registry answers

EXPORTED = {series for metric in names.ALL for series in names.exported_series(metric)}
TARGET_LABELS = frozenset({"job", "instance"})  # added by Prometheus to every scraped series
SERIES_LABELS: dict[str, frozenset[str]] = {
    series: frozenset(metric.labels) | TARGET_LABELS | ({"le"} if series.endswith("_bucket") else set())
    for metric in names.ALL for series in names.exported_series(metric)
}
# fixed vocabularies of label values (endpoint, destination, messagegroup and message come from the registry)
LABEL_VALUES: dict[str, frozenset[str]] = {
    "verdict": frozenset(VERDICTS),
    "action": frozenset(ACTIONS),
    "rule": frozenset(rule.value for rule in Rule),
    "outcome": frozenset({"applied", "unchanged", "failed"}),
    "role": frozenset({"source", "sink"}),
    "retriable": frozenset({"true", "false"}),
}
REQUIRED_ALERTS = {
    "XgateNonconformanceSpike", "XgateUnknownMessageSpike", "XgateReloadFailed", "XgateAdapterDown",
    "XgateDeadLetterDeliveryFailing", "XgateDeliveryFailuresNonRetriable", "XgateDeliveryFailuresSustained",
    "XgateConfigStale", "XgateTargetDown",
}

STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
XGATE_NAME = re.compile(r"(?<![\w:])xgate_[a-z0-9_]+(?![\w:])")
RECORDED_NAME = re.compile(r"(?<![\w:])[a-zA-Z_]\w*:[\w:]+")
SELECTOR = re.compile(r"(?<![\w:])((?:xgate_[a-z0-9_]+|[a-zA-Z_]\w*:[\w:]+))\s*\{([^}]*)\}")
MATCHER = re.compile(r'([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
LABEL_VALUES_QUERY = re.compile(r"label_values\(\s*([\w:]+)\s*(?:\{[^}]*\})?\s*,\s*(\w+)\s*\)")
LEGEND_LABEL = re.compile(r"\{\{\s*(\w+)\s*\}\}")
GRAFANA_MACROS = {"$__rate_interval": "1m", "$__interval": "1m", "$__range": "1h", "$endpoint": ".*"}


# --- promtool ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def promtool() -> str:
    """deploy/prometheus/install.sh, once per module: the path of promtool it reports."""
    result = subprocess.run(["bash", str(INSTALL)], check=False, capture_output=True, text=True, timeout=900)
    if result.returncode == REGISTRY_UNREACHABLE:
        pytest.skip(f"promtool missing and no package registry reachable to install it:\n{result.stderr[-2000:]}")
    assert result.returncode == 0, f"install.sh failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    found = re.search(r"^promtool:\s*(\S+)$", result.stdout, re.MULTILINE)
    assert found, f"install.sh printed no promtool path:\n{result.stdout}"
    return found.group(1)


def run_promtool(promtool: str, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool, *args], check=False, capture_output=True, text=True, timeout=120, cwd=cwd)


def test_promtool_accepts_the_config(promtool: str) -> None:
    result = run_promtool(promtool, "check", "config", str(CONFIG.relative_to(REPO)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 rule files found" in result.stdout, result.stdout


def test_config_loads_from_any_directory(promtool: str, tmp_path: Path) -> None:
    """rule_files are relative to the config file, so the working directory does not matter."""
    result = run_promtool(promtool, "check", "config", str(CONFIG), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_accepts_the_rules(promtool: str) -> None:
    result = run_promtool(promtool, "check", "rules", str(RULES.relative_to(REPO)))
    assert result.returncode == 0, result.stdout + result.stderr


def test_rule_unit_tests_pass(promtool: str) -> None:
    """Spike, adapter-down, reload-failure (and the other) alerts fire on synthetic series, and stay quiet when healthy."""
    result = run_promtool(promtool, "test", "rules", str(RULE_TESTS.relative_to(REPO)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout, result.stdout


def test_dashboard_queries_are_valid_promql(promtool: str, tmp_path: Path) -> None:
    """promtool parses each dashboard query (Grafana's macros substituted) as a recording rule's expression."""
    rules = [{"record": f"dashboard_query_{i}", "expr": substitute_macros(expr)}
             for i, (_, expr) in enumerate(dashboard_queries())]
    path = tmp_path / "dashboard.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = run_promtool(promtool, "check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_rule_unit_tests_cover_the_required_alerts() -> None:
    tests = yaml.safe_load(RULE_TESTS.read_text())
    tested = {case["alertname"] for group in tests["tests"] for case in group.get("alert_rule_test", [])}
    firing = {case["alertname"] for group in tests["tests"] for case in group.get("alert_rule_test", [])
              if case.get("exp_alerts")}
    quiet = {case["alertname"] for group in tests["tests"] for case in group.get("alert_rule_test", [])
             if not case.get("exp_alerts")}
    for alert in ("XgateNonconformanceSpike", "XgateAdapterDown", "XgateReloadFailed"):
        assert alert in firing and alert in quiet, f"{alert} needs a firing and a quiet case"
    assert REQUIRED_ALERTS <= tested, sorted(REQUIRED_ALERTS - tested)


# --- the Prometheus config ----------------------------------------------------------------------------------------

def test_config_scrapes_xgate_on_its_default_address() -> None:
    from gateway.metrics.server import DEFAULT_ADDRESS

    config = yaml.safe_load(CONFIG.read_text())
    [job] = [job for job in config["scrape_configs"] if job["job_name"] == "xgate"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    assert job["scrape_interval"] == "5s"
    assert [DEFAULT_ADDRESS] == [t for static in job["static_configs"] for t in static["targets"]]
    assert [CONFIG.parent / path for path in config["rule_files"]] == [RULES]


# --- metric names and labels ----------------------------------------------------------------------------------------

def rules_file() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(RULES.read_text())
    return data


def all_rules() -> list[dict[str, Any]]:
    return [rule for group in rules_file()["groups"] for rule in group["rules"]]


def recorded_labels() -> dict[str, frozenset[str]]:
    """The labels each recording rule keeps: its first by (...) clause, else those of the series it reads."""
    known: dict[str, frozenset[str]] = {}
    for rule in all_rules():
        if "record" not in rule:
            continue
        grouping = re.search(r"\bby\s*\(([^)]*)\)", rule["expr"])
        if grouping:
            labels = split_labels(grouping.group(1)) - {"le"}
        else:
            labels = frozenset().union(*(known.get(name, frozenset())
                                         for name in RECORDED_NAME.findall(strip_strings(rule["expr"]))))
        known[rule["record"]] = labels
    return known


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def walk_panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from walk_panels(panel.get("panels", []))  # rows, collapsed or not


def dashboard_targets() -> Iterator[tuple[str, dict[str, Any]]]:
    for panel in walk_panels(dashboard()["panels"]):
        for target in panel.get("targets", []):
            yield panel["title"], target


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, expr) for every panel target."""
    return [(title, target["expr"]) for title, target in dashboard_targets()]


def templating_queries() -> list[tuple[str, str]]:
    found = []
    for variable in dashboard()["templating"]["list"]:
        if variable.get("type") != "query":
            continue
        query = variable.get("query")
        found.append((variable["name"], query["query"] if isinstance(query, dict) else query))
        if variable.get("definition"):
            found.append((variable["name"], variable["definition"]))
    return found


def strip_strings(expr: str) -> str:
    return STRING.sub('""', expr)


def substitute_macros(expr: str) -> str:
    for macro, value in GRAFANA_MACROS.items():
        expr = expr.replace(macro, value)
    return expr


def split_labels(text: str) -> frozenset[str]:
    return frozenset(label.strip() for label in text.split(",") if label.strip())


def series_in(expr: str) -> set[str]:
    bare = strip_strings(expr)
    return set(XGATE_NAME.findall(bare)) | set(RECORDED_NAME.findall(bare))


def labels_available(expr: str, recorded: dict[str, frozenset[str]]) -> frozenset[str]:
    labels = set(TARGET_LABELS)
    for name in series_in(expr):
        labels |= SERIES_LABELS.get(name, recorded.get(name, frozenset()))
    return frozenset(labels)


def problems_in(expr: str, recorded: dict[str, frozenset[str]]) -> list[str]:
    """Unknown series, labels that the series do not carry, and values outside a label's vocabulary."""
    problems = []
    bare = strip_strings(expr)
    for name in XGATE_NAME.findall(bare):
        if name not in EXPORTED:
            problems.append(f"unknown metric {name}")
    for name in RECORDED_NAME.findall(bare):
        if name not in recorded:
            problems.append(f"unknown recorded series {name}")
    for name, body in SELECTOR.findall(expr):
        allowed = SERIES_LABELS.get(name, recorded.get(name))
        for label, op, value in MATCHER.findall(body):
            if allowed is not None and label not in allowed:
                problems.append(f"{name} has no label {label!r} (has {sorted(allowed)})")
            if op == "=" and label in LABEL_VALUES and value not in LABEL_VALUES[label]:
                problems.append(f"{label}={value!r} is not one of {sorted(LABEL_VALUES[label])}")
    available = labels_available(expr, recorded)
    for keyword, body in GROUPING.findall(bare):
        for label in split_labels(body) - available:
            problems.append(f"{keyword} ({label}): no series in the expression has that label")
    if "histogram_quantile" in expr:
        for quantile in re.findall(r"histogram_quantile\((.*)", expr):
            if "_bucket" not in quantile or not re.search(r"\bby\s*\([^)]*\ble\b", quantile):
                problems.append("histogram_quantile over something other than rate(..._bucket) by (le)")
    return problems


def test_rules_use_only_exported_metrics_and_their_labels() -> None:
    recorded = recorded_labels()
    problems = {}
    for rule in all_rules():
        found = problems_in(rule["expr"], recorded)
        if found:
            problems[rule.get("record") or rule.get("alert")] = found
    assert not problems, problems
    # the names the rules use are real, so a wrong name cannot hide behind the regexes finding nothing
    used = set().union(*(series_in(rule["expr"]) for rule in all_rules()))
    assert {"xgate_messages_total", "xgate_adapter_up", "xgate_reloads_total",
            "xgate_last_reload_success_timestamp_seconds", "xgate_delivery_failures_total"} <= used


def test_alerts_carry_severity_and_say_where() -> None:
    recorded = recorded_labels()
    alerts = [rule for rule in all_rules() if "alert" in rule]
    assert REQUIRED_ALERTS <= {alert["alert"] for alert in alerts}
    for alert in alerts:
        name = alert["alert"]
        assert alert["labels"]["severity"] in {"critical", "warning", "info"}, name
        annotations = alert["annotations"]
        assert annotations.get("summary") and annotations.get("description"), name
        text = annotations["summary"] + annotations["description"]
        if "endpoint" in labels_available(alert["expr"], recorded):
            assert "$labels.endpoint" in text, f"{name} does not name the endpoint"
        assert "$labels.instance" in text or "$labels.endpoint" in text, f"{name} does not say where"


def test_recording_rules_follow_the_naming_convention() -> None:
    for rule in all_rules():
        if "record" in rule:
            level, metric, operation = rule["record"].split(":")
            assert level and metric.startswith("xgate_") and operation, rule["record"]


def test_dashboard_queries_use_only_exported_metrics_and_their_labels() -> None:
    problems = {}
    for title, target in dashboard_targets():
        expr = target["expr"]
        found = problems_in(expr, {})  # no recorded series: the dashboard works without the rules loaded
        available = labels_available(expr, {})
        found += [f"legend label {label!r} not in the query's series"
                  for label in LEGEND_LABEL.findall(target.get("legendFormat", "")) if label not in available]
        if found:
            problems[f"{title}: {expr}"] = found
    for variable, query in templating_queries():
        found = problems_in(query, {})
        for metric, label in LABEL_VALUES_QUERY.findall(query):
            if label not in SERIES_LABELS.get(metric, frozenset()):
                found.append(f"label_values: {metric} has no label {label!r}")
        if found:
            problems[f"${variable}: {query}"] = found
    assert not problems, problems


def test_dashboard_shows_every_metric() -> None:
    used = set().union(*(series_in(expr) for _, expr in dashboard_queries()))
    missing = [m.name for m in names.ALL if not set(names.exported_series(m)) & used]
    assert not missing, f"metrics in names.py that no dashboard panel shows: {missing}"


# --- the dashboard's shape -------------------------------------------------------------------------------------------

def test_dashboard_variables_and_datasource() -> None:
    board = dashboard()
    assert 36 <= board["schemaVersion"] <= 39
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    endpoint = variables["endpoint"]
    assert endpoint["type"] == "query"
    query = endpoint["query"]["query"] if isinstance(endpoint["query"], dict) else endpoint["query"]
    assert query == "label_values(xgate_messages_total, endpoint)"
    assert endpoint["datasource"]["uid"] == "${datasource}"
    for panel in walk_panels(board["panels"]):
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]


def test_dashboard_panels_are_well_formed() -> None:
    panels = list(walk_panels(dashboard()["panels"]))
    ids = [panel["id"] for panel in panels]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    titles = [panel["title"] for panel in panels]
    assert len(titles) == len(set(titles)), "panel titles repeat"
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["w"] > 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        refs = [target["refId"] for target in panel.get("targets", [])]
        assert len(refs) == len(set(refs)), panel["title"]
    queries = " ".join(expr for _, expr in dashboard_queries())
    for needed in ("histogram_quantile(0.5,", "histogram_quantile(0.95,", "histogram_quantile(0.99,", "topk("):
        assert needed in queries, needed


def test_endpoint_filter_applies_to_every_endpoint_metric() -> None:
    """Panels over metrics with an endpoint label follow the $endpoint variable."""
    for title, expr in dashboard_queries():
        for name, body in SELECTOR.findall(expr):
            if "endpoint" in SERIES_LABELS.get(name, frozenset()):
                assert 'endpoint=~"$endpoint"' in body, f"{title}: {name} ignores $endpoint"
        for name in XGATE_NAME.findall(strip_strings(expr)):
            if "endpoint" in SERIES_LABELS.get(name, frozenset()):
                assert re.search(rf"{name}\s*\{{", expr), f"{title}: {name} ignores $endpoint"


# --- the checks catch what they are meant to catch -----------------------------------------------------------------

@pytest.mark.parametrize(("expr", "problem"), [
    ("rate(xgate_messages[5m])", "unknown metric xgate_messages"),
    ('rate(xgate_messages_total{endpont="a"}[5m])', "no label 'endpont'"),
    ("sum by (destination) (rate(xgate_messages_total[5m]))", "by (destination)"),
    ('rate(xgate_messages_total{verdict="invalid"}[5m])', "verdict='invalid'"),
    ("histogram_quantile(0.9, rate(xgate_validation_seconds_sum[5m]))", "histogram_quantile"),
    ("instance:xgate_unknown:rate5m", "unknown recorded series"),
])
def test_the_checks_catch_mistakes(expr: str, problem: str) -> None:
    found = problems_in(expr, recorded_labels())
    assert any(problem in p for p in found), found
