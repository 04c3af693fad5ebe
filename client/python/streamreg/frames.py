"""pandas DataFrames where arrays are accepted, without needing pandas."""

import sys
from typing import List


def is_frame(value) -> bool:
    """Whether `value` is a pandas DataFrame (pandas itself optional: a
    frame exists only if pandas was imported)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, pandas.DataFrame)


def is_series(value) -> bool:
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, pandas.Series)


def target_names(y, num_targets: int, vector: bool) -> List[str]:
    """The targets' names: a DataFrame's columns, a named Series's name,
    else "y" for a `vector` and y0, y1, ... for columns."""
    if is_frame(y):
        return [str(column) for column in y.columns]
    if is_series(y) and isinstance(y.name, str) and y.name:
        return [y.name]
    if vector:
        return ["y"]
    return [f"y{i}" for i in range(num_targets)]


def like(values, queries, names: List[str]):
    """`values` (n,) or (n, m) as the caller gave the queries: a Series or
    DataFrame with their index and the targets' names when the queries are
    a DataFrame, else the array."""
    if not is_frame(queries):
        return values
    pandas = sys.modules["pandas"]
    if values.ndim == 1:
        return pandas.Series(values, index=queries.index, name=names[0])
    return pandas.DataFrame(values, index=queries.index, columns=names)


def by_name(frame, names: List[str], what: str):
    """A DataFrame's columns in the order of the model's `names`, as a
    float64 array; a ValueError naming the missing and unexpected columns
    when its columns are not those names (as the CLI matches a CSV's)."""
    columns = [str(column) for column in frame.columns]
    missing = [name for name in names if name not in columns]
    unexpected = [column for column in columns if column not in names]
    if missing or unexpected:
        raise ValueError(
            f"{what}: the frame's columns are not the model's: missing "
            f"{', '.join(missing) or 'none'}; unexpected "
            f"{', '.join(unexpected) or 'none'}")
    frame = frame.copy()
    frame.columns = columns
    return frame[names].to_numpy(dtype="float64")
