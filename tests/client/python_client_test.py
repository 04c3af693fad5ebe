"""The Python client against the C++ server (address in STREAMREG_ADDRESS):
every call kind, an error status, and predictions that improve with data."""

import os
import sys
import unittest

try:
    import grpc
except ImportError:  # deploy/install-deps.sh installs python3-grpcio
    print("SKIPPED: python3-grpcio is not installed for", sys.executable)
    sys.exit(0)

import streamreg_client

SARCOS = os.environ.get("STREAMREG_SARCOS")


class PythonClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = streamreg_client.Client(os.environ["STREAMREG_ADDRESS"])
        cls.inputs, cls.targets, rows = streamreg_client.read_csv(SARCOS)
        cls.rows = rows[:1500]

    def test_create_ingest_predict_metric_learn_delete(self):
        c = self.client
        model = c.create_model("py-arm", len(self.inputs), self.targets,
                               metric="egop", input_names=self.inputs,
                               linear_base=True)
        self.assertEqual(model.spec.input_dim, 21)
        self.assertTrue(model.spec.linear_base)
        summary = c.ingest("py-arm", self.rows[:1000], batch_size=250)
        self.assertEqual(summary.accepted, 1000)
        self.assertEqual(summary.batches, 4)
        self.assertIn("py-arm", [m.name for m in c.list_models()])
        self.assertEqual(c.get_model("py-arm").stats.num_samples, 1000)

        held_out = self.rows[1000:1100]
        predictions = c.predict("py-arm", [x for x, _ in held_out])
        self.assertEqual(len(predictions), 100)
        self.assertEqual(len(predictions[0].y), 7)
        # Better than predicting the mean of tau1 (nMSE < 1).
        truth = [y[0] for _, y in held_out]
        mean = sum(truth) / len(truth)
        mse = sum((p.y[0] - t) ** 2 for p, t in zip(predictions, truth)) / len(truth)
        var = sum((t - mean) ** 2 for t in truth) / len(truth)
        self.assertLess(mse / var, 0.5)

        metric = c.get_metric("py-arm")
        self.assertEqual(metric.kind, streamreg_client.METRICS["egop"])
        self.assertEqual(len(metric.metrics[0].eigenvalues), 21)

        responses = list(c.learn("py-arm", self.rows[1100:1150]))
        self.assertEqual([r.sequence for r in responses], list(range(1001, 1051)))
        c.delete_model("py-arm")

    def test_an_mlkr_model_reports_its_map(self):
        c = self.client
        model = c.create_model("py-mlkr", len(self.inputs), self.targets,
                               metric="mlkr", input_names=self.inputs,
                               mlkr_rank=3)
        self.assertEqual(model.spec.metric, streamreg_client.METRICS["mlkr"])
        self.assertEqual(model.spec.tuning.mlkr_rank, 3)
        c.ingest("py-mlkr", self.rows[:600], batch_size=300)
        c.refit("py-mlkr")
        metric = c.get_metric("py-mlkr")
        self.assertEqual(metric.kind, streamreg_client.METRICS["mlkr"])
        learned = metric.metrics[0]
        self.assertEqual(learned.rank, 3)
        self.assertEqual(len(learned.map), 3 * 21)
        self.assertEqual(len(learned.weights), 21)
        # A^T A of rank 3: its spectrum beyond the third is zero.
        self.assertGreater(learned.eigenvalues[2], 0.0)
        self.assertLess(learned.eigenvalues[3], 1e-9 * learned.eigenvalues[0])
        c.delete_model("py-mlkr")

    def test_a_glml_model_reports_each_targets_gradient(self):
        c = self.client
        model = c.create_model("py-glml", len(self.inputs), self.targets,
                               metric="glml", input_names=self.inputs)
        self.assertEqual(model.spec.metric, streamreg_client.METRICS["glml"])
        self.assertFalse(model.spec.linear_base)
        c.ingest("py-glml", self.rows[:600], batch_size=300)
        metric = c.get_metric("py-glml")
        self.assertEqual(metric.kind, streamreg_client.METRICS["glml"])
        learned = metric.metrics[0]
        self.assertEqual(len(learned.gradient), len(self.targets) * 21)
        self.assertTrue(any(g != 0.0 for g in learned.gradient))
        # A linear base is refused, the field named.
        with self.assertRaises(grpc.RpcError) as refused:
            c.create_model("py-glml-base", len(self.inputs), self.targets,
                           metric="glml", linear_base=True)
        self.assertEqual(refused.exception.code(),
                         grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("spec.linear_base", refused.exception.details())
        c.delete_model("py-glml")

    def test_errors_carry_the_status_and_the_field(self):
        with self.assertRaises(grpc.RpcError) as caught:
            self.client.get_model("no-such-model")
        self.assertEqual(caught.exception.code(), grpc.StatusCode.NOT_FOUND)
        self.client.create_model("py-bad", 2, ["y"])
        with self.assertRaises(grpc.RpcError) as caught:
            self.client.ingest("py-bad", [([1.0, 2.0], [1.0]), ([1.0], [2.0])])
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("samples[1].x", caught.exception.details())
        self.assertEqual(self.client.get_model("py-bad").stats.num_samples, 0)
        self.client.delete_model("py-bad")


if __name__ == "__main__":
    unittest.main()
