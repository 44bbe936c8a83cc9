"""TransNAS-Bench-101 micro/macro spaces, task batches, and the TNB .pth reader."""
from __future__ import annotations

import csv
import itertools
import json
import pickle

import numpy as np
import pytest
import torch

from naslib_plugins.data.tasks import (
    TASK_LOSSES,
    TASK_NAMES,
    TaskBatches,
    jigsaw_permutations,
    shuffle_tiles,
    soft_cross_entropy,
)
from naslib_plugins.errors import ArchitectureError, BenchmarkFileError, UserError
from naslib_plugins.evaluation.ground_truth import load_ground_truth
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.transbench101 import read_tnb_pth

MICRO = get_space("transbench101_micro")
MACRO = get_space("transbench101_macro")


def n_params(space, arch, task) -> int:
    with torch.device("meta"):  # shapes only: no memory, no initialisation
        model = space.build_model(arch, task)
    return sum(p.numel() for p in model.parameters())


# --------------------------------------------------------------------------- encodings


def test_micro_encodings_both_ways():
    arch = (2, 3, 2, 3, 2, 3)
    assert MICRO.to_string(arch) == "64-41414-2_32_323"
    assert MICRO.parse("64-41414-2_32_323") == arch
    assert MICRO.parse("(2, 3, 2, 3, 2, 3)") == arch
    assert MICRO.parse("[2, 3, 2, 3, 2, 3]") == arch
    assert MICRO.parse("232323") == arch
    assert MICRO.parse(np.array(arch)) == arch
    assert MICRO.parse([np.int64(v) for v in arch]) == arch
    assert MICRO.hash("64-41414-2_32_323") == "(2, 3, 2, 3, 2, 3)"
    for a in itertools.islice(MICRO.all(), 0, 4096, 97):
        assert MICRO.parse(MICRO.to_string(a)) == a
        assert MICRO.parse(MICRO.hash(a)) == a


def test_macro_encodings_both_ways():
    assert MACRO.to_string((2, 3, 2, 3, 2, 3)) == "64-232323-basic"
    assert MACRO.parse("64-1242-basic") == (1, 2, 4, 2, 0, 0)
    assert MACRO.parse([1, 2, 4, 2]) == (1, 2, 4, 2, 0, 0)
    assert MACRO.parse(np.array([1, 2, 4, 2, 0, 0])) == (1, 2, 4, 2, 0, 0)
    assert MACRO.parse("(1, 2, 4, 2, 0, 0)") == (1, 2, 4, 2, 0, 0)
    assert MACRO.parse("12420") == (1, 2, 4, 2, 0, 0)
    assert MACRO.hash("64-1242-basic") == "(1, 2, 4, 2, 0, 0)"
    assert MACRO.to_string("(1, 2, 4, 2, 0, 0)") == "64-1242-basic"


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ((1, 2, 3), "needs 6 op codes"),
        ((1, 2, 3, 4, 0, 0), "out of range 0..3"),
        ((1, 2, 3, -1, 0, 0), "out of range 0..3"),
        ((1, 2, 3, 1.0, 0, 0), "not an int"),
        ((True, 2, 3, 1, 0, 0), "not an int"),
        ("64-41414-1_02_33", "unreadable"),
        ("64-41414-1_02_334", "out of range"),
        ("32-41414-1_02_333", "base width 32"),
        ("64-4141-1_02_333", "skeleton 4141"),
        ("(1, 2", "unreadable"),
        ("{1: 2}", "unreadable"),
        ("hello", "unreadable"),
        (3.5, "unsupported type"),
    ],
)
def test_micro_invalid(bad, fragment):
    with pytest.raises(ArchitectureError, match=fragment.replace("(", r"\(")):
        MICRO.parse(bad)


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ((1, 2, 3), "4 to 6 module codes"),
        ((1, 2, 3, 4, 1, 2, 3), "4 to 6 module codes"),
        ((1, 2, 0, 3, 0, 0), "padding must come last"),
        ((1, 2, 4, 0, 0, 0), "has 3 modules"),
        ((1, 2, 5, 4, 0, 0), "out of range 1..4"),
        ((1, 2, 2, 1, 0, 0), "1 to 4 downsampling"),
        ((3, 3, 3, 3, 3, 2), "1 to 4 downsampling"),
        ((1, 3, 1, 3, 0, 0), "1 to 3 channel-doubling"),
        ((2, 2, 2, 4, 0, 0), "1 to 3 channel-doubling"),
        ((1, 2.0, 3, 4, 0, 0), "not an int"),
        ("64-1242-bottleneck", "unreadable"),
        ("128-1242-basic", "base width 128"),
        ("64-12-basic", "4 to 6 module codes"),
    ],
)
def test_macro_invalid(bad, fragment):
    with pytest.raises(ArchitectureError, match=fragment):
        MACRO.parse(bad)


def test_all_counts():
    micro = list(MICRO.all())
    macro = list(MACRO.all())
    assert len(micro) == len(set(micro)) == 4096
    assert len(macro) == len(set(macro)) == 3256
    assert all(MACRO.parse(a) == a for a in macro)


def test_shared_tables_match_all_and_strings(shared_data, require):
    for space, rel, size in [(MICRO, "transnas101_micro/tnb101_micro_all_4096.csv", 4096),
                             (MACRO, "transnas101_macro/tnb101_macro_all_3256.csv", 3256)]:
        with open(require(shared_data / rel), newline="") as f:
            rows = list(csv.DictReader(f))
        keys = set()
        for row in rows:
            arch = space.parse(row["naslib_op_indices"])
            assert space.to_string(arch) == row["tnb_arch_str"]
            assert space.parse(row["tnb_arch_str"]) == arch
            keys.add(arch)
        # the micro table spells keys as the zc json does; the macro one leaves 4- and 5-module
        # tuples unpadded, which parse to the padded key NASLib's zc json uses
        if space is MICRO:
            assert all(space.hash(row["tnb_arch_str"]) == row["naslib_op_indices"] for row in rows)
        else:
            assert space.hash("(2, 3, 1, 4)") == "(2, 3, 1, 4, 0, 0)"
        assert keys == set(space.all()) and len(rows) == size
        gt = load_ground_truth(shared_data / rel, space, "room_layout", "val_accuracy")
        assert len(gt) == size and max(gt.values.values()) < 0  # TNB's negative L2 loss


# --------------------------------------------------------------------------- search moves


def test_micro_neighbours_are_single_edge_changes():
    nbrs = MICRO.neighbours((0, 1, 2, 3, 0, 1))
    assert len(nbrs) == 18
    assert all(sum(a != b for a, b in zip(n, (0, 1, 2, 3, 0, 1))) == 1 for n in nbrs)


def test_macro_neighbours_are_one_edit():
    nbrs = MACRO.neighbours("64-1234-basic")
    assert (1, 2, 3, 3, 0, 0) in nbrs  # changed
    assert (1, 2, 3, 4, 1, 0) in nbrs  # inserted
    assert (1, 2, 3, 0, 0, 0) not in nbrs  # a deletion would leave 3 modules
    assert {sum(c != 0 for c in n) for n in nbrs} == {4, 5}


# --------------------------------------------------------------------------- tasks, losses


def test_tasks_and_losses():
    for space in (MICRO, MACRO):
        assert space.datasets == TASK_NAMES and len(TASK_NAMES) == 7
        for task in TASK_NAMES:
            assert space.check_dataset(task) == task
            assert space.loss_fn(task) is TASK_LOSSES[task]
        with pytest.raises(UserError, match="no task 'cifar10'"):
            space.check_dataset("cifar10")
    with pytest.raises(UserError, match="unknown init"):
        MICRO.build_model((1,) * 6, "jigsaw", init="xavier")
    # NASLib's soft-label loss: integer labels act as one-hot distributions
    out = torch.randn(4, 63)
    labels = torch.tensor([0, 5, 62, 7])
    onehot = torch.nn.functional.one_hot(labels, 63).float()
    assert torch.allclose(soft_cross_entropy(out, labels), soft_cross_entropy(out, onehot))


PARAM_TASKS = ("class_scene", "jigsaw", "autoencoder")


@pytest.mark.parametrize("space", [MICRO, MACRO], ids=lambda s: s.name)
def test_param_counts_match_naslib(space, shared_data, require):
    path = require(shared_data / f"transnas101_{space.tnb_key}" / f"zc_transbench101_{space.tnb_key}.json")
    with open(path) as f:
        data = json.load(f)
    for task in PARAM_TASKS:
        for key in list(data[task])[:: max(1, len(data[task]) // 20)][:20]:
            recorded = round(data[task][key]["params"]["score"] * 1e6)
            assert n_params(space, key, task) == recorded, (task, key)


TINY_MICRO = (1, 2, 1, 0, 2, 1)  # cheap, every edge on a path to the output
TINY_MACRO = (1, 4, 3, 1, 0, 0)  # two downsamplings: total stride 16 divides 32
# one tiny pass per task, the spaces taking turns (the dense decoders are large whatever the cell)
FORWARD_CASES = [
    ("class_scene", MICRO, TINY_MICRO), ("class_object", MACRO, TINY_MACRO),
    ("room_layout", MACRO, TINY_MACRO), ("jigsaw", MICRO, TINY_MICRO),
    ("segmentsemantic", MICRO, TINY_MICRO), ("normal", MACRO, TINY_MACRO),
    ("autoencoder", MICRO, (3, 0, 0, 1, 0, 1)),  # with FactorizedReduce skips and zero nodes
]


@pytest.mark.parametrize("task, space, arch", FORWARD_CASES, ids=[c[0] for c in FORWARD_CASES])
def test_forward_and_loss_backprop(task, space, arch):
    torch.manual_seed(0)
    batches = TaskBatches(task, batch_size=2, resolution=32, data="gaussian")
    x, y = batches.batch(0)
    model = space.build_model(arch, task)
    loss = space.loss_fn(task)(model(x), y)
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    assert all(g is not None for name, g in grads.items() if name.startswith("decoder"))
    stem = [g for name, g in grads.items() if name.startswith("encoder.stem")]
    assert any(g is not None and float(g.abs().sum()) > 0 for g in stem)


def test_dense_task_needs_resolution_multiple_of_stride():
    model = MACRO.build_model((3, 3, 3, 4, 0, 0), "segmentsemantic")  # total stride 64
    with pytest.raises(UserError, match="total stride 64"):
        model(torch.zeros(1, 3, 32, 32))


def test_tnb_init_is_kaiming_fan_out():
    torch.manual_seed(0)
    model = MACRO.build_model((4, 4, 4, 1, 0, 0), "class_scene", init="tnb")
    conv = model.encoder.layers[-1].conv_b[1]  # 512 -> 512, 3x3
    expected = (2.0 / (conv.out_channels * 9)) ** 0.5
    assert abs(float(conv.weight.detach().std()) - expected) / expected < 0.02


def test_naslib_init_is_tnbs_and_gives_naslibs_recorded_l2_norm(shared_data, require):
    """NASLib scored TNB's own networks, Kaiming fan-out encoder included: with init="naslib"
    (= "tnb") the l2_norm (weight norms summed over conv and linear layers) matches its recorded
    one on the classification tasks; the space's `init` is what build_model uses by default."""
    for space in (MICRO, MACRO):
        path = require(shared_data / f"transnas101_{space.tnb_key}" / f"zc_transbench101_{space.tnb_key}.json")
        with open(path) as f:
            data = json.load(f)["class_scene"]
        for i, key in enumerate(list(data)[:3]):
            torch.manual_seed(i)
            model = space.build_model(key, "class_scene", init="naslib")
            l2 = sum(float(m.weight.detach().norm()) for m in model.modules()
                     if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)))
            recorded = data[key]["l2_norm"]["score"]
            assert abs(l2 - recorded) / recorded < 0.01, (space.name, key)
    local = get_space("transbench101_macro", init="tnb")
    torch.manual_seed(0)
    conv = local.build_model((4, 4, 4, 1, 0, 0), "class_scene").encoder.layers[-1].conv_b[1]
    expected = (2.0 / (conv.out_channels * 9)) ** 0.5
    assert abs(float(conv.weight.detach().std()) - expected) / expected < 0.02
    assert MACRO.init == "default"  # another instance's setting is its own


def test_macro_shortcut_batch_norm_is_tnbs():
    """TNB's ResNetBasicblock passes (affine, track_running_stats) = (True, True) positionally to
    nn.BatchNorm2d, where they are eps and momentum: its shortcut normalises with eps 1. Ours has
    the same eps and momentum, and so the same train-mode output."""
    model = MACRO.build_model((4, 1, 3, 2, 0, 0), "class_scene")
    shortcuts = [b.downsample[1] for b in model.encoder.layers if b.downsample is not None]
    assert len(shortcuts) == 3  # the first block of each module that changes the shape
    for bn in shortcuts:
        tnb = torch.nn.BatchNorm2d(bn.num_features, True, True)
        assert (bn.eps, bn.momentum, bn.affine, bn.track_running_stats) == (tnb.eps, tnb.momentum, True, True)
        x = torch.randn(4, bn.num_features, 3, 3) * 0.3
        assert torch.allclose(bn(x), tnb(x))
    other = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d) and m not in shortcuts]
    assert other and all(m.eps == 1e-5 and m.momentum == 0.1 for m in other)


def test_jigsaw_model_accepts_tiles_and_images():
    model = MICRO.build_model((1, 0, 1, 0, 0, 1), "jigsaw").eval()
    image = torch.randn(2, 3, 24, 24)
    tiles = image.reshape(2, 3, 3, 8, 3, 8).permute(0, 2, 4, 1, 3, 5).reshape(2, 9, 3, 8, 8)
    with torch.no_grad():
        assert torch.allclose(model(image), model(tiles), atol=1e-5)
    with pytest.raises(UserError, match="jigsaw input"):
        model(torch.zeros(2, 8, 3, 16, 16))


# --------------------------------------------------------------------------- batches


@pytest.mark.parametrize(
    "task, x_shape, y_shape, dtype",
    [
        ("class_scene", (3, 3, 32, 32), (3, 63), torch.float32),
        ("class_object", (3, 3, 32, 32), (3, 100), torch.float32),
        ("room_layout", (3, 3, 32, 32), (3, 9), torch.float32),
        ("jigsaw", (3, 3, 32, 32), (3,), torch.int64),
        ("segmentsemantic", (3, 3, 32, 32), (3, 32, 32), torch.int64),
        ("normal", (3, 3, 32, 32), (3, 3, 32, 32), torch.float32),
        ("autoencoder", (3, 3, 32, 32), (3, 3, 32, 32), torch.float32),
    ],
)
def test_task_batch_shapes(task, x_shape, y_shape, dtype):
    batches = TaskBatches(task, batch_size=3, resolution=32, data="gaussian", seed=1)
    x, y = batches.batch(0)
    assert tuple(x.shape) == x_shape and tuple(y.shape) == y_shape and y.dtype == dtype
    assert batches.resolution == 32 and batches.batch_size == 3 and batches.seed == 1
    again = pickle.loads(pickle.dumps(batches)).batch(0)
    assert torch.equal(again[0], x) and torch.equal(again[1], y)
    assert not torch.equal(TaskBatches(task, 3, seed=2, resolution=32, data="gaussian").batch(0)[0], x)
    if task == "autoencoder":
        assert torch.equal(x, y)
    if task == "segmentsemantic":
        assert 0 <= int(y.min()) and int(y.max()) < 17
    if task == "normal":
        n = y * 2 - 1
        assert torch.allclose(n.norm(dim=1), torch.ones(3, 32, 32), atol=1e-4)
    if task in ("class_scene", "class_object"):
        assert torch.equal(y.sum(dim=1), torch.ones(3))


def test_task_batches_real_images(cifar_npz):
    batches = TaskBatches("class_object", batch_size=4, images=cifar_npz, resolution=64)
    x, _ = batches.batch(0)
    assert tuple(x.shape) == (4, 3, 64, 64)
    text = batches.describe()
    assert "no Taskonomy" in text and "CIFAR-10" in text and "64x64" in text
    assert TaskBatches("segmentsemantic", images=cifar_npz).resolution == 256
    assert TaskBatches("jigsaw", images=cifar_npz).resolution == 192  # 3 x 64-pixel tiles


def test_task_batch_errors():
    with pytest.raises(UserError, match="unknown TransNAS-Bench-101 task"):
        TaskBatches("cifar10", data="gaussian")
    with pytest.raises(UserError, match="no Taskonomy labels"):
        TaskBatches("jigsaw", labels="true", data="gaussian")
    with pytest.raises(UserError, match="unknown data mode"):
        TaskBatches("jigsaw", data="uniform")


def test_correlate_records_the_input_resolution_and_resumes_only_at_it(tmp_path, shared_data, require, capsys):
    from naslib_plugins.cli import main

    table = require(shared_data / "transnas101_micro" / "tnb101_micro_all_4096.csv")
    argv = ["correlate", "--space", "transbench101_micro", "--dataset", "class_scene", "--n-archs", "3",
            "--predictors", "params,snip", "--batch-size", "2", "--data", "gaussian", "--benchmark",
            str(table), "--metric", "val_accuracy", "--out", str(tmp_path)]
    assert main(argv + ["--resolution", "16"]) == 0
    header = json.loads((tmp_path / "scores.jsonl").read_text().splitlines()[0])["header"]
    assert header["resolution"] == 16 and header["batch_size"] == 2
    capsys.readouterr()
    # scores at another input size are other scores: they must not mix into this log
    assert main(argv + ["--resolution", "32"]) == 2
    assert "other settings (resolution)" in capsys.readouterr().err


def test_shuffle_tiles_moves_grid_cells():
    x = torch.arange(9, dtype=torch.float32).view(1, 1, 3, 3).repeat(2, 1, 1, 1)
    perms = jigsaw_permutations(1000)
    assert len({p.tobytes() for p in perms}) == 1000
    out = shuffle_tiles(x, perms[[3, 7]])
    assert out[0].flatten().tolist() == perms[3].astype(float).tolist()
    assert out[1].flatten().tolist() == perms[7].astype(float).tolist()


# --------------------------------------------------------------------------- the TNB .pth


def _tiny_tnb_db() -> dict:
    def entry(v: float) -> dict:
        return {
            task: {"metrics": {"valid_top1": [v - 1, v], "test_top1": [v + 2, v + 1], "valid_neg_loss": [-v, -v / 2],
                               "valid_mIoU": [v / 10]}, "model_info": {"model_params": 1.5}, "total_epochs": 2}
            for task in ("class_scene", "room_layout", "segmentsemantic")
        }
    return {
        "task_list": ["class_scene", "room_layout", "segmentsemantic"],
        "metrics_dict": {t: ["valid_top1", "test_top1", "valid_neg_loss", "valid_mIoU"]
                         for t in ("class_scene", "room_layout", "segmentsemantic")},
        "info_names": ["model_params"],
        "data": {
            "macro": {"64-1234-basic": entry(50.0), "64-232323-basic": entry(40.0)},
            "micro": {"64-41414-1_02_333": entry(60.0), "64-41414-0_00_000": entry(10.0)},
        },
    }


def test_read_tnb_pth(tmp_path):
    path = tmp_path / "transnas-bench_v10141024.pth"
    torch.save(_tiny_tnb_db(), path)
    gt = read_tnb_pth(path, MICRO, "class_scene")
    assert gt.values == {"(1, 0, 2, 3, 3, 3)": 60.0, "(0, 0, 0, 0, 0, 0)": 10.0}
    assert gt.index == {"(1, 0, 2, 3, 3, 3)": 2, "(0, 0, 0, 0, 0, 0)": 3} and gt.metric == "valid_top1"
    assert read_tnb_pth(path, MACRO, "class_scene", "test_accuracy").values["(1, 2, 3, 4, 0, 0)"] == 51.0
    assert read_tnb_pth(path, MACRO, "room_layout").values["(2, 3, 2, 3, 2, 3)"] == -20.0
    assert read_tnb_pth(path, MICRO, "segmentsemantic", "valid_mIoU").values["(1, 0, 2, 3, 3, 3)"] == 6.0
    # mode="best": the maximum over epochs, as NASLib's zc json val_accuracy
    assert read_tnb_pth(path, MICRO, "class_scene", "test_accuracy", mode="best").values["(0, 0, 0, 0, 0, 0)"] == 12.0
    with pytest.raises(UserError, match="unknown mode"):
        read_tnb_pth(path, MICRO, "class_scene", mode="last")
    with pytest.raises(UserError, match="no metric 'valid_acc'"):
        read_tnb_pth(path, MICRO, "segmentsemantic")
    with pytest.raises(UserError, match="no task 'cifar10'"):
        read_tnb_pth(path, MICRO, "cifar10")


class _Foreign:
    pass


def test_read_tnb_pth_refuses_bad_files(tmp_path):
    unsafe = tmp_path / "unsafe.pth"
    db = _tiny_tnb_db()
    db["payload"] = _Foreign()
    torch.save(db, unsafe)
    with pytest.raises(BenchmarkFileError, match="weights_only"):
        read_tnb_pth(unsafe, MICRO, "class_scene")
    good = tmp_path / "good.pth"
    torch.save(_tiny_tnb_db(), good)
    truncated = tmp_path / "truncated.pth"
    truncated.write_bytes(good.read_bytes()[:200])
    with pytest.raises(BenchmarkFileError, match="cannot read"):
        read_tnb_pth(truncated, MICRO, "class_scene")
    with pytest.raises(BenchmarkFileError, match="not found"):
        read_tnb_pth(tmp_path / "missing.pth", MICRO, "class_scene")
    db = _tiny_tnb_db()
    del db["data"]["micro"]
    torch.save(db, good)
    with pytest.raises(BenchmarkFileError, match="no 'micro' search space"):
        read_tnb_pth(good, MICRO, "class_scene")
    db = _tiny_tnb_db()
    db["data"]["micro"]["64-41414-9_99_999"] = db["data"]["micro"]["64-41414-1_02_333"]
    torch.save(db, good)
    with pytest.raises(BenchmarkFileError, match="out of range"):
        read_tnb_pth(good, MICRO, "class_scene")
