import numpy as np
import pytest
import torch

from naslib_plugins.data.batches import BatchSource, load_images
from naslib_plugins.errors import BenchmarkFileError, UserError


def test_real_batches_are_normalised_seeded_and_labelled(cifar_npz):
    a = BatchSource("cifar10", batch_size=16, seed=1, images=cifar_npz)
    b = BatchSource("cifar10", batch_size=16, seed=1, images=cifar_npz)
    x, y = a.batch(0)
    assert x.shape == (16, 3, 32, 32) and y.dtype == torch.long
    assert torch.equal(x, b.batch(0)[0]) and torch.equal(y, b.batch(0)[1])
    assert not torch.equal(x, a.batch(1)[0])
    assert abs(float(x.mean())) < 0.5 and 0.5 < float(x.std()) < 1.5
    raw_x, raw_y = load_images(cifar_npz)
    assert set(y.tolist()) <= set(int(v) for v in np.unique(raw_y))
    assert "true CIFAR-10 labels" in a.describe()


def test_other_datasets_reuse_cifar10_images_with_their_classes(cifar_npz):
    s = BatchSource("ImageNet16-120", batch_size=32, seed=0, images=cifar_npz)
    x, y = s.batch(0)
    assert x.shape == (32, 3, 16, 16)
    assert int(y.max()) < 120 and int(y.max()) >= 10  # drawn over 120 classes, not CIFAR-10's
    assert "resized to 16x16" in s.describe() and "120 classes" in s.describe()
    c100 = BatchSource("cifar100", batch_size=64, seed=0, images=cifar_npz)
    assert int(c100.batch(0)[1].max()) >= 10


def test_random_labels_and_gaussian_data(cifar_npz):
    true = BatchSource("cifar10", batch_size=64, seed=0, images=cifar_npz)
    rand = BatchSource("cifar10", batch_size=64, seed=0, labels="random", images=cifar_npz)
    # NASI's label-agnostic check: the same images, other labels
    assert torch.equal(true.batch(0)[0], rand.batch(0)[0])
    assert not torch.equal(true.batch(0)[1], rand.batch(0)[1])
    g = BatchSource("cifar10", batch_size=64, seed=0, data="gaussian")
    x, _ = g.batch(0)
    assert abs(float(x.mean())) < 0.1 and abs(float(x.std()) - 1) < 0.1
    assert "Gaussian" in g.describe()


def test_bad_inputs_are_named(tmp_path):
    with pytest.raises(UserError, match="unknown label mode"):
        BatchSource("cifar10", labels="noisy", data="gaussian")
    with pytest.raises(UserError, match="unknown dataset"):
        BatchSource("svhn", data="gaussian")
    with pytest.raises(BenchmarkFileError, match="image file not found"):
        BatchSource("cifar10", images=tmp_path / "missing.npz")
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, x_train=np.zeros((4, 3, 32, 32), np.uint8), y_train=np.zeros(4, np.uint8))
    with pytest.raises(BenchmarkFileError, match=r"x_train must be uint8 of shape \(N, H, W, 3\)"):
        BatchSource("cifar10", images=wrong)
    nolabels = tmp_path / "nolabels.npz"
    np.savez(nolabels, x_train=np.zeros((4, 32, 32, 3), np.uint8))
    with pytest.raises(BenchmarkFileError, match="missing arrays"):
        BatchSource("cifar10", images=nolabels)
    torn = tmp_path / "torn.npz"
    torn.write_bytes(wrong.read_bytes()[:100])
    with pytest.raises(BenchmarkFileError, match="not a readable .npz"):
        BatchSource("cifar10", images=torn)


def test_pickled_source_loads_lazily_and_agrees(cifar_npz):
    import pickle

    s = BatchSource("cifar10", batch_size=8, seed=3, images=cifar_npz)
    first = s.batch(0)
    clone = pickle.loads(pickle.dumps(s))
    assert clone._x is None
    assert torch.equal(clone.batch(0)[0], first[0])
