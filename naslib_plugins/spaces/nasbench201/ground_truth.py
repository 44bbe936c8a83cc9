"""NAS-Bench-201's own ground-truth files.

- `.pth`: the official NAS-Bench-201 file (`NAS-Bench-201-v1_*.pth`), loaded with
  `torch.load(weights_only=True)` (no code runs) and read through the `nas_201_api` package:
  200-epoch accuracy averaged over seeds; test = `ori-test` (CIFAR-10) / `x-test`, val = `x-valid`
  (CIFAR-10 validation from the `cifar10-valid` split).
- `.pickle`/`.pkl`: NASLib's `nb201_<dataset>_full_training.pickle`,
  `{arch_str: {dataset_key: {"eval_acc1es": [...], "train_acc1es": [...], ...}}}`; NASLib
  answers both test and validation queries with the last `eval_acc1es` entry, and so do we.
"""
from __future__ import annotations

from pathlib import Path

import torch

from naslib_plugins.data.safe_pickle import safe_load
from naslib_plugins.errors import BenchmarkFileError
from naslib_plugins.evaluation.ground_truth import PICKLE_SUFFIXES, GroundTruth, arch_key, finite_value
from naslib_plugins.spaces.base import SearchSpace

# NASLib's NB201 pickles: cifar10 results live under the "cifar10-valid" split
_PICKLE_DATASET = {"cifar10": ("cifar10-valid", "cifar10"), "cifar100": ("cifar100",),
                   "ImageNet16-120": ("ImageNet16-120",)}
_PICKLE_METRIC = {"test_accuracy": "eval_acc1es", "val_accuracy": "eval_acc1es", "train_accuracy": "train_acc1es"}


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
        key = arch_key(space, arch, path, where)
        gt.values[key] = finite_value(series[-1], path, f"{where}/{ds_key}/{field_name}")
    return gt


_PTH_QUERY = {
    "test_accuracy": {"cifar10": ("cifar10", "test-accuracy")},
    "val_accuracy": {"cifar10": ("cifar10-valid", "valid-accuracy")},
    "train_accuracy": {"cifar10": ("cifar10", "train-accuracy")},
}
_PTH_KEY = {"test_accuracy": "test-accuracy", "val_accuracy": "valid-accuracy", "train_accuracy": "train-accuracy"}


def read_nb201_pth(path: Path, space: SearchSpace, dataset: str, metric: str) -> GroundTruth:
    from nas_201_api import NASBench201API  # an optional dependency: only this file format needs it

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
            raise BenchmarkFileError(f"{path}: arch {index}: no 200-epoch {ds_key} results "
                                     f"({type(e).__name__})") from None
        if info.get(field_name) is None:
            raise BenchmarkFileError(f"{path}: arch {index}: no {field_name} on {ds_key}")
        key = arch_key(space, arch_str, path, f"arch {index}")
        gt.values[key] = finite_value(info[field_name], path, f"arch {index}")
        gt.index[key] = int(index)
    return gt


READERS = {".pth": read_nb201_pth, **dict.fromkeys(PICKLE_SUFFIXES, read_nb201_pickle)}
