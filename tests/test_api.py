"""The public Python interface (naslib_plugins.api) and the data it accepts (data/inputs.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from naslib_plugins import api
from naslib_plugins.data.batches import ImageBatches
from naslib_plugins.data.inputs import GivenBatches, as_batches
from naslib_plugins.errors import UserError
from naslib_plugins.evaluation.scoring import make_predictors, score_architecture
from naslib_plugins.spaces import get_space

ARCH = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"
SMALL = ("synflow", "params")


def _pairs(n: int, batch: int = 8, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, 3, 32, 32, generator=g), torch.randint(0, 10, (batch,), generator=g))
            for _ in range(n)]


def test_score_equals_the_engine_on_the_same_batches():
    batches = ImageBatches("cifar10", batch_size=8, data="gaussian")
    record = api.score(ARCH, predictors=SMALL, data=batches)
    direct = score_architecture(get_space("nasbench201"), ARCH, "cifar10", make_predictors(SMALL), batches, seed=0)
    assert record["scores"] == direct["scores"]
    assert record["status"] == {"synflow": "ok", "params": "ok"}


def test_a_dataloader_a_list_and_a_tensor_pair_give_the_same_scores():
    pairs = _pairs(2)
    x, y = torch.cat([p[0] for p in pairs]), torch.cat([p[1] for p in pairs])
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8, shuffle=False)
    scores = [api.score(ARCH, predictors=("zico", "synflow"), data=d, batch_size=8)["scores"]
              for d in (loader, pairs, (x, y), (x.numpy(), y.numpy()))]
    assert all(s == scores[0] for s in scores[1:])
    assert all(v is not None for v in scores[0].values())


def test_given_batches_are_read_lazily_and_kept():
    pulled = []

    def stream():
        for i, pair in enumerate(_pairs(5)):
            pulled.append(i)
            yield pair

    source = GivenBatches(stream())
    assert pulled == [0] and source.batch_size == 8 and source.input_shape == (3, 32, 32)
    assert source.batch(1) is source.batch(1) and pulled == [0, 1]
    assert source.settings() == {"batch_size": 8, "labels": "given", "data": "given"}


@pytest.mark.parametrize("data, match", [
    ([], "ran out"),
    ([torch.zeros(2, 3)], "pair"),
    ([(torch.zeros(4, 3, 8, 8), torch.zeros(3))], "4 inputs but 3 targets"),
    ([(torch.zeros(4, 3, 8, 8, dtype=torch.uint8), torch.zeros(4))], "floating point"),
    ([({"x": 1}, torch.zeros(4))], "tensor or a numpy array"),
    (42, "data of type int"),
])
def test_bad_data_is_one_clear_error(data, match):
    with pytest.raises(UserError, match=match):
        as_batches(data, "cifar10")


def test_running_out_of_given_batches_names_the_need():
    with pytest.raises(UserError, match="mini-batch 2.*hold 1"):
        GivenBatches(_pairs(1)).batch(1)


def test_correlate_with_given_accuracies():
    space = get_space("nasbench201")
    rng = np.random.default_rng(0)
    archs = list(dict.fromkeys(space.sample(rng) for _ in range(8)))
    accs = [float(sum(a)) for a in archs]  # any numbers: what is checked is the plumbing
    result = api.correlate(archs, accs, predictors=("params",), data="gaussian", batch_size=4)
    assert result["n_archs"] == len(archs) and result["benchmark"] == "given accuracies"
    params = result["predictors"]["params"]
    assert params["n_valid"] == len(archs) and -1 <= params["kendall"] <= 1
    assert set(result["scores"]) == {space.hash(a) for a in archs}
    with pytest.raises(UserError, match="8 architectures but 2 accuracies"):
        api.correlate(archs, accs[:2], predictors=("params",), data="gaussian")


def test_correlate_writes_a_resumable_run_when_given_a_folder(tmp_path):
    archs = [ARCH, (0, 1, 2, 3, 4, 0), (1, 1, 1, 1, 1, 1)]
    first = api.correlate(archs, [93.0, 80.0, 10.0], predictors=("params",), data="gaussian", out=tmp_path)
    assert (tmp_path / "correlation.json").is_file() and (tmp_path / "scores.jsonl").is_file()
    again = api.correlate(archs, [93.0, 80.0, 10.0], predictors=("params",), data="gaussian", out=tmp_path)
    assert again["predictors"] == first["predictors"]


def test_search_on_the_shipped_digits_benchmark():
    result = api.search("zc-random", space="mlp_act_skip", dataset="digits", seeds=[0, 1], predictor="params",
                        budget=5)
    assert [r["seed"] for r in result["runs"]] == [0, 1]
    assert all(r["test_accuracy"] is not None for r in result["runs"])
    with pytest.raises(UserError, match="no option budgett"):
        api.search("zc-random", space="mlp_act_skip", dataset="digits", budgett=5)


def test_load_results(tmp_path):
    pd = pytest.importorskip("pandas")
    api.correlate([ARCH, (0, 1, 2, 3, 4, 0), (1, 1, 1, 1, 1, 1)], [93.0, 80.0, 10.0], predictors=("params",),
                  data="gaussian", out=tmp_path / "c")
    api.search("zc-random", space="mlp_act_skip", dataset="digits", seeds=0, predictor="params", budget=3,
               out=tmp_path / "s")
    table = api.load_results(tmp_path)
    assert isinstance(table, pd.DataFrame)
    assert sorted(table["kind"]) == ["correlation", "search"]
    row = table[table.kind == "search"].iloc[0]
    assert row.method == "zc-random/params" and row.path == "s/search.json"
    with pytest.raises(UserError, match="no results folder"):
        api.load_results(tmp_path / "missing")
