"""Ground truth from NASLib's `nasbench_only108.pkl` (NAS-Bench-101, 108-epoch results).

Layout, as NASLib's nb101_api.NASBench reads it:
    {module_hash: (fixed, computed)}
    module_hash: NB101's 32-hex MD5 of the pruned cell (isomorphism-invariant)
    fixed:    {"module_adjacency": n x n array, "module_operations": [n op names],
               "trainable_parameters": int}
    computed: {108: [one dict per training repeat (3), with "final_validation_accuracy",
               "final_test_accuracy", "final_train_accuracy" (fractions), ...]}

NASLib answers a query with one repeat drawn at random, times 100; its zc_nasbench101.json
values are such draws. We take the mean over repeats (or one repeat, if asked) times 100.
"""
from __future__ import annotations

import numbers
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from naslib_plugins.data.safe_pickle import safe_load
from naslib_plugins.errors import ArchitectureError, BenchmarkFileError, UserError
from naslib_plugins.evaluation.ground_truth import PICKLE_SUFFIXES, GroundTruth, check_query
from naslib_plugins.spaces.base import SearchSpace

EPOCHS = 108
_FIELD = {
    "val_accuracy": "final_validation_accuracy",
    "test_accuracy": "final_test_accuracy",
    "train_accuracy": "final_train_accuracy",
}


def _entry_value(path: Path, key: Any, entry: Any, field: str, repeat: int | None) -> float:
    where = f"{path}: {key!r}"
    if not isinstance(entry, (tuple, list)) or len(entry) != 2 or not isinstance(entry[1], dict):
        raise BenchmarkFileError(f"{where}: expected a (fixed, computed) pair of dicts")
    runs = entry[1].get(EPOCHS)
    if not isinstance(runs, (list, tuple)) or not runs:
        raise BenchmarkFileError(f"{where}: no {EPOCHS}-epoch results (has epochs {', '.join(map(str, entry[1]))})")
    if repeat is not None and not 0 <= repeat < len(runs):
        raise UserError(f"repeat {repeat} out of range: {where} has {len(runs)} repeats")
    chosen = runs if repeat is None else [runs[repeat]]
    values = []
    for run in chosen:
        value = run.get(field) if isinstance(run, dict) else None
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise BenchmarkFileError(f"{where}: a {EPOCHS}-epoch repeat has no numeric {field!r}")
        values.append(float(value))
    return 100.0 * sum(values) / len(values)


def _fixed_arch(path: Path, space: SearchSpace, key: Any, entry: Any) -> Any:
    fixed = entry[0] if isinstance(entry, (tuple, list)) and entry else None
    if not isinstance(fixed, dict) or "module_adjacency" not in fixed or "module_operations" not in fixed:
        raise BenchmarkFileError(f"{path}: {key!r}: fixed stats need 'module_adjacency' and 'module_operations'")
    try:
        return space.parse({"matrix": fixed["module_adjacency"], "ops": fixed["module_operations"]})
    except ArchitectureError as e:
        raise BenchmarkFileError(f"{path}: {key!r}: {e}") from None


def read_nb101_pickle(
    path: str | Path,
    space: SearchSpace,
    dataset: str,
    metric: str = "val_accuracy",
    *,
    archs: Iterable[Any] | None = None,
    repeat: int | None = None,
) -> GroundTruth:
    """Read NASLib's NB101 pickle into a GroundTruth keyed by `space.hash`.

    Without `archs`, every cell is keyed by its pruned spec padded to 7 vertices, the tuple
    NASLib builds when it loads a cell from this file. Cells reach the same network through
    many raw tuples (dangling vertices, isomorphic numberings), so to look up given
    architectures, e.g. the raw keys of zc_nasbench101.json, pass them as `archs`: each is
    found by NB101's module hash and keyed by its own `space.hash`; ones absent are left out.
    """
    path = Path(path)
    if space.name != "nasbench101":
        raise UserError(f"{path}: an NB101 pickle needs the nasbench101 space, not {space.name!r}")
    dataset = check_query(space, dataset, metric)
    data = safe_load(path)
    if not isinstance(data, dict):
        raise BenchmarkFileError(f"{path}: expected a dict keyed by NB101 module hash")
    field = _FIELD[metric]
    gt = GroundTruth(space.name, dataset, metric, str(path))
    if archs is None:
        for key, entry in data.items():
            value = _entry_value(path, key, entry, field, repeat)
            gt.values[space.hash(_fixed_arch(path, space, key, entry))] = value
    else:
        for arch in archs:
            key = space.module_hash(arch)
            if key in data:
                gt.values[space.hash(arch)] = _entry_value(path, key, data[key], field, repeat)
    if not gt.values:
        raise BenchmarkFileError(f"{path}: no {metric} for {space.name}/{dataset}")
    return gt


READERS = dict.fromkeys(PICKLE_SUFFIXES, read_nb101_pickle)
