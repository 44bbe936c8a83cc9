"""Ground-truth readers for the benchmark files NASLib uses, keyed by the space's arch hash.

Supported layouts (picked by file suffix):
- `.csv`: one row per architecture; an architecture column (`naslib_op_indices`, `arch`,
  `arch_str`, `architecture`, `net`) and a metric column, either literally the metric name
  (`test_accuracy`, `val_accuracy`) or the shared NB201 table's `test200_<ds>`/`val200_<ds>_naslib`.
- `.json`: NASLib's NAS-Bench-Suite-Zero `zc_<space>.json`,
  `{dataset: {arch: {"val_accuracy": x, proxy: {"score", "time"}}}}`.
- `.pth`: the official NAS-Bench-201 file (`NAS-Bench-201-v1_*.pth`), loaded with
  `torch.load(weights_only=True)` (no code runs) and read through the `nas_201_api` package:
  200-epoch accuracy averaged over seeds; test = `ori-test` (CIFAR-10) / `x-test`, val = `x-valid`
  (CIFAR-10 validation from the `cifar10-valid` split).
- `.pickle`/`.pkl`: NASLib's `nb201_<dataset>_full_training.pickle`,
  `{arch_str: {dataset_key: {"eval_acc1es": [...], "train_acc1es": [...], ...}}}`; NASLib
  answers both test and validation queries with the last `eval_acc1es` entry, and so do we.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from naslib_plugins.data.safe_pickle import safe_load
from naslib_plugins.errors import ArchitectureError, BenchmarkFileError, UserError
from naslib_plugins.spaces.base import SearchSpace

METRICS = ("test_accuracy", "val_accuracy", "train_accuracy")
ARCH_COLUMNS = ("naslib_op_indices", "arch", "arch_str", "architecture", "net")
# the shared NB201 table's dataset spelling
_CSV_DATASET = {"cifar10": "cifar10", "cifar100": "cifar100", "ImageNet16-120": "imagenet16"}
# NASLib's NB201 pickles: cifar10 results live under the "cifar10-valid" split
_PICKLE_DATASET = {"cifar10": ("cifar10-valid", "cifar10"), "cifar100": ("cifar100",),
                   "ImageNet16-120": ("ImageNet16-120",)}
_PICKLE_METRIC = {"test_accuracy": "eval_acc1es", "val_accuracy": "eval_acc1es", "train_accuracy": "train_acc1es"}


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
    dataset = space.check_dataset(dataset)
    if metric not in METRICS:
        raise UserError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    if not path.is_file():
        raise BenchmarkFileError(f"benchmark file not found: {path} (looked for {path.resolve()})")
    suffix = path.suffix.lower()
    gt = GroundTruth(space.name, dataset, metric, str(path))
    if suffix == ".csv":
        _read_csv(path, space, dataset, metric, gt)
    elif suffix == ".json":
        _read_zc_json(path, space, dataset, metric, gt)
    elif suffix in (".pickle", ".pkl", ".p"):
        gt = _pickle_reader(space)(path, space, dataset, metric)
    elif suffix == ".pth" and space.name == "nasbench201":
        gt = read_nb201_pth(path, space, dataset, metric)
    elif suffix == ".pth" and space.name.startswith("transbench101"):
        from naslib_plugins.evaluation.gt_transbench101 import read_tnb_pth

        gt = read_tnb_pth(path, space, dataset, metric)
    else:
        raise BenchmarkFileError(f"{path}: unknown benchmark format {suffix!r} (want .csv, .json or .pickle)")
    if not gt.values:
        raise BenchmarkFileError(f"{path}: no {metric} for {space.name}/{dataset}")
    return gt


def _parse(space: SearchSpace, arch: object, path: Path, where: str) -> str:
    try:
        return space.hash(arch)
    except ArchitectureError as e:
        raise BenchmarkFileError(f"{path}: {where}: {e}") from None


def _number(value: object, path: Path, where: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise BenchmarkFileError(f"{path}: {where}: not a number: {value!r}") from None
    if not math.isfinite(out):
        raise BenchmarkFileError(f"{path}: {where}: non-finite value {value!r}")
    return out


def _read_csv(path: Path, space: SearchSpace, dataset: str, metric: str, gt: GroundTruth) -> None:
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
            key = _parse(space, row[arch_col], path, f"line {line}")
            gt.values[key] = _number(row[metric_col], path, f"line {line}")
            if row.get("nb201_index", "").isdigit():
                gt.index[key] = int(row["nb201_index"])


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


def _read_zc_json(path: Path, space: SearchSpace, dataset: str, metric: str, gt: GroundTruth) -> None:
    section = _zc_section(path, _load_json(path), space, dataset)
    for arch, entry in section.items():
        if not isinstance(entry, dict) or metric not in entry:
            have = ", ".join(k for k in (entry if isinstance(entry, dict) else {}) if k.endswith("accuracy"))
            raise BenchmarkFileError(f"{path}: {arch}: no {metric!r} (has: {have or 'nothing'})")
        key = _parse(space, arch, path, f"{dataset}/{arch}")
        gt.values[key] = _number(entry[metric], path, f"{dataset}/{arch}")
        if str(entry.get("idx", "")).isdigit():
            gt.index[key] = int(entry["idx"])


def load_zc_scores(path: str | Path, space: SearchSpace, dataset: str) -> dict[str, dict[str, float]]:
    """NASLib's recorded proxy scores from a zc_<space>.json: {hash: {proxy: score}}."""
    path = Path(path)
    if not path.is_file():
        raise BenchmarkFileError(f"benchmark file not found: {path}")
    section = _zc_section(path, _load_json(path), space, space.check_dataset(dataset))
    out: dict[str, dict[str, float]] = {}
    for arch, entry in section.items():
        key = _parse(space, arch, path, f"{dataset}/{arch}")
        # proxies are {"score", "time"} in most files, plain numbers in some (NB101)
        out[key] = {
            name: float(v["score"] if isinstance(v, dict) else v)
            for name, v in entry.items()
            if (isinstance(v, dict) and "score" in v) or (isinstance(v, (int, float)) and not isinstance(v, bool))
        }
    return out


def _pickle_reader(space: SearchSpace):
    """Each benchmark pickles its own layout; the space's reader knows it."""
    if space.name == "nasbench101":
        from naslib_plugins.evaluation.gt_nasbench101 import read_nb101_pickle

        return read_nb101_pickle
    if space.name == "nasbench301":
        from naslib_plugins.evaluation.gt_nasbench301 import read_nb301_pickle

        return read_nb301_pickle
    if space.name == "nasbench201":
        return read_nb201_pickle
    raise BenchmarkFileError(f"no pickle layout known for {space.name}")


def read_nb201_pickle(path: Path, space: SearchSpace, dataset: str, metric: str) -> GroundTruth:
    gt = GroundTruth(space.name, dataset, metric, str(path))
    data = safe_load(path)
    if not isinstance(data, dict):
        raise BenchmarkFileError(f"{path}: expected a dict keyed by architecture string")
    field_name = _PICKLE_METRIC[metric]
    for arch, entry in data.items():
        where = f"{arch!r}"
        if not isinstance(entry, dict):
            raise BenchmarkFileError(f"{path}: {where}: expected a dict of datasets")
        ds_key = next((k for k in _PICKLE_DATASET[dataset] if k in entry), None)
        if ds_key is None:
            raise BenchmarkFileError(f"{path}: {where}: no {dataset} results (has {', '.join(map(str, entry))})")
        series = entry[ds_key].get(field_name) if isinstance(entry[ds_key], dict) else None
        if not isinstance(series, (list, tuple)) or not series:
            raise BenchmarkFileError(f"{path}: {where}/{ds_key}: no {field_name} list")
        key = _parse(space, arch, path, where)
        gt.values[key] = _number(series[-1], path, f"{where}/{ds_key}/{field_name}")
    return gt


_PTH_QUERY = {
    "test_accuracy": {"cifar10": ("cifar10", "test-accuracy")},
    "val_accuracy": {"cifar10": ("cifar10-valid", "valid-accuracy")},
    "train_accuracy": {"cifar10": ("cifar10", "train-accuracy")},
}
_PTH_KEY = {"test_accuracy": "test-accuracy", "val_accuracy": "valid-accuracy", "train_accuracy": "train-accuracy"}


def read_nb201_pth(path: Path, space: SearchSpace, dataset: str, metric: str) -> GroundTruth:
    import torch
    from nas_201_api import NASBench201API

    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # pickle errors, zip errors, refused globals
        raise BenchmarkFileError(f"{path}: cannot load as a NAS-Bench-201 .pth with weights_only=True "
                                 f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None
    if not isinstance(data, dict) or not {"meta_archs", "arch2infos", "evaluated_indexes"} <= set(data):
        raise BenchmarkFileError(f"{path}: not a NAS-Bench-201 file (needs meta_archs, arch2infos, evaluated_indexes)")
    try:
        api = NASBench201API(data, verbose=False)
    except Exception as e:
        raise BenchmarkFileError(f"{path}: corrupt NAS-Bench-201 entries ({type(e).__name__}: {e})") from None
    ds_key, field_name = _PTH_QUERY[metric].get(dataset, (dataset, _PTH_KEY[metric]))
    gt = GroundTruth(space.name, dataset, metric, str(path))
    for index in api.evaluated_indexes:
        arch_str = api.meta_archs[index]
        try:
            info = api.get_more_info(index, ds_key, hp="200", is_random=False)
        except Exception as e:
            raise BenchmarkFileError(f"{path}: arch {index}: no 200-epoch {ds_key} results ({type(e).__name__})") from None
        if info.get(field_name) is None:
            raise BenchmarkFileError(f"{path}: arch {index}: no {field_name} on {ds_key}")
        key = _parse(space, arch_str, path, f"arch {index}")
        gt.values[key] = _number(info[field_name], path, f"arch {index}")
        gt.index[key] = int(index)
    return gt


# NASLib's zc_<space>.json files (recorded proxy scores), relative to the shared data folder
ZC_FILES = {
    "nasbench201": Path("nasbench201") / "original" / "zc_nasbench201.json",
    "nasbench101": Path("nasbench101") / "zc_nasbench101.json",
    "nasbench301": Path("nasbench301") / "zc_nasbench301.json",
    "transbench101_micro": Path("transnas101_micro") / "zc_transbench101_micro.json",
    "transbench101_macro": Path("transnas101_macro") / "zc_transbench101_macro.json",
}


def default_benchmark(space: str, dataset: str) -> Path | None:
    """The all-architecture table for a space: the shared data's, if $NASLIB_PLUGINS_DATA points at
    it, or the one this package ships for its own digits space."""
    from naslib_plugins.data.batches import data_dir

    root = data_dir()
    tables = {
        "nasbench201": Path("nasbench201") / "nb201_all_15625.csv",
        "nasbench101": ZC_FILES["nasbench101"],
        "nasbench301": ZC_FILES["nasbench301"],
        "transbench101_micro": Path("transnas101_micro") / "tnb101_micro_all_4096.csv",
        "transbench101_macro": Path("transnas101_macro") / "tnb101_macro_all_3256.csv",
    }
    if space == "mlp_act_skip":
        from naslib_plugins.evaluation.minibench import TABLE

        return TABLE if TABLE.is_file() else None
    if root is None or space not in tables:
        return None
    path = root / tables[space]
    return path if path.is_file() else None


__all__ = ["GroundTruth", "load_ground_truth", "load_zc_scores", "default_benchmark", "ZC_FILES"]
