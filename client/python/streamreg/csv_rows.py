"""Reading a CSV in the data/README.md convention into arrays."""

from typing import List, Tuple

import numpy as np


def read_csv(path: str) -> Tuple[List[str], List[str], np.ndarray, np.ndarray]:
    """(input names, target names, X (n, d), Y (n, m)) of a CSV whose
    target_* columns are the targets; id_* columns are skipped."""
    with open(path) as f:
        header = [c.strip() for c in f.readline().split(",")]
    inputs = [i for i, c in enumerate(header)
              if not c.startswith(("target_", "id_"))]
    targets = [i for i, c in enumerate(header) if c.startswith("target_")]
    table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return ([header[i] for i in inputs],
            [header[i][len("target_"):] for i in targets],
            table[:, inputs], table[:, targets])
