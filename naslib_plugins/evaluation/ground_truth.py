"""Ground truth keyed by the space's arch hash, read from the benchmark files NASLib uses.

Every space reads (picked by file suffix):
- `.csv`: one row per architecture; an architecture column (`naslib_op_indices`, `arch`,
  `arch_str`, `architecture`, `net`) and a metric column, either literally the metric name
  (`test_accuracy`, `val_accuracy`) or the shared NB201 table's `test200_<ds>`/`val200_<ds>_naslib`.
- `.json`: NASLib's NAS-Bench-Suite-Zero `zc_<space>.json`,
  `{dataset: {arch: {"val_accuracy": x, proxy: {"score", "time"}}}}`.
A space declares readers of its benchmark's own files (`SearchSpace.benchmark_readers`, e.g. the
official NAS-Bench-201 `.pth`, NASLib's pickles) and its default file (`benchmark_file`).
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
ARCH_COLUMNS = ("naslib_op_indices", "arch", "arch_str", "architecture", "net")
# the shared NB201 table's dataset spelling
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
    if not path.is_file():
        raise BenchmarkFileError(f"benchmark file not found: {path} (looked for {path.resolve()})")
    suffix = path.suffix.lower()
    readers = {".csv": read_csv, ".json": read_zc_json, **space.benchmark_readers}
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
    """NASLib's recorded proxy scores from a zc_<space>.json: {hash: {proxy: score}}."""
    path = Path(path)
    if not path.is_file():
        raise BenchmarkFileError(f"benchmark file not found: {path}")
    section = _zc_section(path, _load_json(path), space, space.check_dataset(dataset))
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


def default_benchmark(space: SearchSpace) -> Path | None:
    """The space's all-architecture table, if it is there: in the shared data that
    $NASLIB_PLUGINS_DATA points at, or shipped with this package."""
    from naslib_plugins.data.batches import data_dir

    if space.benchmark_file is None:
        return None
    if space.benchmark_file.is_absolute():
        path = space.benchmark_file
    else:
        root = data_dir()
        if root is None:
            return None
        path = root / space.benchmark_file
    return path if path.is_file() else None


__all__ = ["GroundTruth", "METRICS", "PICKLE_SUFFIXES", "load_ground_truth", "load_zc_scores", "default_benchmark",
           "read_csv", "read_zc_json", "check_query", "arch_key", "finite_value"]
