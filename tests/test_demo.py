"""The digits mini-benchmark (training recipe, resumable table, packaged ground truth) and the demo."""
from __future__ import annotations

import csv
import json
import sys

from naslib_plugins.cli import main
from naslib_plugins.evaluation import minibench
from naslib_plugins.evaluation.ground_truth import default_benchmark, load_ground_truth
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.mlp_act_skip import TABLE

FAST = dict(minibench.RECIPE, epochs=1)


def test_training_is_seeded_and_learns():
    space = get_space("mlp_act_skip")
    arch = "relu-relu-relu|0>2"
    a = minibench.train_once(space, arch, seed=0, recipe=FAST)
    b = minibench.train_once(space, arch, seed=0, recipe=FAST)
    c = minibench.train_once(space, arch, seed=1, recipe=FAST)
    assert a["test_accuracy"] == b["test_accuracy"] and a["final_loss"] == b["final_loss"]
    assert a["final_loss"] != c["final_loss"]
    assert a["test_accuracy"] > 50  # ten classes: chance is 10%


def test_table_resumes_and_reads_back_as_ground_truth(tmp_path, monkeypatch):
    monkeypatch.setattr(minibench, "RECIPE", FAST)
    space = get_space("mlp_act_skip")
    out = tmp_path / "table.csv"
    assert minibench.make_table(space, out, limit=3) == 3
    log = out.with_suffix(".jsonl")
    first = log.read_text().splitlines()
    # a torn last line from a kill is dropped and that architecture trained again
    log.write_text("\n".join(first[:-1]) + "\n" + first[-1][:10])
    assert minibench.make_table(space, out, limit=3) == 3
    again = log.read_text().splitlines()
    assert again[:-1] == first[:-1] and json.loads(again[-1])["hash"] == json.loads(first[-1])["hash"]
    lines = out.read_text().splitlines()
    assert lines[0].startswith("# mlp_act_skip") and lines[1].startswith("# recipe: ")
    truth = load_ground_truth(out, space, "digits", "test_accuracy")
    assert len(truth) == 3
    rows = list(csv.DictReader(lines[2:]))
    assert [truth.get(r["arch"]) for r in rows] == [float(r["test_accuracy"]) for r in rows]


def test_packaged_table_covers_the_space():
    space = get_space("mlp_act_skip")
    path = default_benchmark(space)
    assert path == TABLE and path.is_file()
    truth = load_ground_truth(path, space, "digits", "test_accuracy")
    assert len(truth) == 4096 and set(truth.values) == {space.hash(a) for a in space.all()}
    assert json.loads(path.read_text().splitlines()[1][len("# recipe: "):]) == json.loads(
        json.dumps(minibench.RECIPE))
    values = list(truth.values.values())
    assert 0 <= min(values) < max(values) <= 100


def test_demo_writes_correlations_searches_and_leaderboard(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("NASLIB_PLUGINS_DATA", raising=False)  # the demo needs no downloaded file
    out = tmp_path / "demo"
    argv = ["demo", "--out", str(out), "--n-archs", "12", "--seeds", "0", "--budget", "6", "--steps", "3",
            "--batch-size", "8"]
    monkeypatch.setattr(sys, "argv", ["naslib-plugins", *argv])  # what the outputs record as the command
    assert main(argv) == 0
    corr = json.loads((out / "correlate" / "correlation.json").read_text())
    assert corr["space"] == "mlp_act_skip" and corr["n_archs"] == 12
    assert {"nasi", "zico", "ntk_lambda_min", "nwot", "ensemble"} <= set(corr["predictors"])
    for folder in ("nasi", "zc-evolution_zico", "zc-random_zico"):
        result = json.loads((out / f"search_{folder}" / "search.json").read_text())
        assert 0 <= result["runs"][0]["test_accuracy"] <= 100  # every architecture has ground truth
    board = (out / "LEADERBOARD.md").read_text()
    assert "mlp_act_skip" in board and "zc-evolution" in board
    assert all((out / "plots" / f"spearman_heatmap.{e}").stat().st_size > 0 for e in ("png", "pdf"))
    text = capsys.readouterr().out
    assert "the space's best test accuracy" in text
    # verify re-runs the demo's correlate/ as the correlate it is (its batch of 8, not the default 64)
    assert main(["verify", str(out), "--sample", "3"]) == 0
    assert "1 runs: 0 with a score beyond each predictor's tolerance, 0 not re-run" in capsys.readouterr().out
