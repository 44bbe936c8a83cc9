"""AZ-NAS (az_expressivity, az_progressivity, az_trainability, flops_conv, az_nas) and VKDNW (vkdnw,
aleph, vkdnw_jacov, vkdnw_single, vkdnw_agg), as docs/design/rankers.md specifies them: each
proxy against a value computed another way on a tiny network, the -inf and degenerate rules, the
set-level rank rules on hand-made columns, seeding, and one NB201 score of each."""
import copy
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from scipy import stats

from naslib_plugins.cli import main
from naslib_plugins.data.batches import FixedBatches, ImageBatches
from naslib_plugins.evaluation.scoring import make_predictors, score_architecture
from naslib_plugins.predictors import PREDICTORS, Predictor, SetPredictor, get_predictor
from naslib_plugins.predictors import az_nas as az
from naslib_plugins.predictors import vkdnw as vk
from naslib_plugins.predictors.base import shared_gradients
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.nasbench201.encoding import EDGE_POS, NONE
from naslib_plugins.spaces.nasbench201.network import Cell

PER_ARCH = ["az_expressivity", "az_progressivity", "az_trainability", "flops_conv", "vkdnw", "aleph", "vkdnw_jacov"]
SET_LEVEL = ["az_nas", "vkdnw_single", "vkdnw_agg"]
NB201 = get_space("nasbench201")
SMALL = {"C": 4, "N": 1}
ARCH = (2, 3, 0, 4, 2, 3)
CUT_OFF = (0, 1, 1, 1, 1, 1)  # node 3 receives only `none`: every feature after the stem is zero
IDENTITY = (1, 1, 0, 1, 1, 2)  # node 3 = skip(node 0) + conv(a node with only `none` inputs)


def _nb201(arch=ARCH, size=SMALL, seed=0, dataset="cifar10"):
    torch.manual_seed(seed)
    return NB201.build_model(arch, dataset, size)


@pytest.fixture(scope="module")
def batches():
    return ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian")


def test_registered_and_listed(capsys):
    for name in PER_ARCH:
        assert issubclass(PREDICTORS.get(name), Predictor)
    for name in SET_LEVEL:
        assert issubclass(PREDICTORS.get(name), SetPredictor)
    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in PER_ARCH + SET_LEVEL)
    assert get_predictor("az_nas").components == ["flops_conv", "az_expressivity", "az_progressivity",
                                                  "az_trainability"]
    assert "az_progressivity" not in get_predictor("vkdnw_agg").components


# --------------------------------------------------------------------------- AZ-NAS, by hand


class _Chain(nn.Module):
    """stem conv, a same-size conv block, a stride-2 conv block: three feature maps."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4))
        self.block1 = nn.Sequential(nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4))
        self.block2 = nn.Sequential(nn.ReLU(), nn.Conv2d(4, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8))
        self.head = nn.Linear(8, 3)

    def feature_modules(self):
        return [self.stem, self.block1, self.block2]

    def forward(self, x):
        return self.head(self.block2(self.block1(self.stem(x))).mean(dim=(2, 3)))


def _numpy_entropy(feature: np.ndarray) -> float:
    b, c, h, w = feature.shape
    x = feature.transpose(0, 2, 3, 1).reshape(-1, c).astype(np.float64)
    x = x - x.mean(axis=0)
    s = np.linalg.eigvalsh(x.T @ x / len(x))
    p = s / s.sum()
    return float(-(p * np.log(p + 1e-8)).sum())


def test_expressivity_and_progressivity_are_the_eigen_entropies_of_the_features():
    net = _Chain()
    out = az.az_scores(copy.deepcopy(net), (3, 8, 8), 16, torch.Generator().manual_seed(3))
    # the same re-initialisation and input, drawn again in the same order, and the features read here
    again = copy.deepcopy(net)
    g = torch.Generator().manual_seed(3)
    az.kaiming_fan_in_(again, g)
    x = torch.randn((16, 3, 8, 8), generator=g)
    feats = []
    for m in again.feature_modules():
        m.register_forward_hook(lambda mod, i, o: feats.append(o.detach().numpy()))
    again.train()
    again(x)
    entropies = np.array([_numpy_entropy(f) for f in feats])
    assert out["entropies"] == pytest.approx(entropies.tolist(), rel=1e-4, abs=1e-5)
    assert out["expressivity"] == pytest.approx(entropies.sum(), rel=1e-5)
    assert out["progressivity"] == pytest.approx(np.diff(entropies).min(), abs=1e-4)
    # the re-initialisation: Kaiming fan-in weights, zero biases, BN 1 / 0
    with torch.no_grad():
        assert float(again.stem[0].bias.abs().sum()) == 0 and float(again.stem[1].weight.sum()) == 4
        w = torch.cat([again.block1[1].weight.flatten(), again.block2[1].weight.flatten()])
    assert float(w.std()) == pytest.approx(math.sqrt(2 / 36), rel=0.15)


def test_eigen_entropy_of_a_rank_deficient_map_is_its_exact_value(monkeypatch):
    # 96 channels that are linear in 27 values, as NB301's stem: rank 27, so 69 zero eigenvalues
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64 * 16 * 16, 27, generator=g) @ torch.randn(27, 96, generator=g)
    feature = x.reshape(64, 16, 16, 96).permute(0, 3, 1, 2)
    s = np.clip(np.linalg.eigvalsh(np.cov(x.double().numpy(), rowvar=False, bias=True)), 0, None)
    p = s / s.sum()
    assert az.eigen_entropy(feature) == pytest.approx(float(-(p * np.log(p + 1e-8)).sum()), rel=1e-4)
    # where round-off puts a zero eigenvalue below -1e-8 of the sum (log of a negative), it counts as 0
    monkeypatch.setattr(az.torch.linalg, "eigvalsh", lambda sigma: torch.tensor([-1e-6, 0.5, 0.5]))
    assert az.eigen_entropy(feature) == pytest.approx(math.log(2), rel=1e-6)
    # an all-zero map stays undefined
    monkeypatch.setattr(az.torch.linalg, "eigvalsh", lambda sigma: torch.zeros(3))
    assert math.isnan(az.eigen_entropy(torch.zeros(2, 3, 4, 4)))


def _trainability_by_hand(g_in: np.ndarray, v: np.ndarray) -> float:
    """The pair's score from the input-side gradient g_in (already at v's resolution) and v."""
    b, c, h, w = v.shape
    rows_g = g_in.transpose(0, 2, 3, 1).reshape(b * h * w, -1).astype(np.float64)
    rows_v = v.transpose(0, 2, 3, 1).reshape(b * h * w, c).astype(np.float64)
    sigma = np.linalg.svd(rows_g.T @ rows_v / len(rows_v), compute_uv=False).max()
    return -sigma - 1 / (sigma + 1e-6) + 2


def _probe(shape, seed=0):
    return (torch.bernoulli(torch.full(shape, 0.5), generator=torch.Generator().manual_seed(seed)) - 0.5) * 2


def test_rademacher_is_the_official_bernoulli_probe_bit_for_bit():
    fast, official = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    for shape in [(64, 16, 8, 8), (3, 5, 7, 1), (1,)]:
        probe = az.rademacher(shape, fast)
        assert probe.dtype == torch.float32 and set(probe.unique().tolist()) <= {-1.0, 1.0}
        assert torch.equal(probe, (torch.bernoulli(torch.full(shape, 0.5), generator=official) - 0.5) * 2)
    # the generator is left where bernoulli leaves it: the next draws (weights, input, probes) agree
    assert torch.equal(torch.rand(4, generator=fast), torch.rand(4, generator=official))


def test_trainability_of_a_1x1_conv_is_sigma_of_its_matrix_times_the_probe_covariance():
    a = torch.randn(5, 3, generator=torch.Generator().manual_seed(1))  # out 5 x in 3
    f_in = torch.randn(4, 3, 6, 6).requires_grad_(True)
    f_out = F.conv2d(f_in, a[:, :, None, None])
    v = _probe(f_out.shape)
    # the Jacobian is A at every position: g = A^T v
    g = torch.einsum("oi,bohw->bihw", a, v)
    expected = _trainability_by_hand(g.numpy(), v.numpy())
    assert az.pair_trainability(f_in, f_out, v) == pytest.approx(expected, rel=1e-5)
    # E[v v^T] = I: with many positions sigma tends to the spectral norm of A
    f_in = torch.randn(64, 3, 16, 16).requires_grad_(True)
    f_out = F.conv2d(f_in, a[:, :, None, None])
    sigma = float(torch.linalg.svdvals(a).max())
    assert az.pair_trainability(f_in, f_out, _probe(f_out.shape)) == pytest.approx(2 - sigma - 1 / sigma, abs=0.05)


def test_trainability_unshuffles_a_downsampling_pair():
    f_in = torch.randn(4, 2, 8, 8).requires_grad_(True)
    f_out = F.avg_pool2d(f_in, 2)
    v = _probe(f_out.shape, 2)
    # g is v / 4 spread over each 2x2 window; unshuffled, channel c*4 + k carries v_c / 4
    g = F.pixel_unshuffle(F.interpolate(v, scale_factor=2, mode="nearest") / 4, 2)
    assert az.pair_trainability(f_in, f_out, v) == pytest.approx(_trainability_by_hand(g.numpy(), v.numpy()),
                                                                rel=1e-5)
    # 3x3 -> 2x2 (a stride-2 layer on TNB jigsaw's tiles): output (i, j) reads input (2i, 2j), so
    # after padding to 4x4 and unshuffling by 2, v sits in sub-position 0 and G^T V / N = [V^T V; 0] / N
    f_in = torch.randn(4, 3, 3, 3).requires_grad_(True)
    f_out = f_in[:, :, ::2, ::2] * 1.0
    v = _probe(f_out.shape, 3)
    rows = v.permute(0, 2, 3, 1).reshape(-1, 3).double().numpy()
    sigma = np.linalg.svd(rows.T @ rows / len(rows), compute_uv=False).max()
    assert az.pair_trainability(f_in, f_out, v) == pytest.approx(2 - sigma - 1 / (sigma + 1e-6), rel=1e-5)
    with pytest.raises(ValueError, match="not a downsampling by one factor"):
        odd = torch.randn(2, 2, 5, 4).requires_grad_(True)
        out = odd[:, :, :2, :1] * 2  # height by 3, width by 4
        az.pair_trainability(odd, out, _probe(out.shape))


def test_trainability_identity_and_zero_jacobians():
    f_in = torch.randn(2, 3, 4, 4).requires_grad_(True)
    v = _probe(f_in.shape)
    assert az.pair_trainability(f_in, f_in, v) == -math.inf  # a module returning its input
    assert az.pair_trainability(f_in, f_in * 1.0 + 0 * f_in.relu(), v) == -math.inf
    # an output that does not depend on the input (our `none`-fed nodes): g = 0, sigma = 0
    assert az.pair_trainability(f_in, torch.zeros(2, 3, 4, 4), v) == pytest.approx(2 - 1e6)


class _OfficialCell(Cell):
    """xautodl's InferCell: every edge runs, `none` is x * 0 in the graph, no detached zeros."""

    def forward(self, x):
        nodes = [x]
        for t in (2, 3, 4):
            out = 0
            for s in range(1, t):
                pos = EDGE_POS[(s, t)]
                out = out + (nodes[s - 1].mul(0.0) if self.arch[pos] == NONE else self.edges[pos](nodes[s - 1]))
            nodes.append(out)
        return nodes[-1]


@pytest.mark.parametrize("arch", [CUT_OFF, IDENTITY, (1, 1, 2, 1, 0, 1), ARCH])
def test_our_none_edges_give_the_scores_of_the_official_zero_op(arch):
    ours = _nb201(arch, {"C": 4, "N": 2})
    official = copy.deepcopy(ours)
    for m in official.cells:
        if isinstance(m, Cell):
            m.__class__ = _OfficialCell
    a = az.az_scores(ours, (3, 16, 16), 8, torch.Generator().manual_seed(0))
    b = az.az_scores(official, (3, 16, 16), 8, torch.Generator().manual_seed(0))
    for key in ("expressivity", "progressivity", "trainability"):
        assert a[key] == pytest.approx(b[key], rel=1e-6), key


def test_degenerate_nb201_cells_score_minus_inf_and_fail_with_the_reason(batches):
    names = ["az_expressivity", "az_progressivity", "az_trainability"]
    cut = score_architecture(NB201, CUT_OFF, "cifar10", make_predictors(names), batches, seed=0, size=SMALL)
    assert cut["status"]["az_expressivity"] == cut["status"]["az_progressivity"] == "failed"
    assert cut["reason"]["az_expressivity"] == "non-finite score -inf"
    # the zero op keeps the gradient path: trainability stays finite, near 2 - 1e6 on most pairs
    assert cut["status"]["az_trainability"] == "ok" and cut["scores"]["az_trainability"] < -1e5
    same = score_architecture(NB201, IDENTITY, "cifar10", make_predictors(names), batches, seed=0, size=SMALL)
    assert same["reason"]["az_trainability"] == "non-finite score -inf"
    assert same["status"]["az_expressivity"] == "ok"


def test_feature_modules_of_each_space():
    assert len(_nb201(size=None).feature_modules()) == 18  # stem, 15 cells, 2 residual blocks
    nb101 = get_space("nasbench101")
    arch = nb101.sample(np.random.default_rng(0))
    assert len(nb101.build_model(arch, "cifar10").feature_modules()) == 10
    tnb = get_space("transbench101_micro")
    size = {}
    model = tnb.build_model(tnb.sample(np.random.default_rng(0)), "jigsaw", size)
    x = torch.randn(2, 3, 48, 48)
    fired = []
    for m in model.feature_modules():
        m.register_forward_hook(lambda mod, i, o: fired.append(o.shape[0]))
    with torch.no_grad():
        model.feature_forward(x)
    assert fired == [18] * len(model.feature_modules())  # nine tiles of two images, each module once


def test_unsupported_spaces_fail_with_a_reason():
    mlp = get_space("mlp_act_skip")
    arch = mlp.sample(np.random.default_rng(0))
    batches = FixedBatches([(torch.randn(4, 64), torch.zeros(4, dtype=torch.long))])
    with pytest.raises(TypeError, match="feature_modules"):
        get_predictor("az_expressivity").score(mlp.build_model(arch, "digits"), batches, F.cross_entropy)
    tnb = get_space("transbench101_micro")
    model = tnb.build_model(tnb.sample(np.random.default_rng(0)), "room_layout")
    with pytest.raises(TypeError, match="regression"):
        get_predictor("vkdnw").score(model, batches, None)


def test_flops_conv_is_the_nats_count():
    # NATS-Bench's FLOPs range on CIFAR-10: 7.78305 (no conv edge) to 220.11969 M (six 3x3 convs)
    b = ImageBatches("cifar10", batch_size=1, data="gaussian")
    flops = {arch: get_predictor("flops_conv").score(_nb201(arch, None), b, None)
             for arch in [(1,) * 6, (2,) * 6, (3, 1, 1, 1, 1, 1), (2, 1, 1, 1, 1, 1), (2, 3, 2, 3, 3, 0)]}
    assert flops[(1,) * 6] == pytest.approx(7.78305, abs=1e-5)
    assert flops[(2,) * 6] == pytest.approx(220.11969, abs=1e-5)
    # every conv costs the same in each stage: FLOPs are affine in 9 n3 + n1
    unit = flops[(3, 1, 1, 1, 1, 1)] - flops[(1,) * 6]
    assert flops[(2, 1, 1, 1, 1, 1)] - flops[(1,) * 6] == pytest.approx(9 * unit, rel=1e-9)
    assert flops[(2, 3, 2, 3, 3, 0)] - flops[(1,) * 6] == pytest.approx((2 * 9 + 3) * unit, rel=1e-9)


# --------------------------------------------------------------------------- VKDNW, by hand


def _mlp(k):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, k))


def _numpy_fisher(net, x):
    """F = mean_b (L_b J_b)^T (L_b J_b) of the 2-layer net, J written out for W1[0,0], b1[0],
    W2[0,0], b2[0], the factor built entry by entry in float64."""
    w1, b1 = net[0].weight.detach().double().numpy(), net[0].bias.detach().double().numpy()
    w2, b2 = net[2].weight.detach().double().numpy(), net[2].bias.detach().double().numpy()
    x = x.double().numpy()
    h = x @ w1.T + b1
    a = np.maximum(h, 0)
    z = a @ w2.T + b2
    k = z.shape[1]
    on = (h[:, 0] > 0).astype(float)
    jac = np.zeros((len(x), k, 4))
    jac[:, :, 0] = (w2[:, 0][None, :] * (on * x[:, 0])[:, None])  # W1[0, 0]
    jac[:, :, 1] = w2[:, 0][None, :] * on[:, None]  # b1[0]
    jac[:, 0, 2] = a[:, 0]  # W2[0, 0]
    jac[:, 0, 3] = 1.0  # b2[0]
    half = np.float16(0.05)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    q = (e / e.sum(axis=1, keepdims=True)) * float(np.float16(1) - half) + float(half / np.float16(k))
    fisher = np.zeros((4, 4))
    for b in range(len(x)):
        c = 1 - np.cumsum(q[b])
        c[-1] = 0
        c_prev = np.concatenate([[1.0], c[:-1]])
        d = np.sqrt(q[b] * c / c_prev)
        t = np.eye(k)
        for i in range(k):
            for j in range(i):
                t[i, j] = -q[b, i] / c[j]
        lj = (t * d[None, :]) @ jac[b]
        fisher += lj.T @ lj / len(x)
    return fisher, q


@pytest.mark.parametrize("k", [3, 7])  # reverse mode (K <= P = 4 tensors) and forward mode
def test_fisher_and_decile_entropy_against_numpy(k):
    net = _mlp(k).eval()
    x = torch.randn(9, 5, generator=torch.Generator().manual_seed(1))
    expected, q = _numpy_fisher(net, x)
    fisher = vk.fisher_matrix(net, x)
    assert fisher.double().numpy() == pytest.approx(expected, rel=1e-4, abs=1e-6)
    lam = np.linalg.eigvalsh(expected)
    deciles = np.quantile(lam, np.arange(1, 10) / 10)
    t = deciles / (np.abs(deciles).sum() + 1e-10)
    assert vk.decile_entropy(fisher) == pytest.approx(float(-(t * np.log(t + 1e-10)).sum()), rel=1e-4, abs=1e-5)
    # the factor is the official one: L L^T is the smoothed covariance (to the official 1e-3
    # back-test: float16 smoothing sums q to 1.0002), and F is not J^T (diag q - q q^T) J
    with torch.no_grad():
        qt = vk.smoothed_probabilities(net(x))
    assert qt.detach().double().numpy() == pytest.approx(q, rel=1e-5)
    factor = vk.covariance_factor(qt)
    cov = torch.diag_embed(qt) - qt[:, :, None] * qt[:, None, :]
    assert float((factor @ factor.transpose(1, 2) - cov).abs().max()) < 1e-3
    assert float((factor.transpose(1, 2) @ factor - cov).abs().max()) > 1e-2


def test_decile_entropy_edges(monkeypatch):
    assert vk.decile_entropy(torch.zeros(5, 5)) == 0  # a network whose logits ignore the weights
    assert vk.decile_entropy(torch.eye(12)) == pytest.approx(math.log(9), rel=1e-6)  # the maximum

    def refuse(*args, **kwargs):
        raise torch.linalg.LinAlgError("no convergence")

    monkeypatch.setattr(torch.linalg, "svdvals", refuse)
    assert vk.decile_entropy(torch.eye(4)) == 0  # the official fallback: lambda = (0, 0)


def _as_vkdnw_scores(net: nn.Module) -> nn.Module:
    """The network as VKDNW differentiates it: Kaiming re-init, fresh BN statistics, eval mode."""
    az.kaiming_fan_in_(net)
    vk.reset_batch_norm_statistics(net)
    return net.eval()


def test_reverse_and_forward_jacobians_agree_on_nb201():
    net = _as_vkdnw_scores(_nb201())
    x = torch.randn(3, 3, 8, 8)
    names = vk.selected_parameters(net)
    reverse, forward = vk._jacobian_reverse(net, x, names), vk._jacobian_forward(net, x, names)
    by_layer = vk._jacobian_by_layer(net, x, names)
    assert reverse.shape == by_layer.shape == (3, 10, len(names))
    for other in (forward, by_layer):
        assert torch.allclose(reverse, other, rtol=1e-4, atol=1e-4 * float(reverse.abs().max()))


class _Layers(nn.Module):
    """Every layer kind the by-layer Jacobian knows, in the settings that move the first scalar's
    input entry: padding, stride, groups, dilation, an in-place ReLU after a conv, eval-mode batch
    norm with running statistics, a Linear on a 3-D input, and a layer the logits never reach."""

    def __init__(self, reuse: bool = False):
        super().__init__()
        self.a = nn.Conv2d(3, 6, 3, stride=2, padding=(1, 2))
        self.bn = nn.BatchNorm2d(6)
        self.dw = nn.Conv2d(6, 6, 3, padding=2, dilation=2, groups=3, bias=False)
        self.seq = nn.Linear(5, 4)
        self.head = nn.Linear(4 * 6, 3)
        self.unused = nn.Linear(2, 2)
        self.reuse = reuse
        with torch.no_grad():  # statistics away from (0, 1), so that they matter
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)

    def forward(self, x):
        h = torch.relu_(self.a(x))
        h = self.dw(self.bn(h))
        if self.reuse:
            h = self.dw(h)
        h = self.seq(F.adaptive_avg_pool2d(h, (4, 5)))  # (B, 6, 4, 5) -> (B, 6, 4, 4)
        return self.head(h.mean(dim=3).flatten(1))


@pytest.mark.parametrize("reuse", [False, True])
def test_by_layer_jacobian_matches_per_sample_jacrev(reuse):
    torch.manual_seed(0)
    net = _Layers(reuse).eval()
    x = torch.randn(4, 3, 9, 11)
    names = [n for n, _ in net.named_parameters()]
    by_layer = vk._jacobian_by_layer(net, x, names)
    if reuse:  # a layer run twice has no single output to differentiate at
        assert by_layer is None
        return
    reverse = vk._jacobian_reverse(net, x, names)
    assert torch.allclose(by_layer, reverse, rtol=1e-5, atol=1e-6)
    assert float(by_layer[..., names.index("unused.weight")].abs().max()) == 0
    assert vk._jacobian_by_layer(net.train(), x, names) is None  # batch norm on batch statistics


SMALL_SIZES = {"nasbench301": {"C": 4, "layers": 2},
               "nasbench101": {"stem_channels": 4, "num_stacks": 1, "num_cells": 1}}


@pytest.mark.parametrize("space", list(SMALL_SIZES))
def test_by_layer_jacobian_on_other_spaces(space):
    sp = get_space(space)
    torch.manual_seed(0)
    net = _as_vkdnw_scores(sp.build_model(sp.sample(np.random.default_rng(0)), "cifar10", SMALL_SIZES[space]))
    x = torch.randn(2, 3, 8, 8)
    names = vk.selected_parameters(net)
    reverse, by_layer = vk._jacobian_reverse(net, x, names), vk._jacobian_by_layer(net, x, names)
    assert torch.allclose(by_layer, reverse, rtol=1e-4, atol=1e-4 * float(reverse.abs().max()))


def test_fisher_subset_is_the_first_128_tensors_in_xautodl_order():
    net = _nb201((2,) * 6, None)
    names = vk.selected_parameters(net)
    assert len(names) == 128 and vk.aleph(net) == 21 + 45 * 6
    assert names[:3] == ["stem.0.weight", "stem.1.weight", "stem.1.bias"]
    # xautodl registers a cell's edges by target node: 0->1, 0->2, 1->2, 0->3, 1->3, 2->3
    edges = [int(n.split(".")[3]) for n in names[3:21:3]]
    assert edges == [EDGE_POS[e] for e in [(1, 2), (1, 3), (2, 3), (1, 4), (2, 4), (3, 4)]]
    mlp = _mlp(3)
    assert vk.selected_parameters(mlp) == [n for n, _ in mlp.named_parameters()]


def test_aleph_counts_parameter_tensors():
    for arch in [(1,) * 6, ARCH, (2,) * 6, (0, 4, 0, 4, 3, 4)]:
        convs = sum(op in (2, 3) for op in arch)
        assert get_predictor("aleph").score(_nb201(arch, None), None, None) == 21 + 45 * convs
    assert get_predictor("aleph").score(_mlp(3), None, None) == 4


def test_vkdnw_jacov_is_jacov_after_the_kaiming_reinit(batches):
    model = _nb201()
    torch.manual_seed(5)
    score = get_predictor("vkdnw_jacov").score(model, batches, None)
    reinit = copy.deepcopy(model)
    torch.manual_seed(5)
    az.kaiming_fan_in_(reinit)
    assert score == pytest.approx(get_predictor("jacov").score(reinit, batches, None), rel=1e-9)


# --------------------------------------------------------------------------- set level


def _ranks(values):
    return stats.rankdata([-math.inf if v is None else v for v in values])


def test_az_nas_ranks_everything_minus_inf_and_failures_at_the_bottom():
    cols = {"flops_conv": [10.0, 20.0, 20.0, 5.0],
            "az_expressivity": [None, 3.0, 2.0, 1.0],  # None: -inf, reported as a failure
            "az_progressivity": [0.1, -0.2, 0.3, None],
            "az_trainability": [-1.0, -2.0, -0.5, -3.0]}
    scores, reasons = get_predictor("az_nas").combine(cols)
    expected = sum(np.log(_ranks(cols[c]) / 4) for c in cols)
    assert scores == pytest.approx(expected.tolist()) and reasons == [None] * 4
    cols["az_trainability"] = [None] * 4
    scores, reasons = get_predictor("az_nas").combine(cols)
    assert scores == [None] * 4 and reasons == ["component az_trainability failed on every architecture"] * 4


def test_vkdnw_single_is_the_dense_rank_of_aleph_then_entropy():
    cols = {"aleph": [21.0, 66.0, 66.0, 21.0, 66.0], "vkdnw": [0.5, 0.1, 0.3, 0.2, 0.1]}
    scores, _ = get_predictor("vkdnw_single").combine(cols)
    # (21, .2) < (21, .5) < (66, .1) = (66, .1) < (66, .3)
    assert scores == pytest.approx(np.log([2, 3, 4, 1, 3]).tolist())
    cols["vkdnw"][2] = None  # a failed entropy is the bottom of its aleph level
    scores, _ = get_predictor("vkdnw_single").combine(cols)
    assert scores == pytest.approx(np.log([2, 4, 3, 1, 4]).tolist())


def test_vkdnw_agg_sums_log_ranks_and_fills_jacov_with_its_minimum():
    cols = {"aleph": [21.0, 66.0, 66.0, 21.0], "vkdnw": [0.5, 0.1, 0.3, 0.2],
            "az_expressivity": [50.0, None, 55.0, 52.0], "az_trainability": [-1.0, -0.2, None, -0.7],
            "flops_conv": [7.8, 50.0, 50.0, 20.0], "vkdnw_jacov": [-60.0, None, -65.0, -61.0]}
    scores, reasons = get_predictor("vkdnw_agg").combine(cols)
    dense = np.log([2, 3, 4, 1])
    jacov = stats.rankdata([-60.0, -65.0, -65.0, -61.0])  # None -> the column minimum
    expected = (dense + np.log(_ranks(cols["az_expressivity"])) + np.log(_ranks(cols["az_trainability"]))
                + np.log(_ranks(cols["flops_conv"])) + np.log(jacov))
    assert scores == pytest.approx(expected.tolist()) and reasons == [None] * 4


# --------------------------------------------------------------------------- the engine


def test_seeded_shared_and_order_free(batches, monkeypatch):
    names = ["az_trainability", "az_expressivity", "az_progressivity", "vkdnw", "vkdnw_jacov"]
    calls = []
    original = az.az_scores
    monkeypatch.setattr(az, "az_scores", lambda *a, **k: calls.append(1) or original(*a, **k))
    a = score_architecture(NB201, ARCH, "cifar10", make_predictors(names), batches, seed=3, size=SMALL)
    assert len(calls) == 1  # one AZ pass for the three
    b = score_architecture(NB201, ARCH, "cifar10", make_predictors(names[::-1]), batches, seed=3, size=SMALL)
    alone = score_architecture(NB201, ARCH, "cifar10", make_predictors(["az_expressivity"]), batches, seed=3,
                               size=SMALL)
    assert a["scores"] == b["scores"] and alone["scores"]["az_expressivity"] == a["scores"]["az_expressivity"]
    c = score_architecture(NB201, ARCH, "cifar10", make_predictors(names), batches, seed=4, size=SMALL)
    assert all(c["scores"][n] != a["scores"][n] for n in names)


def test_the_shared_az_pass_draws_from_the_engines_seed_not_the_weights_bits(batches):
    """PyTorch's default init differs in the last bits between CPU kernel paths; the AZ draws must
    not, or the scores of one architecture jump between machines (a CRC of the weights did)."""
    model = _nb201()
    nudged = copy.deepcopy(model)
    with torch.no_grad():
        p = next(nudged.parameters())
        p.view(-1)[0] = torch.nextafter(p.view(-1)[0], torch.tensor(math.inf))
    with shared_gradients(model, seed=11):
        a = az.shared_az_scores(model, batches, 8)
    with shared_gradients(nudged, seed=11):
        b = az.shared_az_scores(nudged, batches, 8)
    assert a["expressivity"] == pytest.approx(b["expressivity"], rel=1e-5)
    assert a["trainability"] == pytest.approx(b["trainability"], rel=1e-4)
    # without the engine's seed, the one-bit change of one weight redraws everything
    unseeded = [az.shared_az_scores(m, batches, 8)["expressivity"] for m in (model, nudged)]
    assert unseeded[0] != unseeded[1]


def test_scoring_leaves_the_model_as_it_was(batches):
    model = _nb201()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for name in PER_ARCH:
        get_predictor(name).score(model, batches, F.cross_entropy)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_one_nb201_score_of_each(batches):
    record = score_architecture(NB201, "|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|skip_connect~0|"
                                "nor_conv_3x3~1|nor_conv_1x1~2|", "cifar10", make_predictors(PER_ARCH),
                                batches, seed=0, size=SMALL)
    assert all(record["status"][n] == "ok" for n in PER_ARCH), record["reason"]
    assert 0 <= record["scores"]["vkdnw"] <= math.log(9)
    assert record["scores"]["aleph"] == 3 + 3 * 3 * 4 + 7 + 7 + 2 + 2  # N=1: three cells of four convs


def test_az_entropy_profile_flags_rank_limited_features_and_respects_the_rank_bound(script):
    """scripts/az_entropy_profile.py: at 32x32 and batch 4 TNB micro's last stage (512 x 1 x 1) has 4
    rows for 512 channels, so its centred covariance has rank <= 3 and entropy <= ln 3; the table
    flags it and the stem (64 x 8 x 8: 256 rows) is not flagged."""
    text = script("az_entropy_profile").profile("transbench101_micro", "class_scene", 2, 0, [32], 4)
    cells = [line.strip("| ").split(" | ") for line in text.splitlines() if line.startswith("| ") and line[2].isdigit()]
    rows = {c[0]: c for c in cells}
    assert rows["0"][1] == "64 x 8 x 8" and rows["0"][2] == "256"
    last = rows[str(len(rows) - 1)]
    assert last[1] == "512 x 1 x 1" and last[2] == "4 (fewer rows than channels)"
    assert 0 < float(last[3]) <= math.log(3) + 1e-6
    shares = [float(r[5]) for r in cells[:-1]]
    assert sum(shares) == pytest.approx(1.0)


def test_greedy_recipe_path_and_parsimony(script, monkeypatch):
    """scripts/greedy_recipe.py on hand-made scores: truth = u + v; meco's column is u, nwot's v,
    synflow's noise. The path starts at meco (the best alone), adds nwot (their log ranks' sum
    follows u + v), and synflow last; the recipe is the shortest prefix within the tolerance of
    the path's best."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "scripts"))
    recipe = script("greedy_recipe")
    monkeypatch.setattr(recipe, "CANDIDATES", ["synflow", "meco", "nwot"])
    rng = np.random.default_rng(0)
    u, v, noise = rng.random(300), 0.6 * rng.random(300), rng.random(300)
    keys = [str(i) for i in range(300)]
    scores = {k: {"meco": float(u[i]), "synflow": float(noise[i]), "nwot": float(v[i])} for i, k in enumerate(keys)}
    trace = recipe.select(scores, keys, list(u + v))
    assert [name for name, _ in trace] == ["meco", "nwot", "synflow"]
    assert trace[1][1] > trace[0][1] and trace[2][1] < trace[1][1] - 0.005
    assert recipe.shortest_near_best(trace, 0.005) == ["meco", "nwot"]
    assert recipe.shortest_near_best([("x", 0.70), ("y", 0.80), ("z", 0.803)], 0.005) == ["x", "y"]
    assert recipe.shortest_near_best([("x", 0.70), ("y", 0.80), ("z", 0.81)], 0.005) == ["x", "y", "z"]
