"""NASI on nasbench301 (its DARTS variant: one op and one input per node) and transbench101_micro:
the DARTS node shortcut against the full op x input mixture, gradients reaching alpha, decoding,
sub-network parameters against the stand-alone networks, and short seeded searches.

Tiny sizes: DARTS at C=4, 5 cells, 8x8 inputs. TNB's encoder is the benchmark's (64 to 512
channels), so its tests use 32x32 inputs (the dense decoders need a multiple of the total stride
32; jigsaw 24, three 8-pixel tiles) and batches of 4: the encoder ends at 1x1, where train-mode
batch norm over 2 values per channel already makes the stand-alone network's score explode."""
import json
from collections import Counter

import pytest
import torch
import torch.nn.functional as F
from test_nasi import TINY

from naslib_plugins.cli import main
from naslib_plugins.data.batches import ImageBatches
from naslib_plugins.data.tasks import TASK_NAMES, TaskBatches
from naslib_plugins.errors import UserError
from naslib_plugins.optimizers.nasi import NASI, architecture_score, gumbel, straight_through
from naslib_plugins.predictors import get_predictor
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces import nasbench301 as nb301
from naslib_plugins.spaces import transbench101 as tnb
from naslib_plugins.spaces.nasbench301 import DARTS_EDGE_POS, NASIDartsCell, NASIDartsSupernet, darts_layers
from naslib_plugins.spaces.transbench101 import TNBMicroSupernet

DARTS = get_space("nasbench301")
TNB = get_space("transbench101_micro")
OPS_PER_NODE = (7, 2, 7, 3, 7, 4, 7, 5)  # (ops, inputs) of nodes 0..3
CONNECTED = (3, 2, 1, 3, 2, 3)  # no `none`: every TNB edge lies on a path to the cell output


def one_hot(choice, groups, dtype=torch.float32):
    return [F.one_hot(torch.tensor(c), n).to(dtype) for c, n in zip(choice, groups)]


def st_weights(groups, seed, dtype=torch.float32):
    """alpha_0 = 0 and a straight-through Gumbel sample of it, as NASI's search draws them."""
    gen = torch.Generator().manual_seed(seed)
    alpha = [torch.zeros(n, dtype=dtype, requires_grad=True) for n in groups]
    return alpha, [straight_through(a, gumbel(n, gen).to(dtype), 1.0) for a, n in zip(alpha, groups)]


def st_at(choice, groups):
    """alpha_0 = 0 and straight-through weights whose sample is `choice` (noise 1 on it)."""
    alpha = [torch.zeros(n, requires_grad=True) for n in groups]
    return alpha, [straight_through(a, noise, 1.0) for a, noise in zip(alpha, one_hot(choice, groups))]


def darts_net(seed=0, dtype=torch.float32):
    torch.manual_seed(seed)
    return DARTS.supernet("cifar10", "nasi", TINY).to(dtype).train()


def darts_batches(seed=0):
    return ImageBatches("cifar10", batch_size=4, seed=seed, data="gaussian", resolution=8)


def tnb_net(task, seed=0):
    torch.manual_seed(seed)
    return TNB.supernet(task, "nasi").train()


def tnb_batches(task, seed=0):
    return TaskBatches(task, batch_size=4, seed=seed, data="gaussian", resolution=24 if task == "jigsaw" else 32)


def count_op_calls(net):
    """Every op module of every DARTS cell appends itself to the returned list when it runs."""
    calls = []
    for cell in net.cells:
        for edge in cell.edges:
            for op in edge:
                op.register_forward_hook(lambda module, args, out: calls.append(module))
    return calls


def full_node(self, k, states, h_op, h_in, op, source):
    """F = sum_o sum_j h_op[o] h_in[j] O_jo(x_j): every op on every input of node k."""
    return sum(h_op[o] * h_in[j] * self.edges[DARTS_EDGE_POS[(k, j)]][o](states[j])
               for j in range(k + 2) for o in range(nb301.NUM_OPS))


# --------------------------------------------------------------------------- DARTS


def test_darts_groups_and_decode():
    net = darts_net()
    assert isinstance(net, NASIDartsSupernet) and net.groups == OPS_PER_NODE * 2
    assert len(net.cells) == darts_layers(1) and net.reductions == [False, True, False, True, False]
    alpha = [torch.zeros(n) for n in net.groups]
    # ties go to the lower index: inputs 0, 1 with max_pool, avg_pool at every node
    assert net.decode(alpha) == (((0, 0), (1, 1)) * 4,) * 2
    alpha[2] = torch.tensor([0.0, 0.0, 0.0, 0.9, 0.0, 0.0, 0.4])  # normal node 1: sep3, then dil5
    alpha[3] = torch.tensor([0.2, -0.1, 0.3])  # ... inputs 2, then 0
    alpha[14] = torch.tensor([0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0])  # reduce node 3: skip, then max_pool
    alpha[15] = torch.tensor([0.0, 0.1, -0.3, 0.2, 0.4])  # ... inputs 4, then 3
    arch = net.decode(alpha)
    assert arch[0][2:4] == ((2, nb301.SEP3), (0, nb301.DIL5))
    assert arch[1][6:8] == ((4, nb301.SKIP), (3, nb301.MAX_POOL))
    assert DARTS.parse(arch) == arch
    random = net.decode([torch.randn(n, generator=torch.Generator().manual_seed(i)) for i, n in enumerate(net.groups)])
    assert DARTS.parse(random) == random


def test_darts_shortcut_has_the_full_mixtures_value_and_derivatives(monkeypatch):
    """The cells' E form against F (built here, every op on every input) in float64: the output,
    d(output)/d(weights) for every entry of every weight, the NASI score and its d/d alpha."""
    net = darts_net(1, torch.float64)
    x, y = darts_batches(1).batch(0)
    x = x.double()
    probe = torch.randn(4, 10, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    calls = count_op_calls(net)

    def run():
        calls.clear()
        alpha, w = st_weights(net.groups, seed=5, dtype=torch.float64)
        out = net(x, w)
        ran = len(calls)
        d_out = torch.autograd.grad((out * probe).sum(), w)
        score = architecture_score(net, w, x, y, F.cross_entropy, create_graph=True)
        return out.detach(), d_out, score.detach(), torch.autograd.grad(score, alpha), ran

    efficient = run()
    with monkeypatch.context() as m:
        m.setattr(NASIDartsCell, "_node", full_node)
        full = run()
    needed = sum(nb301.NUM_OPS + k + 1 for k in range(nb301.NUM_NODES))  # 7 + (k + 1) per node
    every = sum(nb301.NUM_OPS * (k + 2) for k in range(nb301.NUM_NODES))
    assert (efficient[4], full[4]) == (len(net.cells) * needed, len(net.cells) * every)
    assert torch.allclose(efficient[0], full[0], rtol=1e-12, atol=1e-12)
    for a, b in zip(efficient[1], full[1]):
        assert bool((b != 0).all())  # every op and every input moves the output
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12)
    assert float(efficient[2]) == pytest.approx(float(full[2]), rel=1e-12)
    scale = max(float(g.abs().max()) for g in full[3])
    for a, b in zip(efficient[3], full[3]):
        assert float(b.abs().sum()) > 0
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-9 * scale)


def test_darts_plain_one_hot_runs_the_chosen_ops_alone():
    net = darts_net()
    x, _ = darts_batches().batch(0)
    gen = torch.Generator().manual_seed(3)
    choice = [int(torch.randint(n, (1,), generator=gen)) for n in net.groups]
    calls = count_op_calls(net)
    hard = net(x, one_hot(choice, net.groups))
    assert len(calls) == len(net.cells) * nb301.NUM_NODES
    calls.clear()
    soft = net(x, st_at(choice, net.groups)[1])
    assert len(calls) == len(net.cells) * sum(nb301.NUM_OPS + k + 1 for k in range(nb301.NUM_NODES))
    assert torch.equal(hard, soft.detach())  # the extra terms are exact zeros


def test_darts_rejects_soft_or_missing_weights():
    net = darts_net()
    x, _ = darts_batches().batch(0)
    weights = one_hot([0] * 16, net.groups)
    weights[4] = torch.full((7,), 1 / 7)
    with pytest.raises(UserError, match="one-hot weights .* weight 4"):
        net(x, weights)
    with pytest.raises(UserError, match="takes 16 weight vectors"):
        net(x, weights[:14])


def test_darts_gradient_reaches_every_alpha():
    net = darts_net()
    x, y = darts_batches().batch(0)
    alpha, w = st_weights(net.groups, seed=2)
    score = architecture_score(net, w, x, y, F.cross_entropy, create_graph=True)
    for g in torch.autograd.grad(score, alpha):
        assert torch.isfinite(g).all() and float(g.abs().sum()) > 0
        assert abs(float(g.sum())) < 1e-4 * float(g.abs().sum())  # softmax Jacobian rows sum to 0


def test_darts_subnetworks_have_the_standalone_parameters_but_the_strided_skips():
    """A sampled sub-network has one (input, op) per node; a genotype's two pairs per node make
    two of them, sharing stem, preprocessing and classifier. The stand-alone network has their
    parameters except that its reduction cells run stride-2 ops: a skip from input 0 or 1 there
    is a factorized reduce (two 1x1 convs C_r -> C_r/2, batch norm not affine), where the search
    network, down-sampling by max-pool, has an identity. The other ops' parameters do not depend
    on the stride."""
    net = darts_net()
    S, P3, P5, D3, MP = nb301.SKIP, nb301.SEP3, nb301.SEP5, nb301.DIL3, nb301.MAX_POOL
    normal = ((0, P3), (1, S), (2, D3), (0, P5), (1, P3), (3, nb301.DIL5), (4, S), (2, nb301.AVG_POOL))
    reduce = ((0, S), (1, S), (2, P3), (1, S), (3, S), (0, MP), (4, D3), (1, P5))
    arch = DARTS.parse((normal, reduce))
    standalone = DARTS.standalone(arch, "cifar10", TINY)
    assert len(standalone.cells) == darts_layers(TINY["cells"])

    def shapes(params):
        return Counter(tuple(p.shape) for p in params)

    def choice(which):  # pair 2k + which of every node, as (op, input)
        return [v for cell in arch for k in range(4) for v in (cell[2 * k + which][1], cell[2 * k + which][0])]

    pools_only = shapes(net.parameters_of([MP, 0] * 8))  # stem, preprocessing, classifier
    widths = [cell.pre1[1].out_channels for cell, r in zip(net.cells, net.reductions) if r]
    strided_skips = sum(op == S and source < 2 for source, op in reduce)
    assert (widths, strided_skips) == ([8, 16], 3)
    factorized = Counter({(c // 2, c, 1, 1): 2 * strided_skips for c in widths})
    expected = shapes(net.parameters_of(choice(0))) + shapes(net.parameters_of(choice(1))) - pools_only
    assert shapes(standalone.parameters()) == expected + factorized
    numel = sum(p.numel() for p in standalone.parameters())
    assert numel == sum(p.numel() for p in net.parameters_of(choice(0))) + sum(
        p.numel() for p in net.parameters_of(choice(1))) - sum(
        p.numel() for p in net.parameters_of([MP, 0] * 8)) + strided_skips * sum(c * c for c in widths)


def test_darts_search_is_valid_and_deterministic():
    batches = darts_batches()
    # a loose constraint (nu0 far above every score), so every G_t is non-zero
    nasi = NASI(steps=2, nu0=1e9, **TINY)
    first = nasi.search(DARTS, "cifar10", batches, seed=0, progress=False)
    again = nasi.search(DARTS, "cifar10", batches, seed=0, progress=False)
    assert DARTS.parse(first.arch) == first.arch
    assert first.arch == again.arch and first.trace["alpha"] == again.trace["alpha"]
    assert [len(a) for a in first.trace["alpha"]] == list(OPS_PER_NODE * 2)
    assert all(g > 0 for g in first.trace["grad_norm"]) and "warnings" not in first.trace


# --------------------------------------------------------------------------- TransNAS-Bench-101 micro


def test_tnb_groups_and_decode():
    net = tnb_net("class_object")
    assert isinstance(net, TNBMicroSupernet) and net.groups == (4,) * 6
    # the benchmark's encoder: 10 cells, 64 -> 512 channels
    assert len(net.encoder.layers) == 10 and net.encoder.out_channels == 512
    alpha = [torch.tensor(v) for v in ([0.0, 0.2, 0.1, 0.0], [0.0] * 4, [-0.1, 0.0, 0.0, 0.3],
                                       [0.5, 0.1, 0.2, 0.0], [0.0, 0.0, 0.4, 0.0], [0.0, 0.1, 0.1, 0.0])]
    arch = net.decode(alpha)
    assert arch == (1, 0, 3, 0, 2, 1)  # ties: the lower code, `none` first
    assert TNB.parse(arch) == arch and all(type(v) is int for v in arch)
    with pytest.raises(UserError, match="has no task 'cifar10'"):
        TNB.supernet("cifar10", "nasi")
    with pytest.raises(UserError, match="micro's supernet takes no option cells, channels; it takes: none"):
        TNB.supernet("class_scene", "nasi", TINY)


@pytest.mark.parametrize("task", TASK_NAMES)
def test_tnb_gradient_reaches_every_alpha_on_every_task(task):
    net = tnb_net(task)
    x, y = tnb_batches(task).batch(0)
    alpha, w = st_at(CONNECTED, net.groups)
    score = architecture_score(net, w, x, y, TNB.loss_fn(task), create_graph=True)
    assert torch.isfinite(score) and float(score.detach()) > 0
    for g in torch.autograd.grad(score, alpha):
        assert torch.isfinite(g).all() and float(g.abs().sum()) > 0


def _supernet_key(key, arch):
    """encoder.layers.i.edges.eXY.rest -> encoder.layers.i.edges.eXY.ops.<op of edge X->Y>.rest"""
    parts = key.split(".")
    if parts[:2] == ["encoder", "layers"] and parts[3] == "edges":
        edge = tnb.MICRO_EDGES.index((int(parts[4][1]), int(parts[4][2])))
        parts[5:5] = ["ops", str(arch[edge])]
    return ".".join(parts)


@pytest.mark.parametrize("task, arch", [
    ("class_scene", (1, 1, 0, 1, 3, 2)),  # skips out of the cell input: factorized reduces in strided cells
    ("segmentsemantic", (3, 0, 2, 0, 0, 1)),  # `none` edges; node 2 = conv1x1(node 1)
])
def test_tnb_subnetwork_is_the_standalone_network(task, arch):
    net = tnb_net(task, seed=2)
    standalone = TNB.build_model(arch, task)
    state = net.state_dict()
    standalone.load_state_dict({key: state[_supernet_key(key, arch)] for key in standalone.state_dict()})
    assert [p.shape for p in net.parameters_of(arch)] == [p.shape for p in standalone.parameters()]
    batches = tnb_batches(task, seed=1)
    x, y = batches.batch(0)
    assert torch.allclose(net(x, one_hot(arch, net.groups)), standalone(x), rtol=1e-5, atol=1e-5)
    loss_fn = TNB.loss_fn(task)
    expected = get_predictor("nasi").score(standalone, batches, loss_fn)
    hard = architecture_score(net, one_hot(arch, net.groups), x, y, loss_fn, create_graph=False)
    mixed = architecture_score(net, [w.requires_grad_() for w in one_hot(arch, net.groups)], x, y, loss_fn,
                               create_graph=True)
    assert float(hard) == pytest.approx(expected, rel=1e-4)
    assert float(mixed.detach()) == pytest.approx(expected, rel=1e-4)


def test_tnb_search_is_valid_and_deterministic():
    batches = tnb_batches("class_scene")
    nasi = NASI(steps=2, nu0=1e30)
    first = nasi.search(TNB, "class_scene", batches, seed=0, progress=False)
    again = nasi.search(TNB, "class_scene", batches, seed=0, progress=False)
    assert TNB.parse(first.arch) == first.arch and len(first.arch) == 6
    assert first.arch == again.arch and first.trace["alpha"] == again.trace["alpha"]
    # a sampled cell with no path from input to output zeroes every feature, and its G_t is 0;
    # seed 0 samples at least one connected cell
    assert any(g > 0 for g in first.trace["grad_norm"]) and "warnings" not in first.trace


# --------------------------------------------------------------------------- the command


@pytest.mark.parametrize("space, dataset, extra", [
    ("nasbench301", "cifar10", ["--channels", "4", "--cells", "1"]),
    ("transbench101_micro", "room_layout", ["--resolution", "32"]),
])
def test_search_command_on_the_new_spaces(space, dataset, extra, tmp_path, monkeypatch):
    monkeypatch.delenv("NASLIB_PLUGINS_DATA", raising=False)  # no benchmark: accuracies are not looked up
    argv = ["search", "--optimizer", "nasi", "--space", space, "--dataset", dataset, "--steps", "1",
            "--batch-size", "4", "--data", "gaussian", "--out", str(tmp_path), *extra]
    assert main(argv) == 0
    run = json.loads((tmp_path / "search.json").read_text())["runs"][0]
    assert get_space(space).to_string(run["arch"]) == run["arch_str"]
