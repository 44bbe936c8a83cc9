"""The NASLib adapter against a real NASLib (github.com/automl/NASLib, branch Develop).

NASLib is on no package registry, so these tests run only where `import naslib` works (its
source on PYTHONPATH and its dependencies installed) and skip with the reason otherwise; CI has
no NASLib. The check that the adapter fails cleanly without NASLib runs everywhere."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import yaml

from naslib_plugins.data.batches import BatchSource, ImageBatches
from naslib_plugins.errors import ArchitectureError, UserError
from naslib_plugins.optimizers import OPTIMIZERS
from naslib_plugins.predictors import get_predictor
from naslib_plugins.reporting.runs import read_search
from naslib_plugins.spaces import get_space

try:
    import naslib_plugins.naslib_adapter as adapter

    NO_NASLIB = None
except ImportError as e:
    adapter, NO_NASLIB = None, str(e)

needs_naslib = pytest.mark.skipif(adapter is None, reason=f"NASLib is not importable: {NO_NASLIB}")

ARCH = (2, 3, 0, 4, 1, 2)  # every NB201 op but `none` on a used edge, and one `none`
# the spaces NASLib and we share, each with a dataset of its
SPACES = [("nasbench201", "cifar10"), ("nasbench301", "cifar10"), ("nasbench101", "cifar10"),
          ("transbench101_micro", "class_scene"), ("transbench101_macro", "class_scene")]


def _gaussian(batch_size: int) -> BatchSource:
    # 8x8 inputs: the NB201 skeleton takes any size, and small ones keep the full-width nets fast
    return ImageBatches("cifar10", batch_size=batch_size, seed=3, data="gaussian", resolution=8)


def _nb201_graph(arch=ARCH, seed: int = 0):
    from naslib.search_spaces import NasBench201SearchSpace

    torch.manual_seed(seed)
    graph = NasBench201SearchSpace(n_classes=10)
    graph.set_op_indices(list(arch))
    graph.parse()
    return graph


def _ours_with_weights_of(graph) -> torch.nn.Module:
    """Our NB201 network for the graph's op indices, holding the graph's weights and buffers."""
    model = get_space("nasbench201").build_model(tuple(graph.get_op_indices()), "cifar10")
    pairs = list(zip(graph.parameters(), model.parameters())) + list(zip(graph.buffers(), model.buffers()))
    assert len(list(graph.parameters())) == len(list(model.parameters()))
    with torch.no_grad():
        for src, dst in pairs:
            assert src.shape == dst.shape
            dst.copy_(src)
    return model


def _loader(batches: BatchSource, n: int) -> list:
    # NASLib's own measures view() activations, which needs contiguous (not channels-last) inputs.
    # References are scored on these same tensors: the memory layout alone moves ZiCo by ~2e-4
    # relative here (float32 rounding of the convolutions, amplified where a gradient's spread
    # over two batches is small)
    return [tuple(t.contiguous() for t in batches.batch(i)) for i in range(n)]


@needs_naslib
@pytest.mark.parametrize("name, n_batches", [("zico", 2), ("nasi", 1), ("ntk_lambda_min", 1)])
def test_zerocost_matches_our_predictor_on_the_same_weights(name, n_batches):
    from naslib.predictors import ZeroCost

    graph = _nb201_graph()
    batches = _gaussian(4)
    zc = ZeroCost(method_type=name)
    zc.num_imgs_or_batches = n_batches  # NASLib concatenates these; our measure cuts them apart again
    loader = _loader(batches, n_batches)
    theirs = zc.query(graph, dataloader=loader)
    reference = adapter.FixedBatches(loader)
    ours = get_predictor(name).score(_ours_with_weights_of(graph), reference, F.cross_entropy)
    assert math.isfinite(ours) and ours != 0.0
    assert theirs == pytest.approx(ours, rel=1e-9)
    # the weights matter: a network of the same cell with other weights scores otherwise
    other = get_predictor(name).score(_ours_with_weights_of(_nb201_graph(seed=1)), reference, F.cross_entropy)
    assert other != pytest.approx(ours, rel=1e-6)


@needs_naslib
def test_measures_survive_find_measures_next_to_naslibs_own():
    from naslib.predictors.utils.pruners import predictive

    graph = _nb201_graph()
    batches = _gaussian(4)
    loader = _loader(batches, 2)
    info = ("random", 2, 10)
    arrays = predictive.find_measures_arrays(graph, loader, info, torch.device("cpu"), loss_fn=F.cross_entropy,
                                             measure_names=["zico", "snip"])
    assert set(arrays) == {"zico", "snip"}
    assert all(isinstance(t, torch.Tensor) for t in arrays["zico"])
    reference = get_predictor("zico").score(_ours_with_weights_of(graph), adapter.FixedBatches(loader), F.cross_entropy)
    assert predictive.find_measures(graph, loader, info, torch.device("cpu"), F.cross_entropy,
                                    measure_names=["zico"]) == pytest.approx(reference, rel=1e-9)
    # NASLib's own snip on the same 8 samples: ours (SNIP on one batch of all of them) agrees
    whole = adapter.FixedBatches([(torch.cat([x for x, _ in loader]), torch.cat([y for _, y in loader]))])
    snip = get_predictor("snip").score(_ours_with_weights_of(graph), whole, F.cross_entropy)
    theirs = predictive.find_measures(graph, loader, info, torch.device("cpu"), F.cross_entropy,
                                      measure_names=["snip"], measures_arr={"snip": arrays["snip"]})
    assert theirs == pytest.approx(snip, rel=1e-6)


@needs_naslib
def test_register_twice_is_harmless_and_leaves_naslibs_measures():
    measures = adapter._naslib.measure_registry()
    naslib_snip = measures._measure_impls["snip"]
    first = adapter.register()
    impls = dict(measures._measure_impls)
    assert adapter.register() == first
    assert {"nasi", "zico"} <= set(first)
    assert not {"snip", "grasp", "synflow", "nwot", "flops", "params", "ensemble"} & set(first)
    assert measures._measure_impls == impls and measures._measure_impls["snip"] is naslib_snip
    assert all(measures.available_measures.count(n) == 1 for n in first)
    with pytest.raises(UserError, match="ranks a whole set"):
        adapter.register(["ensemble"])
    with pytest.raises(UserError, match="computes 'flops' itself"):
        adapter.register(["flops"])


@needs_naslib
def test_explicit_name_replaces_naslibs_measure_and_passes_nwot_through_unsummed():
    from naslib.predictors import ZeroCost

    measures = adapter._naslib.measure_registry()
    saved_impls, saved_names = dict(measures._measure_impls), list(measures.available_measures)
    graph = _nb201_graph()
    loader = _loader(_gaussian(8), 1)
    try:
        assert "nwot" in adapter.register(["nwot"])
        assert measures._measure_impls["nwot"] is not saved_impls["nwot"]
        assert measures.available_measures.count("nwot") == 1
        ours = ZeroCost(method_type="nwot").query(graph, dataloader=loader)
    finally:
        measures._measure_impls.clear()
        measures._measure_impls.update(saved_impls)
        measures.available_measures[:] = saved_names
    assert ours == pytest.approx(ZeroCost(method_type="nwot").query(graph, dataloader=loader), rel=1e-9)


@needs_naslib
def test_plugin_predictor_reads_one_loader_batch_per_mini_batch():
    graph = _nb201_graph()
    batches = _gaussian(4)
    loader = _loader(batches, 3)
    score = adapter.PluginZeroCost("zico").query(graph, dataloader=loader)
    reference = adapter.FixedBatches(loader[:2])
    assert score == pytest.approx(get_predictor("zico").score(graph, reference, F.cross_entropy), rel=1e-9)
    assert adapter.PluginZeroCost("nasi", batches=batches).query(graph) == pytest.approx(
        get_predictor("nasi").score(graph, batches, F.cross_entropy), rel=1e-9)
    with pytest.raises(UserError, match="reads 2 batches"):
        adapter.PluginZeroCost("zico").query(graph, dataloader=_loader(batches, 1))
    with pytest.raises(UserError, match="needs a dataloader"):
        adapter.PluginZeroCost("nasi").query(graph)
    with pytest.raises(UserError, match="ranks a whole set"):
        adapter.PluginZeroCost("ensemble")


def _bananas(zc_names: list[str], loader: list):
    """NASLib's BANANAS as far as it scores architectures with its own ZeroCost objects."""
    from fvcore.common.config import CfgNode
    from naslib.optimizers import Bananas

    search = {"epochs": 1, "k": 2, "num_init": 2, "num_ensemble": 1, "predictor_type": "bananas",
              "acq_fn_type": "its", "acq_fn_optimization": "mutation", "encoding_type": "path",
              "num_arches_to_mutate": 1, "max_mutations": 1, "num_candidates": 2, "zc_names": zc_names}
    bananas = Bananas(CfgNode({"dataset": "cifar10", "search": search}))
    bananas.train_loader = loader  # what adapt_search_space loads when `zc` is set
    return bananas


@needs_naslib
def test_batch_mode_sets_what_zico_reads_inside_naslibs_own_zerocost_objects():
    from naslib.predictors import ZeroCost

    graph = _nb201_graph()
    loader = _loader(_gaussian(4), 2)
    model = _ours_with_weights_of(graph)
    zico = get_predictor("zico")
    halves = zico.score(model, adapter.FixedBatches.split(*loader[0], 2), F.cross_entropy)
    whole = zico.score(model, adapter.FixedBatches(loader), F.cross_entropy)
    assert halves != pytest.approx(whole, rel=1e-6)
    assert adapter.batch_mode() == "split"  # the default
    assert ZeroCost(method_type="zico").num_imgs_or_batches == 1
    assert _bananas(["zico"], loader).query_zc_scores(graph)["zico"] == pytest.approx(halves, rel=1e-9)
    try:
        adapter.set_batch_mode("loader")
        assert ZeroCost(method_type="zico").num_imgs_or_batches == 2
        # one mini-batch, or NASLib's own measure: as NASLib builds them
        assert ZeroCost(method_type="nasi").num_imgs_or_batches == ZeroCost(method_type="snip").num_imgs_or_batches == 1
        assert _bananas(["zico"], loader).query_zc_scores(graph)["zico"] == pytest.approx(whole, rel=1e-9)
        with pytest.raises(UserError, match="unknown batch mode 'two'"):
            adapter.set_batch_mode("two")
        assert adapter.batch_mode() == "loader"
    finally:
        adapter.set_batch_mode("split")
    assert ZeroCost(method_type="zico").num_imgs_or_batches == 1


@needs_naslib
@pytest.mark.parametrize("space, dataset", SPACES)
def test_converters_round_trip(space, dataset):
    import numpy as np
    from naslib.search_spaces import get_search_space

    ours = get_space(space)
    arch = ours.sample(np.random.default_rng(5))
    graph = adapter.to_graph(arch, space, dataset)
    assert graph.get_type() == ours.name
    got_space, got = adapter.from_graph(graph)
    assert got_space.name == ours.name and got == arch
    # from a user's search-space object: a clone gets the architecture, the object stays blank
    blank = get_search_space(space, dataset)
    assert adapter.from_graph(adapter.to_graph(arch, blank))[1] == arch
    if space == "nasbench201":
        assert blank.op_indices is None


@needs_naslib
@pytest.mark.parametrize("space, dataset", [*SPACES[1:], ("nasbench201", "cifar100")])
def test_to_graph_accepts_a_graph_that_holds_an_architecture(space, dataset):
    import numpy as np

    ours = get_space(space)
    rng = np.random.default_rng(7)
    first, second = ours.sample(rng), ours.sample(rng)
    assert first != second
    filled = adapter.to_graph(first, space, dataset)
    filled.parse()  # built, weights and all, as NASLib's optimizers hand graphs back
    graph = adapter.to_graph(second, filled)
    assert type(graph) is type(filled) and graph.num_classes == filled.num_classes
    assert adapter.from_graph(graph)[1] == second and adapter.from_graph(filled)[1] == first
    graph.parse()  # NASLib builds the new one as any of its samples
    assert next(graph.parameters(), None) is not None


@needs_naslib
def test_from_graph_refuses_a_graph_without_architecture():
    from naslib.search_spaces import NasBench201SearchSpace

    with pytest.raises(ArchitectureError, match="holds no architecture"):
        adapter.from_graph(NasBench201SearchSpace())
    with pytest.raises(ArchitectureError):
        adapter.to_graph((0, 1, 2), "nasbench201")


def _config(tmp_path, optimizer: str, **search):
    from fvcore.common.config import CfgNode

    (tmp_path / "search").mkdir(exist_ok=True)  # NASLib's get_config_from_args makes it for the checkpoints
    return CfgNode({"search_space": "nasbench201", "dataset": "cifar10", "optimizer": optimizer, "seed": 0,
                    "save": str(tmp_path), "search": {"seed": 0, "epochs": 1, "checkpoint_freq": 1,
                                                      "progress": False, **search}})


def _fake_nb201_api() -> dict:
    """A stand-in for NASLib's NB201 benchmark pickle (not here), in its layout, with made-up
    values that differ per architecture."""
    space = get_space("nasbench201")
    data = {}
    for i, arch in enumerate(space.all()):
        data[space.to_string(arch)] = {"cifar10-valid": {"train_acc1es": [50.0 + i / 1e3],
                                                         "eval_acc1es": [40.0 + i / 1e3],
                                                         "cost_info": {"train_time": float(i)}}}
    return {"nb201_data": data}


@needs_naslib
def test_trainer_runs_our_nasi_and_returns_a_queryable_graph(tmp_path):
    from naslib.defaults.trainer import Trainer
    from naslib.search_spaces import NasBench201SearchSpace
    from naslib.search_spaces.core.query_metrics import Metric

    options = {"steps": 2, "batch_size": 4, "channels": 4, "cells": 1, "data": "gaussian"}
    config = _config(tmp_path, "nasi", **options)
    api = _fake_nb201_api()
    optimizer = adapter.NASIOptimizer(config)
    optimizer.adapt_search_space(NasBench201SearchSpace(), dataset_api=api)
    trainer = Trainer(optimizer, config, lightweight_output=True)
    trainer.search(resume_from="")
    graph = optimizer.get_final_architecture()
    assert isinstance(graph, NasBench201SearchSpace)
    # the same search run directly, on our own models, finds the same cell
    nasi = OPTIMIZERS.get("nasi")(steps=2, channels=4, cells=1)
    expected = nasi.search(get_space("nasbench201"), "cifar10", ImageBatches("cifar10", batch_size=4, seed=0,
                                                                              data="gaussian"), 0, progress=False).arch
    assert tuple(graph.get_op_indices()) == expected
    value = api["nb201_data"][get_space("nasbench201").to_string(expected)]["cifar10-valid"]["eval_acc1es"][-1]
    assert graph.query(Metric.TEST_ACCURACY, "cifar10", dataset_api=api) == value
    assert trainer.evaluate(resume_from="", dataset_api=api) == value
    assert json.loads((tmp_path / "errors.json").read_text())[1]["test_acc"] == [value]


@needs_naslib
def test_trainer_runs_zero_shot_evolution_without_a_benchmark(tmp_path):
    from naslib.defaults.trainer import Trainer
    from naslib.search_spaces import NasBench201SearchSpace

    search = {"predictor": "params", "budget": 4, "population": 2, "sample_size": 1, "data": "gaussian"}
    optimizer = adapter.make_optimizer(_config(tmp_path, "zc-evolution", **search))
    optimizer.adapt_search_space(NasBench201SearchSpace())
    trainer = Trainer(optimizer, optimizer.config, lightweight_output=True)
    trainer.search(resume_from="")
    ours = OPTIMIZERS.get("zc-evolution")(predictor=get_predictor("params"), budget=4, population=2, sample_size=1)
    expected = ours.search(get_space("nasbench201"), "cifar10", ImageBatches("cifar10", seed=0, data="gaussian"), 0,
                           progress=False)
    assert tuple(optimizer.get_final_architecture().get_op_indices()) == expected.arch
    # no benchmark: the Trainer logs NaN, nothing estimated
    assert all(math.isnan(v) for v in optimizer.train_statistics())
    with pytest.raises(UserError, match="no NASLib optimizer 'zc-ptt'"):
        adapter.make_optimizer(_config(tmp_path, "zc-ptt"))


@needs_naslib
def test_trainer_runs_zero_cost_pt(tmp_path):
    from naslib.defaults.trainer import Trainer
    from naslib.search_spaces import NasBench201SearchSpace

    search = {"predictor": "nwot", "pool": 1, "validate_rounds": 1, "channels": 2, "cells": 1, "batch_size": 4,
              "data": "gaussian"}
    optimizer = adapter.make_optimizer(_config(tmp_path, "zc-pt", **search))
    optimizer.adapt_search_space(NasBench201SearchSpace())
    Trainer(optimizer, optimizer.config, lightweight_output=True).search(resume_from="")
    ours = OPTIMIZERS.get("zc-pt")(predictor=get_predictor("nwot"), pool=1, validate_rounds=1, channels=2, cells=1)
    expected = ours.search(get_space("nasbench201"), "cifar10",
                           ImageBatches("cifar10", batch_size=4, seed=0, data="gaussian"), 0, progress=False)
    assert tuple(optimizer.get_final_architecture().get_op_indices()) == expected.arch


QUICK_NASI = {"epochs": 1, "steps": 1, "batch_size": 4, "data": "gaussian", "progress": False}


def _quick_nasi_config(tmp_path, space: str, dataset: str, seed: int, **supernet):
    """A one-step NASI config in NASLib's layout, writing under tmp_path/run."""
    config = tmp_path / "nasi.yaml"
    config.write_text(yaml.safe_dump({"search_space": space, "dataset": dataset, "optimizer": "nasi", "seed": seed,
                                      "out_dir": str(tmp_path / "run"), "search": {**QUICK_NASI, **supernet}}))
    return config


@needs_naslib
def test_naslib_run_command(tmp_path, require, shared_data, capsys, monkeypatch):
    from naslib_plugins.cli import main

    truth = require(shared_data / get_space("nasbench201").benchmark_file)
    # a misspelt option is said to be ignored, on one line, not silently left at its default
    config = _quick_nasi_config(tmp_path, "nasbench201", "cifar10", 1, channels=4, cells=1, stepz=3)
    argv = ["naslib-run", "--config-file", str(config), "--benchmark", str(truth)]
    monkeypatch.setattr(sys, "argv", ["naslib-plugins", *argv])  # what the run records as its command
    assert main(argv) == 0
    assert "naslib-plugins: warning: nasi reads no search key stepz (ignored)" in capsys.readouterr().err
    result = json.loads((tmp_path / "run/nasbench201/cifar10/nasi/1/naslib_run.json").read_text())
    assert result["accuracy_source"] == truth.name and 0 < result["test_accuracy"] < 100
    assert "search keys ignored (no nasi option): stepz" in result["notes"] and result["options"]["steps"] == 1
    assert get_space("nasbench201").to_string(result["arch"]) == result["arch_str"]
    # the data file as "$NASLIB_PLUGINS_DATA"/..., no path of this machine
    assert result["command"] == (f'naslib-plugins naslib-run --config-file {config} --benchmark "$NASLIB_PLUGINS_DATA"/'
                                 f'{truth.relative_to(shared_data)}')
    assert 0 < result["cpu_seconds"] and 0 < result["search_seconds"] and result["environment"]["device"] == "cpu"
    config.write_text("search_space: nasbench201\ndataset: cifar10\noptimizer: nasi\nseed: 0\nout_dir: x\n")
    assert main(["naslib-run", "--config-file", str(config)]) == 2


@needs_naslib
def test_naslib_run_takes_overrides_as_naslibs_runners_do(tmp_path, require, shared_data, capsys):
    """KEY VALUE pairs after the options, merged into the config with its types kept: the seed,
    the output folder and a search key here; an unknown key, a value of the wrong type or an odd
    count is one line and exit code 2, before any search."""
    from naslib_plugins.cli import main

    truth = require(shared_data / get_space("nasbench201").benchmark_file)
    config = _quick_nasi_config(tmp_path, "nasbench201", "cifar10", 1, channels=4, cells=1)
    other = tmp_path / "other"
    assert main(["naslib-run", "--config-file", str(config), "--benchmark", str(truth),
                 "seed", "2", "out_dir", str(other), "search.steps", "2"]) == 0
    result = json.loads((other / "nasbench201/cifar10/nasi/2/naslib_run.json").read_text())
    assert result["seed"] == 2 and result["options"]["steps"] == 2 and len(result["trace"]["score"]) == 2
    capsys.readouterr()
    for opts, message in ((["seed", "two"], "seed"), (["seeds", "2"], "seeds"), (["seed"], "KEY VALUE pairs"),
                          (["out_dir", "None"], "'out_dir' must be a str")):
        assert main(["naslib-run", "--config-file", str(config), *opts]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("naslib-plugins: error: config overrides") and message in err[0]
    assert not (other / "nasbench201/cifar10/nasi/0").exists()


@needs_naslib
@pytest.mark.parametrize("space, dataset, supernet", [("transbench101_micro", "class_scene", {}),
                                                      ("nasbench301", "cifar10", {"channels": 4, "cells": 1})])
def test_naslib_run_beyond_nb201_finds_what_the_search_command_finds(tmp_path, require, shared_data, capsys,
                                                                     space, dataset, supernet):
    """NASI through the Trainer on TNB micro and NB301 (issue 30): the same cell as `naslib-plugins
    search` with the same settings. Their tables hold validation metrics only (NB301's zc file 725
    cells, which a search rarely finds): the output says which it reports, and no note carries this
    machine's path to NASLib's data."""
    from naslib import utils

    from naslib_plugins.cli import main

    truth = require(shared_data / get_space(space).benchmark_file)
    config = _quick_nasi_config(tmp_path, space, dataset, 0, **supernet)
    assert main(["naslib-run", "--config-file", str(config), "--benchmark", str(truth)]) == 0
    result = json.loads((tmp_path / f"run/{space}/{dataset}/nasi/0/naslib_run.json").read_text())
    val = result["val_accuracy"]
    assert result["test_accuracy"] is None and (val is None if space == "nasbench301" else 0 < val < 100)
    assert ("  accuracy n/a" if val is None else f"val accuracy {val:.2f}") in capsys.readouterr().out
    assert not any(str(utils.get_project_root()) in note for note in result["notes"])
    options = [a for k, v in {**QUICK_NASI, **supernet}.items() if k not in ("epochs", "progress")
               for a in (f"--{k.replace('_', '-')}", str(v))]
    assert main(["search", "--optimizer", "nasi", "--space", space, "--dataset", dataset, "--seed", "0", *options,
                 "--benchmark", str(truth), "--out", str(tmp_path / "direct")]) == 0
    direct = json.loads((tmp_path / "direct/search.json").read_text())
    assert direct["runs"][0]["arch"] == result["arch"]
    # the Trainer's run summarised as the search command's, for the leaderboard: the same cell, metric
    # and rank in the table, its route in the config
    trainer = read_search(tmp_path / f"run/{space}/{dataset}/nasi/0/search.json")
    assert trainer["config"].pop("route") == "naslib-trainer" and trainer["config"] == direct["config"]
    assert {k: trainer["runs"][0][k] for k in ("arch", "val_accuracy")} == \
        {k: direct["runs"][0][k] for k in ("arch", "val_accuracy")} and trainer["rank"] == direct["rank"]
    assert trainer["command"] == result["command"] and trainer["mean_val_accuracy"] == val
    assert len(set(trainer["notes"])) == len(trainer["notes"]) and set(result["notes"]) <= set(trainer["notes"])


@needs_naslib
def test_naslibs_zero_cost_runner_reads_our_scores_after_export_zc(tmp_path, shared_data, monkeypatch):
    """`export-zc` into NASLib's data folder, then NASLib's own zero-cost runner on our proxies: it
    takes our scores and correlates them with the exported val_accuracy (NASLib's own zc files
    have no `zico` or `nasi`: KeyError)."""
    import importlib
    import pickle

    import naslib
    import naslib.utils
    from scipy import stats

    from naslib_plugins.cli import main
    from naslib_plugins.naslib_adapter.__main__ import main as run_naslib

    monkeypatch.setenv("NASLIB_PLUGINS_DATA", str(shared_data))  # val_accuracy: the NB201 benchmark file
    log = tmp_path / "scores.jsonl"
    assert main(["score", "--space", "nasbench201", "--dataset", "cifar10", "--predictors", "zico,nasi",
                 "--n-archs", "6", "--data", "gaussian", "--batch-size", "4", "--device", "cpu",
                 "--out", str(log)]) == 0
    root = tmp_path / "NASLib" / "naslib"  # NASLib's get_project_root(): the naslib package folder
    zc_file = root / "data" / "zc_nasbench201.json"
    assert main(["export-zc", "--space", "nasbench201", "--dataset", "cifar10", "--from", str(log),
                 "--out", str(zc_file)]) == 0
    exported = json.loads(zc_file.read_text())["cifar10"]
    assert len(exported) == 6

    monkeypatch.setattr(importlib.import_module("naslib.utils.get_dataset_api"), "get_project_root", lambda: root)
    # the runner loads NASLib's NB201 benchmark first, but queries it only for architectures the zc
    # file lacks, and builds CIFAR-10 loaders (a download) that scores from the file never use
    with open(root / "data" / "nb201_cifar10_full_training.pickle", "wb") as f:
        pickle.dump({}, f)
    monkeypatch.setattr(naslib.utils, "get_train_val_loaders", lambda config, mode="train": (None,) * 5)
    runner = Path(naslib.__file__).parent / "runners" / "zc" / "runner.py"
    for proxy in ("zico", "nasi"):
        config = tmp_path / f"{proxy}.yaml"
        config.write_text(textwrap.dedent(f"""\
            seed: 0
            search_space: nasbench201
            dataset: cifar10
            predictor: {proxy}
            test_size: 6
            batch_size: 4
            train_portion: 0.7
            config_type: export_zc
            out_dir: {tmp_path / 'run'}
            """))
        # as `python -m naslib_plugins.naslib_adapter naslib/runners/zc/runner.py --config-file ...`
        assert run_naslib([str(runner), "--config-file", str(config)]) == 0
        _, result = json.loads((tmp_path / f"run/export_zc/nasbench201/cifar10/{proxy}/0/scores.json").read_text())
        ours = {(entry["val_accuracy"], entry[proxy]["score"]) for entry in exported.values()}
        assert set(zip(result["full_ytest"], result["full_testpred"])) <= ours
        # NaN if NASLib's compute_scores fails (it does with scikit-learn >= 1.6)
        assert math.isfinite(result["kendalltau"])
        assert result["kendalltau"] == pytest.approx(stats.kendalltau(result["full_ytest"], result["full_testpred"])[0])
        assert result["spearman"] == pytest.approx(stats.spearmanr(result["full_ytest"], result["full_testpred"])[0])


@needs_naslib
def test_naslib_script_launcher_restores_what_it_sets(tmp_path, capsys):
    import naslib.utils

    from naslib_plugins.naslib_adapter.__main__ import main as run_naslib

    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent("""\
        import sys
        from naslib.predictors import ZeroCost
        from naslib.utils import parse_args
        print("ARGS", parse_args().config_file, sys.argv[1:], ZeroCost(method_type="zico").num_imgs_or_batches)
        """))
    argv, parse = sys.argv, naslib.utils.parse_args
    assert run_naslib(["--batch-mode", "loader", str(script), "--config-file", "c.yaml"]) == 0
    assert capsys.readouterr().out.splitlines() == ["ARGS c.yaml ['--config-file', 'c.yaml'] 2"]
    assert sys.argv is argv and naslib.utils.parse_args is parse and adapter.batch_mode() == "split"
    assert run_naslib([str(tmp_path / "none.py")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error: no NASLib script" in err[0]


def test_adapter_without_naslib_fails_with_one_clear_message():
    """Blocks `naslib` in a fresh interpreter; the rest of the package must keep working there."""
    script = textwrap.dedent("""\
        import sys
        sys.modules["naslib"] = None  # as if NASLib were not installed
        try:
            import naslib_plugins.naslib_adapter
        except ImportError as e:
            print("IMPORT", e)
        from naslib_plugins.cli import main
        from naslib_plugins.predictors import get_predictor
        print("PREDICTOR", get_predictor("zico").batches)
        print("CLI", main(["naslib-run", "--config-file", "x.yaml"]))
        """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    lines = out.stdout.splitlines()
    assert any(line.startswith("IMPORT ") and "needs NASLib" in line and "PYTHONPATH" in line for line in lines), out
    assert "PREDICTOR 2" in lines and "CLI 2" in lines, out
    errors = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("naslib-plugins: error:") and "needs NASLib" in errors[0]
