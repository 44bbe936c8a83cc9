"""mlp_act_skip: encodings, enumeration, sampling and mutation, errors, the network; the digits
split and its batch source; every predictor on a default MLP."""
import json
import math
import pickle

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from naslib_plugins.data.batches import ImageBatches
from naslib_plugins.data.datasets import dataset_info
from naslib_plugins.data.digits import DigitsBatches, digits_split
from naslib_plugins.errors import ArchitectureError, UserError
from naslib_plugins.predictors import get_predictor
from naslib_plugins.spaces import SPACES, get_space
from naslib_plugins.spaces.mlp_act_skip import ACTIVATIONS, MLPActSkipSpace, skip_pairs

space = get_space("mlp_act_skip")
ARCH = (0, 2, 4, 1, 0, 1)  # relu-tanh-gelu with skips 0>2 and 1>3


def test_registered_with_alias_and_defaults():
    assert SPACES.get("mlp") is MLPActSkipSpace and get_space("mlp").name == "mlp_act_skip"
    assert (space.depth, space.width) == (3, 64) and space.datasets == ("digits",)
    assert ACTIVATIONS == ("relu", "leaky_relu", "tanh", "sigmoid", "gelu", "silu", "elu", "softplus")
    assert skip_pairs(3) == ((0, 2), (0, 3), (1, 3))
    assert skip_pairs(4) == ((0, 2), (0, 3), (1, 3), (0, 4), (1, 4), (2, 4)) and skip_pairs(1) == ()


def test_encodings_round_trip():
    assert space.to_string(ARCH) == "relu-tanh-gelu|0>2,1>3"
    assert space.to_string((0, 2, 4, 0, 0, 0)) == "relu-tanh-gelu|"
    assert space.hash(ARCH) == "(0, 2, 4, 1, 0, 1)"
    rng = np.random.default_rng(0)
    for _ in range(30):
        arch = space.sample(rng)
        forms = [arch, list(arch), np.array(arch), str(arch), str(list(arch)), space.to_string(arch),
                 json.loads(json.dumps(arch)), " " + space.to_string(arch).replace(",", ", ") + " "]
        for form in forms:
            parsed = space.parse(form)
            assert parsed == arch and all(type(v) is int for v in parsed), form
        assert space.hash(np.array(arch)) == str(arch)
    assert space.parse("relu-tanh-gelu|1>3,0>2") == ARCH  # skip order does not matter


def test_all_enumerates_the_space_once():
    archs = list(space.all())
    assert len(archs) == 8**3 * 2**3 == 4096 == len(set(archs))
    assert all(space.parse(a) == a for a in archs[::97])
    assert len(set(space.to_string(a) for a in archs)) == 4096
    small = MLPActSkipSpace(depth=2, width=8)
    assert len(list(small.all())) == 8**2 * 2 and len(list(MLPActSkipSpace(depth=1).all())) == 8


def test_sample_and_mutate_are_valid_and_seeded():
    a = [space.sample(np.random.default_rng(5)) for _ in range(2)]
    assert a[0] == a[1] and space.parse(a[0]) == a[0]
    rng = np.random.default_rng(1)
    samples = {space.sample(rng) for _ in range(200)}
    assert len(samples) > 150  # 200 draws from 4,096
    bits = np.array([s[3:] for s in samples])
    assert 0.35 < bits.mean() < 0.65
    arch = ARCH
    changed_positions = set()
    for seed in range(60):
        child = space.mutate(arch, np.random.default_rng(seed))
        assert child == space.mutate(arch, np.random.default_rng(seed))
        diff = [i for i in range(6) if child[i] != arch[i]]
        assert len(diff) == 1 and space.parse(child) == child
        if diff[0] >= 3:
            assert child[diff[0]] == 1 - arch[diff[0]]
        changed_positions.add(diff[0])
        assert child in space.neighbours(arch)
    assert changed_positions == set(range(6))


def test_neighbours():
    n = space.neighbours(ARCH)
    assert len(n) == len(set(n)) == 3 * 7 + 3
    assert all(sum(x != y for x, y in zip(c, ARCH)) == 1 for c in n)


@pytest.mark.parametrize("arch, message", [
    ((0, 2, 4, 1, 0), "needs 6 ints \\(3 activations \\+ 3 skip bits\\), got 5"),
    ((0, 2, 8, 1, 0, 1), "activation index 8 of layer 3 out of range 0..7"),
    ((0, 2, 4, 1, 2, 1), "skip bit for 0>3 must be 0 or 1, got 2"),
    ((0, 2, 4, 1, True, 1), "True is not an int"),
    ((0, 2.0, 4, 1, 0, 1), "2.0 is not an int"),
    ("relu-tanh-swish|", "unknown mlp_act_skip activation 'swish'"),
    ("relu-tanh|0>2", "needs 3 activations joined by '-', got 2"),
    ("relu-tanh-gelu|1>2", "skip '1>2' is not allowed: a skip j>l needs 2 <= l <= 3 and 0 <= j <= l-2"),
    ("relu-tanh-gelu|0>4", "skip '0>4' is not allowed"),
    ("relu-tanh-gelu|3>1", "skip '3>1' is not allowed"),
    ("relu-tanh-gelu|0-2", "bad mlp_act_skip skip '0-2'"),
    ("relu-tanh-gelu|0>2,0>2", "skip '0>2' named twice"),
    ("relu-tanh-gelu", "expected 'act-act-...\\|j>l,...' or a tuple of 6 ints"),
    ("(0, 2, 4", "unreadable mlp_act_skip tuple"),
    ({"acts": [0, 2, 4]}, "unsupported type dict"),
])
def test_errors_name_the_problem(arch, message):
    with pytest.raises(ArchitectureError, match=message):
        space.parse(arch)


def test_bad_space_options_and_datasets():
    with pytest.raises(UserError, match="depth must be a positive integer, got 0"):
        MLPActSkipSpace(depth=0)
    with pytest.raises(UserError, match="width must be a positive integer"):
        MLPActSkipSpace(width=2.5)
    with pytest.raises(UserError, match="space 'mlp_act_skip' has no dataset 'cifar10'"):
        space.build_model(ARCH, "cifar10")
    with pytest.raises(UserError, match="space 'nasbench201' has no dataset 'digits'"):
        get_space("nasbench201").build_model((0,) * 6, "digits")


def test_network_shape_formula_and_skips():
    torch.manual_seed(0)
    model = space.build_model(ARCH, "digits")
    x = torch.randn(5, 64)
    assert model(x).shape == (5, 10)
    assert sum(p.numel() for p in model.parameters()) == 64 * 64 + 64 + 3 * (64 * 64 + 64) + 64 * 10 + 10
    # h0 = W0 x, h1 = relu(W1 h0), h2 = tanh(W2 h1) + h0, h3 = gelu(W3 h2) + h1, out = W h3
    h0 = model.embed(x)
    h1 = torch.relu(model.layers[0](h0))
    h2 = torch.tanh(model.layers[1](h1)) + h0
    h3 = F.gelu(model.layers[2](h2)) + h1
    assert torch.allclose(model(x), model.classifier(h3), atol=1e-6)
    # the same weights without a skip give another output; the parameters are the same
    plain = space.build_model("relu-tanh-gelu|0>2", "digits")
    plain.load_state_dict(model.state_dict())
    assert not torch.allclose(plain(x), model(x), atol=1e-3)
    other = space.build_model("relu-sigmoid-gelu|0>2,1>3", "digits")
    other.load_state_dict(model.state_dict())
    assert not torch.allclose(other(x), model(x), atol=1e-3)
    narrow = MLPActSkipSpace(depth=2, width=8).build_model("elu-softplus|0>2", "digits")
    assert narrow(x).shape == (5, 10) and narrow.layers[0].weight.shape == (8, 8)


# --------------------------------------------------------------------------- digits data


def test_digits_split_sizes_standardisation_and_determinism():
    x_train, y_train, x_test, y_test = digits_split(0)
    assert x_train.shape == (1437, 64) and x_test.shape == (360, 64)
    assert x_train.dtype == torch.float32 and y_train.dtype == torch.int64 and y_test.dtype == torch.int64
    # stratified: every class holds about a fifth of its images in the test split
    counts = torch.bincount(y_test, minlength=10)
    assert int(counts.min()) >= 35 and int(counts.max()) <= 37
    std = x_train.std(dim=0, correction=0)
    varying = std > 0
    assert torch.allclose(x_train.mean(dim=0), torch.zeros(64), atol=1e-5)
    assert torch.allclose(std[varying], torch.ones(int(varying.sum())), atol=1e-4)
    assert int((~varying).sum()) >= 1 and bool((x_train[:, ~varying] == 0).all())
    assert bool((x_test[:, ~varying] == 0).all())
    assert digits_split(0)[0] is x_train  # cached
    again = digits_split.__wrapped__(0)
    assert all(torch.equal(a, b) for a, b in zip(again, (x_train, y_train, x_test, y_test)))
    assert not torch.equal(digits_split(1)[1], y_train)
    info = dataset_info("digits")
    assert (info.channels, info.resolution, info.features, info.num_classes) == (1, 8, 64, 10)
    assert dataset_info("cifar10").features == 3 * 32 * 32 and dataset_info("cifar10").mean is not None


def test_digits_batches_are_seeded_and_from_the_train_split():
    a, b = DigitsBatches(batch_size=32, seed=3), DigitsBatches(batch_size=32, seed=3)
    x, y = a.batch(0)
    assert x.shape == (32, 64) and y.dtype == torch.long and a.input_shape == (64,)
    assert torch.equal(x, b.batch(0)[0]) and torch.equal(y, b.batch(0)[1])
    assert not torch.equal(x, a.batch(1)[0])
    assert not torch.equal(x, DigitsBatches(batch_size=32, seed=4).batch(0)[0])
    assert not torch.equal(x[:16], DigitsBatches(batch_size=16, seed=3).batch(0)[0])
    x_train, y_train, x_test, _ = digits_split()
    match = (x[:, None, :] == x_train[None]).all(dim=2)  # which train rows each sample is
    assert bool(match.any(dim=1).all())
    rows = match.int().argmax(dim=1)
    assert torch.equal(y_train[rows], y)  # true labels
    assert "true digit labels" in a.describe() and a.describe().endswith("batch 32, seed 3")
    assert a.images is None and (a.batch_size, a.seed, a.labels, a.data) == (32, 3, "true", "real")


def test_digits_random_labels_gaussian_data_and_pickling():
    true = DigitsBatches(batch_size=64, seed=0)
    rand = DigitsBatches(batch_size=64, seed=0, labels="random")
    assert torch.equal(true.batch(0)[0], rand.batch(0)[0])
    assert not torch.equal(true.batch(0)[1], rand.batch(0)[1])
    assert "random labels over 10 classes" in rand.describe()
    g = DigitsBatches(batch_size=256, seed=0, data="gaussian")
    x, y = g.batch(0)
    assert x.shape == (256, 64) and abs(float(x.mean())) < 0.05 and abs(float(x.std()) - 1) < 0.05
    assert int(y.max()) <= 9 and "Gaussian" in g.describe()
    big = DigitsBatches(batch_size=2000)  # more than the train split: drawn with replacement
    assert big.batch(0)[0].shape == (2000, 64)
    true.batch(1)
    clone = pickle.loads(pickle.dumps(true))
    assert clone._cache == {} and torch.equal(clone.batch(1)[0], true.batch(1)[0])


def test_bad_batch_options_and_rgb_batches_refuse_digits():
    with pytest.raises(UserError, match="unknown label mode 'noisy'"):
        DigitsBatches(labels="noisy")
    with pytest.raises(UserError, match="unknown data mode 'uniform'"):
        DigitsBatches(data="uniform")
    with pytest.raises(UserError, match="batch size must be positive"):
        DigitsBatches(batch_size=0)
    with pytest.raises(UserError, match="digits has 1-channel inputs.*DigitsBatches"):
        ImageBatches("digits", data="gaussian")
    assert ImageBatches("cifar10", data="gaussian").input_shape == (3, 32, 32)


# --------------------------------------------------------------------------- predictors

PREDICTOR_NAMES = ["nasi", "zico", "snip", "grasp", "synflow", "params", "flops", "ntk_lambda_min"]


@pytest.mark.parametrize("name", PREDICTOR_NAMES)
def test_every_predictor_scores_a_default_mlp(name):
    batches = DigitsBatches(batch_size=16, seed=0)

    def model(seed):
        torch.manual_seed(seed)
        return space.build_model(ARCH, "digits")

    a = get_predictor(name).score(model(0), batches, F.cross_entropy)
    assert math.isfinite(a) and a == get_predictor(name).score(model(0), batches, F.cross_entropy)
    if name not in ("params", "flops"):
        assert get_predictor(name).score(model(1), batches, F.cross_entropy) != a
    if name == "params":
        assert a == pytest.approx((4 * 64 * 64 + 4 * 64 + 64 * 10 + 10) / 1e6)
    if name == "flops":  # multiply-accumulates of the five linear layers and one ReLU
        assert a == pytest.approx((4 * 64 * 64 + 64 * 10 + 64) / 1e6)
