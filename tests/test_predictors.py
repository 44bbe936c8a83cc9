import copy
import math
import types

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from naslib_plugins.data.batches import BatchSource, ImageBatches
from naslib_plugins.errors import UserError
from naslib_plugins.evaluation.ground_truth import load_zc_scores
from naslib_plugins.evaluation.scoring import make_predictors, score_architecture
from naslib_plugins.params import constructor_params
from naslib_plugins.predictors import PREDICTORS, Predictor, SetPredictor, get_predictor
from naslib_plugins.predictors.base import shared_gradients, weight_layers
from naslib_plugins.predictors.model_stats import count_flops
from naslib_plugins.spaces import get_space

space = get_space("nasbench201")
ARCH = (2, 3, 0, 4, 2, 3)
SMALL = {"C": 4, "N": 1}


def small_model(arch=ARCH, seed=0, dataset="cifar10"):
    torch.manual_seed(seed)
    return space.build_model(arch, dataset, SMALL)


@pytest.fixture(scope="module")
def batches():
    return ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian")


def test_registry_has_the_six_proxies_and_sizes():
    assert set(PREDICTORS.names()) >= {"nasi", "zico", "snip", "grasp", "synflow", "params", "flops"}
    with pytest.raises(UserError, match="unknown predictor 'jacob'"):
        get_predictor("jacob")


PER_ARCHITECTURE = [n for n in PREDICTORS.names() if issubclass(PREDICTORS.get(n), Predictor)]


@pytest.mark.parametrize("name", PER_ARCHITECTURE)
def test_every_predictor_is_finite_and_bitwise_reproducible(name, batches):
    a = get_predictor(name).score(small_model(), batches, F.cross_entropy)
    b = get_predictor(name).score(small_model(), batches, F.cross_entropy)
    assert math.isfinite(a) and a == b
    c = get_predictor(name).score(small_model(seed=1), batches, F.cross_entropy)
    if get_predictor(name).requirements().weights:
        assert c != a  # depends on the initialisation


class _Recording:
    """A batch source noting the batches read and the mode the network runs in, its labels
    optionally all set to one class."""

    def __init__(self, source: ImageBatches, shift_labels: bool = False):
        self.source, self.shift_labels = source, shift_labels
        self.read: set[int] = set()

    @property
    def input_shape(self):
        return self.source.input_shape

    def batch(self, i):
        self.read.add(i)
        x, y = self.source.batch(i)
        return x, torch.zeros_like(y) if self.shift_labels else y

    def describe(self):
        return self.source.describe()

    def settings(self):
        return self.source.settings()


@pytest.mark.parametrize("name", PER_ARCHITECTURE)
def test_every_predictor_reads_what_its_requirements_declare(name, batches):
    predictor = get_predictor(name)
    needs = predictor.requirements()
    source = _Recording(batches)
    assert isinstance(source, BatchSource)
    model = small_model()
    modes = []
    model.register_forward_pre_hook(lambda module, inputs: modes.append(module.training))
    score = predictor.score(model, source, F.cross_entropy)
    assert source.read == set(range(needs.batches)) and needs.data == bool(needs.batches)
    assert set(modes) <= {needs.train_mode}
    shifted = get_predictor(name).score(small_model(), _Recording(batches, shift_labels=True), F.cross_entropy)
    assert (shifted != score) == needs.labels


@pytest.mark.parametrize("name", PREDICTORS.names())
def test_options_are_the_constructor_parameters(name):
    predictor = get_predictor(name)
    assert list(predictor.options()) == list(constructor_params(type(predictor)))
    assert type(predictor)(**predictor.options()).options() == predictor.options()
    assert isinstance(predictor, Predictor) != isinstance(predictor, SetPredictor)


def test_nasi_is_squared_norm_of_mean_batch_gradient(batches):
    model = small_model()
    x, y = batches.batch(0)
    model.zero_grad()
    F.cross_entropy(model(x), y).backward()
    expected = sum(float(p.grad.double().pow(2).sum()) for p in model.parameters())
    assert get_predictor("nasi").score(small_model(), batches, F.cross_entropy) == pytest.approx(expected, rel=1e-6)


def test_zico_matches_per_weight_formula_and_is_not_zero(batches):
    """The official formula, written out over two separately zeroed batches, in float64 and with
    the tie guard (ZICO_TIE) in place of the official exact-zero test."""
    from naslib_plugins.predictors.gradient import ZICO_TIE

    model = small_model()
    per_batch = []
    for i in range(2):
        model.zero_grad()
        x, y = batches.batch(i)
        F.cross_entropy(model(x), y).backward()
        per_batch.append([m.weight.grad.detach().clone().flatten().double() for m in weight_layers(model)])
    expected = 0.0
    for g0, g1 in zip(*per_batch):
        g = torch.stack([g0, g1])
        std = g.std(0, correction=0)
        nz = std > ZICO_TIE * g.abs().mean(0)
        s = float((g.abs().mean(0)[nz] / std[nz]).sum())
        if s:
            expected += math.log(s)
    got = get_predictor("zico").score(small_model(), batches, F.cross_entropy)
    assert expected != 0.0
    assert got == pytest.approx(expected, rel=1e-5)


def test_zico_two_batch_closed_form_equals_the_general_form(monkeypatch):
    """Two batches take a chunked closed form; on crafted gradients with exact ties, near ties
    (dropped by the guard, counted), a layer without gradient, zeros and a NaN it gives the
    general form's ratio sums and guard counts."""
    from naslib_plugins.predictors import gradient

    layers = [nn.Parameter(torch.zeros(7)), nn.Parameter(torch.zeros(2, 3)), nn.Parameter(torch.zeros(4))]
    g0 = [torch.tensor([1.0, -2.0, 3.0, 0.0, 5.0, 1e-3, float("nan")]), torch.tensor([[1.0, 2, 3], [4, 5, 6]]), None]
    g1 = [torch.tensor([1.0, 2.0, 3.0 * (1 + 1e-6), 0.0, -4.0, 2e-3, 1.0]),
          torch.tensor([[1.0, 2.5, 3], [-4, 5, 6.5]]), None]
    grads = [dict(zip(layers, g0)), dict(zip(layers, g1))]
    for g in grads:
        g.pop(layers[2])  # a weight no loss reaches has no gradient
    monkeypatch.setattr(gradient, "batch_gradients", lambda model, batches, i, loss_fn: grads[i])
    monkeypatch.setattr(gradient, "_CHUNK", 3)  # several chunks per layer
    general = gradient._ratio_sums(None, None, None, layers, 2)
    closed = gradient._two_batch_ratio_sums(None, None, None, layers)
    assert [g for _, g in closed] == [g for _, g in general] == [2, 0, 0]  # 3 * (1 + 1e-6) and the NaN
    assert [r for r, _ in closed] == pytest.approx([r for r, _ in general], rel=1e-14)
    # by hand: (|a| + |b|) / |a - b| over the kept weights
    assert closed[0][0] == pytest.approx(4 / 4 + 9 / 9 + 3e-3 / 1e-3)
    assert closed[1][0] == pytest.approx(4.5 / 0.5 + 8 / 8 + 12.5 / 0.5) and closed[2][0] == 0.0


def _snip_with_masks(model, x, y):
    """SNIP as Abdelfattah et al. code it: a mask of ones on every conv/linear weight."""
    for layer in weight_layers(model):
        layer.weight_mask = nn.Parameter(torch.ones_like(layer.weight))
        layer.weight.requires_grad = False
        if isinstance(layer, nn.Conv2d):
            layer.forward = types.MethodType(
                lambda self, x: F.conv2d(x, self.weight * self.weight_mask, self.bias, self.stride,
                                         self.padding, self.dilation, self.groups), layer)
        else:
            layer.forward = types.MethodType(
                lambda self, x: F.linear(x, self.weight * self.weight_mask, self.bias), layer)
    F.cross_entropy(model(x), y).backward()
    return sum(float(layer.weight_mask.grad.abs().sum()) for layer in weight_layers(model))


def test_snip_equals_mask_gradient_formulation(batches):
    x, y = batches.batch(0)
    expected = _snip_with_masks(small_model(), x, y)
    assert get_predictor("snip").score(small_model(), batches, F.cross_entropy) == pytest.approx(expected, rel=1e-5)


def test_grasp_equals_two_pass_formulation(batches):
    model = small_model()
    weights = [m.weight for m in weight_layers(model)]
    x, y = batches.batch(0)
    grad_w = torch.autograd.grad(F.cross_entropy(model(x), y), weights)
    grad_f = torch.autograd.grad(F.cross_entropy(model(x), y), weights, create_graph=True)
    z = sum((gw.detach() * gf).sum() for gw, gf in zip(grad_w, grad_f))
    z.backward()
    expected = sum(float((-w.detach() * w.grad).sum()) for w in weights)
    exact = get_predictor("grasp", hvp="exact").score(small_model(), batches, F.cross_entropy)
    assert exact == pytest.approx(expected, rel=1e-4)


def test_synflow_ignores_batchnorm_and_data_and_keeps_model_intact(batches):
    model = small_model()
    before = copy.deepcopy(model.state_dict())
    s = get_predictor("synflow").score(model, batches, F.cross_entropy)
    other = ImageBatches("cifar10", batch_size=8, seed=9, data="gaussian")
    assert s == get_predictor("synflow").score(model, other, F.cross_entropy)
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert s > 0


def test_disconnected_cell_scores_zero_synflow(batches):
    # every input of the output node is `none`: no signal reaches the classifier
    dead = (0, 0, 1, 0, 1, 1)
    assert get_predictor("synflow").score(small_model(dead), batches, F.cross_entropy) == 0.0


def test_flops_and_params_match_naslib_records(shared_data):
    for dataset, res in (("cifar10", 32), ("ImageNet16-120", 16)):
        recorded = load_zc_scores(shared_data / space.zc_path(dataset), space, dataset)
        for key in list(recorded)[:25]:
            model = space.build_model(key, dataset)
            flops = count_flops(model.eval(), torch.zeros(1, 3, res, res)) / 1e6
            assert flops == pytest.approx(recorded[key]["flops"], abs=1e-5), (dataset, key)
            params = get_predictor("params").score(model, None, None)
            assert params == pytest.approx(recorded[key]["params"], abs=5e-7), (dataset, key)


def test_shared_gradients_give_the_same_scores_as_separate_models(batches):
    names = ["nasi", "zico", "snip", "grasp", "synflow", "params", "flops"]
    record = score_architecture(space, ARCH, "cifar10", make_predictors(names), batches, seed=3, size=SMALL)
    again = score_architecture(space, ARCH, "cifar10", make_predictors(names[::-1]), batches, seed=3, size=SMALL)
    assert record["scores"] == again["scores"]
    assert all(s == "ok" for s in record["status"].values())


class _Exploding(Predictor):
    def score(self, model, batches, loss_fn):
        return float("nan")


class _Raising(Predictor):
    def score(self, model, batches, loss_fn):
        raise RuntimeError("boom")


def test_nan_and_exceptions_are_reported_as_failed(batches):
    preds = {"nan": _Exploding(), "raise": _Raising(), "params": get_predictor("params")}
    r = score_architecture(space, ARCH, "cifar10", preds, batches, seed=0, size=SMALL)
    assert r["status"] == {"nan": "failed", "raise": "failed", "params": "ok"}
    assert r["reason"]["nan"] == "non-finite score nan"
    assert r["reason"]["raise"] == "RuntimeError: boom"
    assert r["scores"]["nan"] is None and r["scores"]["params"] > 0


def test_shared_gradients_cache_is_scoped(batches):
    model = small_model()
    with shared_gradients(model):
        assert hasattr(model, "_naslib_plugins_grad_cache")
    assert not hasattr(model, "_naslib_plugins_grad_cache")


def test_nwot_is_minus_inf_exactly_when_the_output_ignores_the_input():
    space = get_space("nasbench201")
    batches = ImageBatches("cifar10", batch_size=16, data="gaussian")
    # cut off from the output, one with a convolution on a dead-end edge (its codes still vary)
    for cut in ("(1, 2, 1, 3, 1, 1)", "(0, 1, 1, 1, 1, 1)"):
        record = score_architecture(space, cut, "cifar10", make_predictors(["nwot", "nwot_eval"]), batches, seed=0)
        for name in ("nwot", "nwot_eval"):
            assert record["status"][name] == "failed"
            assert "output does not depend on its input" in record["reason"][name]
    record = score_architecture(space, "(2, 2, 0, 2, 2, 2)", "cifar10", make_predictors(["nwot"]), batches, seed=0)
    assert record["status"]["nwot"] == "ok" and math.isfinite(record["scores"]["nwot"])


def test_nwot_eval_does_not_depend_on_the_predictors_before_it():
    space = get_space("nasbench201")
    batches = ImageBatches("cifar10", batch_size=16, data="gaussian")
    first = score_architecture(space, "(2, 3, 0, 4, 1, 2)", "cifar10", make_predictors(["nwot_eval", "snip"]),
                               batches, seed=0)
    after = score_architecture(space, "(2, 3, 0, 4, 1, 2)", "cifar10", make_predictors(["snip", "nwot_eval"]),
                               batches, seed=0)
    assert first["scores"] == after["scores"]
