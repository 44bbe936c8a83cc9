"""NASI search: formulas on hand-made numbers, the straight-through double-backward gradient,
agreement with the `nasi` predictor, determinism, and the `search` command. Tiny widths."""
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from naslib_plugins.cli import build_parser, main
from naslib_plugins.data.batches import ImageBatches
from naslib_plugins.errors import UserError
from naslib_plugins.evaluation.search_run import parse_seeds
from naslib_plugins.optimizers import OPTIMIZERS
from naslib_plugins.optimizers.nasi import (
    NASI,
    adaptive_nu,
    architecture_score,
    fixed_nu,
    gumbel,
    nasi_delta,
    penalty,
    penalty_slope,
    straight_through,
)
from naslib_plugins.predictors import get_predictor
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.nasbench201 import NONE, NB201Network, NB201Supernet

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
TINY = dict(channels=4, cells=1)


def one_hot(arch, dtype=torch.float32):
    return [F.one_hot(torch.tensor(op), 5).to(dtype) for op in arch]


def st_weights(seed, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    alpha = [torch.zeros(5, dtype=dtype, requires_grad=True) for _ in range(6)]
    return alpha, [straight_through(a, gumbel(5, gen).to(dtype), 1.0) for a in alpha]


# --------------------------------------------------------------------------- pure formulas


def test_penalty_and_its_slope():
    assert penalty(5.0, 2.0, 3.0) == 1.0  # 5 - 2 * (5 - 3)
    assert penalty(2.0, 2.0, 3.0) == 2.0  # under nu: no penalty
    assert penalty(7.0, 1.0, 3.0) == 3.0  # mu = 1 caps R at nu
    assert penalty_slope(2.0, 2.0, 3.0) == 1.0
    assert penalty_slope(3.0, 2.0, 3.0) == 1.0  # on the boundary the constraint holds
    assert penalty_slope(5.0, 2.0, 3.0) == -1.0
    assert penalty_slope(5.0, 1.0, 3.0) == 0.0


def test_nu_rules():
    assert adaptive_nu(1000.0, []) == 1000.0  # nu_1 = nu_0
    assert adaptive_nu(1000.0, [10.0, 20.0]) == pytest.approx(1030.0 / 3)  # eq. 40 at t = 3
    assert fixed_nu([1.0, 2.0, 3.0]) == 2.0  # eq. 39
    assert fixed_nu([1.0, 2.0, 3.0], scale=2.5) == 5.0
    # one heavy tail moves the mean (eq. 39) far above most scores, not the median
    assert fixed_nu([1.0, 2.0, 3.0, 994.0]) == 250.0
    assert fixed_nu([1.0, 2.0, 3.0, 994.0], stat="median") == 2.5
    assert fixed_nu([1.0, 2.0, 3.0, 994.0], scale=2.0, stat="median") == 5.0


def test_delta_normalises_by_the_running_max_norm():
    g = [np.array([3.0, 4.0]), np.array([0.0, 0.0]), np.array([6.0, 8.0])]
    # (1/3) * ([3,4]/5 + 0/5 + [6,8]/10)
    assert np.allclose(nasi_delta(g), [0.4, 1.6 / 3])
    assert np.allclose(nasi_delta(g, xi=3.0), [1.2, 1.6])
    # leading zero gradients add nothing instead of dividing by zero
    assert np.allclose(nasi_delta([np.zeros(2), np.array([0.0, 2.0])]), [0.0, 0.5])


def test_straight_through_is_one_hot_forward_softmax_backward():
    alpha = torch.tensor([0.5, -1.0, 2.0, 0.0], requires_grad=True)
    noise = torch.tensor([0.1, 3.0, -0.2, 0.3])
    w = straight_through(alpha, noise, 0.7)
    assert w.tolist() == [0.0, 1.0, 0.0, 0.0]  # argmax of alpha + g, exactly one-hot
    c = torch.tensor([1.0, -2.0, 0.5, 3.0])
    (w * c).sum().backward()
    p = torch.softmax((alpha.detach() + noise) / 0.7, dim=0)
    jacobian = (torch.diag(p) - torch.outer(p, p)) / 0.7
    assert torch.allclose(alpha.grad, jacobian.T @ c)


def test_parse_seeds():
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert parse_seeds("0,2,5") == [0, 2, 5]
    assert parse_seeds(" 7 ") == [7]
    assert parse_seeds("0-1,9") == [0, 1, 9]
    for bad in ("", "a", "3-1", "1,,2", "-1", "1,1", "0-2,2"):
        with pytest.raises(UserError):
            parse_seeds(bad)


# --------------------------------------------------------------------------- the estimator


def test_gradient_reaches_every_alpha():
    torch.manual_seed(0)
    net = NB201Supernet(10, **dict(C=4, N=1)).train()
    x, y = ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian").batch(0)
    alpha, w = st_weights(3)
    score = architecture_score(net, w, x, y, F.cross_entropy, create_graph=True)
    grads = torch.autograd.grad(score, alpha)
    for g in grads:
        assert torch.isfinite(g).all() and g.abs().sum() > 0
        assert abs(float(g.sum())) < 1e-5 * float(g.abs().sum())  # softmax Jacobian rows sum to 0


def test_double_backward_equals_the_full_supernet_derivative():
    """d S / d w from the sampled sub-network's parameters only equals the derivative of S over
    ALL supernet parameters (float64), and a central finite difference of the latter. (S jumps
    where a ReLU pre-activation crosses 0, so the difference step is kept tiny.)"""
    torch.manual_seed(1)
    net = NB201Supernet(10, C=2, N=1).double().train()
    x, y = ImageBatches("cifar10", batch_size=4, seed=1, data="gaussian").batch(0)
    x = x.double()
    arch = (2, 0, 4, 3, 1, 2)

    def weights():
        return [v.requires_grad_() for v in one_hot(arch, torch.float64)]

    def full_score(w, create_graph=False):
        params = list(net.parameters())
        grads = torch.autograd.grad(F.cross_entropy(net(x, w), y), params, allow_unused=True,
                                    create_graph=create_graph)
        return sum((g * g).sum() for g in grads if g is not None)

    w = weights()
    analytic = torch.autograd.grad(architecture_score(net, w, x, y, F.cross_entropy, create_graph=True), w)
    w_full = weights()
    full = torch.autograd.grad(full_score(w_full, create_graph=True), w_full)
    for a, b in zip(analytic, full):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12)
    eps = 1e-8
    for edge, op in [(0, 3), (1, 0), (2, 2), (4, 4), (5, 2)]:
        plus, minus = weights(), weights()
        with torch.no_grad():
            plus[edge][op] += eps
            minus[edge][op] -= eps
        numeric = (float(full_score(plus)) - float(full_score(minus))) / (2 * eps)
        assert float(analytic[edge][op]) == pytest.approx(numeric, rel=1e-3, abs=1e-4)


def test_supernet_score_is_the_nasi_predictor_of_the_standalone_network():
    torch.manual_seed(2)
    net = NB201Supernet(10, C=4, N=1).train()
    arch = (2, 3, 0, 4, 1, 2)
    standalone = NB201Network(arch, 10, C=4, N=1)
    state = {}
    for key in standalone.state_dict():
        parts = key.split(".")
        if parts[0] == "cells" and parts[2] == "edges":  # cells.i.edges.e.rest -> cells.i.edges.e.ops.op.rest
            parts[4:4] = ["ops", str(arch[int(parts[3])])]
        state[key] = net.state_dict()[".".join(parts)]
    standalone.load_state_dict(state)
    batches = ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian")
    expected = get_predictor("nasi").score(standalone, batches, F.cross_entropy)
    x, y = batches.batch(0)
    hard = architecture_score(net, one_hot(arch), x, y, F.cross_entropy, create_graph=False)
    w = [v.requires_grad_() for v in one_hot(arch)]
    mixed = architecture_score(net, w, x, y, F.cross_entropy, create_graph=True)
    assert float(hard) == pytest.approx(expected, rel=1e-5)
    assert float(mixed.detach()) == pytest.approx(expected, rel=1e-5)


# --------------------------------------------------------------------------- the search


def test_search_is_valid_and_deterministic():
    space = get_space("nasbench201")
    batches = ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian")
    nasi = NASI(steps=3, **TINY)
    first = nasi.search(space, "cifar10", batches, seed=0, progress=False)
    again = nasi.search(space, "cifar10", batches, seed=0, progress=False)
    other = nasi.search(space, "cifar10", batches, seed=1, progress=False)
    assert space.parse(first.arch) == first.arch and len(first.arch) == 6
    assert first.trace["alpha"] == again.trace["alpha"] and first.arch == again.arch  # bitwise
    assert first.trace["alpha"] != other.trace["alpha"]
    assert first.trace["nu"][0] == 1000.0 and len(first.trace["score"]) == 3
    norm = np.linalg.norm(np.concatenate(first.trace["alpha"]))
    assert 0 < norm <= 1.0 + 1e-9  # ||Delta|| <= xi


def test_drop_none_never_samples_or_returns_none():
    space = get_space("nasbench201")
    batches = ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian")
    out = NASI(steps=3, drop_none=True, **TINY).search(space, "cifar10", batches, 0, progress=False)
    assert NONE not in out.arch
    # p_none = 0 in every sample, so no gradient ever reaches its alpha
    assert all(a[NONE] == 0.0 for a in out.trace["alpha"]) and any(any(a) for a in out.trace["alpha"])
    fixed = NASI(steps=1, nu="fixed", nu_samples=2, drop_none=True, **TINY)
    assert fixed.search(space, "cifar10", batches, 0, progress=False).trace["random_scores"]
    # recorded only where it departs from the paper, so earlier runs' settings still match
    assert "drop_none" not in NASI().options() and "nu_stat" not in NASI().options()
    assert NASI(drop_none=True).options()["drop_none"] is True


def test_fixed_nu_and_saturated_penalty():
    space = get_space("nasbench201")
    batches = ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian")
    fixed = NASI(steps=2, nu="fixed", nu_samples=3, mu=2.0, **TINY).search(space, "cifar10", batches, 0, progress=False)
    assert len(set(fixed.trace["nu"])) == 1 and fixed.trace["nu"][0] > 0
    # nu far below every score with mu = 1: dR/dS = 0, so every G_t is zero
    flat = NASI(steps=2, nu="fixed", nu0=1e-9, mu=1.0, **TINY).search(space, "cifar10", batches, 0, progress=False)
    assert flat.trace["slope"] == [0.0, 0.0] and flat.trace["grad_norm"] == [0.0, 0.0]
    assert flat.arch == (0,) * 6 and "not a search result" in flat.trace["warnings"][0]
    assert "warnings" not in fixed.trace
    median = NASI(steps=2, nu="fixed", nu_samples=3, nu_stat="median", mu=2.0, **TINY).search(
        space, "cifar10", batches, 0, progress=False)
    # the same three random architectures (same seed), recorded; nu is their median
    assert median.trace["random_scores"] == fixed.trace["random_scores"]
    assert median.trace["nu"][0] == pytest.approx(float(np.median(fixed.trace["random_scores"])))


def test_a_supernet_sampled_per_cell_runs_each_cells_own_choice():
    torch.manual_seed(3)
    net = NB201Supernet(10, C=4, N=1).train()
    x, y = ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian").batch(0)
    a, b, c = (2, 3, 0, 4, 1, 2), (1, 2, 2, 3, 0, 4), (3, 3, 1, 0, 2, 1)
    assert net.sampled_cells() == 3
    # the same cell three times is the shared sample
    same = one_hot(a) * 3
    assert torch.equal(net(x, same), net(x, one_hot(a)))
    assert net.parameters_of(net.choice_of(same)) == net.parameters_of(list(a))
    # each cell its own: the parameters of each cell's chosen ops, and only those
    mixed = one_hot(a) + one_hot(b) + one_hot(c)
    params = net.parameters_of(net.choice_of(mixed))
    cells = [layer for layer in net.cells if hasattr(layer, "edges")]
    chosen = [p for cell, arch in zip(cells, (a, b, c)) for edge, op in zip(cell.edges, arch) if op != NONE
              for p in edge.ops[str(op)].parameters()]
    assert all(any(p is q for q in params) for p in chosen)
    assert not any(p is q for cell, arch in zip(cells, (a, b, c)) for edge, op in zip(cell.edges, arch)
                   for key, m in edge.ops.items() if int(key) != op for p in m.parameters() for q in params)
    assert not torch.equal(net(x, mixed), net(x, one_hot(a)))
    with pytest.raises(ValueError, match="7 edge weights"):
        net(x, one_hot(a) + one_hot(b)[:1])


def test_per_cell_search_samples_each_cell_and_steps_the_shared_alpha():
    space = get_space("nasbench201")
    batches = ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian")
    size = dict(channels=4, cells=2)  # 6 cells, so 36 sampled edges per step
    per_cell = NASI(steps=3, per_cell=True, **size)
    first = per_cell.search(space, "cifar10", batches, seed=0, progress=False)
    again = per_cell.search(space, "cifar10", batches, seed=0, progress=False)
    shared = NASI(steps=3, **size).search(space, "cifar10", batches, seed=0, progress=False)
    assert first.trace["alpha"] == again.trace["alpha"] and len(first.trace["alpha"]) == 6
    assert first.trace["alpha"] != shared.trace["alpha"] and space.parse(first.arch) == first.arch
    assert NASI(per_cell=True).options()["per_cell"] is True and "per_cell" not in NASI().options()
    exact = NASI(steps=3, per_cell=True, hvp="exact", **size).search(space, "cifar10", batches, seed=0,
                                                                     progress=False)
    fd, ex = np.concatenate(first.trace["alpha"]), np.concatenate(exact.trace["alpha"])
    assert fd @ ex / (np.linalg.norm(fd) * np.linalg.norm(ex)) > 0.999  # the fd step, as on the shared sample
    for name in ("nasbench301", "mlp_act_skip"):
        with pytest.raises(UserError, match="samples all its cells at once"):
            NASI(per_cell=True).check(get_space(name), "cifar10")


@pytest.mark.parametrize("kwargs, message", [
    (dict(nu="sometimes"), "unknown nu mode"),
    (dict(steps=0), "steps must be a positive integer"),
    (dict(tau=0.0), "tau must be"),
    (dict(nu_scale=2.0), "fixed nu only"),
    (dict(nu="fixed", nu_stat="mode"), "unknown nu statistic"),
    (dict(nu_stat="median"), "needs --nu fixed"),
    (dict(nu="fixed", nu0=5.0, nu_stat="median"), "needs --nu fixed and no --nu0"),
])
def test_bad_options(kwargs, message):
    with pytest.raises(UserError, match=message):
        NASI(**kwargs)


# --------------------------------------------------------------------------- the command


def test_search_command_writes_schema_and_resumes(tmp_path, shared_data, capsys):
    config = tmp_path / "tiny.yaml"
    config.write_text("optimizer: nasi\nspace: nasbench201\ndataset: cifar10\nseeds: [0, 1]\nsteps: 2\n"
                      "batch-size: 4\nchannels: 4\ncells: 1\ndata: gaussian\n")
    bench = shared_data / get_space("nasbench201").benchmark_file
    argv = ["search", "--config", str(config), "--benchmark", str(bench), "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    result = json.loads((tmp_path / "out" / "search.json").read_text())
    assert set(result) >= {"optimizer", "space", "dataset", "config", "runs", "mean_test_accuracy",
                           "std_test_accuracy", "mean_search_seconds"}
    assert (result["optimizer"], result["space"], result["dataset"]) == ("nasi", "nasbench201", "cifar10")
    assert result["config"]["steps"] == 2 and result["config"]["seeds"] == [0, 1]
    assert [r["seed"] for r in result["runs"]] == [0, 1]
    space = get_space("nasbench201")
    for run in result["runs"]:
        assert set(run) >= {"seed", "arch", "arch_str", "test_accuracy", "val_accuracy", "search_seconds"}
        assert space.to_string(run["arch"]) == run["arch_str"]
        assert 0 < run["test_accuracy"] < 100 and 0 < run["val_accuracy"] < 100
    tests = [r["test_accuracy"] for r in result["runs"]]
    assert result["mean_test_accuracy"] == pytest.approx(np.mean(tests))
    assert result["std_test_accuracy"] == pytest.approx(np.std(tests))

    # a rerun with one more seed searches only that seed
    log = tmp_path / "out" / "runs.jsonl"
    before = log.read_text()
    assert main(argv + ["--seeds", "0-2"]) == 0
    assert log.read_text().startswith(before) and len(log.read_text().splitlines()) == 4
    rerun = json.loads((tmp_path / "out" / "search.json").read_text())
    assert rerun["runs"][:2] == result["runs"] and rerun["runs"][2]["seed"] == 2
    assert "resuming: seeds 0, 1" in capsys.readouterr().err

    # other settings must not mix into the same log
    assert main(argv + ["--steps", "3"]) == 2
    assert "other settings (options)" in capsys.readouterr().err


@pytest.mark.parametrize("seeds, message", [
    ("4-1", "empty seed range '4-1'"),
    ("0,x", "bad seed 'x'"),
    ("1,1", "seed 1 named twice"),
])
def test_bad_seeds_are_one_line_errors(seeds, message, tmp_path, capsys):
    assert main(["search", "--seeds", seeds, "--data", "gaussian", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("naslib-plugins: error: ") and message in err and "Traceback" not in err


def test_search_errors(tmp_path, capsys):
    assert main(["search", "--space", "nasbench101", "--data", "gaussian", "--out", str(tmp_path)]) == 2
    assert "no 'nasi' supernet for search space 'nasbench101'" in capsys.readouterr().err
    assert main(["search", "--optimizer", "nasii", "--data", "gaussian", "--out", str(tmp_path)]) == 2
    assert "unknown optimizer 'nasii'" in capsys.readouterr().err
    assert main(["search", "--data", "gaussian"]) == 2
    assert "search needs --out" in capsys.readouterr().err


def test_shipped_configs_are_valid_search_options():
    from naslib_plugins.cli import _load_config

    search = build_parser().subcommands["search"]
    paths = sorted(CONFIGS.glob("nasi_*.yaml"))
    assert paths
    for path in paths:
        options = _load_config(str(path), search)
        assert options["optimizer"] in OPTIMIZERS
        kwargs = {k: options[k] for k in ("steps", "mu", "nu", "nu0", "tau", "xi", "channels", "cells") if k in options}
        NASI(**kwargs)
        parse_seeds(options["seeds"])


def test_nu0_is_kept_as_given_and_recorded_as_used():
    assert NASI().nu0 is None and NASI(nu0=500).nu0 == 500.0
    # the adaptive nu's start is recorded as the search uses it, as runs always recorded it
    assert NASI().options()["nu0"] == 1000.0 and NASI(nu0=500).options()["nu0"] == 500.0
    assert NASI(nu="fixed").options()["nu0"] is None
