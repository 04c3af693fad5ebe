#!/usr/bin/python3
"""The status page in a real browser: a server with two models (SARCOS on
EGOP, seven targets; energy on gradient weights, two), headless Chromium
loads http://<metrics>/ and runs its script, and the DOM it rendered must
hold both models, each target's figures in its row of the model's table,
every figure explained, one prequential and one honest curve per target, the
intervals' coverage over time and recent band per target, and the
learned weights, spectrum and directions equal to /api/status, and the
latency of a Learn stream per message while it runs; and, for a server in
cluster mode over one NATS node, the cluster section with its replica as
/api/status has it; and a plain headless load (no virtual time) while a
simulated arm streams shows that model first, its figures labelled. Saves
a screenshot of each (the one in docs/images/ is such a screenshot).

usage: status_page_browser_test.py SERVER CLI REPO SCREENSHOT
"""

import html.parser
import json
import os
import shutil
import subprocess
import sys
import time
import unittest
import urllib.request

SERVER, CLI, REPO, SCREENSHOT = sys.argv[1:5]
sys.path.insert(0, os.path.join(REPO, "tests/support"))
from running_server import RunningServer  # noqa: E402
from one_node_nats import OneNodeNats  # noqa: E402
ROBOT_SIM = os.path.join(os.path.dirname(CLI), "streamreg-robot-sim")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# A number written with an exponent (the page writes plain decimals).
PLAIN_NOTATION_BROKEN = r"\d[eE][+-]?\d"
# As root in a container: no sandbox; no network but loopback.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
    "--no-first-run", "--disable-background-networking",
    "--disable-dev-shm-usage",
    "--disable-component-update", "--disable-sync", "--hide-scrollbars",
]


class Element:
    def __init__(self, tag, attributes, parent):
        self.tag = tag
        self.attributes = dict(attributes)
        self.parent = parent
        self.children = []
        self.text = ""

    def classes(self):
        return self.attributes.get("class", "").split()

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()

    def find_all(self, tag, cls=None, **attributes):
        for element in self.walk():
            if element.tag != tag:
                continue
            if cls is not None and cls not in element.classes():
                continue
            if all(element.attributes.get(k.replace("_", "-")) == v
                   for k, v in attributes.items()):
                yield element

    def all_text(self):
        return self.text + "".join(c.all_text() for c in self.children)


class Dom(html.parser.HTMLParser):
    """The dumped DOM as a tree (void elements closed at once)."""
    VOID = {"meta", "link", "br", "img", "input", "hr"}

    def __init__(self, text):
        super().__init__()
        self.root = Element("#document", {}, None)
        self.open = self.root
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        element = Element(tag, attrs, self.open)
        self.open.children.append(element)
        if tag not in self.VOID:
            self.open = element

    def handle_startendtag(self, tag, attrs):
        self.open.children.append(Element(tag, attrs, self.open))

    def handle_endtag(self, tag):
        element = self.open
        while element is not self.root and element.tag != tag:
            element = element.parent
        if element is not self.root:
            self.open = element.parent

    def handle_data(self, data):
        self.open.text += data


def histogram_quantile(q, bounds, cumulative, count):
    """Prometheus' histogram_quantile over one histogram: the bucket where
    the rank falls, linearly interpolated (from 0 in the first)."""
    rank = q * count
    for i, bound in enumerate(bounds):
        if cumulative[i] >= rank:
            lower = bounds[i - 1] if i else 0.0
            below = cumulative[i - 1] if i else 0
            if cumulative[i] == below:
                return bound
            return lower + (bound - lower) * (rank - below) / (
                cumulative[i] - below)
    return float("inf")


def run_chromium(url, *arguments, profile, page_milliseconds=4000):
    """Chromium's output for `url` once the page has run for
    page_milliseconds of its own (virtual) time: 4 s is four polls."""
    command = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
               f"--virtual-time-budget={page_milliseconds}", *arguments, url]
    return subprocess.run(command, capture_output=True, text=True,
                          timeout=120, check=True).stdout


class StatusPageBrowserTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server = RunningServer(SERVER,
                                   arguments=["--sync", "interval:20"])
        cls.addClassCleanup(cls.server.stop)  # also if setting up fails
        cls.scratch = cls.server.scratch
        cls.url = f"http://{cls.server.metrics_address}/"
        grpc = cls.server.address

        def cli(*arguments):
            subprocess.run([CLI, "--server", grpc, *arguments], check=True,
                           capture_output=True, timeout=120)
        cls.cli = staticmethod(cli)
        cls.profile = os.path.join(cls.scratch, "chromium")

        sarcos = os.path.join(REPO, "data/sarcos/sarcos_test.csv")
        energy = os.path.join(REPO, "data/energy/energy.csv")
        cli("create", "--name", "arm", "--csv", sarcos, "--metric", "egop")
        cli("ingest", "--model", "arm", "--csv", sarcos, "--limit", "2000",
            "--batch", "250")
        cli("create", "--name", "energy", "--csv", energy, "--metric", "gw")
        cli("ingest", "--model", "energy", "--csv", energy, "--batch", "100")
        # Acknowledged is not learned yet: wait until both have caught up.
        deadline = time.monotonic() + 60
        while True:
            with urllib.request.urlopen(cls.url + "api/status",
                                        timeout=30) as r:
                cls.status = json.load(r)
            learned = {m["name"]: m["samples_seen"]
                       for m in cls.status["models"]
                       if m["learn_lag"]["samples"] == 0}
            if learned == {"arm": 2000, "energy": 768}:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"not learned in 60 s: {cls.status}")
            time.sleep(0.1)
        cls.models = {m["name"]: m for m in cls.status["models"]}
        profile = cls.profile
        cls.dom = Dom(run_chromium(cls.url, "--dump-dom", profile=profile)).root
        os.makedirs(os.path.dirname(os.path.abspath(SCREENSHOT)), exist_ok=True)
        run_chromium(cls.url, f"--screenshot={os.path.abspath(SCREENSHOT)}",
                     "--window-size=1280,1900", profile=profile)

    def card(self, name):
        cards = list(self.dom.find_all("section", "model", data_model=name))
        self.assertEqual(1, len(cards), name)
        return cards[0]

    def test_lists_both_models(self):
        self.assertEqual({"arm", "energy"}, set(self.models))
        rows = [row for row in self.dom.find_all("tr")
                if "data-model" in row.attributes]
        names = [row.attributes["data-model"] for row in rows]
        self.assertEqual({"arm", "energy"}, set(names))
        # The models streamed in the last seconds first, then by name: on a
        # slow machine the page may load after arm's samples stopped
        # counting as streamed and before energy's did.
        streaming = {row.attributes["data-model"]: "streaming" in row.classes()
                     for row in rows}
        self.assertEqual(
            sorted(names, key=lambda name: (not streaming[name], name)),
            names)
        for name, model in self.models.items():
            card = self.card(name)
            heading = next(card.find_all("h2"))
            self.assertEqual(name, heading.text)
            self.assertIn(f"{model['samples_seen']:,}", card.all_text())
            # Learning's pauses at take-overs: never, or how many.
            waits = model["learn_lag"]["waits"]
            self.assertEqual(0, waits["current_seconds"])  # caught up
            count = waits["count"]
            pauses = ("never" if count == 0 else
                      f"{count:,} {'time' if count == 1 else 'times'}, ")
            self.assertIn(f"learning paused for background work{pauses}",
                          card.all_text())
        problem = next(self.dom.find_all("p", id="problem"))
        self.assertIn("hidden", problem.attributes)

    def test_per_target_figures_sit_in_their_targets_rows(self):
        # Each model's table has a row per target; each figure's cell is
        # labelled with its target and column, in one notation (plain
        # decimals), and shows the value /api/status has.
        for name, model in self.models.items():
            (table,) = self.card(name).find_all("table", "targets")
            rows = [row for row in table.find_all("tr")
                    if "data-target" in row.attributes]
            self.assertEqual(model["targets"],
                             [row.attributes["data-target"] for row in rows])
            for t, row in enumerate(rows):
                self.assertEqual(model["targets"][t],
                                 next(row.find_all("th")).all_text())
                cells = {cell.attributes["data-figure"]: cell
                         for cell in row.find_all("td")}
                for cell in cells.values():
                    self.assertEqual(model["targets"][t],
                                     cell.attributes["data-target"])
                    self.assertNotRegex(cell.all_text(), PLAIN_NOTATION_BROKEN)
                for figure in ("prequential", "honest"):
                    expected = model[f"{figure}_nmse"][t]
                    shown = float(cells[figure].all_text().replace(",", ""))
                    self.assertAlmostEqual(1, shown / expected, delta=0.005,
                                           msg=(name, figure, t))
                half_width = model["interval"]["half_width"][t]
                shown = float(cells["interval"].all_text().split()[0]
                              .lstrip("±").replace(",", ""))
                self.assertAlmostEqual(1, shown / half_width, delta=0.005)

    def test_every_figure_is_explained(self):
        # Every column and fact has its explanation on hover (a title), and
        # the legend lists them all.
        headers = list(self.dom.find_all("table", id="overview"))[0]
        labelled = [th for th in headers.find_all("th")]
        self.assertGreaterEqual(len(labelled), 9)
        for th in labelled:
            self.assertTrue(th.attributes.get("title"), th.all_text())
        for name in self.models:
            card = self.card(name)
            for term in card.find_all("dt"):
                self.assertTrue(term.attributes.get("title"), term.all_text())
            (table,) = card.find_all("table", "targets")
            for th in list(table.find_all("thead"))[0].find_all("th"):
                if th.all_text() != "target":
                    self.assertTrue(th.attributes.get("title"), th.all_text())
        (glossary,) = self.dom.find_all("dl", id="glossary-terms")
        terms = [dt.all_text() for dt in glossary.find_all("dt")]
        for required in ("answers' nMSE", "honest nMSE", "prequential nMSE",
                         "learn lag", "learning paused for background work"):
            self.assertIn(required, terms)

    def test_x_a_streamed_model_leads_a_plain_headless_screenshot(self):
        # A simulated arm streams into "robot" (after "arm" and "energy" by
        # name) at 500 Hz. Chromium without virtual time, as a person's
        # first look: the page's first response carries the data, the
        # streaming model comes first with its per-target figures labelled.
        robot = subprocess.Popen(
            [ROBOT_SIM, "--server", self.server.address, "--model", "robot",
             "--create", "--rate", "500", "--samples", "30000"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(self.cli, "delete", "--model", "robot")
        self.addCleanup(robot.wait)
        self.addCleanup(robot.terminate)
        deadline = time.monotonic() + 60
        while True:  # answers sent, and the others idle for 5 s
            with urllib.request.urlopen(self.url + "api/status",
                                        timeout=30) as r:
                models = {m["name"]: m for m in json.load(r)["models"]}
            robot_model = models.get("robot")
            if (robot_model is not None and robot_model["answers"]["sent"] > 500
                    and all(models[m]["last_sample_seconds"] > 5
                            for m in ("arm", "energy"))):
                break
            self.assertLess(time.monotonic(), deadline, models.keys())
            time.sleep(0.2)
        plain = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}"]
        dom = Dom(subprocess.run(
            [*plain, "--dump-dom", self.url], capture_output=True, text=True,
            timeout=120, check=True).stdout).root
        streaming_shot = SCREENSHOT.replace(".png", "_streaming.png")
        subprocess.run([*plain, f"--screenshot={os.path.abspath(streaming_shot)}",
                        "--window-size=1280,1000", self.url],
                       capture_output=True, timeout=120, check=True)
        self.assertIsNone(robot.poll(), "the arm stopped streaming too soon")
        server = next(dom.find_all("span", id="server")).all_text()
        self.assertTrue(server.startswith("server "), server)
        rows = [row for row in dom.find_all("tr")
                if "data-model" in row.attributes]
        self.assertEqual("robot", rows[0].attributes["data-model"],
                         [(row.attributes, row.all_text()) for row in rows])
        self.assertIn("streaming", rows[0].classes())
        answers = next(rows[0].find_all("td", data_figure="answers"))
        self.assertRegex(answers.all_text(), r"^[0-9.,]+ \(mean of 7\)$")
        cards = list(dom.find_all("section", "model"))
        self.assertEqual("robot", cards[0].attributes["data-model"])
        (table,) = cards[0].find_all("table", "targets")
        targets = [row.attributes["data-target"]
                   for row in table.find_all("tr")
                   if "data-target" in row.attributes]
        self.assertEqual(robot_model["targets"], targets)
        for target in targets:
            (cell,) = table.find_all("td", data_figure="answers",
                                     data_target=target)
            self.assertRegex(cell.all_text(),
                             r"^[0-9.,]+ · recent [0-9.,]+$", target)
        with open(streaming_shot, "rb") as f:
            self.assertEqual(b"\x89PNG\r\n\x1a\n", f.read(8))
        self.assertGreater(os.path.getsize(streaming_shot), 50_000)

    def test_one_curve_per_target_and_kind(self):
        for name, model in self.models.items():
            card = self.card(name)
            for kind in ("prequential", "honest"):
                curves = list(card.find_all("path", kind))
                self.assertEqual(model["targets"],
                                 [c.attributes["data-target"] for c in curves],
                                 (name, kind))
                for curve in curves:
                    # Drawn through several points of the curve.
                    self.assertGreaterEqual(curve.attributes["d"].count("L"),
                                            10, (name, kind))

    def test_intervals_band_and_coverage_per_target(self):
        for name, model in self.models.items():
            card = self.card(name)
            coverage = list(card.find_all("path", "coverage"))
            self.assertEqual(model["targets"],
                             [c.attributes["data-target"] for c in coverage])
            for path in coverage:
                self.assertGreaterEqual(path.attributes["d"].count("L"), 10)
            (nominal,) = card.find_all("line", "nominal")
            self.assertEqual(model["interval"]["level"],
                             float(nominal.attributes["data-level"]))
            recent = model["recent"]
            self.assertEqual(200, len(recent["samples"]))
            charts = list(card.find_all("svg", "band-chart"))
            self.assertEqual(model["targets"],
                             [c.attributes["data-target"] for c in charts])
            for t, chart in enumerate(charts):
                self.assertEqual(1, len(list(chart.find_all("polygon",
                                                            "band"))))
                dots = list(chart.find_all("circle", "truth"))
                self.assertEqual(200, len(dots))
                outside = sum(
                    1 for y, lo, hi in zip(recent["truth"][t],
                                           recent["lower"][t],
                                           recent["upper"][t])
                    if not lo <= y <= hi)
                self.assertEqual(outside, len(list(
                    chart.find_all("circle", "outside"))), (name, t))
                (caption,) = chart.find_all("text", "band-caption")
                self.assertIn(f"{200 - outside} of 200 within",
                              caption.all_text())

    def bars(self, svg):
        return [(bar.attributes["data-input"],
                 float(bar.attributes["data-value"]))
                for bar in svg.find_all("rect", "bar")]

    def test_weights_spectrum_and_directions_are_the_models(self):
        for name, model in self.models.items():
            card = self.card(name)
            (learned,) = model["learned_metrics"]
            weights = list(card.find_all("svg", "weights"))
            self.assertEqual(1, len(weights), name)
            self.assertEqual(list(zip(model["inputs"], learned["weights"])),
                             self.bars(weights[0]), name)
        arm = self.models["arm"]["learned_metrics"][0]
        card = self.card("arm")
        (spectrum,) = card.find_all("svg", "spectrum")
        self.assertEqual(arm["eigenvalues"],
                         [value for _, value in self.bars(spectrum)])
        self.assertEqual(21, len(arm["eigenvalues"]))
        directions = list(card.find_all("svg", "direction"))
        self.assertEqual(3, len(directions))
        for direction, expected in zip(directions, arm["directions"]):
            self.assertEqual(expected,
                             [value for _, value in self.bars(direction)])
        # Gradient weights have no spectrum.
        self.assertEqual([], list(self.card("energy").find_all("svg",
                                                               "spectrum")))

    def test_latency_rows_name_the_methods_called(self):
        methods = [row.attributes["data-method"]
                   for row in self.dom.find_all("tr")
                   if "data-method" in row.attributes]
        for method in ("CreateModel", "Ingest"):
            self.assertIn(method, methods)

    def test_first_reading_shows_percentiles_since_the_start(self):
        # One poll only (half a second of the page's time): the table holds
        # every call since the start, each percentile interpolated in its
        # bucket as Prometheus' histogram_quantile does.
        with urllib.request.urlopen(self.url + "api/status", timeout=30) as r:
            latency = json.load(r)["latency"]
        dom = Dom(run_chromium(self.url, "--dump-dom", profile=self.profile,
                               page_milliseconds=500)).root
        window = next(dom.find_all("small", id="latency-window"))
        self.assertEqual("every call since the server started", window.text)
        bounds = latency["bounds_seconds"]
        for method in latency["methods"]:
            (row,) = dom.find_all("tr", data_method=method["method"])
            cells = list(row.find_all("td"))
            self.assertEqual(f"{method['count']:,}", cells[1].text)
            for cell in cells[2:]:
                q = float(cell.attributes["data-quantile"])
                expected = histogram_quantile(q, bounds, method["cumulative"],
                                              method["count"])
                self.assertAlmostEqual(expected,
                                       float(cell.attributes["data-seconds"]),
                                       places=12, msg=(method["method"], q))

    def test_y_a_running_stream_moves_its_learn_row(self):
        # A simulated robot streams into arm over one Learn stream for 30 s;
        # two loads of the page while it runs show its row per message,
        # with more messages the second time.
        robot = subprocess.Popen(
            [CLI, "--server", self.server.address, "bench", "learn",
             "--model", "arm", "--robots", "1", "--rate", "500",
             "--duration", "30"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(robot.wait)
        self.addCleanup(robot.terminate)
        counts = []
        for _ in range(2):
            deadline = time.monotonic() + 30
            while True:  # until the stream has answered more messages
                with urllib.request.urlopen(self.url + "api/status",
                                            timeout=30) as r:
                    methods = {m["method"]: m
                               for m in json.load(r)["latency"]["methods"]}
                learn = methods.get("Learn", {"count": 0})
                if learn["count"] > (counts[-1] if counts else 0):
                    break
                self.assertLess(time.monotonic(), deadline, methods)
                time.sleep(0.2)
            self.assertEqual("message", learn["per"])
            dom = Dom(run_chromium(self.url, "--dump-dom",
                                   profile=self.profile,
                                   page_milliseconds=500)).root
            (row,) = dom.find_all("tr", data_method="Learn")
            cells = list(row.find_all("td"))
            self.assertEqual("Learn (per message)", cells[0].text)
            self.assertGreater(float(cells[2].attributes["data-seconds"]), 0)
            counts.append(int(cells[1].text.replace(",", "")))
            self.assertIsNone(robot.poll(), "the stream ended too soon")
        self.assertGreater(counts[1], counts[0])

    def test_z_past_six_models_only_those_chosen_are_detailed(self):
        # "z": the last to run, as it adds models to the server.
        for i in range(5):
            self.cli("create", "--name", f"extra{i}", "--inputs", "2",
                     "--targets", "1")
        dom = Dom(run_chromium(self.url + "#models=energy", "--dump-dom",
                               profile=self.profile)).root
        rows = [row.attributes["data-model"] for row in dom.find_all("tr")
                if "data-model" in row.attributes]
        self.assertEqual(7, len(rows), rows)
        cards = [card.attributes["data-model"]
                 for card in dom.find_all("section", "model")]
        self.assertEqual(["energy"], cards)
        shown = [row.attributes["data-model"]
                 for row in dom.find_all("tr", "shown")]
        self.assertEqual(["energy"], shown)
        # Its details came along: its curves.
        self.assertEqual(2, len(list(dom.find_all("path", "prequential"))))

    def test_screenshot_saved(self):
        with open(SCREENSHOT, "rb") as f:
            header = f.read(8)
        self.assertEqual(b"\x89PNG\r\n\x1a\n", header)
        self.assertGreater(os.path.getsize(SCREENSHOT), 50_000)

    def test_a_single_server_shows_no_cluster(self):
        section, = self.dom.find_all("section", id="cluster-section")
        self.assertIn("hidden", section.attributes)
        self.assertNotIn("cluster", self.status)


class ClusterStatusPageTest(unittest.TestCase):
    """A server in cluster mode over one NATS node: the page's cluster
    section shows the live servers and each replica hosted here with the
    log entries it applied and the last its newest snapshot includes, as
    /api/status has them."""

    @classmethod
    def setUpClass(cls):
        cls.nats = OneNodeNats()
        cls.addClassCleanup(cls.nats.stop)
        cls.server = RunningServer(SERVER, arguments=[
            f"--cluster={cls.nats.url}", "--cluster_replicas=1",
            "--cluster_log_replicas=1",
            # One whole snapshot, once 500 of the 768 samples are applied,
            # and no other.
            "--snapshot_every_samples=500",
            "--cluster_snapshot_increment_samples=0"])
        cls.addClassCleanup(cls.server.stop)
        url = f"http://{cls.server.metrics_address}/"
        energy = os.path.join(REPO, "data/energy/energy.csv")
        for arguments in (["create", "--name", "energy", "--csv", energy],
                          ["ingest", "--model", "energy", "--csv", energy,
                           "--batch", "100"]):
            subprocess.run([CLI, "--server", cls.server.address, *arguments],
                           check=True, capture_output=True, timeout=120)
        # The create entry and the ingest's 8 batches, applied.
        cls.entries = 1 + 8
        deadline = time.monotonic() + 60
        while True:
            with urllib.request.urlopen(url + "api/status", timeout=30) as r:
                cls.status = json.load(r)
            replicas = cls.status["cluster"]["replicas"]
            if [(r["model"], r["applied"]) for r in replicas] == [
                    ("energy", cls.entries)] and replicas[0][
                        "snapshot_through"] > 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"not applied in 60 s: {cls.status}")
            time.sleep(0.1)
        cls.dom = Dom(run_chromium(
            url, "--dump-dom",
            profile=os.path.join(cls.server.scratch, "chromium"))).root

    def test_the_cluster_section_shows_each_replica(self):
        cluster = self.status["cluster"]
        self.assertEqual(1, cluster["live_servers"])
        self.assertEqual(0, cluster["heartbeat_failures"])
        self.assertEqual(0, cluster["not_hosted"])
        section, = self.dom.find_all("section", id="cluster-section")
        self.assertNotIn("hidden", section.attributes)
        summary, = self.dom.find_all("p", id="cluster-summary")
        self.assertIn("1 live servers · 1 replicas here", summary.all_text())
        self.assertIn("no failures", summary.all_text())
        table, = self.dom.find_all("table", id="cluster")
        rows = list(table.find_all("tr", data_model="energy"))
        self.assertEqual(1, len(rows))
        cells = [td.all_text() for td in rows[0].find_all("td")]
        replica, = cluster["replicas"]
        # 500 samples are 5 of the 100-sample batches after the create entry.
        self.assertGreaterEqual(replica["snapshot_through"], 1 + 5)
        self.assertEqual(0, replica["whole_snapshot_being_put"])
        self.assertEqual(["energy", str(self.entries),
                          str(replica["snapshot_through"]),
                          "following its log"], cells)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
