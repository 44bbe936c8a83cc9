"""MeCo and SWAP against values computed directly: numpy's correlation eigenvalues on captured
feature maps (on our networks rebuilt with the authors' module nesting, for the multiplicities),
and numpy's count of distinct sign patterns of captured post-ReLU outputs."""
from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from naslib_plugins.cli import main
from naslib_plugins.data.batches import ImageBatches
from naslib_plugins.data.sources import make_batches
from naslib_plugins.errors import UserError
from naslib_plugins.evaluation.scoring import score_architecture
from naslib_plugins.predictors import get_predictor
from naslib_plugins.predictors import meco as meco_module
from naslib_plugins.predictors.base import gaussian_init
from naslib_plugins.predictors.meco import MeCo, MeCoOpt, channel_rows, min_correlation_eigenvalue
from naslib_plugins.predictors.swap import (
    SWAP,
    SWAPReg,
    activation_patterns,
    parameters_in_thousands,
    size_factor,
)
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.nasbench201.encoding import CONV1, CONV3, NONE, POOL, SKIP
from naslib_plugins.spaces.nasbench201.network import Cell, ReLUConvBN, ResidualReduction

NAMES = ("meco", "meco_opt", "swap", "swap_reg")


class Wrap(nn.Module):
    """A module returning its child's output: one more firing of the same tensor."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, *args):
        return self.inner(*args)


def numpy_term(output, sample: int = 0) -> float | None:
    """The authors' per-firing term with numpy: one sample as (C, positions), np.corrcoef, NaN and
    inf to 0, the smallest real part of the eigenvalues."""
    if isinstance(output, (tuple, list)):
        output = output[0]
    if output.dim() < 2:
        return None
    f = output[sample].detach().double().numpy()
    f = f.reshape(f.shape[0], -1)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # one position: zero degrees of freedom
        corr = np.atleast_2d(np.corrcoef(f))
    corr[~np.isfinite(corr)] = 0.0
    return float(np.min(np.real(np.linalg.eigvals(corr))))


def numpy_meco(model: nn.Module, x: torch.Tensor, skip: tuple = ()) -> float:
    """Every module hooked once per firing (the authors' rule), summed with numpy."""
    terms: list[float] = []

    def hook(module, inputs, output):
        t = numpy_term(output)
        if t is not None:
            terms.append(t)

    handles = [m.register_forward_hook(hook) for m in model.modules() if not any(m is s for s in skip)]
    model.train()
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return sum(terms)


class Tiny(nn.Module):
    def __init__(self, width: int = 6, classes: int = 4):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU())
        self.conv = nn.Conv2d(width, width, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        return self.fc(self.pool(self.conv(self.body(x))).flatten(1))


@pytest.fixture(scope="module")
def batches():
    return ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian")


def test_meco_sums_every_firing_of_an_unknown_network_as_numpy_does(batches):
    torch.manual_seed(0)
    model = Tiny()
    with torch.no_grad():  # a constant channel: its correlations are NaN, set to 0
        model.body[0].weight[0] = 0.0
        model.body[0].bias[0] = 0.3
    x = batches.batch(0)[0][:1]
    expected = numpy_meco(copy.deepcopy(model), x)
    assert MeCo().score(model, batches, F.cross_entropy) == pytest.approx(expected, abs=1e-9)
    # the BN output's zeroed channel puts 0 on the diagonal, so its term is at most 0
    out = []
    h = model.body[1].register_forward_hook(lambda m, i, o: out.append(numpy_term(o)))
    model(x)
    h.remove()
    assert out[0] <= 1e-12


def test_a_map_with_no_more_positions_than_channels_has_lambda_min_zero_as_the_solver_nearly_finds():
    rows = torch.randn(12, 12, generator=torch.Generator().manual_seed(0))
    rows[3] = 0.5  # a constant channel too
    for positions in (2, 7, 12):
        assert min_correlation_eigenvalue(rows[:, :positions]) == 0.0
        assert abs(numpy_term(rows[:, :positions].reshape(1, 12, positions))) < 1e-12
    more = torch.randn(4, 12, generator=torch.Generator().manual_seed(1))  # 12 positions, 4 channels
    assert min_correlation_eigenvalue(more) == pytest.approx(numpy_term(more.reshape(1, 4, 12)), abs=1e-12)
    assert min_correlation_eigenvalue(more) > 1e-3


def test_meco_solves_once_per_tensor_and_counts_every_firing_of_it(batches, monkeypatch):
    torch.manual_seed(0)
    model = Wrap(Wrap(nn.Sequential(nn.Conv2d(3, 2, 3, padding=1), nn.ReLU())))  # 2 channels, 1024 positions
    x = batches.batch(0)[0][:1]
    expected = numpy_meco(copy.deepcopy(model), x)
    solved = []
    monkeypatch.setattr(meco_module, "min_correlation_eigenvalue",
                        lambda rows: solved.append(rows.shape) or min_correlation_eigenvalue(rows))
    assert MeCo().score(model, batches, F.cross_entropy) == pytest.approx(expected, abs=1e-9)
    assert len(solved) == 2  # conv and ReLU; Sequential and both wrappers return the ReLU's tensor again
    solved.clear()
    MeCoOpt().score(model, batches, F.cross_entropy)
    assert len(solved) == 5  # meco_opt draws anew for every firing


def test_meco_where_one_sample_reaches_a_1x1_map_takes_the_batch_norm_formula_there(batches):
    """TNB macro at 64 x 64: a train-mode batch norm of one sample at 1 x 1 raises in PyTorch; its
    formula gives its bias there, and the 1 x 1 and flat outputs from there on add 0, so the score
    is the numpy sum over the modules before it. The patch is gone afterwards."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 5, 3, padding=1), nn.BatchNorm2d(5), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.BatchNorm2d(5), nn.ReLU(), nn.Conv2d(5, 5, 1), nn.Flatten(), nn.Linear(5, 2))
    with torch.no_grad():
        model[4].bias.copy_(torch.arange(5.0))
    x = batches.batch(0)[0][:1]
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        copy.deepcopy(model).train()(x)
    expected = numpy_meco(copy.deepcopy(model[:3]), x) - numpy_term(model[:3].train()(x))  # the prefix's root
    outputs = []
    handle = model[4].register_forward_hook(lambda m, i, o: outputs.append(o.detach().flatten()))
    assert MeCo().score(model, batches, F.cross_entropy) == pytest.approx(expected, abs=1e-9)
    handle.remove()
    assert torch.equal(outputs[0], torch.arange(5.0))
    assert "forward" not in vars(model[4])
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        model.train()(x)


def test_meco_on_tnb_jigsaw_takes_a_term_per_tile_of_the_encoder_run_on_the_nine_tiles_together():
    """At 64 x 64 a 21-pixel tile reaches the last stage at 1 x 1, where the per-tile forward (a batch
    of one) cannot run in train mode; the nine tiles of sample 0 run together, nine terms per module."""
    space = get_space("transbench101_micro")
    model = space.build_model(space.sample(np.random.default_rng(0)), "jigsaw")
    batches = ImageBatches("cifar10", batch_size=4, seed=0, data="gaussian", resolution=64)
    x = batches.batch(0)[0]
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        copy.deepcopy(model).train()(x[:1])
    terms = []

    def hook(module, inputs, output):  # the formula is tested above; here which maps it reads
        terms.extend(min_correlation_eigenvalue(rows) for t in range(9)
                     if (rows := channel_rows(output, t)) is not None)

    reference = copy.deepcopy(model)
    handles = [m.register_forward_hook(hook) for m in reference.encoder.modules()]
    reference.train()
    with torch.no_grad():
        reference.feature_forward(x[:1])
    for h in handles:
        h.remove()
    assert len(terms) > 9 * 10 and len(terms) % 9 == 0  # every firing of the encoder's modules, per tile
    assert MeCo().score(model, batches, F.cross_entropy) == pytest.approx(sum(terms), abs=1e-9)


def _nb201_in_the_authors_nesting(model: nn.Module) -> nn.Module:
    """A copy of our NB201 network with wrappers where the authors' NAS201Model nests a module
    that returns the same tensor: stem (stem.net), ReLUConvBN (.op), POOLING (.avgpool), the
    stage Sequentials around each stage's last cell, top.lastact around the head ReLU."""
    rep = copy.deepcopy(model)
    rep.stem = Wrap(rep.stem)
    layers = list(rep.cells)
    for i, layer in enumerate(layers):
        if isinstance(layer, ResidualReduction):
            layer.conv_a, layer.conv_b = Wrap(layer.conv_a), Wrap(layer.conv_b)
            continue
        for j, edge in enumerate(layer.edges):
            if isinstance(edge, (ReLUConvBN, nn.AvgPool2d)):
                layer.edges[j] = Wrap(edge)
        if i + 1 == len(layers) or isinstance(layers[i + 1], ResidualReduction):
            rep.cells[i] = Wrap(layer)
    rep.head[1] = Wrap(rep.head[1])
    return rep


@pytest.mark.parametrize("arch", [(CONV3, SKIP, POOL, CONV1, NONE, CONV3), (NONE, CONV1, SKIP, POOL, CONV3, NONE)])
def test_meco_on_nb201_counts_each_tensor_as_the_authors_module_tree(arch, batches):
    space = get_space("nasbench201")
    torch.manual_seed(1)
    model = space.build_model(arch, "cifar10", {"C": 4, "N": 2})
    assert any(isinstance(m, Cell) for m in model.modules())
    expected = numpy_meco(_nb201_in_the_authors_nesting(model), batches.batch(0)[0][:1])
    assert MeCo().score(model, batches, F.cross_entropy) == pytest.approx(expected, abs=1e-9)
    # hooking our own tree once per module, as the authors' rule would, gives another number
    assert numpy_meco(copy.deepcopy(model), batches.batch(0)[0][:1]) != pytest.approx(expected, abs=1e-6)


def test_meco_on_nb201_resizes_imagenet16_inputs_to_32_pixels():
    space = get_space("nasbench201")
    small = ImageBatches("ImageNet16-120", batch_size=2, seed=0, data="gaussian")
    assert small.input_shape[-1] == 16
    torch.manual_seed(1)
    model = space.build_model((CONV3,) * 6, "ImageNet16-120", {"C": 4, "N": 1})
    x = F.interpolate(small.batch(0)[0][:1], size=(32, 32), mode="bilinear", align_corners=False)
    expected = numpy_meco(_nb201_in_the_authors_nesting(model), x)
    assert MeCo().score(model, small, F.cross_entropy) == pytest.approx(expected, abs=1e-9)


def test_meco_on_nb101_counts_as_the_authors_network_on_a_gaussian_64_pixel_sample(batches):
    space = get_space("nasbench101")
    arch = space.sample(np.random.default_rng(3))
    torch.manual_seed(2)
    model = space.build_model(arch, "cifar10", {"stem_channels": 4, "num_stacks": 2, "num_cells": 1})
    # their nesting: ConvBnRelu(Sequential) for stem and projections, Conv3x3BnRelu(ConvBnRelu(
    # Sequential)) for vertex convs, MaxPool3x3(MaxPool2d) for vertex pools
    rep = copy.deepcopy(model)
    rep.stem = Wrap(rep.stem)
    for layer in rep.cells:
        if isinstance(layer, nn.MaxPool2d):
            continue
        for key, op in list(layer.vertex_ops.items()):
            layer.vertex_ops[key] = Wrap(op) if isinstance(op, nn.MaxPool2d) else Wrap(Wrap(op))
        for key, op in list(layer.projections.items()):
            layer.projections[key] = Wrap(op)
    torch.manual_seed(7)
    x = torch.randn(1, 3, 64, 64)
    expected = numpy_meco(rep, x, skip=(rep.cells,))  # theirs is a ModuleList: it never fires
    torch.manual_seed(7)
    assert MeCo().score(model, batches, F.cross_entropy) == pytest.approx(expected, abs=1e-9)


def test_meco_opt_with_at_most_eight_channels_is_meco_and_is_seeded(batches):
    for width in (8, 5):  # 8: all eight rows in a random order; 5: fewer than 8, every row
        torch.manual_seed(0)
        model = Tiny(width=width, classes=10)
        torch.manual_seed(3)
        opt = MeCoOpt().score(model, batches, F.cross_entropy)
        assert opt == pytest.approx(MeCo().score(model, batches, F.cross_entropy), abs=1e-9)
    torch.manual_seed(0)
    model = get_space("nasbench201").build_model((CONV3,) * 6, "cifar10", {"C": 16, "N": 1})
    scores = []
    for seed in (4, 4, 5):
        torch.manual_seed(seed)
        scores.append(MeCoOpt().score(model, batches, F.cross_entropy))
    assert scores[0] == scores[1] != scores[2]


def numpy_swap(model: nn.Module, x: torch.Tensor) -> int:
    """Distinct rows of sign(A)^T, A the post-ReLU outputs of ReLUs with 4-D input, flattened per
    sample and concatenated."""
    kept = []

    def hook(module, inputs, output):
        if inputs[0].dim() == 4:
            kept.append(output.detach().reshape(len(x), -1).numpy())

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, nn.ReLU)]
    model.train()
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return len(np.unique(np.sign(np.concatenate(kept, axis=1)).T, axis=0))


class ReLUNet(nn.Module):
    """Two ReLUs on one tensor (duplicated units), a ReLU on a flat vector (not hooked), a
    LeakyReLU (not hooked)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.relu_a, self.relu_b = nn.ReLU(), nn.ReLU()
        self.conv2 = nn.Conv2d(8, 3, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(3)
        self.leaky = nn.LeakyReLU(0.1)
        self.relu_c = nn.ReLU()
        self.fc = nn.Linear(3 * 16 * 16, 5)
        self.relu_flat = nn.ReLU()

    def forward(self, x):
        h = self.conv1(x)
        h = torch.cat([self.relu_a(h), self.relu_b(h)], dim=1)
        h = self.relu_c(self.leaky(self.bn(self.conv2(h))))
        return self.relu_flat(self.fc(h.flatten(1)))


@pytest.mark.parametrize("n", [16, 22, 70])  # presence table; float packing + unique; int64 chunks + unique
def test_swap_counts_distinct_sign_patterns_as_numpy_does(n):
    torch.manual_seed(n)
    model = ReLUNet()
    x = torch.randn(n, 3, 32, 32)
    count = activation_patterns(model, x)
    assert count == numpy_swap(model, x)
    assert 1 < count <= min(2**n, 4 * 32 * 32 + 3 * 16 * 16)


def test_swap_is_the_mean_count_over_gaussian_reinitialisations_of_a_copy():
    batches = ImageBatches("cifar10", batch_size=20, seed=0, data="gaussian")
    torch.manual_seed(0)
    model = ReLUNet()
    before = copy.deepcopy(model.state_dict())
    torch.manual_seed(11)
    score = SWAP(repeats=3).score(model, batches, F.cross_entropy)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())  # weights untouched
    torch.manual_seed(11)
    net, counts = copy.deepcopy(model), []
    for _ in range(3):
        gaussian_init(net)
        counts.append(numpy_swap(net, batches.batch(0)[0][:16]))
    assert score == sum(counts) / 3
    assert len(set(counts)) > 1  # each repeat draws new weights


def test_swap_takes_its_16_samples_from_batches_0_and_1_when_batch_0_is_smaller():
    torch.manual_seed(0)
    model = ReLUNet()
    for size, n in ((8, 16), (5, 10)):
        data = ImageBatches("cifar10", batch_size=size, seed=0, data="gaussian")
        predictor = SWAP(repeats=1)
        torch.manual_seed(2)
        score = predictor.score(model, data, F.cross_entropy)
        torch.manual_seed(2)
        net = copy.deepcopy(model)
        gaussian_init(net)
        x = torch.cat([data.batch(0)[0], data.batch(1)[0]])
        assert len(x) == n and score == numpy_swap(net, x)
        assert (predictor.note is None) == (n == 16)


def test_gaussian_init_is_the_official_one():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(16, 64, 3), nn.BatchNorm2d(64), nn.GroupNorm(4, 64), nn.Linear(64, 300),
                        nn.BatchNorm2d(64, affine=False))
    with torch.no_grad():
        net[1].weight.fill_(3.0)
        net[2].bias.fill_(2.0)
    gaussian_init(net)
    w = net[0].weight.detach()
    assert abs(float(w.mean())) < 0.02 and abs(float(w.std()) - 1) < 0.02
    assert float(net[3].weight.detach().std()) == pytest.approx(1, abs=0.02)
    assert not net[0].bias.any() and not net[3].bias.any()
    for norm in (net[1], net[2]):
        assert bool((norm.weight == 1).all()) and not norm.bias.any()


def test_size_regulariser_formula_on_known_numbers():
    model = nn.Module()
    model.body = nn.Linear(999, 3)  # 2997 + 3 = 3000 parameters
    model.auxiliary_head = nn.Linear(100, 100)  # left out by name
    assert parameters_in_thousands(model) == 3.0
    assert size_factor(model, 1.0, 8.0) == pytest.approx(math.exp(-0.5), rel=1e-15)  # sigma, not 2 sigma^2
    assert size_factor(model, 3.0, 1.0) == 1.0
    assert size_factor(model, 5.0, 2.0) == pytest.approx(math.exp(-2.0), rel=1e-15)


def test_swap_reg_is_swap_times_the_size_factor(batches):
    torch.manual_seed(0)
    model = get_space("nasbench201").build_model((CONV3, SKIP, CONV1, POOL, CONV3, SKIP), "cifar10",
                                                  {"C": 4, "N": 1})
    theta = parameters_in_thousands(model)
    scores = {}
    for name, predictor in {"swap": SWAP(repeats=2), "reg": SWAPReg(repeats=2, mu=theta + 0.5, sigma=0.5),
                            "off": SWAPReg(repeats=2)}.items():
        torch.manual_seed(9)
        scores[name] = predictor.score(model, batches, F.cross_entropy)
        scores[name + "_note"] = predictor.note
    assert scores["reg"] == pytest.approx(scores["swap"] * math.exp(-0.5), rel=1e-12)
    assert scores["off"] == scores["swap"]
    assert "swap_reg equals swap" in scores["off_note"]
    assert scores["swap_note"] is None  # batches 0 and 1 of the fixture: 8 + 8 samples
    for bad in ({"mu": 1.0}, {"sigma": 1.0}, {"mu": 1.0, "sigma": 0.0}, {"mu": float("nan"), "sigma": 1.0}):
        with pytest.raises(UserError):
            SWAPReg(**bad)
    with pytest.raises(UserError):
        SWAP(repeats=0)


def test_degenerate_networks(batches):
    space = get_space("nasbench201")
    torch.manual_seed(0)
    cut = space.build_model((NONE,) * 6, "cifar10", {"C": 4, "N": 1})
    # every hooked ReLU sees zeros: one pattern (all off)
    assert SWAP(repeats=2).score(cut, batches, F.cross_entropy) == 1.0
    assert math.isfinite(MeCo().score(cut, batches, F.cross_entropy))

    class Overflow(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 2, 1)
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.conv(x) * float("nan"))

    with pytest.raises(FloatingPointError, match="NaN"):
        SWAP(repeats=1).score(Overflow(), batches, F.cross_entropy)


def test_mlp_networks_are_refused_with_a_reason():
    space = get_space("mlp_act_skip")
    dataset = space.datasets[0]
    arch = space.sample(np.random.default_rng(0))
    data = make_batches(dataset, batch_size=4, data="gaussian")
    predictors = {n: get_predictor(n) for n in NAMES}
    record = score_architecture(space, arch, dataset, predictors, data, seed=0)
    assert set(record["status"].values()) == {"failed"}
    assert "flat vector" in record["reason"]["meco"] and "flat vector" in record["reason"]["meco_opt"]
    assert "ReLU" in record["reason"]["swap"] and "ReLU" in record["reason"]["swap_reg"]


def test_nb201_scores_through_score_architecture_are_seeded():
    space = get_space("nasbench201")
    data = ImageBatches("cifar10", batch_size=16, seed=0, data="gaussian")
    predictors = {"meco": MeCo(), "meco_opt": MeCoOpt(), "swap": SWAP(repeats=2), "swap_reg": SWAPReg(repeats=2)}
    arch = "|nor_conv_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|avg_pool_3x3~0|nor_conv_3x3~1|none~2|"
    first = score_architecture(space, arch, "cifar10", predictors, data, seed=3)
    assert set(first["status"].values()) == {"ok"}, first["reason"]
    assert all(math.isfinite(first["scores"][n]) for n in NAMES)
    assert 1 <= first["scores"]["swap"] <= 2**16
    assert first["notes"]["swap_reg"].startswith("no mu and sigma")
    again = score_architecture(space, arch, "cifar10", predictors, data, seed=3)
    assert again["scores"] == first["scores"]
    other = score_architecture(space, arch, "cifar10", predictors, data, seed=4)
    assert other["scores"]["meco_opt"] != first["scores"]["meco_opt"]


def test_registered_and_listed(capsys):
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    for name in NAMES:
        assert name in listed
        predictor = get_predictor(name)
        assert predictor.requirements().labels is False
        assert predictor.requirements().batches == (1 if name.startswith("meco") else 2)


def test_swap_notes_repeats_that_reach_the_bound():
    torch.manual_seed(0)
    model = ReLUNet()
    data = ImageBatches("cifar10", batch_size=3, seed=0, data="gaussian")  # 6 samples: at most 64 patterns
    predictor = SWAP(repeats=2)
    assert predictor.score(model, data, F.cross_entropy) == 64
    assert "reached its bound 2^6 in 2 of 2 repeats" in predictor.note
