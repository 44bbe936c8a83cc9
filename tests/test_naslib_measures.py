"""NASLib's zero-cost measures (grad_norm, plain, l2_norm, fisher, jacov, epe_nas, zen): each
against a value worked out by hand on a tiny network, on every space, sharing their passes; and,
where NASLib is importable, against NASLib's own measure functions."""
import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from naslib_plugins.data.batches import FixedBatches, ImageBatches
from naslib_plugins.data.sources import make_batches
from naslib_plugins.data.tasks import TaskBatches
from naslib_plugins.evaluation.scoring import make_predictors, score_architecture
from naslib_plugins.predictors import PREDICTORS, get_predictor
from naslib_plugins.predictors.base import shared_gradients
from naslib_plugins.spaces import get_space

MEASURES = ["grad_norm", "plain", "l2_norm", "fisher", "jacov", "epe_nas", "zen"]
EPS = 1e-5  # NASLib's, in jacov and epe_nas


def test_registry_has_naslibs_names():
    assert set(MEASURES) <= set(PREDICTORS.names())


# --------------------------------------------------------------------------- hand-computed values


def _mlp(outputs: int = 3) -> nn.Sequential:
    g = torch.Generator().manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 5), nn.ReLU(), nn.Linear(5, outputs)).double()
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64))
    return net


# six samples whose ReLU patterns all differ (none all off) in the three-class network
X = torch.randn(6, 8, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
Y = torch.tensor([0, 0, 1, 1, 1, 2])  # class 2 has a single sample


def _by_hand(net: nn.Sequential, y: torch.Tensor = Y):
    """The two-layer network's pre-activations and loss gradients, written out: h = W1 x + b1,
    z = W2 relu(h) + b2, mean cross-entropy."""
    (w1, b1), (w2, b2) = (net[0].weight.detach(), net[0].bias.detach()), (net[2].weight.detach(), net[2].bias.detach())
    h = X @ w1.T + b1
    a = h.clamp(min=0)
    z = a @ w2.T + b2
    dz = (torch.softmax(z, dim=1) - F.one_hot(y, z.shape[1])) / len(X)
    dh = (dz @ w2) * (h > 0)
    # each sample's d sum(z) / dx: ones back through W2, the ReLU's gate, W1
    jac = ((torch.ones(z.shape[1], dtype=torch.float64) @ w2) * (h > 0)) @ w1
    return dict(w1=w1, w2=w2, h=h, z=z, dz=dz, dh=dh, dw1=dh.T @ X, dw2=dz.T @ a, jac=jac)


def _score(name: str, net: nn.Module, y: torch.Tensor = Y) -> float:
    return get_predictor(name).score(net, FixedBatches([(X, y)]), F.cross_entropy)


def _corr(rows: np.ndarray) -> np.ndarray:
    centred = rows - rows.mean(axis=1, keepdims=True)
    norms = np.sqrt((centred**2).sum(axis=1))
    return centred @ centred.T / np.outer(norms, norms)


def test_gradient_measures_by_hand():
    net = _mlp()
    v = _by_hand(net)
    assert _score("grad_norm", net) == pytest.approx(float(v["dw1"].norm() + v["dw2"].norm()), rel=1e-12)
    assert _score("plain", net) == pytest.approx(float((v["dw1"] * v["w1"]).sum() + (v["dw2"] * v["w2"]).sum()),
                                                 rel=1e-12)
    assert _score("l2_norm", net) == pytest.approx(float(v["w1"].norm() + v["w2"].norm()), rel=1e-12)
    # the loss's derivative by a mask on output k of sample n is output_nk * d loss / d output_nk;
    # each layer's per-output value counts once per input weight (8 into layer 1, 5 into layer 2)
    fisher = sum(fan_in * float((0.5 * (out * grad).pow(2).mean(dim=0)).sum())
                 for fan_in, out, grad in ((8, v["h"], v["dh"]), (5, v["z"], v["dz"])))
    assert _score("fisher", net) == pytest.approx(fisher, rel=1e-12)


def test_jacov_by_hand():
    net = _mlp()
    eig = np.linalg.eigvalsh(_corr(_by_hand(net)["jac"].numpy()))
    assert _score("jacov", net) == pytest.approx(float(-np.sum(np.log(eig + EPS) + 1 / (eig + EPS))), rel=1e-9)


def test_epe_nas_by_hand_with_few_classes():
    net = _mlp()
    jac = _by_hand(net)["jac"].numpy()
    y = Y.numpy()
    # per class, the sum of log(|corr| + eps); a single sample's 1x1 matrix is [1]
    s = [np.log(np.abs(_corr(jac[y == c])) + EPS).sum() for c in (0, 1)] + [math.log(1 + EPS)]
    assert _score("epe_nas", net) == pytest.approx(float(np.sum(np.abs(s))), rel=1e-9)


def test_epe_nas_by_hand_with_over_100_classes():
    net = _mlp(outputs=101)
    y = torch.tensor([7, 7, 50, 50, 50, 100])
    jac = _by_hand(net, y)["jac"].numpy()
    # per class the mean over its samples; the single-sample class is left out
    s = [np.log(np.abs(_corr(jac[y.numpy() == c])) + EPS).sum() / n for c, n in ((7, 2), (50, 3))]
    assert _score("epe_nas", net, y) == pytest.approx(2 * abs(s[0] - s[1]) / 2, rel=1e-9)
    assert _score("epe_nas", net, torch.arange(6)) == 0.0  # no class with two samples


def test_epe_nas_reads_one_hot_targets_as_classes():
    net = _mlp()
    assert _score("epe_nas", net, F.one_hot(Y, 3).double()) == _score("epe_nas", net)


def test_jacov_is_nan_for_a_sample_with_a_constant_jacobian():
    net = _mlp()
    with torch.no_grad():
        net[0].bias.fill_(-100.0)  # every ReLU off: all input gradients zero
    assert math.isnan(_score("jacov", net))


class _PoolNet(nn.Module):
    """conv 1x1 -> BN -> ReLU -> global average pool -> linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 1)
        self.bn = nn.BatchNorm2d(3)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(3, 2)

    def feature_module(self) -> nn.Module:
        return self.pool

    def forward(self, x):
        return self.fc(self.pool(F.relu(self.bn(self.conv(x)))).flatten(1))


def test_zen_by_hand():
    torch.manual_seed(0)
    net = _PoolNet()
    batches = FixedBatches([(torch.zeros(5, 2, 3, 3), torch.zeros(5, dtype=torch.long))])
    torch.manual_seed(7)
    score = get_predictor("zen").score(net, batches, F.cross_entropy)
    # the same draws from the global generator: the conv's and the linear layer's weights (in
    # module order), then the two inputs
    torch.manual_seed(7)
    w = torch.randn(3, 2, 1, 1).double()
    torch.randn(2, 3)
    x = torch.randn(5, 2, 3, 3).double()
    mixed = x + 0.01 * torch.randn(5, 2, 3, 3).double()

    def features(inputs):
        u = torch.einsum("oi,nihw->nohw", w[:, :, 0, 0], inputs)  # bias 0
        mean, var = u.mean(dim=(0, 2, 3)), u.var(dim=(0, 2, 3), unbiased=False)
        return ((u - mean[:, None, None]) / torch.sqrt(var[:, None, None] + 1e-5)).clamp(min=0), u

    f1, u1 = features(x)
    f2, u2 = features(mixed)
    # running variance from 1, momentum 0.1, the unbiased batch variance of each pass
    running = 0.9 * (0.9 * 1.0 + 0.1 * u1.var(dim=(0, 2, 3))) + 0.1 * u2.var(dim=(0, 2, 3))
    expected = math.log(float((f1 - f2).abs().sum(dim=(1, 2, 3)).mean())) + math.log(math.sqrt(float(running.mean())))
    assert score == pytest.approx(expected, rel=1e-5)


def test_zen_leaves_the_model_bit_identical_and_ignores_its_running_statistics():
    torch.manual_seed(0)
    net = _PoolNet()
    batches = FixedBatches([(torch.randn(5, 2, 3, 3), torch.zeros(5, dtype=torch.long))])
    torch.manual_seed(7)
    fresh = get_predictor("zen").score(net, batches, F.cross_entropy)
    net(torch.randn(5, 2, 3, 3) * 3)  # a train-mode forward moves the running statistics
    before = {k: v.clone() for k, v in net.state_dict().items()}
    torch.manual_seed(7)
    assert get_predictor("zen").score(net, batches, F.cross_entropy) == fresh
    after = net.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)


def test_zen_fails_clearly_without_a_feature_map():
    with pytest.raises(TypeError, match="zen scores the feature map before global average pooling"):
        _score("zen", _mlp())


# --------------------------------------------------------------------------- pass sharing

NB201 = get_space("nasbench201")
ARCH = (2, 3, 0, 4, 2, 3)
SMALL = {"C": 4, "N": 1}


@pytest.fixture(scope="module")
def batches():
    return ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian")


def _forwards(names, batches, saliencies=False):
    """Scores of `names` on one NB201 model inside one shared block, and the forward passes run."""
    torch.manual_seed(0)
    model = NB201.build_model(ARCH, "cifar10", SMALL)
    calls = []
    model.register_forward_pre_hook(lambda module, inputs: calls.append(1))
    with shared_gradients(model, saliencies=saliencies):
        scores = {n: get_predictor(n).score(model, batches, F.cross_entropy) for n in names}
    return scores, len(calls)


def test_gradient_measures_share_the_loss_pass(batches):
    scores, forwards = _forwards(["snip", "nasi", "grad_norm", "plain"], batches)
    assert forwards == 1
    # fisher first: its pass records the channel saliencies and serves the others too
    first, forwards = _forwards(["fisher", "grad_norm", "plain", "snip"], batches)
    assert forwards == 1
    # after them: the gradients are there, the saliencies are not, so it takes a pass of its own
    last, forwards = _forwards(["grad_norm", "plain", "snip", "fisher"], batches)
    assert forwards == 2
    assert first == last and all(first[n] == scores[n] for n in ("grad_norm", "plain", "snip"))
    # unless the block was told a reader of the saliencies is coming, as the engine tells it
    told, forwards = _forwards(["grad_norm", "plain", "snip", "fisher"], batches, saliencies=True)
    assert forwards == 1 and told == first
    assert get_predictor("fisher").requirements().saliencies
    assert not get_predictor("grad_norm").requirements().saliencies


def test_jacobian_measures_share_one_pass(batches):
    assert _forwards(["jacov", "epe_nas"], batches)[1] == 1


def test_scores_do_not_depend_on_the_order_of_predictors(batches):
    names = MEASURES + ["snip", "nwot"]
    a = score_architecture(NB201, ARCH, "cifar10", make_predictors(names), batches, seed=3, size=SMALL)
    b = score_architecture(NB201, ARCH, "cifar10", make_predictors(names[::-1]), batches, seed=3, size=SMALL)
    assert a["scores"] == b["scores"] and set(a["status"].values()) == {"ok"}


def test_non_finite_scores_are_reported_as_failed(batches):
    # every edge `none`: the output does not depend on the input
    r = score_architecture(NB201, (1,) * 6, "cifar10", make_predictors(["zen", "jacov"]), batches, seed=0, size=SMALL)
    assert r["status"] == {"zen": "failed", "jacov": "failed"}
    assert r["reason"]["zen"] == "non-finite score -inf" and r["reason"]["jacov"] == "non-finite score nan"


# --------------------------------------------------------------------------- every space

def _images():
    return ImageBatches("cifar10", batch_size=4, seed=0, data="gaussian")


def _task(task):
    return lambda: TaskBatches(task, 4, resolution=32, data="gaussian")


CASES = [
    ("nasbench201", ARCH, "cifar10", SMALL, _images),
    ("nasbench101", None, "cifar10", {"stem_channels": 8, "num_stacks": 2, "num_cells": 1}, _images),
    ("nasbench301", None, "cifar10", {"C": 4, "layers": 5}, _images),
    ("transbench101_micro", (3, 2, 1, 0, 3, 1), "class_scene", None, _task("class_scene")),
    ("transbench101_micro", (3, 2, 1, 0, 3, 1), "jigsaw", None, _task("jigsaw")),
    ("transbench101_micro", (3, 0, 0, 1, 0, 1), "autoencoder", None, _task("autoencoder")),
    ("transbench101_macro", (1, 3, 2, 4, 0, 0), "room_layout", None, _task("room_layout")),
    ("transbench101_macro", (1, 3, 2, 4, 0, 0), "segmentsemantic", None, _task("segmentsemantic")),
    ("mlp_act_skip", None, "digits", None, lambda: make_batches("digits", batch_size=4, data="gaussian")),
]
# networks whose summed outputs do not depend on the input in train mode: no input Jacobian to read
FIXED_SUM = "ValueError: in train mode the summed outputs of"
# what a space's networks cannot give: the reason the engine records
UNSUPPORTED = {
    ("mlp_act_skip", "zen"): "TypeError: zen scores the feature map before global average pooling",
    ("autoencoder", "epe_nas"): "ValueError: epe_nas groups samples by class",
    ("segmentsemantic", "epe_nas"): "ValueError: epe_nas groups samples by class",
    **{(where, name): FIXED_SUM for where in ("nasbench301", "class_scene", "jigsaw", "room_layout")
       for name in ("jacov", "epe_nas")},
}


@pytest.mark.parametrize("space_name, arch, dataset, size, make", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_every_measure_on_every_space(space_name, arch, dataset, size, make):
    space = get_space(space_name)
    if arch is None:
        arch = space.sample(np.random.default_rng(0))
    r = score_architecture(space, arch, dataset, make_predictors(MEASURES), make(), seed=0, size=size)
    for name in MEASURES:
        reason = UNSUPPORTED.get((space_name, name)) or UNSUPPORTED.get((dataset, name))
        if reason is None:
            assert r["status"][name] == "ok", (name, r["reason"].get(name))
        else:
            assert r["status"][name] == "failed" and r["reason"][name].startswith(reason), r["reason"].get(name)


@pytest.mark.parametrize("space_name, arch, dataset, size, make", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_a_network_declares_a_fixed_output_sum_exactly_when_its_input_jacobian_is_zero(space_name, arch, dataset,
                                                                                        size, make):
    """In float64 the gradient of the summed outputs by the input is zero to rounding (1e-16 of the
    input's norm) on NB301 and TNB's pooled heads, and far from it elsewhere; float32 gives ~1e-7,
    rounding noise that jacov and epe_nas would otherwise score."""
    space = get_space(space_name)
    if arch is None:
        arch = space.sample(np.random.default_rng(0))
    torch.manual_seed(0)
    model = space.build_model(arch, dataset, size).double().train()
    x = make().batch(0)[0].double().requires_grad_(True)
    y = model(x)
    (grad,) = torch.autograd.grad(y, x, torch.ones_like(y))
    relative = float(grad.norm() / x.detach().norm())
    declared = getattr(model, "fixed_output_sum", False)
    assert declared == (FIXED_SUM in (UNSUPPORTED.get((space_name, "jacov")) or UNSUPPORTED.get((dataset, "jacov"))
                                      or ""))
    assert relative < 1e-12 if declared else relative > 1e-6, relative
    r = score_architecture(space, arch, dataset, make_predictors(["vkdnw_jacov"]), make(), seed=0, size=size)
    assert (r["status"]["vkdnw_jacov"] == "failed") == declared, r["reason"]


# --------------------------------------------------------------------------- NASLib's own functions

try:
    from naslib_plugins.naslib_adapter import _naslib

    _naslib.load_naslib()
    NO_NASLIB = None
except ImportError as e:
    NO_NASLIB = str(e)


@pytest.mark.skipif(NO_NASLIB is not None, reason=f"NASLib is not importable: {NO_NASLIB}")
@pytest.mark.parametrize("name", MEASURES)
def test_equals_naslibs_measure_on_the_same_network_and_batch(name, batches):
    import types

    from naslib.predictors.utils.pruners.predictive import copynet

    from naslib_plugins.naslib_adapter.measures import _ours

    impl = _naslib.measure_registry()._measure_impls[name]
    assert impl is not _ours.get(name), "NASLib's measure was replaced by ours"

    def before_global_avg_pool(self, x):
        out = []
        handle = self.feature_module().register_forward_hook(lambda m, inputs, o: out.append(inputs[0]))
        self(x)
        handle.remove()
        return out[0]

    torch.manual_seed(0)
    model = NB201.build_model(ARCH, "cifar10", SMALL)
    model.get_prunable_copy = types.MethodType(copynet, model)
    model.forward_before_global_avg_pool = types.MethodType(before_global_avg_pool, model)
    x, y = batches.batch(0)
    torch.manual_seed(1)
    value = impl(model, "cpu", x.clone(), y.clone(), loss_fn=F.cross_entropy, split_data=1)
    theirs = float(value) if name in ("jacov", "epe_nas", "zen") else float(sum(float(t.sum()) for t in value))
    torch.manual_seed(1)  # zen draws the same weights and inputs
    assert get_predictor(name).score(model, batches, F.cross_entropy) == pytest.approx(theirs, rel=1e-5, abs=1e-7)


def test_engine_records_saliencies_on_the_first_loss_pass_when_fisher_is_scored(batches):
    # grad_norm asks first; the engine told the block fisher would read the saliencies, so both
    # read one pass: it is counted as shared, in neither's seconds
    record = score_architecture(NB201, ARCH, "cifar10", make_predictors(["grad_norm", "fisher"]), batches,
                                seed=3, size=SMALL)
    assert record["shared_seconds"] > 0
    alone = score_architecture(NB201, ARCH, "cifar10", make_predictors(["fisher"]), batches, seed=3, size=SMALL)
    assert alone["shared_seconds"] == 0 and record["scores"]["fisher"] == alone["scores"]["fisher"]
