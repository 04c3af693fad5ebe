"""The deployment files against each other and against the real binaries.

Parses the Kubernetes manifests (deploy/k8s), the compose file and the
Dockerfile, and checks what would otherwise only fail in a cluster: probes
on the port the server really listens on, selectors that select, the
headless Service the StatefulSet names, a grace period longer than the
drain, the data directory on the volume, the image's user, the metrics port
published and annotated where the server serves it, and every flag
passed to a binary being a flag that binary has (from its --helpfull).

usage: deploy_manifests_test.py REPO_DIR SERVER_BINARY CLI_BINARY ROBOT_SIM_BINARY
"""

import pathlib
import re
import shutil
import subprocess
import sys
import unittest

import yaml

REPO = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(".")
BINARIES = {
    "streamreg-server": sys.argv[2] if len(sys.argv) > 2 else "",
    "streamreg": sys.argv[3] if len(sys.argv) > 3 else "",
    "streamreg-robot-sim": sys.argv[4] if len(sys.argv) > 4 else "",
}
DATA_DIR = "/var/lib/streamreg"


def flags_of(binary_name):
    """The flag names a binary accepts, from its --helpfull."""
    path = BINARIES[binary_name]
    result = subprocess.run([path, "--helpfull"], capture_output=True,
                            text=True, timeout=30, check=False)
    names = set(re.findall(r"^\s+--([a-z_0-9]+)", result.stdout + result.stderr,
                           re.MULTILINE))
    if not names:
        raise AssertionError(f"{path} --helpfull listed no flags")
    return names


def flag_names(args):
    """Names of the --name=value and --name value arguments, dashes in a name
    read as underscores (as our binaries read them)."""
    return [a[2:].split("=", 1)[0].replace("-", "_")
            for a in args if a.startswith("--")]


def flag_value(args, name):
    """The value of --name (spelt with dashes or underscores), or None."""
    for i, a in enumerate(args):
        if not a.startswith("--"):
            continue
        key, _, value = a[2:].partition("=")
        if key.replace("-", "_") == name:
            return value if "=" in a else args[i + 1]
    return None


def seconds(duration):
    """An absl duration such as 5s, 1m or 500ms, in seconds."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration)
    if not match:
        raise AssertionError(f"not a duration: {duration}")
    scale = {"ms": 1e-3, "s": 1, "m": 60, "h": 3600}[match.group(2)]
    return float(match.group(1)) * scale


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def load_k8s():
    documents = {}
    for path in sorted((REPO / "deploy" / "k8s").glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                documents[document["kind"]] = document
    return documents


def dockerfile_instructions():
    """(instruction, arguments) of the stages after the build stage (the
    runtime and the image on it), continuations joined."""
    text = (REPO / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [l.strip() for l in text.splitlines()
             if l.strip() and not l.strip().startswith("#")]
    stages = [i for i, l in enumerate(lines) if l.upper().startswith("FROM ")]
    runtime = lines[stages[1]:]
    return [tuple(l.split(None, 1)) if " " in l else (l, "") for l in runtime]


class KubernetesTest(unittest.TestCase):

    def setUp(self):
        self.k8s = load_k8s()
        self.sts = self.k8s["StatefulSet"]
        self.pod = self.sts["spec"]["template"]["spec"]
        self.container = self.pod["containers"][0]
        self.args = self.container["args"]

    def test_the_three_objects_are_there(self):
        # (deploy/k8s/cluster/ holds cluster mode's, ClusterKubernetesTest.)
        self.assertEqual({"StatefulSet", "Service", "PodDisruptionBudget"},
                         set(self.k8s))

    def test_probes_point_at_the_port_the_server_listens_on(self):
        listen_port = port_of(flag_value(self.args, "listen"))
        ports = {p["name"]: p["containerPort"] for p in self.container["ports"]}
        self.assertEqual(ports["grpc"], listen_port)
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            with self.subTest(probe=probe):
                self.assertIn("grpc", self.container[probe])
                self.assertEqual(self.container[probe]["grpc"]["port"],
                                 listen_port)

    def test_the_server_listens_on_every_interface(self):
        self.assertTrue(flag_value(self.args, "listen").startswith("0.0.0.0:"))
        self.assertTrue(
            flag_value(self.args, "metrics_listen").startswith("0.0.0.0:"))

    def test_metrics_are_scraped_where_the_server_serves_them(self):
        metrics_port = port_of(flag_value(self.args, "metrics_listen"))
        ports = {p["name"]: p["containerPort"] for p in self.container["ports"]}
        self.assertEqual(ports["metrics"], metrics_port)
        annotations = self.sts["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(annotations["prometheus.io/port"], str(metrics_port))
        self.assertEqual(annotations["prometheus.io/path"], "/metrics")
        service_ports = {p["name"]: p["targetPort"]
                         for p in self.k8s["Service"]["spec"]["ports"]}
        self.assertEqual(service_ports["metrics"], "metrics")

    def test_every_flag_is_a_flag_of_the_server(self):
        known = flags_of("streamreg-server")
        for name in flag_names(self.args):
            self.assertIn(name, known)

    def test_the_headless_service_selects_the_pods_on_the_grpc_port(self):
        service = self.k8s["Service"]
        self.assertEqual(service["spec"]["clusterIP"], "None")
        self.assertEqual(self.sts["spec"]["serviceName"],
                         service["metadata"]["name"])
        labels = self.sts["spec"]["template"]["metadata"]["labels"]
        for selector in (service["spec"]["selector"],
                         self.sts["spec"]["selector"]["matchLabels"],
                         self.k8s["PodDisruptionBudget"]["spec"]["selector"]
                         ["matchLabels"]):
            self.assertLessEqual(selector.items(), labels.items())
        target = service["spec"]["ports"][0]["targetPort"]
        self.assertIn(target, [p["name"] for p in self.container["ports"]])

    def test_termination_outlasts_the_drain(self):
        drain = (seconds(flag_value(self.args, "drain_delay") or "0s") +
                 seconds(flag_value(self.args, "drain_timeout") or "10s"))
        # Room for the final snapshots after the drain.
        self.assertGreaterEqual(self.pod["terminationGracePeriodSeconds"],
                                drain + 30)

    def test_the_data_directory_is_the_claimed_volume(self):
        claims = [c["metadata"]["name"]
                  for c in self.sts["spec"]["volumeClaimTemplates"]]
        mounts = {m["mountPath"]: m["name"]
                  for m in self.container["volumeMounts"]}
        self.assertIn(mounts.get(DATA_DIR), claims)

    def test_resources_and_user_are_set(self):
        resources = self.container["resources"]
        for kind in ("requests", "limits"):
            self.assertEqual({"cpu", "memory"}, set(resources[kind]))
        user, group = dict(dockerfile_instructions())["USER"].split(":")
        context = self.pod["securityContext"]
        self.assertEqual(context["runAsUser"], int(user))
        self.assertEqual(context["runAsGroup"], int(group))
        self.assertEqual(context["fsGroup"], int(group))
        self.assertTrue(context["runAsNonRoot"])

    def test_the_disruption_budget_allows_one_at_a_time(self):
        self.assertEqual(
            self.k8s["PodDisruptionBudget"]["spec"]["maxUnavailable"], 1)


class ComposeTest(unittest.TestCase):

    def setUp(self):
        compose = yaml.safe_load((REPO / "deploy" / "compose.yaml").read_text())
        self.server = compose["services"]["server"]
        self.robot = compose["services"]["robot"]
        self.volumes = compose["volumes"]

    def test_the_health_check_asks_the_port_the_server_listens_on(self):
        port = port_of(flag_value(self.server["command"], "listen"))
        test = self.server["healthcheck"]["test"]
        self.assertEqual(test[-1], "health")
        self.assertEqual(port_of(flag_value(test, "server")), port)
        self.assertIn(f"{port}:{port}", self.server["ports"][0])

    def test_the_robot_dials_the_local_socket_they_share(self):
        socket = flag_value(self.server["command"], "local_socket")
        self.assertEqual(flag_value(self.robot["command"], "server"),
                         "unix:" + socket)
        directory = socket.rsplit("/", 1)[0]
        mounts = [v.split(":") for v in self.server["volumes"]]
        shared = [name for name, path in mounts if path == directory]
        self.assertEqual(len(shared), 1, "the socket's folder is a volume")
        self.assertIn(f"{shared[0]}:{directory}", self.robot["volumes"])
        self.assertIn(shared[0], self.volumes)

    def test_metrics_are_published_where_the_server_serves_them(self):
        port = port_of(flag_value(self.server["command"], "metrics_listen"))
        self.assertTrue(any(p.endswith(f":{port}:{port}")
                            for p in self.server["ports"]))

    def test_the_robot_waits_for_a_healthy_server(self):
        self.assertEqual(
            self.robot["depends_on"]["server"]["condition"], "service_healthy")

    def test_models_live_on_the_named_volume(self):
        volume, path = self.server["volumes"][0].split(":")
        self.assertEqual(path, DATA_DIR)
        self.assertIn(volume, self.volumes)

    def test_every_flag_is_a_flag_of_its_binary(self):
        for binary, args in (
            ("streamreg-server", self.server["command"]),
            ("streamreg", self.server["healthcheck"]["test"][2:]),
            ("streamreg-robot-sim", self.robot["command"]),
        ):
            known = flags_of(binary)
            for name in flag_names(args):
                with self.subTest(binary=binary, flag=name):
                    self.assertIn(name, known)


def nats_server_flags():
    """The long flag names of Debian's nats-server, from its --help."""
    path = shutil.which("nats-server") or "/usr/sbin/nats-server"
    result = subprocess.run([path, "--help"], capture_output=True, text=True,
                            timeout=30, check=False)
    names = set(re.findall(r"--([a-z_]+)", result.stdout + result.stderr))
    if "jetstream" not in names:
        raise AssertionError(f"{path} --help listed no --jetstream")
    return names


def nats_urls(value):
    """host:port of each nats:// URL of a comma-separated list."""
    return [u[len("nats://"):] for u in value.split(",")]


class ClusterComposeTest(unittest.TestCase):
    """deploy/cluster/compose.yaml: three NATS nodes routed to each other,
    three cluster-mode servers that name every node and advertise the
    address their port is published at."""

    def setUp(self):
        compose = yaml.safe_load(
            (REPO / "deploy" / "cluster" / "compose.yaml").read_text())
        services = compose["services"]
        self.nats = {n: s for n, s in services.items() if n.startswith("nats")}
        self.servers = {n: s for n, s in services.items()
                        if n.startswith("server")}

    def test_three_nats_nodes_route_to_each_other(self):
        self.assertEqual(len(self.nats), 3)
        for name, node in self.nats.items():
            with self.subTest(node=name):
                command = node["command"]
                self.assertIn("--jetstream", command)
                cluster_port = port_of(flag_value(command, "cluster"))
                routes = nats_urls(flag_value(command, "routes"))
                self.assertEqual(sorted(routes), sorted(
                    f"{n}:{cluster_port}" for n in self.nats))
                for flag in flag_names(command):
                    self.assertIn(flag, nats_server_flags())

    def test_servers_name_every_node_and_advertise_their_published_port(self):
        self.assertEqual(len(self.servers), 3)
        for name, server in self.servers.items():
            with self.subTest(server=name):
                command = server["command"]
                for flag in flag_names(command):
                    self.assertIn(flag, flags_of("streamreg-server"))
                nodes = nats_urls(flag_value(command, "cluster"))
                self.assertEqual(sorted(nodes), sorted(
                    f"{n}:{int(flag_value(self.nats[n]['command'], 'port'))}"
                    for n in self.nats))
                listen = port_of(flag_value(command, "listen"))
                advertise = flag_value(command, "advertise")
                self.assertEqual(port_of(advertise), listen)
                self.assertIn(f"{advertise}:{listen}", server["ports"])
                check = server["healthcheck"]["test"]
                self.assertEqual(port_of(flag_value(check, "server")), listen)
                for node in self.nats:
                    self.assertEqual(server["depends_on"][node]["condition"],
                                     "service_healthy")


class ClusterKubernetesTest(unittest.TestCase):
    """deploy/k8s/cluster: the NATS StatefulSet's pods route to each other
    by their stable names, and the servers name every NATS pod and
    advertise their own stable address."""

    def setUp(self):
        self.objects = {}
        for path in sorted((REPO / "deploy" / "k8s" / "cluster").glob("*.yaml")):
            for document in yaml.safe_load_all(path.read_text()):
                if document:
                    self.objects[(document["kind"],
                                  document["metadata"]["name"])] = document
        self.nats = self.objects[("StatefulSet", "nats")]
        self.servers = self.objects[("StatefulSet", "streamreg-cluster")]

    def pod_names(self, statefulset):
        name = statefulset["metadata"]["name"]
        service = statefulset["spec"]["serviceName"]
        self.assertEqual(self.objects[("Service", service)]["spec"]["clusterIP"],
                         "None")
        return [f"{name}-{i}.{service}"
                for i in range(statefulset["spec"]["replicas"])]

    def test_nats_pods_route_to_each_other(self):
        container = self.nats["spec"]["template"]["spec"]["containers"][0]
        args = container["args"]
        self.assertEqual(container["command"], ["nats-server"])
        cluster_port = port_of(flag_value(args, "cluster"))
        self.assertEqual(sorted(nats_urls(flag_value(args, "routes"))),
                         sorted(f"{p}:{cluster_port}"
                                for p in self.pod_names(self.nats)))
        for flag in flag_names(args):
            self.assertIn(flag, nats_server_flags())

    def test_servers_name_every_nats_pod_and_advertise_their_own(self):
        container = self.servers["spec"]["template"]["spec"]["containers"][0]
        args = container["args"]
        for flag in flag_names(args):
            self.assertIn(flag, flags_of("streamreg-server"))
        nats_port = int(flag_value(
            self.nats["spec"]["template"]["spec"]["containers"][0]["args"],
            "port"))
        self.assertEqual(sorted(nats_urls(flag_value(args, "cluster"))),
                         sorted(f"{p}:{nats_port}"
                                for p in self.pod_names(self.nats)))
        listen = port_of(flag_value(args, "listen"))
        service = self.servers["spec"]["serviceName"]
        self.assertEqual(flag_value(args, "advertise"),
                         f"$(POD_NAME).{service}:{listen}")
        self.assertIn("POD_NAME", [e["name"] for e in container["env"]])
        replicas = int(flag_value(args, "cluster_replicas"))
        self.assertLessEqual(replicas, self.servers["spec"]["replicas"])
        budget = self.objects[("PodDisruptionBudget", "streamreg-cluster")]
        self.assertLess(budget["spec"]["maxUnavailable"], replicas)


class DockerfileTest(unittest.TestCase):

    def test_the_runtime_has_what_cluster_mode_needs(self):
        installed = " ".join(self.by_name["RUN"])
        # The server links the NATS C client; the image also runs the nodes.
        self.assertIn("libnats3.4", installed)
        self.assertIn("nats-server", installed)

    def setUp(self):
        self.instructions = dockerfile_instructions()
        self.by_name = {}
        for name, arguments in self.instructions:
            self.by_name.setdefault(name.upper(), []).append(arguments)

    def test_runtime_stage_is_slim_non_root_and_stops_on_sigterm(self):
        self.assertIn("debian:bookworm-slim", self.by_name["FROM"][0])
        user = self.by_name["USER"][-1].split(":")[0]
        self.assertTrue(user.isdigit() and int(user) != 0, user)
        # The user the image creates is the one it runs as.
        self.assertIn(f"--uid {user}", " ".join(self.by_name["RUN"]))
        self.assertEqual(self.by_name["STOPSIGNAL"], ["SIGTERM"])
        self.assertIn(DATA_DIR, self.by_name["VOLUME"][0])

    def test_exposed_port_health_check_and_entrypoint_agree(self):
        command = yaml.safe_load(self.by_name["CMD"][-1])
        entrypoint = yaml.safe_load(self.by_name["ENTRYPOINT"][-1])
        port = port_of(flag_value(command, "listen"))
        self.assertIn(str(port), self.by_name["EXPOSE"][0].split())
        metrics_port = port_of(flag_value(command, "metrics_listen"))
        self.assertIn(str(metrics_port), self.by_name["EXPOSE"][0].split())
        check = self.by_name["HEALTHCHECK"][0]
        check_args = yaml.safe_load(check[check.index("CMD") + 3:].strip())
        self.assertEqual(check_args[-1], "health")
        self.assertEqual(port_of(flag_value(check_args, "server")), port)
        self.assertEqual(flag_value(entrypoint, "data_dir"), DATA_DIR)
        known = flags_of("streamreg-server")
        for name in flag_names(entrypoint + command):
            self.assertIn(name, known)
        known = flags_of("streamreg")
        for name in flag_names(check_args):
            self.assertIn(name, known)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
