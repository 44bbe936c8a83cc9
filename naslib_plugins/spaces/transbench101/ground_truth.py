"""Ground truth from TransNAS-Bench-101's own file, `transnas-bench_v10141024.pth`.

Layout (TNB's api.py, copied into NASLib as naslib/search_spaces/transbench101/api.py):
`{"task_list": [...], "metrics_dict": {task: [metric, ...]}, "info_names": [...],
  "data": {"macro"|"micro": {arch_str: {task: {"metrics": {metric: [value per epoch]},
                                               "model_info": {...}, "total_epochs": n}}}}}`.
The benchmark's architecture index is the position in "data"'s spaces and archs, in order.
NASLib maps val/test/train "accuracy" to each task's own metric (data/tasks.py `tnb_metric`)
and, since commit 9ae8816d (2022-05-28), answers with the final epoch (mode="final"). Before
that it used the TNB API's default, the maximum over epochs (mode="best"): the
`val_accuracy` of NASLib's zc_transbench101_*.json (commit e5a821c2, 2022-05-18) matches that
maximum (it is never below, and often above, the final-epoch value of the shared
tnb101_*_all_*.csv tables, which NASLib wrote after the change).

TNB's API and NASLib open the file with a bare `torch.load`, which under torch >= 2.6 is the
restricted `weights_only` loader anyway; we ask for it explicitly and never fall back to
unrestricted unpickling.
"""
from __future__ import annotations

from pathlib import Path

import torch

from naslib_plugins.data.tasks import tnb_metric
from naslib_plugins.errors import ArchitectureError, BenchmarkFileError, UserError
from naslib_plugins.evaluation.ground_truth import METRICS, GroundTruth, finite_value
from naslib_plugins.spaces.base import SearchSpace


def load_tnb_database(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise BenchmarkFileError(f"benchmark file not found: {path}")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # pickle, zip and weights_only errors all mean "not this layout"
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BenchmarkFileError(
            f"{path}: cannot read it with torch.load(weights_only=True) ({type(e).__name__}: {first}); "
            "TNB's layout needs only dicts, lists, strings and numbers, so this is a truncated, "
            "foreign or unsafe file (it is never unpickled without that restriction)"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), dict):
        raise BenchmarkFileError(f"{path}: not TNB's layout (expected a dict with a 'data' dict of search spaces)")
    return data


def read_tnb_pth(
    path: str | Path, space: SearchSpace, task: str, metric: str = "val_accuracy", mode: str = "final"
) -> GroundTruth:
    """`metric` of every architecture of `space` on `task`, keyed by space.hash: its final epoch
    (mode="final") or its maximum over epochs (mode="best"). `metric` is NASLib's name
    (val_accuracy, test_accuracy, train_accuracy) or any of the benchmark's own metric names
    for that task (e.g. valid_mIoU, test_l1_loss)."""
    path = Path(path)
    if mode not in ("final", "best"):
        raise UserError(f"unknown mode {mode!r}; known: final, best")
    task = space.check_dataset(task)
    tnb_key = getattr(space, "tnb_key", "")
    if not tnb_key:
        raise UserError(f"space {space.name!r} is not a TransNAS-Bench-101 space")
    name = tnb_metric(task, metric) if metric in METRICS else metric
    db = load_tnb_database(path)
    metrics_dict = db.get("metrics_dict")
    known = metrics_dict.get(task) if isinstance(metrics_dict, dict) else None
    if known is not None and name not in known:
        raise UserError(f"{path}: task {task} has no metric {name!r}; it has: {', '.join(map(str, known))}")
    if tnb_key not in db["data"]:
        raise BenchmarkFileError(f"{path}: no {tnb_key!r} search space; has {', '.join(map(str, db['data']))}")
    gt = GroundTruth(space.name, task, name, str(path))
    offset = 0
    for ss, archs in db["data"].items():
        if not isinstance(archs, dict):
            raise BenchmarkFileError(f"{path}: data[{ss!r}] is not a dict of architectures")
        if ss != tnb_key:
            offset += len(archs)
            continue
        for i, (arch, entry) in enumerate(archs.items()):
            where = f"{ss}/{arch}/{task}"
            try:
                key = space.hash(arch)
            except ArchitectureError as e:
                raise BenchmarkFileError(f"{path}: {ss}/{arch}: {e}") from None
            series = _series(entry, task, name)
            if series is None:
                raise BenchmarkFileError(f"{path}: {where}: no metrics[{name!r}] list")
            gt.values[key] = _value(series, mode, path, f"{where}/{name}")
            gt.index[key] = offset + i
        break
    if not gt.values:
        raise BenchmarkFileError(f"{path}: no {name} for {space.name}/{task}")
    return gt


def _series(entry: object, task: str, name: str) -> list | None:
    results = entry.get(task) if isinstance(entry, dict) else None
    metrics = results.get("metrics") if isinstance(results, dict) else None
    series = metrics.get(name) if isinstance(metrics, dict) else None
    if isinstance(series, torch.Tensor):
        series = series.reshape(-1).tolist()
    return series if isinstance(series, (list, tuple)) and series else None


def _value(series: list | tuple, mode: str, path: Path, where: str) -> float:
    numbers = []
    for value in (series[-1:] if mode == "final" else series):
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        numbers.append(finite_value(value, path, where))
    return max(numbers)


READERS = {".pth": read_tnb_pth}
