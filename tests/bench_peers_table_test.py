#!/usr/bin/python3
"""bench/peers_table.py renders bench/peers.py's JSON as RESULTS.md's
accuracy table: the default and each peer per set, the best peer in bold,
the default's ratio to it, and the geometric mean of those ratios."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                      "bench", "peers_table.py")


def methods(default, ridge, knn, local_linear, random_features):
    rows = [("streamreg default (MLKR, linear base + k-NN)", default),
            ("streamreg MLKR + k-NN, no base", 0.001),  # not a peer: left out
            ("ridge regression (linear, lambda = 1e-3)", ridge),
            ("k-NN, Euclidean on standardized inputs (k = 20)", knn),
            ("local linear regression, 200 nearest", local_linear),
            ("random-feature ridge (500 features + linear)", random_features)]
    return [{"method": name, "mean_nmse": value} for name, value in rows]


def render(report):
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(report, f)
        f.flush()
        return subprocess.run([sys.executable, SCRIPT, f.name], check=True,
                              capture_output=True, text=True).stdout


class PeersTableTest(unittest.TestCase):
    def test_rows_ratios_and_the_mean(self):
        out = render({"one": methods(0.5, 2.0, 1.0, 4.0, 3.0),
                      "two": methods(0.4, 0.1, 0.3, 0.2, 0.9)})
        lines = out.splitlines()
        self.assertEqual(lines[2], "| one | 0.500 | 2.000 | **1.000** | "
                         "4.000 | 3.000 | 0.50 |")
        self.assertEqual(lines[3], "| two | 0.400 | **0.100** | 0.300 | "
                         "0.200 | 0.900 | 4.00 |")
        # sqrt(0.5 * 4) = 1.41; better than the best peer on one set.
        self.assertIn("geometric mean 1.41; better on 1 of 2 sets", out)

    def test_a_missing_peer_is_an_error(self):
        report = {"one": methods(0.5, 2.0, 1.0, 4.0, 3.0)[:3]}
        with self.assertRaises(subprocess.CalledProcessError):
            render(report)


if __name__ == "__main__":
    unittest.main()
