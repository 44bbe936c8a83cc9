"""The image layouts readers.read_images takes, written small in each one's real format, read back
with their true labels; what ImageBatches makes of them; and a one-line error for each kind of bad input."""
from __future__ import annotations

import io
import pickle
import struct

import numpy as np
import pytest
import torch
from PIL import Image

from naslib_plugins.cli import main
from naslib_plugins.data.batches import ImageBatches, earlier_settings
from naslib_plugins.data.readers import read_images
from naslib_plugins.data.tasks import TaskBatches
from naslib_plugins.errors import BenchmarkFileError, UserError


class _Py2Pickler(pickle._Pickler):
    """Pickles as Python 2 wrote CIFAR's files: text and bytes as Python 2 strings, numpy under
    its numpy 1 module names."""

    dispatch = dict(pickle._Pickler.dispatch)

    def _save_py2_str(self, obj):
        data = obj.encode("latin-1") if isinstance(obj, str) else obj
        if len(data) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(data)]) + data)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(data)) + data)
        self.memoize(obj)

    dispatch[bytes] = _save_py2_str
    dispatch[str] = _save_py2_str

    def save_global(self, obj, name=None):
        module = obj.__module__.replace("numpy._core", "numpy.core")
        self.write(pickle.GLOBAL + f"{module}\n{obj.__qualname__}\n".encode())
        self.memoize(obj)


def _py2_dump(obj, path):
    buffer = io.BytesIO()
    _Py2Pickler(buffer, protocol=2).dump(obj)
    path.write_bytes(buffer.getvalue())


def _pixels(n: int, side: int, offset: int = 0) -> np.ndarray:
    """n distinct uint8 images as the pickles hold them: (n, 3*side*side), channels first."""
    return ((np.arange(n * 3 * side * side) * 7 + offset) % 256).astype(np.uint8).reshape(n, -1)


def _nhwc(data: np.ndarray, side: int) -> np.ndarray:
    return data.reshape(-1, 3, side, side).transpose(0, 2, 3, 1)


def _cifar10(root, per_batch=3):
    """cifar-10-batches-py under root, with data and labels of every batch; returns the folder."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    written = {}
    for i, name in enumerate(names):
        data, labels = _pixels(per_batch, 32, i), [(i + j) % 10 for j in range(per_batch)]
        _py2_dump({b"batch_label": name.encode(), b"labels": labels, b"data": data,
                   b"filenames": [b"x.png"] * per_batch}, folder / name)
        written[name] = (data, labels)
    _py2_dump({b"label_names": [b"c%d" % i for i in range(10)], b"num_cases_per_batch": per_batch},
              folder / "batches.meta")
    return folder, written


def _cifar100(root, n=4):
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True)
    written = {}
    for split, offset in (("train", 0), ("test", 50)):
        data, fine = _pixels(n, 32, offset), [99, 0, 42 + offset, 7][:n]
        _py2_dump({b"filenames": [b"x.png"] * n, b"fine_labels": fine, b"coarse_labels": [0] * n, b"data": data},
                  folder / split)
        written[split] = (data, fine)
    _py2_dump({b"fine_label_names": [b"c%d" % i for i in range(100)]}, folder / "meta")
    return folder, written


def _imagenet16(root):
    """NB201's ImageNet16 folder, written as a Python 3 tool would (str keys); labels 1..1000, of
    which ImageNet16-120 keeps those up to 120."""
    folder = root / "ImageNet16"
    folder.mkdir(parents=True)
    labels = {f"train_data_batch_{i}": [i, 120, 121, 1000] for i in range(1, 11)}
    labels["val_data"] = [5, 500]
    written = {}
    for i, (name, y) in enumerate(labels.items()):
        data = _pixels(len(y), 16, i)
        with open(folder / name, "wb") as f:
            pickle.dump({"data": data, "labels": y}, f, protocol=4)
        written[name] = (data, y)
    return folder, written


def _image_folder(root, classes=("cat", "ant", "dog"), per_class=2, side=32):
    """<root>/<class>/<png>: images whose pixels are (label, index, 0) with classes in sorted order."""
    for c, name in enumerate(sorted(classes)):
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            Image.fromarray(np.full((side, side, 3), (c, i, 0), np.uint8)).save(root / name / f"{i}.png")
    return root


def _npz(path, n=6):
    np.savez(path, x_train=np.arange(n * 32 * 32 * 3, dtype=np.int64).astype(np.uint8).reshape(n, 32, 32, 3),
             y_train=np.arange(n) % 10)
    return path


def _drawn(seed: int, batch: int, n: int) -> np.ndarray:
    """The image indices batch 0 of a seeded source draws first."""
    return np.random.default_rng([seed, 0, batch]).choice(n, size=batch, replace=batch > n)


def test_cifar10_python_layout(tmp_path):
    folder, written = _cifar10(tmp_path)
    for path in (folder, tmp_path):  # the layout's folder, or the folder holding it
        images = read_images(path)
        train = [written[f"data_batch_{i}"] for i in range(1, 6)]
        assert images.x.shape == (15, 32, 32, 3) and images.x.dtype == np.uint8 and images.y.dtype == np.int64
        assert np.array_equal(images.x, np.concatenate([_nhwc(d, 32) for d, _ in train]))
        assert images.y.tolist() == [v for _, labels in train for v in labels]
        assert (images.dataset, images.layout, images.source) == ("cifar10", "cifar-10-batches-py", folder)
    test = read_images(folder, split="test")
    assert np.array_equal(test.x, _nhwc(written["test_batch"][0], 32)) and test.y.tolist() == written["test_batch"][1]
    # rows are channels first: pixel (h, w) of channel c is data[c * 1024 + h * 32 + w]
    assert images.x[0, 2, 5, 1] == written["data_batch_1"][0][0, 1024 + 2 * 32 + 5]


def test_cifar100_python_layout_keeps_the_fine_labels(tmp_path):
    folder, written = _cifar100(tmp_path)
    images = read_images(folder, "cifar100")
    assert np.array_equal(images.x, _nhwc(written["train"][0], 32)) and images.y.tolist() == [99, 0, 42, 7]
    assert read_images(folder, split="test").y.tolist() == written["test"][1]
    _cifar10(tmp_path)  # beside it: the dataset picks one
    assert read_images(tmp_path, "cifar100").source == folder and read_images(tmp_path, "cifar10").dataset == "cifar10"
    with pytest.raises(UserError, match="holds cifar-10-batches-py, cifar-100-python; pass the one you mean"):
        read_images(tmp_path)
    with pytest.raises(UserError, match="one batch file of cifar-100-python; pass the folder holding it"):
        read_images(folder / "train")


def test_imagenet16_keeps_nb201s_120_classes_as_labels_0_to_119(tmp_path):
    folder, written = _imagenet16(tmp_path)
    images = read_images(folder)
    assert images.dataset == "ImageNet16-120" and images.x.shape == (20, 16, 16, 3)
    assert images.y.tolist() == [v for i in range(1, 11) for v in (i - 1, 119)]
    first = written["train_data_batch_1"][0]
    assert np.array_equal(images.x[:2], _nhwc(first[:2], 16))
    assert read_images(folder, split="test").y.tolist() == [4]


def test_image_folder_labels_classes_in_sorted_order(tmp_path):
    root = _image_folder(tmp_path / "pets")
    (root / "ant" / "notes.txt").write_text("not an image")
    (root / ".ipynb_checkpoints").mkdir()
    Image.fromarray(np.full((32, 32), 200, np.uint8)).save(root / "dog" / "grey.png")  # made RGB
    images = read_images(root, "cifar100")
    assert images.y.tolist() == [0, 0, 1, 1, 2, 2, 2]  # ant, cat, dog
    assert images.x[:6, 0, 0].tolist() == [[c, i, 0] for c in range(3) for i in range(2)]
    assert images.x[6].min() == images.x[6].max() == 200 and images.dataset == "cifar100"
    # a folder of splits: test is test/ or val/
    split_root = tmp_path / "splits"
    _image_folder(split_root / "train")
    _image_folder(split_root / "val", per_class=1)
    assert len(read_images(split_root, "cifar10").y) == 6 and len(read_images(split_root, "cifar10", "test").y) == 3


def test_npz_and_the_cache(tmp_path):
    path = _npz(tmp_path / "x.npz")
    first, again = read_images(path), read_images(str(path))
    assert first.x is again.x and not first.x.flags.writeable  # read once, shared read-only
    assert first.dataset == "cifar10" and first.y.tolist() == [0, 1, 2, 3, 4, 5]
    _npz(path, n=4)
    assert len(read_images(path).y) == 4  # a file written anew is read anew


def test_image_batches_use_the_true_labels_of_each_dataset(tmp_path):
    c100, _ = _cifar100(tmp_path / "c100")
    s = ImageBatches("cifar100", batch_size=3, seed=1, images=c100)
    x, y = s.batch(0)
    assert x.shape == (3, 3, 32, 32) and y.tolist() == read_images(c100).y[_drawn(1, 3, 4)].tolist()
    assert s.settings() == {"batch_size": 3, "labels": "true", "data": "real", "images": "cifar-100-python"}
    assert "real CIFAR-100 images from cifar-100-python, true CIFAR-100 labels" in s.describe()
    inet, _ = _imagenet16(tmp_path / "inet")
    s = ImageBatches("ImageNet16-120", batch_size=5, seed=0, images=inet)
    x, y = s.batch(0)
    assert x.shape == (5, 3, 16, 16) and y.tolist() == read_images(inet).y[_drawn(0, 5, 20)].tolist()
    assert "resized" not in s.describe() and "true ImageNet16-120 labels" in s.describe()
    folder = ImageBatches("cifar10", batch_size=2, images=_image_folder(tmp_path / "pets"))
    assert "(image folder), true CIFAR-10 labels" in folder.describe()
    assert folder.batch(0)[1].tolist() == read_images(tmp_path / "pets", "cifar10").y[_drawn(0, 2, 6)].tolist()
    # TNB tasks take any layout's images as stand-ins
    task = TaskBatches("class_scene", batch_size=2, images=c100, resolution=8)
    assert task.batch(0)[0].shape == (2, 3, 8, 8) and "real CIFAR-100 images from cifar-100-python" in task.describe()


def test_the_cifar10_sample_stands_in_with_random_labels_and_refuses_true_ones(tmp_path):
    npz = _npz(tmp_path / "sample.npz")
    standin = ImageBatches("cifar100", batch_size=4, images=npz)
    assert standin.labels == "random" and standin.settings()["labels"] == "random"
    assert "(no cifar100 images here)" in standin.describe()
    assert torch.equal(standin.batch(0)[1], ImageBatches("cifar100", batch_size=4, labels="random",
                                                         images=npz).batch(0)[1])
    with pytest.raises(UserError, match=r"true labels for cifar100 need cifar100 images, not the cifar10 images of "
                                        r"sample.npz: pass --images <cifar-100-python folder> or --labels random"):
        ImageBatches("cifar100", labels="true", images=npz)
    with pytest.raises(UserError, match="<ImageNet16 folder>"):
        ImageBatches("ImageNet16-120", labels="true", images=npz)


def test_logs_of_the_sample_standing_in_reopen_with_their_old_label_record():
    old = {"space": "nasbench201", "dataset": "cifar100", "batch_size": 64, "labels": "true", "data": "real"}
    now = {**old, "labels": "random"}
    assert earlier_settings(now) == [old]
    search = {"images": "cifar10_convnetjs_5k.npz"}  # search logs name their image file
    assert earlier_settings({**now, **search}) == [{**old, **search}]
    for other in ({**now, "images": "cifar-100-python"}, {**now, "dataset": "cifar10"}, {**now, "data": "gaussian"},
                  old, {**now, "dataset": "class_scene"}):
        assert earlier_settings(other) == []


def test_a_committed_stand_in_log_resumes_and_is_reused(tmp_path):
    from naslib_plugins.evaluation.correlate import read_reused_scores
    from naslib_plugins.evaluation.journal import ScoreLog

    old = {"space": "nasbench201", "dataset": "cifar100", "seed": 0, "batch_size": 64, "labels": "true",
           "data": "real"}
    with ScoreLog(tmp_path / "scores.jsonl", old) as log:
        log.add({"hash": "(0, 0, 0, 0, 0, 0)", "arch_str": "a", "scores": {"snip": 1.0}, "seconds": {"snip": 0.1},
                 "status": {"snip": "ok"}, "reason": {}})
    now = {**old, "labels": "random"}
    with ScoreLog(tmp_path / "scores.jsonl", now) as log:
        assert list(log.records) == ["(0, 0, 0, 0, 0, 0)"]
    assert list(read_reused_scores(tmp_path / "scores.jsonl", now, "")) == ["(0, 0, 0, 0, 0, 0)"]
    with pytest.raises(UserError, match="other settings"):
        ScoreLog(tmp_path / "scores.jsonl", {**now, "dataset": "cifar10"}).__enter__()


def _one_line(call) -> str:
    with pytest.raises(BenchmarkFileError) as caught:
        call()
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_malformed_pickles_are_one_line_naming_the_file(tmp_path):
    folder, written = _cifar10(tmp_path / "dtype")
    data, labels = written["data_batch_2"]
    _py2_dump({b"data": data.astype(np.float32), b"labels": labels}, folder / "data_batch_2")
    assert _one_line(lambda: read_images(folder)) == (
        f"{folder / 'data_batch_2'}: data must be uint8 of shape (N, 3072) (32x32 RGB images, channels first), "
        "got float32 (3, 3072)")
    folder, _ = _cifar10(tmp_path / "range")
    _py2_dump({b"data": data, b"labels": [0, 10, 1]}, folder / "data_batch_4")
    assert f"{folder / 'data_batch_4'}: labels must hold cifar-10-batches-py labels 0..9, got values from 0 to 10" \
        in _one_line(lambda: read_images(folder))
    folder, _ = _cifar10(tmp_path / "missing")
    (folder / "data_batch_3").unlink()
    assert f"{folder}: missing data_batch_3" in _one_line(lambda: read_images(folder))
    folder, _ = _cifar10(tmp_path / "evil")
    (folder / "data_batch_1").write_bytes(b"cos\nsystem\n(S'touch pwned'\ntR.")
    assert "forbidden global os.system" in _one_line(lambda: read_images(folder))
    folder, _ = _cifar100(tmp_path / "keys")
    _py2_dump({b"data": _pixels(2, 32), b"coarse_labels": [0, 1]}, folder / "train")
    assert "no 'fine_labels' in the batch" in _one_line(lambda: read_images(folder))
    folder, _ = _imagenet16(tmp_path / "list")
    with open(folder / "val_data", "wb") as f:
        pickle.dump([1, 2], f, protocol=4)
    assert "not a batch of ImageNet16 (a list, not a dict)" in _one_line(lambda: read_images(folder, split="test"))


def test_malformed_image_folders_are_one_line(tmp_path):
    root = _image_folder(tmp_path / "big", side=64)
    assert "64x64 pixels; cifar10's are 32x32: resize the images first" in _one_line(
        lambda: read_images(root, "cifar10"))
    root = _image_folder(tmp_path / "many", classes=[f"c{i:02d}" for i in range(11)], per_class=1)
    assert "11 class folders, more than the 10 classes of cifar10" in _one_line(lambda: read_images(root, "cifar10"))
    root = _image_folder(tmp_path / "broken")
    (root / "cat" / "9.png").write_bytes(b"not a png")
    assert f"{root / 'cat' / '9.png'}: not a readable image" in _one_line(lambda: read_images(root, "cifar10"))
    root = _image_folder(tmp_path / "empty")
    (root / "zebra").mkdir()
    assert f"{root / 'zebra'}: no image files" in _one_line(lambda: read_images(root, "cifar10"))
    (tmp_path / "loose").mkdir()
    Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(tmp_path / "loose" / "a.png")
    assert "not an image layout" in _one_line(lambda: read_images(tmp_path / "loose", "cifar10"))
    mixed = _image_folder(tmp_path / "mixed")
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(mixed / "dog" / "small.png")
    assert "small.png: 8x8 pixels; 0.png, the first, is 32x32" in _one_line(lambda: read_images(mixed))
    with pytest.raises(UserError, match="read as the train split"):
        read_images(_image_folder(tmp_path / "flat"), "cifar10", split="test")


def test_the_cli_exits_2_on_a_bad_image_folder(tmp_path, capsys):
    folder, _ = _cifar100(tmp_path)
    (folder / "train").unlink()
    capsys.readouterr()
    assert main(["score", "--space", "nasbench201", "--dataset", "cifar100", "--predictors", "params", "--data", "real",
                 "--images", str(folder), "--out", str(tmp_path / "out.jsonl")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"naslib-plugins: error: {folder}: missing train (the train split of cifar-100-python: train)"]
    assert not (tmp_path / "out.jsonl").exists()
