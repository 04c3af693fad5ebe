"""The Python client of streamreg, an online regression server.

    import numpy as np
    import streamreg

    with streamreg.Client("127.0.0.1:50051") as client:
        client.create("arm", inputs=21, targets=["tau1", "tau2"], metric="egop")
        client.learn("arm", X, Y)                  # (n, 21), (n, 2)
        predictions = client.predict("arm", X[:5])
        print(predictions.y, client.info("arm").prequential_nmse)

client/python/README.md has the robot loop (learn_stream) and the rest.
"""

from streamreg.client import Client
from streamreg.csv_rows import read_csv
from streamreg.errors import (Error, InvalidArgument, NotFound,
                              ServerUnreachable)
from streamreg.realtime import ChannelStats, Reading, RealtimeChannel
from streamreg.results import (AheadAnswer, IngestSummary, LearnedMetric,
                               MetricInfo, ModelInfo, Predictions,
                               StreamPrediction, UsedNeighbors)
from streamreg.retry import RetryPolicy
from streamreg.streams import LearnStream, PredictStream

__version__ = "0.1.0"
__all__ = [
    "AheadAnswer", "ChannelStats", "Client", "Error", "IngestSummary",
    "InvalidArgument", "LearnStream", "LearnedMetric", "MetricInfo",
    "ModelInfo", "NotFound", "PredictStream", "Predictions", "Reading",
    "RealtimeChannel", "RetryPolicy", "ServerUnreachable",
    "StreamPrediction", "UsedNeighbors", "read_csv",
]
