#!/usr/bin/python3
"""The Grafana dashboard and the Prometheus alerts against a real server.

Starts streamreg-server, gives it a model (created, fed, asked), scrapes
its /metrics — and likewise a server in cluster mode over a one-node NATS
JetStream (Debian's nats-server), for the streamreg_cluster_* families —
and checks that every metric the dashboard
(deploy/grafana/streamreg.json) and the alerting rules
(deploy/prometheus/rules.yml) name is in that scrape, with every label
they select or group by (but those Prometheus adds: instance, job, and le
of a histogram's buckets); that the dashboard is well formed for Grafana;
and that `promtool check rules` and `promtool test rules`
(deploy/prometheus/rules_test.yml) pass.

usage: monitoring_test.py REPO SERVER CLI
"""

import json
import os
import re
import shutil
import subprocess
import sys
import unittest
import urllib.request

import yaml
from prometheus_client.parser import text_string_to_metric_families

REPO, SERVER, CLI = sys.argv[1:4]
sys.path.insert(0, os.path.join(REPO, "tests/support"))
from running_server import RunningServer  # noqa: E402
from one_node_nats import OneNodeNats  # noqa: E402
DASHBOARD = os.path.join(REPO, "deploy/grafana/streamreg.json")
RULES = os.path.join(REPO, "deploy/prometheus/rules.yml")
RULES_TEST = os.path.join(REPO, "deploy/prometheus/rules_test.yml")
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"

# Labels Prometheus attaches itself, or that every histogram has.
ADDED_LABELS = {"instance", "job", "le"}
METRIC = re.compile(r"\b((?:streamreg|grpc_server|process)_[a-z0-9_]+)")
SELECTOR = re.compile(r"\b((?:streamreg|grpc_server|process)_[a-z0-9_]+)"
                      r"\s*\{([^}]*)\}")
MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")


def scrape(server):
    """{series name: set of label names} of a running server's /metrics,
    once it has a model created, fed and asked."""
    csv = os.path.join(REPO, "data/energy/energy.csv")
    predictions = os.path.join(server.scratch, "predictions.csv")
    for arguments in (
            ["create", "--name", "energy", "--csv", csv],
            ["ingest", "--model", "energy", "--csv", csv, "--batch", "100"],
            ["predict", "--model", "energy", "--csv", csv, "--limit", "10",
             "--out", predictions],
            ["info", "--model", "energy"]):
        subprocess.run([CLI, "--server", server.address, *arguments],
                       check=True, capture_output=True, timeout=120)
    with urllib.request.urlopen(f"http://{server.metrics_address}/metrics",
                                timeout=30) as response:
        text = response.read().decode()
    series, values = {}, {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            series.setdefault(sample.name, set()).update(sample.labels)
            values[(sample.name, tuple(sorted(sample.labels.items())))] = (
                sample.value)
    return series, values


def scrape_servers():
    """The series of a single server's scrape and a cluster server's, and
    the values of the cluster server's."""
    server = RunningServer(SERVER)
    try:
        series, _ = scrape(server)
    finally:
        server.stop()
    nats = OneNodeNats()
    try:
        server = RunningServer(SERVER, arguments=[
            f"--cluster={nats.url}", "--cluster_replicas=1",
            "--cluster_log_replicas=1"])
        try:
            cluster_series, cluster_values = scrape(server)
            for name, labels in cluster_series.items():
                series.setdefault(name, set()).update(labels)
        finally:
            server.stop()
    finally:
        nats.stop()
    return series, cluster_values


def dashboard_expressions(dashboard):
    """(where, PromQL) of every panel target and template query."""
    found = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            found.append((f"panel {panel['title']!r}", target["expr"]))
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            found.append((f"variable {variable['name']}",
                          variable["query"]["query"]))
    return found


def rule_expressions(rules):
    return [(f"alert {rule['alert']}", rule["expr"])
            for group in rules["groups"] for rule in group["rules"]]


def grafana_free(expression):
    """The expression with Grafana's variables given values."""
    return (expression.replace("$__rate_interval", "1m")
            .replace("$instance", ".*").replace("$model", ".*"))


class MonitoringTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.series, cls.cluster_values = scrape_servers()
        with open(DASHBOARD) as f:
            cls.dashboard = json.load(f)
        with open(RULES) as f:
            cls.rules = yaml.safe_load(f)
        cls.expressions = (dashboard_expressions(cls.dashboard) +
                           rule_expressions(cls.rules))

    def test_every_metric_named_is_scraped(self):
        self.assertGreater(len(self.expressions), 30)
        for where, expression in self.expressions:
            names = METRIC.findall(grafana_free(expression))
            self.assertTrue(names, f"{where} names no metric: {expression}")
            for name in names:
                self.assertIn(name, self.series,
                              f"{where}: {name} is not in a scrape")

    def test_every_label_used_is_on_its_metric(self):
        for where, expression in self.expressions:
            expression = grafana_free(expression)
            named = set(METRIC.findall(expression))
            labels_of_named = set().union(*(self.series.get(n, set())
                                            for n in named))
            for name, matchers in SELECTOR.findall(expression):
                for label in MATCHER.findall(matchers):
                    if label in ADDED_LABELS:
                        continue
                    self.assertIn(label, self.series.get(name, set()),
                                  f"{where}: {name} has no label {label}")
            for grouping in GROUPING.findall(expression):
                for label in (l.strip() for l in grouping.split(",")):
                    if label and label not in ADDED_LABELS:
                        self.assertIn(label, labels_of_named,
                                      f"{where}: no metric of it has {label}")

    def test_a_cluster_server_reports_its_replica(self):
        values = self.cluster_values
        self.assertEqual(1, values[("streamreg_cluster_live_servers", ())])
        self.assertEqual(1, values[("streamreg_cluster_models_hosted", ())])
        self.assertEqual(0, values[("streamreg_cluster_models_not_hosted", ())])
        # One NATS node: its create's log had a leader at once.
        self.assertEqual(
            0, values[("streamreg_cluster_logs_given_up_total", ())])
        # Nothing left behind to sweep.
        self.assertEqual(
            0, values[("streamreg_cluster_orphan_streams_removed_total", ())])
        self.assertEqual(
            0, values[("streamreg_cluster_models_catching_up", ())])
        self.assertEqual(
            0, values[("streamreg_cluster_heartbeat_failures_total", ())])
        # The create entry and the ingest's batches of 100 rows.
        with open(os.path.join(REPO, "data/energy/energy.csv")) as data:
            rows = sum(1 for _ in data) - 1
        self.assertEqual(1 + -(-rows // 100), values[(
            "streamreg_cluster_log_applied_sequence",
            (("model", "energy"),))])

    def test_the_checker_sees_a_missing_metric(self):
        self.assertNotIn("streamreg_model_nonsense", self.series)
        self.assertEqual(["streamreg_model_nonsense"],
                         METRIC.findall('rate(streamreg_model_nonsense'
                                        '{model=~"$model"}[5m])'))

    def test_the_dashboard_is_well_formed(self):
        dashboard = self.dashboard
        self.assertEqual("streamreg", dashboard["uid"])
        ids = [panel["id"] for panel in dashboard["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids repeat")
        variables = {v["name"] for v in dashboard["templating"]["list"]}
        self.assertEqual({"datasource", "instance", "model"}, variables)
        occupied = set()
        for panel in dashboard["panels"]:
            self.assertIn(panel["type"], {"row", "timeseries", "stat"})
            grid = panel["gridPos"]
            self.assertLessEqual(grid["x"] + grid["w"], 24, panel["title"])
            for x in range(grid["x"], grid["x"] + grid["w"]):
                for y in range(grid["y"], grid["y"] + grid["h"]):
                    self.assertNotIn((x, y), occupied,
                                     f"{panel['title']} overlaps another")
                    occupied.add((x, y))
            if panel["type"] == "row":
                continue
            self.assertTrue(panel["description"], panel["title"])
            self.assertEqual("${datasource}", panel["datasource"]["uid"])
            refs = [t["refId"] for t in panel["targets"]]
            self.assertEqual(len(refs), len(set(refs)), panel["title"])
            for target in panel["targets"]:
                # Scoped to the chosen instances (and models).
                self.assertIn('instance=~"$instance"', target["expr"],
                              panel["title"])
                if "model" in target["legendFormat"]:
                    self.assertIn('model=~"$model"', target["expr"],
                                  panel["title"])

    def test_every_alert_is_labelled_and_explained(self):
        alerts = [rule for group in self.rules["groups"]
                  for rule in group["rules"]]
        self.assertEqual(
            {"StreamregModelNotRecovered", "StreamregModelFailed",
             "StreamregLearnLagGrowing", "StreamregJournalFsyncSlow",
             "StreamregSnapshotTooOld", "StreamregErrorRate",
             "StreamregOverloaded", "StreamregClusterHeartbeatsFailing",
             "StreamregClusterReconcileFailing",
             "StreamregClusterModelNotHosted",
             "StreamregClusterReplicaBehind",
             "StreamregClusterServerLost",
             "StreamregClusterSnapshotsFailing"},
            {rule["alert"] for rule in alerts})
        for rule in alerts:
            self.assertIn(rule["labels"]["severity"], {"warning", "critical"})
            self.assertTrue(rule["annotations"]["summary"])
            self.assertTrue(rule["annotations"]["description"])

    def test_promtool_checks_and_unit_tests_pass(self):
        for command in (["check", "rules", RULES],
                        ["test", "rules", RULES_TEST]):
            result = subprocess.run([PROMTOOL, *command], capture_output=True,
                                    text=True, timeout=120)
            self.assertEqual(0, result.returncode,
                             f"promtool {' '.join(command)}:\n"
                             f"{result.stdout}{result.stderr}")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
