"""ntk_lambda_min: the kernel against a brute-force NTK from per-sample autograd loops, its two
reductions, chunking, BatchNorm in train mode, and the options. Tiny networks."""
import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from naslib_plugins.data.batches import ImageBatches
from naslib_plugins.data.digits import DigitsBatches
from naslib_plugins.errors import UserError
from naslib_plugins.predictors import PREDICTORS, get_predictor, ntk
from naslib_plugins.predictors.ntk import NTKLambdaMin, parameter_chunks
from naslib_plugins.spaces import get_space


def tiny_mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))


def tiny_bn_net(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3))


class Fixed:
    """A batch source holding one given batch."""

    def __init__(self, x):
        self.x = x

    def batch(self, i):
        return self.x, torch.zeros(len(self.x), dtype=torch.long)


def brute_force_kernel(model, x, reduction):
    """K = J J^T with one torch.autograd.grad call per output row, the network and x in float64
    (the predictor runs in float32: they agree to its rounding)."""
    model = model.double().train()
    out = model(x.double())
    rows = out.sum(dim=1) if reduction == "sum" else out.reshape(-1)
    params = [p for p in model.parameters() if p.requires_grad]
    jac = torch.stack([
        torch.cat([g.reshape(-1) for g in torch.autograd.grad(r, params, retain_graph=True)]) for r in rows
    ]).double()
    return jac @ jac.T


@pytest.mark.parametrize("route", ["by_row", "vmapped"])
@pytest.mark.parametrize("reduction", ["sum", "full"])
def test_kernel_and_lambda_min_equal_brute_force(reduction, route):
    x = torch.randn(6, 5, generator=torch.Generator().manual_seed(1))
    expected = brute_force_kernel(tiny_mlp(), x, reduction)
    predictor = get_predictor("ntk_lambda_min", samples=6, reduction=reduction)
    kernel = predictor.kernel(tiny_mlp(), x, route=route)
    assert kernel.dtype == torch.float64
    assert kernel.shape == ((6, 6) if reduction == "sum" else (18, 18))
    assert torch.allclose(kernel, expected, rtol=1e-5, atol=1e-8)
    lam = predictor.score(tiny_mlp(), Fixed(x), None)
    assert lam == pytest.approx(float(torch.linalg.eigvalsh(expected)[0]), rel=1e-6, abs=1e-9)


def test_sum_kernel_is_the_block_sum_of_the_full_kernel():
    x = torch.randn(4, 5, generator=torch.Generator().manual_seed(2))
    full = NTKLambdaMin(samples=4, reduction="full").kernel(tiny_mlp(), x)
    summed = NTKLambdaMin(samples=4).kernel(tiny_mlp(), x)
    # row i * c + a of the full kernel is output unit a of sample i
    assert torch.allclose(full.reshape(4, 3, 4, 3).sum(dim=(1, 3)), summed, rtol=1e-5)


def test_kernel_is_psd_and_lambda_min_non_negative_up_to_rounding():
    x = torch.randn(30, 5, generator=torch.Generator().manual_seed(3))
    kernel = NTKLambdaMin(samples=8).kernel(tiny_mlp(), x[:8])
    assert torch.allclose(kernel, kernel.T, rtol=1e-12)
    eig = torch.linalg.eigvalsh(kernel)
    assert float(eig[0]) > 0
    # 90 output rows, 66 parameters: J J^T is singular, lambda_min is 0 up to rounding
    wide = NTKLambdaMin(samples=30, reduction="full")
    lam = wide.score(tiny_mlp(), Fixed(x), None)
    largest = float(torch.linalg.eigvalsh(wide.kernel(tiny_mlp(), x))[-1])
    assert abs(lam) <= 1e-10 * largest


@pytest.mark.parametrize("route", ["by_row", "vmapped"])
def test_chunked_kernel_equals_one_chunk(monkeypatch, route):
    x = torch.randn(5, 5, generator=torch.Generator().manual_seed(5))
    whole = NTKLambdaMin(samples=5, reduction="full").kernel(tiny_mlp(), x, route=route)
    monkeypatch.setattr(ntk, "MAX_JACOBIAN_ELEMENTS", 15 * 8)  # 8 parameter entries a chunk
    chunked = NTKLambdaMin(samples=5, reduction="full").kernel(tiny_mlp(), x, route=route)
    assert torch.allclose(chunked, whole, rtol=1e-10, atol=1e-12)


def test_parameter_chunks_respect_the_budget(monkeypatch):
    monkeypatch.setattr(ntk, "MAX_JACOBIAN_ELEMENTS", 100)
    params = {"a": torch.zeros(4), "b": torch.zeros(5), "c": torch.zeros(30), "d": torch.zeros(2), "e": torch.zeros(3)}
    # 10 rows: a+b = 90 fits, c = 300 alone (too big for any chunk), d+e = 50
    assert parameter_chunks(params, 10) == [["a", "b"], ["c"], ["d", "e"]]
    assert parameter_chunks(params, 1) == [["a", "b", "c", "d", "e"]]


@pytest.mark.parametrize("route", ["by_row", "vmapped"])
def test_batchnorm_in_train_mode_couples_samples_and_keeps_buffers(route):
    x = torch.randn(6, 3, 6, 6, generator=torch.Generator().manual_seed(6))
    model = tiny_bn_net()
    bn = model[1]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    kernel = NTKLambdaMin(samples=6).kernel(model, x, route=route)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k  # running stats untouched
    assert bn.track_running_stats and model.training
    assert torch.allclose(kernel, brute_force_kernel(tiny_bn_net(), x, "sum"), rtol=1e-5, atol=1e-8)
    # batch statistics couple the samples: the first 3 samples alone give another kernel
    alone = NTKLambdaMin(samples=3).kernel(tiny_bn_net(), x[:3])
    assert not torch.allclose(alone, kernel[:3, :3], rtol=1e-3)


def test_samples_are_the_first_of_batch_zero():
    batches = ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian")
    x = batches.batch(0)[0]
    score = NTKLambdaMin(samples=5).score(tiny_bn_net(), batches, None)
    kernel = NTKLambdaMin(samples=5).kernel(tiny_bn_net(), x[:5])
    assert score == float(torch.linalg.eigvalsh(kernel)[0])
    # a batch smaller than `samples` is used whole
    assert NTKLambdaMin(samples=64).score(tiny_bn_net(), batches, None) == pytest.approx(
        NTKLambdaMin(samples=8).score(tiny_bn_net(), batches, None), rel=1e-12)


class WithIdleLayer(nn.Module):
    """tiny_mlp plus a layer the forward never runs (NB201's cells cut off by `none` edges);
    `cut=True`: the output does not depend on any parameter."""

    def __init__(self, cut=False):
        super().__init__()
        self.net, self.idle, self.cut = tiny_mlp(), nn.Linear(5, 3), cut

    def forward(self, x):
        return x[:, :3] * 2.0 if self.cut else self.net(x)


@pytest.mark.parametrize("route", ["by_row", "vmapped"])
def test_parameters_that_do_not_reach_the_output_add_nothing(route):
    x = torch.randn(4, 5, generator=torch.Generator().manual_seed(2))
    kernel = NTKLambdaMin(samples=4).kernel(WithIdleLayer(), x, route=route)
    assert torch.allclose(kernel, brute_force_kernel(tiny_mlp(), x, "sum"), rtol=1e-5, atol=1e-8)
    cut = NTKLambdaMin(samples=4).kernel(WithIdleLayer(cut=True), x, route=route)
    assert torch.equal(cut, torch.zeros(4, 4, dtype=torch.float64))


def test_route_is_by_row_for_convolution_networks_and_both_routes_agree():
    assert ntk.kernel_route(tiny_bn_net()) == "by_row" and ntk.kernel_route(tiny_mlp()) == "vmapped"
    nb201 = get_space("nasbench201")
    torch.manual_seed(0)
    model = nb201.build_model((2, 3, 1, 4, 2, 3), "cifar10", {"C": 4, "N": 1}).to(memory_format=torch.channels_last)
    x = ImageBatches("cifar10", batch_size=6, seed=0, data="gaussian").batch(0)[0]
    by_row = NTKLambdaMin(samples=6).kernel(model, x)
    vmapped = NTKLambdaMin(samples=6).kernel(model, x, route="vmapped")
    assert torch.allclose(by_row, vmapped, rtol=1e-5, atol=1e-6 * float(vmapped.abs().max()))
    with pytest.raises(ValueError, match="unknown NTK route 'loop'"):
        NTKLambdaMin().kernel(model, x, route="loop")


def test_batch_sum_bound_reads_each_units_rows():
    """Rows run sample-major (sample 0's units, then sample 1's): unit k's batch-sum direction
    is rows k, k + units, ...; hand-made so each unit's quotient differs."""
    samples, units = 3, 2
    j = torch.zeros(samples * units, 4, dtype=torch.float64)
    j[0::units, 0] = 1.0  # unit 0: every sample's row moves with parameter 0, u^T K u = 9
    j[1::units, 1] = torch.tensor([1.0, -1.0, 0.5], dtype=torch.float64)  # unit 1: (1 - 1 + .5)^2
    kernel = j @ j.T
    assert ntk.batch_sum_bound(kernel, samples) == pytest.approx(0.25 / samples)
    j[1::units, 1] = 3.0
    assert ntk.batch_sum_bound(j @ j.T, samples) == pytest.approx(9 / samples)


def test_a_note_where_the_head_pins_lambda_min():
    """On an NB301 network in train mode the batch-summed outputs move only with the head's bias, so
    the all-ones direction's Rayleigh quotient is n K and lambda_min sits there: the score is kept
    and a note says the head sets it. An NB201 network (no fixed sum) gets no note."""
    nb301 = get_space("nasbench301")
    x = ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian").batch(0)[0]
    for seed in range(3):
        torch.manual_seed(seed)
        model = nb301.build_model(nb301.sample(np.random.default_rng(seed)), "cifar10", {"C": 4, "layers": 3})
        kernel = NTKLambdaMin(samples=8).kernel(model, x)
        assert ntk.batch_sum_bound(kernel, 8) == pytest.approx(8 * 10, rel=1e-8)
        predictor = NTKLambdaMin(samples=8)
        assert predictor.score(model, Fixed(x), None) == pytest.approx(8 * 10, rel=1e-8)
        assert "head, not the cells, sets it" in predictor.note
        full = NTKLambdaMin(samples=8, reduction="full").kernel(model, x)
        assert ntk.batch_sum_bound(full, 8) == pytest.approx(8, rel=1e-8)  # n per class
    nb201 = get_space("nasbench201")
    torch.manual_seed(0)
    model = nb201.build_model((2, 3, 1, 4, 2, 3), "cifar10", {"C": 4, "N": 1})
    predictor = NTKLambdaMin(samples=8)
    assert math.isfinite(predictor.score(model, Fixed(x), None)) and predictor.note is None


def test_non_finite_kernel_scores_nan():
    model = tiny_mlp()
    with torch.no_grad():
        model[2].weight[0, 0] = float("inf")
    assert math.isnan(NTKLambdaMin(samples=4).score(model, Fixed(torch.ones(4, 5)), None))


def test_registered_with_options():
    assert "ntk_lambda_min" in PREDICTORS
    p = get_predictor("ntk_lambda_min")
    assert isinstance(p, NTKLambdaMin) and p.options() == {"samples": 16, "reduction": "sum"}
    with pytest.raises(UserError, match="unknown ntk_lambda_min reduction 'mean'"):
        get_predictor("ntk_lambda_min", reduction="mean")
    with pytest.raises(UserError, match="samples must be a positive integer"):
        get_predictor("ntk_lambda_min", samples=0)


def test_on_the_spaces_models():
    nb201 = get_space("nasbench201")
    torch.manual_seed(0)
    model = nb201.build_model((2, 3, 0, 4, 2, 3), "cifar10", {"C": 4, "N": 1})
    batches = ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian")
    a = NTKLambdaMin(samples=4).score(model, batches, F.cross_entropy)
    assert math.isfinite(a) and a > 0
    nb101 = get_space("nasbench101")
    model = nb101.build_model(nb101.sample(np.random.default_rng(0)), "cifar10",
                              {"stem_channels": 8, "num_stacks": 1, "num_cells": 1})
    assert math.isfinite(NTKLambdaMin(samples=4).score(model, batches, F.cross_entropy))
    mlp = get_space("mlp_act_skip")
    torch.manual_seed(0)
    model = mlp.build_model("relu-tanh-gelu|0>2", "digits")
    digits = DigitsBatches(batch_size=16)
    lam = NTKLambdaMin().score(model, digits, F.cross_entropy)
    assert math.isfinite(lam) and lam > 0
    torch.manual_seed(1)
    assert NTKLambdaMin().score(mlp.build_model("relu-tanh-gelu|0>2", "digits"), digits, None) != lam
