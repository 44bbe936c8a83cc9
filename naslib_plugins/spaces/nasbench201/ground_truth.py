"""NAS-Bench-201's own ground-truth files.

- `.zip`: the shared `nasbench201/` folder read through the NASLib zip in it,
  `nasbench201/original/naslib_nb201_zen.zip`. Test accuracy (200 epochs) is RoBoT's
  `original/nb2_{cf10,cf100,im120}_test_accuracy.p` beside the zip: one number per NB201 index,
  the architecture of each index from `nasbench201/nats_bench_tss_200ep_test_acc.csv`
  (`ArchitectureString` in row order) and `mini_nasbench201_hp12_accs.csv` (`arch`, `cellstr`),
  which must agree where both are there. Validation accuracy is NASLib's, the `val_accuracy` of the
  zip's `zen/benchmark--nasbench201--<dataset>--<start>.json` entries.
- `.csv`: NATS-Bench's table (`nats_bench_tss_200ep_test_acc.csv`, told by its `ArchitectureString`
  column): 200-epoch test accuracy, NB201 index = row; any other CSV as every space reads it.
- `.pth`: the official NAS-Bench-201 file (`NAS-Bench-201-v1_*.pth`), loaded with
  `torch.load(weights_only=True)` (no code runs) and read through the `nas_201_api` package:
  200-epoch accuracy averaged over seeds; test = `ori-test` (CIFAR-10) / `x-test`, val = `x-valid`
  (CIFAR-10 validation from the `cifar10-valid` split).
- `.pickle`/`.pkl`: NASLib's `nb201_<dataset>_full_training.pickle`,
  `{arch_str: {dataset_key: {"eval_acc1es": [...], "train_acc1es": [...], ...}}}`; NASLib
  answers both test and validation queries with the last `eval_acc1es` entry, and so do we.
- NATS-Bench's topology archive, the file `NATS-tss-v1_0-3ffb9.pickle.pbz2` or the folder
  `NATS-tss-v1_0-3ffb9-simple/`: read through `nats_bench`, queried as the `.pth` is.
"""
from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

import torch

from naslib_plugins.data.safe_pickle import safe_load
from naslib_plugins.errors import BenchmarkFileError
from naslib_plugins.evaluation.ground_truth import (
    DIRECTORY,
    PICKLE_SUFFIXES,
    GroundTruth,
    arch_key,
    finite_value,
    read_csv,
)
from naslib_plugins.spaces.base import SearchSpace

# NASLib's NB201 pickles: cifar10 results live under the "cifar10-valid" split
_PICKLE_DATASET = {"cifar10": ("cifar10-valid", "cifar10"), "cifar100": ("cifar100",),
                   "ImageNet16-120": ("ImageNet16-120",)}
_PICKLE_METRIC = {"test_accuracy": "eval_acc1es", "val_accuracy": "eval_acc1es", "train_accuracy": "train_acc1es"}


def read_nb201_pickle(path: Path, space: SearchSpace, dataset: str, metric: str) -> GroundTruth:
    gt = GroundTruth(space.name, dataset, metric, str(path))
    data = safe_load(path)
    if isinstance(data, list):
        raise BenchmarkFileError(f"{path}: a list of accuracies by NB201 index (RoBoT's nb2_*_test_accuracy.p) "
                                 f"says nothing of architectures: pass {ZEN_ZIP} from the same folder")
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
    return _read_api(NASBench201API, data, path, space, dataset, metric)


def _read_api(api_class: type, data: object, path: Path, space: SearchSpace, dataset: str,
              metric: str) -> GroundTruth:
    """Query every evaluated cell of a NAS-Bench-201 or NATS-Bench topology archive, loaded as
    plain data, through its own API (nas_201_api and nats_bench answer alike)."""
    if not isinstance(data, dict) or not {"meta_archs", "arch2infos", "evaluated_indexes"} <= set(data):
        raise BenchmarkFileError(f"{path}: not a NAS-Bench-201 file (needs meta_archs, arch2infos, evaluated_indexes)")
    try:
        api = api_class(data, verbose=False)
    except Exception as e:
        raise BenchmarkFileError(f"{path}: corrupt NAS-Bench-201 entries ({type(e).__name__}: {e})") from None
    ds_key, field_name = _PTH_QUERY[metric].get(dataset, (dataset, _PTH_KEY[metric]))
    gt = GroundTruth(space.name, dataset, metric, str(path))
    for index in sorted(api.evaluated_indexes):
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


NATS_SUFFIX = ".pickle.pbz2"


def read_nats_archive(path: Path, space: SearchSpace, dataset: str, metric: str) -> GroundTruth:
    """NATS-Bench's topology archive, queried through `nats_bench` (an optional dependency): the
    one-file `NATS-tss-v1_0-3ffb9.pickle.pbz2` or the folder `NATS-tss-v1_0-3ffb9-simple/`
    (`meta.pickle.pbz2` and one file per cell). nats_bench would unpickle them itself, running
    whatever they name; they are read here through the restricted unpickler and handed to it as data."""
    try:
        from nats_bench.api_topology import NATStopology
    except ImportError:
        raise BenchmarkFileError(f"{path}: reading a NATS-Bench archive needs nats_bench (pip install nats_bench, "
                                 "or the package's [nats] extra)") from None
    if path.is_dir():
        meta = safe_load(path / f"meta{NATS_SUFFIX}")
        if not isinstance(meta, dict) or not isinstance(meta.get("meta_archs"), list):
            raise BenchmarkFileError(f"{path / f'meta{NATS_SUFFIX}'}: no meta_archs list")
        infos = {}
        for index in range(len(meta["meta_archs"])):
            cell = path / f"{index:06d}{NATS_SUFFIX}"
            if not cell.is_file():
                cell = path / f"{index}{NATS_SUFFIX}"
            if cell.is_file():
                infos[index] = safe_load(cell)
        if not infos:
            raise BenchmarkFileError(f"{path}: no cell files (000000{NATS_SUFFIX}, ...) beside meta{NATS_SUFFIX}")
        data = {"meta_archs": meta["meta_archs"], "arch2infos": infos, "evaluated_indexes": sorted(infos)}
    else:
        data = safe_load(path)
    return _read_api(NATStopology, data, path, space, dataset, metric)


NATS_TABLE = "nats_bench_tss_200ep_test_acc.csv"
MINI_TABLE = "mini_nasbench201_hp12_accs.csv"
ZEN_ZIP = "naslib_nb201_zen.zip"
NATS_ARCH = "ArchitectureString"
_NATS_COLUMN = {"cifar10": "CIFAR10TestAccuracy200Epochs", "cifar100": "CIFAR100TestAccuracy200Epochs",
                "ImageNet16-120": "ImageNetTestAccuracy200Epochs"}
_ROBOT_PICKLE = {"cifar10": "nb2_cf10_test_accuracy.p", "cifar100": "nb2_cf100_test_accuracy.p",
                 "ImageNet16-120": "nb2_im120_test_accuracy.p"}


def _table(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        have = reader.fieldnames or []
        missing = [c for c in columns if c not in have]
        if missing:
            raise BenchmarkFileError(f"{path}: no column {', '.join(missing)} (has {', '.join(have) or 'none'})")
        return list(reader)


def _by_index(path: Path, space: SearchSpace, archs: list[str]) -> list[str]:
    """Hashes of the archs of NB201 index 0, 1, ... (line i + 2 of a CSV); each arch once."""
    first: dict[str, int] = {}
    for i, arch in enumerate(archs):
        key = arch_key(space, arch, path, f"line {i + 2}")
        if key in first:
            raise BenchmarkFileError(f"{path}: line {i + 2}: {arch} again (first on line {first[key] + 2})")
        first[key] = i
    return list(first)


def nb201_index(folder: Path, space: SearchSpace) -> list[str]:
    """The hash of each NB201 index, from the tables in `folder` that give it (they must agree)."""
    nats, mini = folder / NATS_TABLE, folder / MINI_TABLE
    tables = {}
    if nats.is_file():
        tables[nats] = _by_index(nats, space, [row[NATS_ARCH] for row in _table(nats, (NATS_ARCH,))])
    if mini.is_file():
        rows = _table(mini, ("arch", "cellstr"))
        for i, row in enumerate(rows):
            if row["arch"] != str(i):
                raise BenchmarkFileError(f"{mini}: line {i + 2}: arch {row['arch']!r}, expected NB201 index {i}")
        tables[mini] = _by_index(mini, space, [row["cellstr"] for row in rows])
    if not tables:
        raise BenchmarkFileError(f"no NB201 index table ({NATS_TABLE} or {MINI_TABLE}) in {folder}")
    (first, archs), *others = tables.items()
    for other, theirs in others:
        if len(theirs) != len(archs):
            raise BenchmarkFileError(f"{other}: {len(theirs)} architectures, {first.name} has {len(archs)}")
        for i, (a, b) in enumerate(zip(archs, theirs)):
            if a != b:
                raise BenchmarkFileError(f"{other}: NB201 index {i} is {space.to_string(b)}, "
                                         f"{first.name} has {space.to_string(a)}")
    return archs


def read_nats_csv(path: Path, space: SearchSpace, dataset: str, metric: str) -> GroundTruth:
    if metric != "test_accuracy":
        raise BenchmarkFileError(f"{path}: NATS-Bench's table has the 200-epoch test accuracy only, not {metric}")
    column = _NATS_COLUMN[dataset]
    rows = _table(path, (NATS_ARCH, column))
    gt = GroundTruth(space.name, dataset, metric, str(path))
    for index, key in enumerate(_by_index(path, space, [row[NATS_ARCH] for row in rows])):
        gt.values[key] = finite_value(rows[index][column], path, f"line {index + 2}")
        gt.index[key] = index
    return gt


def read_nb201_csv(path: Path, space: SearchSpace, dataset: str, metric: str) -> GroundTruth:
    with open(path, newline="") as f:
        header = next(csv.reader(f), [])
    if NATS_ARCH in header:
        return read_nats_csv(path, space, dataset, metric)
    return read_csv(path, space, dataset, metric)


def _robot_test_accuracy(path: Path, n: int) -> list[float]:
    data = safe_load(path)
    if not isinstance(data, list) or len(data) != n:
        have = f"{len(data)} entries" if isinstance(data, list) else f"a {type(data).__name__}"
        raise BenchmarkFileError(f"{path}: {have}, expected a list of {n} accuracies (one per NB201 index)")
    return [finite_value(v, path, f"NB201 index {i}") for i, v in enumerate(data)]


def _zen_val_accuracy(path: Path, space: SearchSpace, dataset: str) -> dict[str, float]:
    prefix = f"zen/benchmark--nasbench201--{dataset}--"
    values: dict[str, float] = {}
    seen: dict[str, str] = {}  # NASLib's idx -> where; its own numbering, not NB201's index
    try:
        with zipfile.ZipFile(path) as z:
            for name in sorted(n for n in z.namelist() if n.startswith(prefix) and n.endswith(".json")):
                try:
                    entries = json.loads(z.read(name))
                except (json.JSONDecodeError, UnicodeDecodeError) as e:
                    raise BenchmarkFileError(f"{path}: {name}: invalid JSON ({e})") from None
                if not isinstance(entries, list):
                    raise BenchmarkFileError(f"{path}: {name}: expected a list of architectures")
                for i, entry in enumerate(entries):
                    where = f"{name}[{i}]"
                    if not isinstance(entry, dict) or not {"idx", "arch", "val_accuracy"} <= set(entry):
                        raise BenchmarkFileError(f"{path}: {where}: needs idx, arch and val_accuracy")
                    idx = str(entry["idx"])
                    if not idx.isdigit():
                        raise BenchmarkFileError(f"{path}: {where}: idx {idx!r} is not an index")
                    if idx in seen:
                        raise BenchmarkFileError(f"{path}: {where}: idx {idx} again (first in {seen[idx]})")
                    key = arch_key(space, entry["arch"], path, where)
                    if key in values:
                        raise BenchmarkFileError(f"{path}: {where}: {entry['arch']} repeated")
                    seen[idx] = where
                    values[key] = finite_value(entry["val_accuracy"], path, where)
    except zipfile.BadZipFile as e:
        raise BenchmarkFileError(f"{path}: not a readable zip ({e})") from None
    if not values:
        raise BenchmarkFileError(f"{path}: no {prefix}*.json")
    return values


def read_nb201_zip(path: Path, space: SearchSpace, dataset: str, metric: str) -> GroundTruth:
    """The shared nasbench201/ folder, through the zip in its original/ folder (see above)."""
    if metric not in ("test_accuracy", "val_accuracy"):
        raise BenchmarkFileError(f"{path}: NB201's shared data has test and validation accuracy, not {metric}")
    archs = nb201_index(path.parent.parent, space)  # the zip is in original/, the index tables above it
    if metric == "test_accuracy":
        source = path.parent / _ROBOT_PICKLE[dataset]
        values = _robot_test_accuracy(source, len(archs))
    else:
        source = path
        found = _zen_val_accuracy(path, space, dataset)
        missing = [i for i, key in enumerate(archs) if key not in found]
        if missing:
            raise BenchmarkFileError(f"{path}: {dataset}: no val_accuracy for {len(missing)} of the {len(archs)} "
                                     f"NB201 architectures (e.g. index {missing[0]})")
        if len(found) != len(archs):
            raise BenchmarkFileError(f"{path}: {dataset}: {len(found)} architectures, the NB201 index table "
                                     f"{len(archs)}")
        values = [found[key] for key in archs]
    gt = GroundTruth(space.name, dataset, metric, str(source))
    for index, (key, value) in enumerate(zip(archs, values)):
        # every committed result was computed from a table that kept these values to 6 decimals
        # (the sources differ from that by float noise, under 5e-7): rounding alike reproduces them
        gt.values[key] = round(value, 6)
        gt.index[key] = index
    return gt


READERS = {".pth": read_nb201_pth, ".zip": read_nb201_zip, ".csv": read_nb201_csv, ".pbz2": read_nats_archive,
           DIRECTORY: read_nats_archive, **dict.fromkeys(PICKLE_SUFFIXES, read_nb201_pickle)}
