"""Devices: resolution of --device, and the CPU path through the device plumbing (the GPU figures
come from perf/gpu_check.py on a machine that has one)."""
from __future__ import annotations

import json
import pickle

import pytest
import torch

from naslib_plugins.cli import main
from naslib_plugins.data.batches import DeviceBatches, ImageBatches, on_device
from naslib_plugins.device import environment, resolve_device
from naslib_plugins.errors import UserError
from naslib_plugins.evaluation.scoring import make_predictors, score_architecture
from naslib_plugins.spaces import get_space


def test_auto_is_the_first_gpu_or_the_cpu():
    expected = "cuda:0" if torch.cuda.is_available() else "cpu"
    assert str(resolve_device("auto")) == expected == str(resolve_device(None))
    assert resolve_device("CPU") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
@pytest.mark.parametrize("spec", ["cuda", "cuda:0", "cuda:7"])
def test_a_missing_gpu_is_an_error_not_a_silent_cpu_run(spec):
    with pytest.raises(UserError, match="CUDA"):
        resolve_device(spec)


@pytest.mark.parametrize("spec", ["gpu", "tpu:0", "cuda:x"])
def test_unknown_devices_are_named(spec):
    with pytest.raises(UserError, match="device"):
        resolve_device(spec)


def test_environment_records_device_torch_and_cpu_kernels():
    assert environment(torch.device("cpu")) == {"device": "cpu", "torch": torch.__version__,
                                                "cpu_capability": torch.backends.cpu.get_cpu_capability()}


def test_device_batches_copy_once_and_pickle():
    source = ImageBatches("cifar10", batch_size=4, seed=2, data="gaussian", resolution=8)
    assert on_device(source, torch.device("cpu")) is source
    moved = DeviceBatches(source, torch.device("cpu"))
    x, y = moved.batch(1)
    assert torch.equal(x, source.batch(1)[0]) and torch.equal(y, source.batch(1)[1])
    assert moved.batch(1)[0] is x  # kept, so predictors sharing a batch share one copy
    clone = pickle.loads(pickle.dumps(moved))
    assert torch.equal(clone.batch(1)[0], x) and clone.settings() == source.settings()


def test_scores_through_the_device_path_equal_the_plain_ones():
    space = get_space("nasbench201")
    batches = ImageBatches("cifar10", batch_size=4, seed=0, data="gaussian")
    predictors = make_predictors(["nasi", "zico", "synflow", "flops", "nwot"])
    size = {"C": 4, "N": 1}
    plain = score_architecture(space, (2, 3, 0, 4, 2, 3), "cifar10", predictors, batches, 0, size)
    moved = score_architecture(space, (2, 3, 0, 4, 2, 3), "cifar10", predictors, batches, 0, size,
                               device=resolve_device("cpu"))
    assert plain["scores"] == moved["scores"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_cli_refuses_a_device_that_is_not_there(capsys):
    assert main(["score", "--space", "mlp_act_skip", "--dataset", "digits", "--device", "cuda:1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "CUDA" in err[0]


def test_search_records_its_environment(tmp_path):
    out = tmp_path / "s"
    assert main(["search", "--optimizer", "zc-random", "--space", "mlp_act_skip", "--dataset", "digits",
                 "--predictor", "synflow", "--budget", "3", "--out", str(out), "--device", "cpu"]) == 0
    assert json.loads((out / "search.json").read_text())["environment"] == environment(torch.device("cpu"))


@pytest.mark.parametrize("extra, message", [(["--gpus-per-task", "1", "--device", "cpu"], "shares CUDA devices"),
                                            (["--gpus-per-task", "-1", "--backend", "ray"], "0 or more")])
def test_a_gpu_share_is_checked_before_anything_runs(extra, message, capsys):
    assert main(["score", "--space", "mlp_act_skip", "--dataset", "digits", *extra]) == 2
    assert message in capsys.readouterr().err


def test_the_local_pool_fills_the_gpus_in_order():
    from naslib_plugins.evaluation.scoring import pool_gpu

    assert [pool_gpu(k, 0.25) for k in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [pool_gpu(k, 1.0) for k in range(3)] == [0, 1, 2]
    assert [pool_gpu(k, 1 / 3) for k in range(6)] == [0, 0, 0, 1, 1, 1]


def test_batches_already_on_the_device_are_not_wrapped_again():
    source = ImageBatches("cifar10", batch_size=2, seed=0, data="gaussian", resolution=8)
    moved = DeviceBatches(source, torch.device("meta"))
    assert on_device(moved, torch.device("meta")) is moved
    assert on_device(moved, torch.device("cpu")) is moved
