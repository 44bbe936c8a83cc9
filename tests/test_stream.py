"""`score --out`: streamed, resumable after kill -9, identical across runs, workers and backends."""
from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from naslib_plugins.cli import main
from naslib_plugins.evaluation.correlate import sample_keys
from naslib_plugins.evaluation.ground_truth import default_benchmark, load_ground_truth
from naslib_plugins.evaluation.journal import read_score_log
from naslib_plugins.spaces import get_space

# small and fast: ~10 NB201 architectures a second with batch 2 (no data file needed)
ARGS = ["score", "--space", "nasbench201", "--dataset", "cifar10", "--predictors", "params,synflow",
        "--batch-size", "2", "--data", "gaussian", "--seed", "3", "--n-archs", "40"]


def _log(path):
    header, records, good, size = read_score_log(path)
    assert good == size  # no torn line left behind
    lines = path.read_text().splitlines()[1:]
    assert len(lines) == len(records)  # every architecture exactly once
    return header, {h: r["scores"] for h, r in records.items()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    path = tmp_path_factory.mktemp("ref") / "ref.jsonl"
    assert main([*ARGS, "--out", str(path)]) == 0
    return path


def test_uninterrupted_run_has_header_and_distinct_architectures(reference):
    header, scores = _log(reference)
    assert header == {"space": "nasbench201", "dataset": "cifar10", "predictors": ["params", "synflow"], "seed": 3,
                      "batch_size": 2, "labels": "true", "data": "gaussian", "selection": "random 40"}
    assert len(scores) == 40
    assert all(set(s) == {"params", "synflow"} and None not in s.values() for s in scores.values())


def test_kill_9_then_resume_equals_uninterrupted_run(tmp_path, reference):
    out = tmp_path / "killed.jsonl"
    # one torch thread, as in this process (conftest), so synflow's float sums match bit for bit
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "naslib_plugins", *ARGS, "--out", str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_text().count("\n") >= 6:  # header + 5 records
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    _, partial, _, _ = read_score_log(out)
    assert 5 <= len(partial) < 40
    with open(out, "a") as f:
        f.write('{"arch_str": "|nor_conv')  # and a torn write, as a kill during write leaves
    assert main([*ARGS, "--out", str(out), "--resume"]) == 0
    assert _log(out) == _log(reference)


def _first(n, reference):
    """The reference's scores of its first n architectures: a sample of n draws the same ones first."""
    _, scores = _log(reference)
    return dict(list(scores.items())[:n])


def test_workers_2_give_the_same_scores_as_workers_1(tmp_path, reference):
    out = tmp_path / "w2.jsonl"
    assert main([*ARGS, "--n-archs", "12", "--out", str(out), "--workers", "2"]) == 0
    assert _log(out)[1] == _first(12, reference)


@pytest.mark.parametrize("change, named", [(["--seed", "4"], "seed"), (["--batch-size", "4"], "batch_size"),
                                           (["--predictors", "params"], "predictors"),
                                           (["--labels", "random"], "labels")])
def test_resume_with_other_settings_is_refused(tmp_path, reference, capsys, change, named):
    out = tmp_path / "copy.jsonl"
    shutil.copy(reference, out)
    before = out.read_bytes()
    assert main([*ARGS, *change, "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("naslib-plugins: error: ") and f"other settings ({named})" in err[-1]
    assert out.read_bytes() == before


def test_an_existing_log_is_resumed_not_overwritten(tmp_path, reference, capsys):
    out = tmp_path / "copy.jsonl"
    shutil.copy(reference, out)
    assert main([*ARGS, "--out", str(out)]) == 0
    assert "40 architectures (40 already there)" in capsys.readouterr().err
    assert out.read_bytes() == reference.read_bytes()


def test_all_needs_an_enumerable_space(tmp_path, capsys):
    out = tmp_path / "all.jsonl"
    assert main(["score", "--space", "nasbench301", "--all", "--predictors", "params", "--data", "gaussian",
                 "--out", str(out)]) == 2
    assert "--all: space 'nasbench301' cannot list its architectures" in capsys.readouterr().err
    assert not out.exists()


def test_correlate_reads_a_score_log(tmp_path, capsys):
    space = get_space("mlp_act_skip")
    truth = load_ground_truth(default_benchmark(space), space, "digits", "test_accuracy")
    keys = sample_keys(list(truth.values), 5, 0)
    common = ["--space", "mlp_act_skip", "--dataset", "digits", "--predictors", "params,synflow", "--seed", "0",
              "--batch-size", "8"]
    log = tmp_path / "scores.jsonl"
    assert main(["score", *common, *[a for k in keys for a in ("--arch", k)], "--out", str(log)]) == 0
    capsys.readouterr()
    assert main(["correlate", *common, "--n-archs", "5", "--scores-from", str(log), "--out", str(tmp_path / "c")]) == 0
    assert "scoring now: nothing" in capsys.readouterr().err
    _, scores = _log(log)
    with open(tmp_path / "c" / "scores.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["hash"] for r in rows) == sorted(keys)
    for row in rows:
        assert float(row["params"]) == scores[row["hash"]]["params"]
        assert float(row["synflow"]) == scores[row["hash"]]["synflow"]


def test_ray_backend_gives_the_same_scores_with_the_batches_sent_by_value(tmp_path, reference, cifar_npz):
    """Through the CLI, and with the image file gone before any task runs: the drawn batches travel
    through the object store. One local Ray instance for both (each start costs tens of seconds)."""
    pytest.importorskip("ray", reason="Ray not installed (the optional extra: pip install '.[ray]')")
    from naslib_plugins.data.sources import make_batches
    from naslib_plugins.evaluation.scoring import (
        ScoringJob,
        distinct_sample,
        make_predictors,
        ray_session,
        score_stream,
    )

    images = tmp_path / "images.npz"
    shutil.copy(cifar_npz, images)
    space = get_space("nasbench201")
    batches = make_batches("cifar10", batch_size=4, seed=0, images=images)
    job = ScoringJob(space, "cifar10", make_predictors(["zico", "params"]), batches, 0, {"C": 4, "N": 1})
    archs = distinct_sample(space, 4, 0)
    local = {r["hash"]: r["scores"] for r in score_stream(job, archs)}  # draws batches 0 and 1 here
    images.unlink()
    with ray_session("ray", None, 2):
        import ray

        out = tmp_path / "ray.jsonl"
        assert main([*ARGS, "--n-archs", "12", "--out", str(out), "--workers", "2", "--backend", "ray"]) == 0
        assert ray.is_initialized()  # the CLI joined the open session and left it open
        assert _log(out)[1] == _first(12, reference)
        remote = {r["hash"]: r["scores"] for r in score_stream(job, archs, workers=2, backend="ray", chunk_size=2)}
    assert remote == local
    assert not ray.is_initialized()


def test_ray_joins_the_cluster_named_by_ray_address(tmp_path, reference, monkeypatch):
    """As under `ray job submit`: RAY_ADDRESS names a running cluster, which is joined without
    asking it for CPUs (ray.init refuses num_cpus when connecting)."""
    pytest.importorskip("ray", reason="Ray not installed (the optional extra: pip install '.[ray]')")
    ray_cli = shutil.which("ray")
    if ray_cli is None:
        pytest.skip("the ray command is not on PATH")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    started = subprocess.run([ray_cli, "start", "--head", "--num-cpus", "2", "--include-dashboard", "false",
                              "--port", "6391", "--disable-usage-stats"], env=env, capture_output=True, text=True)
    assert started.returncode == 0, started.stderr[-2000:]
    try:
        monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6391")
        out = tmp_path / "cluster.jsonl"
        assert main([*ARGS, "--n-archs", "6", "--out", str(out), "--backend", "ray"]) == 0
        assert _log(out)[1] == _first(6, reference)
    finally:
        subprocess.run([ray_cli, "stop", "--force"], env=env, capture_output=True)
