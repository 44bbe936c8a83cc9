"""The finite-difference second derivatives (naslib_plugins.hvp) against the exact double backward.

Accuracy is measured in float64 on both sides, which isolates the finite difference: in float32
the exact gradient of a deep chain cell is itself a few % off the float64 one (perf/bench_hvp.py
measures both). Bars: gradient cosine >= 0.9999 and relative error <= 1e-2 for NASI's step,
Spearman >= 0.99 for GraSP."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch
import torch.nn as nn
from scipy.stats import spearmanr

from naslib_plugins.data.batches import FixedBatches
from naslib_plugins.data.sources import make_batches
from naslib_plugins.errors import UserError
from naslib_plugins.evaluation.scoring import distinct_sample, make_predictors, score_architecture
from naslib_plugins.hvp import FrozenKinks, fd_step, shifted
from naslib_plugins.optimizers.nasi import NASI, gumbel, straight_through
from naslib_plugins.predictors.gradient import GraSP
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.nasbench201.encoding import EDGE_POS, NONE


def _net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                         nn.Conv2d(4, 4, 3, padding=1), nn.LeakyReLU(0.1), nn.MaxPool2d(3, stride=2, padding=1),
                         nn.Flatten(), nn.Linear(16, 3)).double().train()


def test_replayed_pieces_give_the_recorded_pass_and_its_frozen_linearisation():
    net, x = _net(), torch.randn(5, 3, 8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    plain = net(x)
    with FrozenKinks(net) as kinks:
        with kinks.record():
            recorded = net(x)
        with kinks.replay():
            replayed = net(x)
        # far from theta the replayed pass is no longer the network: the pieces stay where they were
        params = list(net.parameters())
        with shifted(net, params, [torch.randn_like(p) for p in params], 1.0), kinks.replay():
            frozen = net(x)
        with shifted(net, params, [torch.randn_like(p) for p in params], 1.0):
            moved = net(x)
    assert torch.equal(plain, recorded) and torch.equal(plain, replayed)
    assert not torch.allclose(frozen, moved)
    assert torch.equal(net(x), plain)  # the forwards are the modules' own again


def test_shifted_restores_parameters_and_running_statistics_bit_for_bit():
    net = _net()
    before = copy.deepcopy(net.state_dict())
    params = list(net.parameters())
    with shifted(net, params, [torch.randn_like(p) for p in params], 1e-3):
        net(torch.randn(4, 3, 8, 8, dtype=torch.float64))  # updates the running statistics
        assert not torch.equal(params[0], before["0.weight"])
    assert all(torch.equal(net.state_dict()[k], v) for k, v in before.items())


def test_kinks_without_a_replay_are_refused():
    with pytest.raises(UserError, match="Hardtanh.*--hvp exact"):
        FrozenKinks(nn.Sequential(nn.Linear(2, 2), nn.Hardtanh()))


def test_the_step_scales_down_where_the_gradient_is_large():
    assert fd_step(1e-2) == pytest.approx(1e-2)
    assert fd_step(4.0) == pytest.approx(1e-3 / 4)
    assert fd_step(3e5) * 3e5 == pytest.approx(1e-3)


def _nasi_gradients(space_name, size, steps, batch_size, seed=0, choices=()):
    """(fd, exact) d S / d alpha in float64 at `steps` Gumbel samples of the seeded stream, then at
    the one-hot `choices`."""
    space = get_space(space_name)
    dataset = space.datasets[0]
    torch.manual_seed(seed)
    net = space.supernet(dataset, "nasi", size).double().train()
    loss_fn = space.loss_fn(dataset)
    batches = make_batches(dataset, batch_size=batch_size, seed=seed, data="gaussian",
                           **({"resolution": 32} if space_name.startswith("transbench") else {}))
    generator = torch.Generator().manual_seed(seed)
    alpha = [torch.zeros(n, requires_grad=True) for n in net.groups]
    noises = [[gumbel(a.numel(), generator) for a in alpha] for _ in range(steps)]
    noises += [[10.0 * torch.nn.functional.one_hot(torch.tensor(c), a.numel()) for c, a in zip(choice, alpha)]
               for choice in choices]
    out = []
    for t, noise in enumerate(noises):
        x, y = batches.batch(t)
        x = x.double()

        def sample(noise=noise):
            return [straight_through(a, n, 1.0).double() for a, n in zip(alpha, noise)]

        with FrozenKinks(net) as kinks:
            _, fd = NASI._step(net, kinks, alpha, sample, x, y, loss_fn)
            fd = torch.cat(fd())
        _, exact = NASI._step(net, None, alpha, sample, x, y, loss_fn)
        out.append((fd, torch.cat(exact())))
    return out


def _assert_close(pairs, cosine=0.9999, rel=1e-2):
    for t, (fd, exact) in enumerate(pairs):
        c = float(fd @ exact / (fd.norm() * exact.norm()))
        r = float((fd - exact).norm() / exact.norm())
        assert c >= cosine and r <= rel, f"step {t}: cosine {c:.7f}, relative error {r:.2e}"


def _chain(ops):
    """NB201 cell 1 -> 2 -> 3 -> 4 with `ops` on the chain, every other edge `none`."""
    cell = [NONE] * 6
    for edge, op in zip(((1, 2), (2, 3), (3, 4)), ops):
        cell[EDGE_POS[edge]] = op
    return cell


def test_nasi_fd_step_matches_the_double_backward_on_nb201_including_chain_cells():
    from naslib_plugins.spaces.nasbench201.encoding import CONV1, CONV3, SKIP
    pairs = _nasi_gradients("nasbench201", {"channels": 4, "cells": 5}, steps=10, batch_size=8,
                            choices=[_chain([CONV3, CONV3, CONV3]), _chain([CONV3, CONV1, SKIP])])
    _assert_close(pairs)


@pytest.mark.parametrize("space_name", ["nasbench301", "transbench101_micro", "mlp_act_skip"])
def test_nasi_fd_step_matches_the_double_backward_on_the_other_supernets(space_name):
    # NB301: max-pools in ops and between cells; TNB: factorized reduces; mlp: smooth activations
    size = {"nasbench301": {"channels": 4, "cells": 1}, "transbench101_micro": {}, "mlp_act_skip": {}}[space_name]
    _assert_close(_nasi_gradients(space_name, size, steps=3, batch_size=4))


def test_grasp_fd_ranks_30_nb201_architectures_as_the_exact_one(cifar_npz):
    space = get_space("nasbench201")
    batches = make_batches("cifar10", batch_size=16, seed=0, images=cifar_npz)
    archs = distinct_sample(space, 30, 0)
    size = {"C": 8, "N": 2}
    scores = {}
    for hvp in ("fd", "exact"):
        predictors = make_predictors(["grasp"], hvp)
        scores[hvp] = [score_architecture(space, a, "cifar10", predictors, batches, 0, size)["scores"]["grasp"]
                       for a in archs]
    fd, exact = np.array(scores["fd"]), np.array(scores["exact"])
    assert spearmanr(fd, exact)[0] >= 0.99
    # one-sided: an O(eps) bias, small against the spread of the scores
    assert np.abs(fd - exact).max() <= 0.02 * np.abs(exact).max()


@pytest.mark.parametrize("space_name", ["nasbench101", "nasbench301", "transbench101_macro", "mlp_act_skip"])
def test_grasp_fd_is_close_to_exact_on_every_space(space_name):
    space = get_space(space_name)
    dataset = space.datasets[0]
    batches = make_batches(dataset, batch_size=4, seed=0, data="gaussian",
                           **({"resolution": 32} if space_name.startswith("transbench") else {}))
    arch = distinct_sample(space, 1, 0)[0]
    model = space.build_model(arch, dataset).double()
    loss_fn = space.loss_fn(dataset)
    x, y = batches.batch(0)
    float64 = FixedBatches([(x.double(), y)])  # the batch, as the double-precision model reads it
    exact = GraSP(hvp="exact").score(model, float64, loss_fn)
    fd = GraSP(hvp="fd").score(model, float64, loss_fn)
    assert fd == pytest.approx(exact, rel=1e-2)


def test_hvp_is_validated_and_recorded_only_when_fd():
    with pytest.raises(UserError, match="grasp hvp must be one of fd, exact"):
        GraSP(hvp="fdd")
    with pytest.raises(UserError, match="nasi hvp"):
        NASI(hvp="numeric")
    assert GraSP().options()["hvp"] == "fd" and "hvp" not in GraSP(hvp="exact").options()
    assert NASI().options()["hvp"] == "fd" and "hvp" not in NASI(hvp="exact").options()


def test_a_score_log_records_fd_and_refuses_to_mix_it_with_exact(tmp_path, capsys):
    from naslib_plugins.cli import main

    out = tmp_path / "s.jsonl"
    args = ["score", "--space", "mlp_act_skip", "--dataset", "digits", "--predictors", "grasp,params", "--n-archs", "2",
            "--device", "cpu", "--out", str(out)]
    assert main(args) == 0
    assert json.loads(out.read_text().splitlines()[0])["header"]["hvp"] == "fd"
    assert main([*args, "--resume", "--hvp", "exact"]) == 2
    assert "hvp" in capsys.readouterr().err
    assert main([*args[:-1], str(tmp_path / "e.jsonl"), "--hvp", "exact"]) == 0
    assert "hvp" not in json.loads((tmp_path / "e.jsonl").read_text().splitlines()[0])["header"]
