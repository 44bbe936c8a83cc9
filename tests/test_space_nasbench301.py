import json
import pickle

import numpy as np
import pytest
import torch

from naslib_plugins.errors import ArchitectureError, BenchmarkFileError, UserError
from naslib_plugins.evaluation.ground_truth import load_ground_truth
from naslib_plugins.predictors.model_stats import count_flops
from naslib_plugins.spaces import SPACES, get_space
from naslib_plugins.spaces.nasbench301 import Genotype, NasBench301Space, read_nb301_pickle

space = get_space("nasbench301")

# DARTS_V2 as published in the DARTS repository (genotypes.py), concat written as range(2, 6)
DARTS_V2 = (
    "Genotype(normal=[('sep_conv_3x3', 0), ('sep_conv_3x3', 1), ('sep_conv_3x3', 0), ('sep_conv_3x3', 1), "
    "('sep_conv_3x3', 1), ('skip_connect', 0), ('skip_connect', 0), ('dil_conv_3x3', 2)], normal_concat=range(2, 6), "
    "reduce=[('max_pool_3x3', 0), ('max_pool_3x3', 1), ('skip_connect', 2), ('max_pool_3x3', 1), "
    "('max_pool_3x3', 0), ('skip_connect', 2), ('skip_connect', 2), ('max_pool_3x3', 1)], reduce_concat=range(2, 6))"
)
DARTS_V2_COMPACT = (
    ((0, 3), (1, 3), (0, 3), (1, 3), (1, 3), (0, 2), (0, 2), (2, 5)),
    ((0, 0), (1, 0), (2, 2), (1, 0), (0, 0), (2, 2), (2, 2), (1, 0)),
)
# a key of NASLib's zc_nasbench301.json, spelled as there
ZC_KEY = (
    "[[(0, 0), (1, 5), (1, 1), (0, 1), (1, 3), (0, 3), (1, 3), (3, 2)], "
    "[(1, 0), (0, 2), (1, 3), (0, 3), (3, 0), (0, 1), (2, 0), (3, 6)]]"
)


def _zc(shared_data):
    with open(shared_data / "nasbench301" / "zc_nasbench301.json") as f:
        return json.load(f)["cifar10"]


def _differences(a, b):
    return [(c, p, f) for c in range(2) for p in range(8) for f in range(2) if a[c][p][f] != b[c][p][f]]


def test_genotype_and_compact_round_trip_as_string_and_structure():
    assert space.parse(DARTS_V2) == DARTS_V2_COMPACT
    genotype = space.to_genotype(DARTS_V2_COMPACT)
    assert isinstance(genotype, Genotype) and genotype.normal_concat == [2, 3, 4, 5]
    assert genotype.normal[7] == ("dil_conv_3x3", 2) and genotype.reduce[0] == ("max_pool_3x3", 0)
    assert space.parse(genotype) == DARTS_V2_COMPACT
    text = space.to_string(DARTS_V2_COMPACT)
    assert text.startswith("Genotype(normal=[('sep_conv_3x3', 0), ('sep_conv_3x3', 1),")
    assert "normal_concat=[2, 3, 4, 5]" in text and space.parse(text) == DARTS_V2_COMPACT
    # list-of-lists, numpy and the zc key spelling all land on the same tuple
    as_lists = [[list(p) for p in cell] for cell in DARTS_V2_COMPACT]
    assert space.parse(as_lists) == space.parse(np.array(DARTS_V2_COMPACT)) == DARTS_V2_COMPACT
    assert space.hash(space.parse(ZC_KEY)) == ZC_KEY
    assert space.hash(np.array(space.parse(ZC_KEY))) == ZC_KEY  # numpy ints spelled as NASLib's
    assert space.parse(space.to_string(ZC_KEY)) == space.parse(ZC_KEY)


def _with(cell: int, pair: int, value):
    arch = [list(c) for c in DARTS_V2_COMPACT]
    arch[cell][pair] = value
    return arch


@pytest.mark.parametrize(
    "bad, message",
    [
        (_with(0, 3, (1, 7)), "normal cell pair 3 .*op 7 out of range 0..6"),
        (_with(1, 0, (2, 0)), "reduce cell pair 0 .node 0.: input 2 out of range 0..1"),
        (_with(0, 7, (5, 0)), "node 3.: input 5 out of range 0..4"),
        (_with(0, 1, (0, 4)), "node 0 reads input 0 twice"),
        (_with(0, 2, (1.0, 3)), "must be ints"),
        (_with(0, 2, (True, 3)), "must be ints"),
        (_with(0, 2, (1, 3, 0)), "must be an .input, op. pair"),
        ([DARTS_V2_COMPACT[0][:7], DARTS_V2_COMPACT[1]], "normal cell needs 8 .input, op. pairs, got 7"),
        ([DARTS_V2_COMPACT[0]], "needs 2 cells .normal, reduce., got 1"),
        (DARTS_V2.replace("'skip_connect', 0)", "'none', 0)", 1), "unknown nasbench301 op 'none'"),
        (DARTS_V2.replace("normal_concat=range(2, 6)", "normal_concat=[2, 3, 4]"), "normal_concat must be"),
        (DARTS_V2.replace("('dil_conv_3x3', 2)", "('dil_conv_3x3', 5)"), "input 5 out of range 0..4"),
        (DARTS_V2.replace("('max_pool_3x3', 1)]", "]"), "reduce cell needs 8 .op, input. pairs, got 7"),
        ("Genotype(normal=[('sep_conv_3x3', 0)] * 8)", "literal lists"),
        ("Genotype(normal=[], colour=1)", "unexpected or repeated field 'colour'"),
        ("Genotype(normal=[", "unreadable nasbench301 Genotype string"),
        ("[[(0, 0)", "unreadable nasbench301 compact"),
        ("sep_conv_3x3", "unreadable nasbench301 architecture"),
        (42, "unsupported type int"),
    ],
)
def test_malformed_architectures_are_named(bad, message):
    with pytest.raises(ArchitectureError, match=message):
        space.parse(bad)


def test_sample_and_mutate_stay_valid_and_change_one_field():
    for seed in range(5):
        rng = np.random.default_rng(seed)
        arch = space.sample(rng)
        assert space.parse(arch) == arch  # valid, canonical, python ints
        assert all(type(v) is int for cell in arch for pair in cell for v in pair)
        for _ in range(10):
            child = space.mutate(arch, rng)
            assert space.parse(child) == child and len(_differences(arch, child)) == 1
            arch = child
    assert space.sample(np.random.default_rng(3)) == space.sample(np.random.default_rng(3))
    # node 3 may read any of inputs 0..4, and the sampler reaches them all
    seen = {space.sample(np.random.default_rng(s))[0][6][0] for s in range(40)}
    assert seen == {0, 1, 2, 3, 4}


def test_neighbours_change_one_op_or_one_input():
    nbrs = space.neighbours(DARTS_V2_COMPACT)
    # per cell: 8 pairs x 6 other ops, plus inputs other than own and sibling's: 2 x (0+1+2+3)
    assert len(nbrs) == 2 * (8 * 6 + 2 * 6) and len(set(nbrs)) == len(nbrs)
    for n in nbrs:
        assert space.parse(n) == n and len(_differences(DARTS_V2_COMPACT, n)) == 1


def test_parameter_counts_equal_naslib_on_zc_archs(shared_data):
    """Fidelity bar: NASLib's recorded `params` (millions, tensorwatch) for every 25th zc arch;
    the full 725 match too (see the helper report), and FLOPs on a few."""
    zc = _zc(shared_data)
    keys = list(zc)[::25]
    assert len(keys) == 29
    for key in keys:
        model = space.build_model(key, "cifar10")
        n = sum(p.numel() for p in model.parameters())
        assert n == round(zc[key]["params"]["score"] * 1e6), key
    for key in keys[:3]:
        model = space.build_model(key, "cifar10").eval()
        flops = count_flops(model, torch.zeros(1, 3, 32, 32))
        assert flops == round(zc[key]["flops"]["score"] * 1e6), key


def test_zc_json_loads_through_the_generic_reader(shared_data):
    gt = load_ground_truth(shared_data / "nasbench301" / "zc_nasbench301.json", space, "cifar10", "val_accuracy")
    assert len(gt) == 725
    assert gt.get(ZC_KEY) == pytest.approx(93.32119084207302) and gt.index[ZC_KEY] == 534


def test_tiny_forward_backward():
    model = space.build_model(DARTS_V2, "cifar10", {"C": 4, "layers": 3})
    out = model(torch.randn(2, 3, 32, 32))
    assert out.shape == (2, 10)
    out.sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    assert space.build_model(DARTS_V2, "cifar10", {"C": 3, "layers": 2})(torch.randn(1, 3, 16, 16)).shape == (1, 10)
    with pytest.raises(UserError, match="layers. must be an int >= 2"):
        space.build_model(DARTS_V2, "cifar10", {"layers": 1})
    with pytest.raises(UserError, match="no dataset 'cifar100'"):
        space.build_model(DARTS_V2, "cifar100")


def test_nb301_pickle_reader(tmp_path):
    other = space.mutate(DARTS_V2_COMPACT, np.random.default_rng(0))
    data = {
        DARTS_V2_COMPACT: {"val_accuracies": [50.0, 94.1], "train_losses": [1.0, 0.2], "runtime": [10.0, 20.0]},
        other: {"val_accuracies": np.array([40.0, 92.5]), "train_losses": [1.1, 0.3], "runtime": [11.0, 22.0]},
    }
    path = tmp_path / "nb301_full_training.pickle"
    path.write_bytes(pickle.dumps(data))
    gt = read_nb301_pickle(path, space, "cifar10", "val_accuracy")
    assert gt.values == {space.hash(DARTS_V2_COMPACT): 94.1, space.hash(other): 92.5}
    # NASLib answers test-accuracy queries with the same validation curve
    assert read_nb301_pickle(path, space, "cifar10", "test_accuracy").values == gt.values
    with pytest.raises(UserError, match="no train_accuracy"):
        read_nb301_pickle(path, space, "cifar10", "train_accuracy")
    with pytest.raises(UserError, match="needs the nasbench301 space"):
        read_nb301_pickle(path, get_space("nasbench201"), "cifar10")

    path.write_bytes(pickle.dumps({DARTS_V2_COMPACT: {"train_losses": [1.0]}}))
    with pytest.raises(BenchmarkFileError, match="no val_accuracies list"):
        read_nb301_pickle(path, space, "cifar10")
    path.write_bytes(pickle.dumps({((0, 9),): {"val_accuracies": [1.0]}}))
    with pytest.raises(BenchmarkFileError, match="needs 2 cells"):
        read_nb301_pickle(path, space, "cifar10")


class _Evil:
    def __reduce__(self):
        import os

        return (os.system, ("echo pwned",))


def test_nb301_pickle_with_a_forbidden_global_is_refused(tmp_path):
    path = tmp_path / "evil.pickle"
    path.write_bytes(pickle.dumps({DARTS_V2_COMPACT: {"val_accuracies": [_Evil()]}}))
    with pytest.raises(BenchmarkFileError, match="forbidden global"):
        read_nb301_pickle(path, space, "cifar10")


def test_registry_names_and_aliases():
    assert "nasbench301" in SPACES.names()
    assert type(get_space("darts")) is NasBench301Space and type(get_space("nb301")) is NasBench301Space
