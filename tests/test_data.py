import numpy as np
import pytest
import torch

from naslib_plugins.data.batches import BatchSource, ImageBatches, OffsetBatches, SeededBatches
from naslib_plugins.data.digits import DigitsBatches
from naslib_plugins.data.readers import read_images
from naslib_plugins.data.tasks import TaskBatches
from naslib_plugins.errors import BenchmarkFileError, UserError


def test_real_batches_are_normalised_seeded_and_labelled(cifar_npz):
    a = ImageBatches("cifar10", batch_size=16, seed=1, images=cifar_npz)
    b = ImageBatches("cifar10", batch_size=16, seed=1, images=cifar_npz)
    x, y = a.batch(0)
    assert x.shape == (16, 3, 32, 32) and y.dtype == torch.long
    assert torch.equal(x, b.batch(0)[0]) and torch.equal(y, b.batch(0)[1])
    assert not torch.equal(x, a.batch(1)[0])
    assert abs(float(x.mean())) < 0.5 and 0.5 < float(x.std()) < 1.5
    assert set(y.tolist()) <= set(int(v) for v in np.unique(read_images(cifar_npz).y))
    assert "true CIFAR-10 labels" in a.describe()


def test_other_datasets_reuse_cifar10_images_with_their_classes(cifar_npz):
    s = ImageBatches("ImageNet16-120", batch_size=32, seed=0, images=cifar_npz)
    x, y = s.batch(0)
    assert x.shape == (32, 3, 16, 16)
    assert int(y.max()) < 120 and int(y.max()) >= 10  # drawn over 120 classes, not CIFAR-10's
    assert "resized to 16x16" in s.describe() and "120 classes" in s.describe()
    c100 = ImageBatches("cifar100", batch_size=64, seed=0, images=cifar_npz)
    assert int(c100.batch(0)[1].max()) >= 10


def test_random_labels_and_gaussian_data(cifar_npz):
    true = ImageBatches("cifar10", batch_size=64, seed=0, images=cifar_npz)
    rand = ImageBatches("cifar10", batch_size=64, seed=0, labels="random", images=cifar_npz)
    # NASI's label-agnostic check: the same images, other labels
    assert torch.equal(true.batch(0)[0], rand.batch(0)[0])
    assert not torch.equal(true.batch(0)[1], rand.batch(0)[1])
    g = ImageBatches("cifar10", batch_size=64, seed=0, data="gaussian")
    x, _ = g.batch(0)
    assert abs(float(x.mean())) < 0.1 and abs(float(x.std()) - 1) < 0.1
    assert "Gaussian" in g.describe()


def test_bad_inputs_are_named(tmp_path):
    with pytest.raises(UserError, match="unknown label mode"):
        ImageBatches("cifar10", labels="noisy", data="gaussian")
    with pytest.raises(UserError, match="unknown dataset"):
        ImageBatches("svhn", data="gaussian")
    with pytest.raises(BenchmarkFileError, match="image file not found"):
        ImageBatches("cifar10", images=tmp_path / "missing.npz")
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, x_train=np.zeros((4, 3, 32, 32), np.uint8), y_train=np.zeros(4, np.uint8))
    with pytest.raises(BenchmarkFileError, match=r"x_train must be uint8 of shape \(N, H, W, 3\)"):
        ImageBatches("cifar10", images=wrong)
    nolabels = tmp_path / "nolabels.npz"
    np.savez(nolabels, x_train=np.zeros((4, 32, 32, 3), np.uint8))
    with pytest.raises(BenchmarkFileError, match="missing arrays"):
        ImageBatches("cifar10", images=nolabels)
    torn = tmp_path / "torn.npz"
    torn.write_bytes(wrong.read_bytes()[:100])
    with pytest.raises(BenchmarkFileError, match="not a readable .npz"):
        ImageBatches("cifar10", images=torn)


def test_pickled_source_loads_lazily_and_agrees(cifar_npz):
    import pickle

    s = ImageBatches("cifar10", batch_size=8, seed=3, images=cifar_npz)
    first = s.batch(0)
    clone = pickle.loads(pickle.dumps(s))
    assert clone._x is None
    assert torch.equal(clone.batch(0)[0], first[0])


def test_every_batch_source_satisfies_the_protocol(cifar_npz):
    image = ImageBatches("cifar10", batch_size=4, seed=0, images=cifar_npz)
    sources = [image, TaskBatches("jigsaw", batch_size=2, data="gaussian", resolution=24),
               DigitsBatches(batch_size=4), OffsetBatches(image, 5)]
    for source in sources:
        assert isinstance(source, BatchSource)
        x, _ = source.batch(0)
        assert tuple(x.shape[1:]) == source.input_shape and source.describe()
    assert isinstance(image, SeededBatches) and not isinstance(object(), BatchSource)


def test_settings_record_a_resolution_only_where_it_is_not_the_datasets(cifar_npz):
    assert ImageBatches("cifar10", batch_size=4, seed=0, images=cifar_npz).settings() == {
        "batch_size": 4, "labels": "true", "data": "real"}
    assert ImageBatches("cifar10", batch_size=4, data="gaussian", resolution=8).settings()["resolution"] == 8
    assert TaskBatches("normal", batch_size=2, data="gaussian", resolution=32).settings() == {
        "batch_size": 2, "labels": "random", "data": "gaussian", "resolution": 32}
    assert "resolution" not in TaskBatches("normal", data="gaussian").settings()
    assert DigitsBatches(batch_size=3, labels="random").settings() == {"batch_size": 3, "labels": "random",
                                                                       "data": "real"}


def test_offset_batches_read_the_source_from_the_offset_on():
    source = ImageBatches("cifar10", batch_size=4, seed=2, data="gaussian", resolution=8)
    shifted = OffsetBatches(source, 7)
    assert torch.equal(shifted.batch(1)[0], source.batch(8)[0])
    assert shifted.settings() == {**source.settings(), "offset": 7}
    assert shifted.describe().startswith(source.describe())


def test_every_seeded_source_pickles_without_what_it_drew(cifar_npz):
    import pickle

    for source in (TaskBatches("jigsaw", batch_size=2, images=cifar_npz, resolution=24),
                   DigitsBatches(batch_size=4, seed=1)):
        first = source.batch(0)
        clone = pickle.loads(pickle.dumps(source))
        assert clone._cache == {} and clone.settings() == source.settings()
        assert all(torch.equal(a, b) for a, b in zip(clone.batch(0), first))
