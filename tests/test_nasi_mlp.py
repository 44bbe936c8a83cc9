"""NASI on mlp_act_skip: the supernet against the standalone network and the `nasi` predictor,
gradients reaching every choice, and short seeded searches. Width 16, small batches."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from naslib_plugins.data.digits import DigitsBatches
from naslib_plugins.errors import UserError
from naslib_plugins.optimizers.nasi import NASI, architecture_score, gumbel, straight_through
from naslib_plugins.predictors import get_predictor
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.mlp_act_skip import MLPActSkipSpace, MLPActSkipSupernet

SPACE = MLPActSkipSpace(width=16)
ARCHS = [(2, 4, 7, 1, 0, 1), (0, 0, 0, 0, 0, 0), (5, 1, 3, 1, 1, 1), (6, 3, 0, 0, 1, 0)]


def one_hot(arch, groups):
    return [F.one_hot(torch.tensor(v), n).float() for v, n in zip(arch, groups)]


def supernet(seed=0, space=SPACE):
    torch.manual_seed(seed)
    return space.supernet("digits", "nasi").train()


def test_builder_groups_and_decode():
    net = supernet()
    assert isinstance(net, MLPActSkipSupernet) and net.groups == (8, 8, 8, 2, 2, 2)
    assert net.embed.weight.shape == (16, 64) and net.classifier.weight.shape == (10, 16)
    deep = MLPActSkipSpace(depth=4, width=8).supernet("digits", "nasi")
    assert deep.groups == (8,) * 4 + (2,) * 6 and len(deep.layers) == 4
    alpha = [torch.tensor(v) for v in ([0.0, 0.3, 0.1, 0, 0, 0, 0, 0], [0.0] * 8, [0, 0, 0, 0, 0, 0, 0, 0.2],
                                       [0.1, -0.1], [-0.2, 0.5], [0.0, 0.0])]
    arch = net.decode(alpha)
    assert arch == (1, 0, 7, 0, 1, 0)  # ties: the first activation, skip off
    assert SPACE.parse(arch) == arch and all(type(v) is int for v in arch)
    with pytest.raises(UserError, match="no 'nasi' supernet for search space 'nasbench101'; its supernets: none"):
        get_space("nasbench101").supernet("cifar10", "nasi")


def test_hard_weights_run_the_standalone_network():
    net = supernet()
    x = DigitsBatches(batch_size=8).batch(0)[0]
    for arch in ARCHS:
        standalone = SPACE.build_model(arch, "digits")
        standalone.load_state_dict(net.state_dict())  # the same parameter names
        expected = standalone(x)
        assert torch.equal(net(x, one_hot(arch, net.groups)), expected)
        mixed = [w.requires_grad_() for w in one_hot(arch, net.groups)]
        assert torch.allclose(net(x, mixed), expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("arch", ARCHS[:2])
def test_supernet_score_is_the_nasi_predictor_of_the_standalone_network(arch):
    net = supernet(3)
    standalone = SPACE.build_model(arch, "digits")
    standalone.load_state_dict(net.state_dict())
    batches = DigitsBatches(batch_size=16, seed=1)
    expected = get_predictor("nasi").score(standalone, batches, F.cross_entropy)
    x, y = batches.batch(0)
    hard = architecture_score(net, one_hot(arch, net.groups), x, y, F.cross_entropy, create_graph=False)
    mixed = [w.requires_grad_() for w in one_hot(arch, net.groups)]
    soft = architecture_score(net, mixed, x, y, F.cross_entropy, create_graph=True)
    assert float(hard) == pytest.approx(expected, rel=1e-5)
    assert float(soft.detach()) == pytest.approx(expected, rel=1e-5)


def test_gradient_reaches_every_activation_and_skip_choice():
    net = supernet()
    x, y = DigitsBatches(batch_size=16).batch(0)
    gen = torch.Generator().manual_seed(0)
    alpha = [torch.zeros(n, requires_grad=True) for n in net.groups]
    weights = [straight_through(a, gumbel(a.numel(), gen), 1.0) for a in alpha]
    score = architecture_score(net, weights, x, y, F.cross_entropy, create_graph=True)
    for g in torch.autograd.grad(score, alpha):
        assert torch.isfinite(g).all() and float(g.abs().sum()) > 0
        assert abs(float(g.sum())) < 1e-5 * float(g.abs().sum())  # softmax Jacobian rows sum to 0


def test_search_is_valid_and_deterministic():
    batches = DigitsBatches(batch_size=16, seed=0)
    nasi = NASI(steps=4)
    first = nasi.search(SPACE, "digits", batches, seed=0, progress=False)
    again = nasi.search(SPACE, "digits", batches, seed=0, progress=False)
    other = nasi.search(SPACE, "digits", batches, seed=1, progress=False)
    assert SPACE.parse(first.arch) == first.arch and len(first.arch) == 6
    assert first.arch == again.arch and first.trace["alpha"] == again.trace["alpha"]
    assert first.trace["alpha"] != other.trace["alpha"]
    assert [len(a) for a in first.trace["alpha"]] == [8, 8, 8, 2, 2, 2]
    assert 0 < np.linalg.norm(np.concatenate(first.trace["alpha"])) <= 1.0 + 1e-9
    with pytest.raises(UserError, match="space 'mlp_act_skip' has no dataset 'cifar10'"):
        nasi.search(SPACE, "cifar10", batches, seed=0, progress=False)
    with pytest.raises(UserError, match="the mlp_act_skip supernet has no `none` op to drop"):
        NASI(steps=1, drop_none=True).search(SPACE, "digits", batches, seed=0, progress=False)
