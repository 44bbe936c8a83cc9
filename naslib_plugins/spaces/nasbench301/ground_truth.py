"""Ground truth from NASLib's `nb301_full_training.pickle` (the NB-301 training data, ~5k DARTS cells).

Layout (NASLib utils/get_dataset_api.py `get_nasbench301_api`, read by search_spaces/nasbench301/
graph.py `query` for architectures loaded from the training data):
`{compact genotype: {"val_accuracies": [per epoch], "train_losses": [per epoch], "runtime": ...}}`,
keyed by NASLib's compact tuple `(((input, op) x8), ((input, op) x8))`. NASLib answers both
validation and test accuracy queries with the last `val_accuracies` entry, and so do we; the
file holds no training accuracy.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from naslib_plugins.data.safe_pickle import safe_load
from naslib_plugins.errors import BenchmarkFileError, UserError
from naslib_plugins.evaluation.ground_truth import PICKLE_SUFFIXES, GroundTruth, arch_key, check_query, finite_value
from naslib_plugins.spaces.base import SearchSpace

_FIELD = {"val_accuracy": "val_accuracies", "test_accuracy": "val_accuracies"}


def read_nb301_pickle(path: str | Path, space: SearchSpace, dataset: str, metric: str = "val_accuracy") -> GroundTruth:
    path = Path(path)
    if space.name != "nasbench301":
        raise UserError(f"{path}: NB-301 training data needs the nasbench301 space, not {space.name!r}")
    dataset = check_query(space, dataset, metric)
    if metric not in _FIELD:
        raise UserError(
            f"{path}: NB-301 training data has no {metric} (only val_accuracies, train_losses, runtime); "
            f"use one of {', '.join(_FIELD)}"
        )
    data = safe_load(path)
    if not isinstance(data, dict):
        raise BenchmarkFileError(f"{path}: expected a dict keyed by compact genotype, got {type(data).__name__}")
    field = _FIELD[metric]
    gt = GroundTruth(space.name, dataset, metric, str(path))
    for arch, entry in data.items():
        where = f"{arch!r}"
        if not isinstance(entry, dict):
            raise BenchmarkFileError(f"{path}: {where}: expected a dict of learning curves")
        series = entry.get(field)
        if isinstance(series, np.ndarray):
            series = series.tolist()
        if not isinstance(series, (list, tuple)) or not series:
            have = ", ".join(map(str, entry)) or "nothing"
            raise BenchmarkFileError(f"{path}: {where}: no {field} list (has {have})")
        key = arch_key(space, arch, path, where)
        gt.values[key] = finite_value(series[-1], path, f"{where}/{field}")
    if not gt.values:
        raise BenchmarkFileError(f"{path}: no architectures")
    return gt


READERS = dict.fromkeys(PICKLE_SUFFIXES, read_nb301_pickle)
