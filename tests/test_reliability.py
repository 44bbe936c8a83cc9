"""Bad input through the command line: exit code 2, one `naslib-plugins: error:` line naming the
problem, and no output file begun. A failing predictor is recorded and the run goes on.

Cases tests/test_cli.py already runs through the CLI (unknown space, predictor, dataset, data
mode; NB201 unknown op and short tuple; missing NB201 benchmark file) are not repeated here."""
from __future__ import annotations

import csv
import json
import pickle

import numpy as np
import pytest

from naslib_plugins.cli import main
from naslib_plugins.evaluation.journal import read_score_log
from naslib_plugins.predictors import PREDICTORS, Predictor

A = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"
SCORE = ["score", "--predictors", "params", "--data", "gaussian"]


def _refused(argv: list[str], out, capsys) -> str:
    """Runs the CLI; checks exit 2, a single error line and no output; returns the line."""
    capsys.readouterr()
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("naslib-plugins: error: ")
    assert not out.exists()
    return err[0]


@pytest.mark.parametrize("space, dataset, arch, message", [
    ("nasbench201", "cifar10", "|nor_conv_3x3~0|+|nor_conv_3x3~0|", "must have 3 nodes separated by '+'"),
    ("nasbench201", "cifar10", "(0, 1, 2, 3, 4, 5)", "op index 5 out of range 0..4"),
    ("nasbench201", "cifar10", "(0, 1, 2, 3, 4, 1.5)", "op index 1.5 is not an int"),
    ("nasbench101", "cifar10", "hello", "unreadable nasbench101 architecture 'hello'"),
    ("nasbench101", "cifar10", "ff940d27cbe9ed0a639a68a9c3f87283", "is an NB101 module hash"),
    ("nasbench101", "cifar10", "(1, 2, 3)", "nasbench101 tuple needs 56 ints"),
    ("nasbench101", "cifar10", "(0, 1,", "unreadable nasbench101 tuple"),
    ("nasbench301", "cifar10", "sep_conv_3x3", "unreadable nasbench301 architecture 'sep_conv_3x3'"),
    ("nasbench301", "cifar10", "Genotype(normal=[", "unreadable nasbench301 Genotype string"),
    ("nasbench301", "cifar10", "[[(0, 7), (1, 1)]]", "needs 2 cells (normal, reduce), got 1"),
    ("transbench101_micro", "class_scene", "64-41414-1_02_334", "op code 4 out of range 0..3"),
    ("transbench101_micro", "class_scene", "(1, 2, 3)", "needs 6 op codes, got 3"),
    ("transbench101_macro", "class_scene", "64-1242-bottleneck", "unreadable transbench101_macro string"),
    ("transbench101_macro", "class_scene", "(1, 2, 5, 4, 0, 0)", "code 5 out of range 1..4"),
    ("mlp_act_skip", "digits", "relu-tanh-swish|", "unknown mlp_act_skip activation 'swish'"),
    ("mlp_act_skip", "digits", "(0, 2, 4, 1, 0)", "needs 6 ints (3 activations + 3 skip bits), got 5"),
])
def test_malformed_architecture(tmp_path, capsys, space, dataset, arch, message):
    # a good architecture first: nothing is scored or written before every --arch has parsed
    good = {"nasbench201": A, "mlp_act_skip": "(0, 2, 4, 1, 0, 1)"}.get(space)
    first = ["--arch", good] if good else []
    line = _refused([*SCORE, "--space", space, "--dataset", dataset, *first, "--arch", arch],
                    tmp_path / "out.jsonl", capsys)
    assert message in line


@pytest.mark.parametrize("argv, message", [
    ([*SCORE, "--backend", "spark"], "unknown backend 'spark'; known: local, ray"),
    (["score", "--predictors", "ensemble", "--data", "gaussian"], "'ensemble' ranks a whole set of architectures"),
    (["score", "--predictors", "params,params", "--data", "gaussian"], "predictor 'params' named twice"),
    ([*SCORE, "--labels", "noisy"], "unknown label mode 'noisy'"),
    (["search", "--optimizer", "annealing", "--data", "gaussian"], "unknown optimizer 'annealing'"),
    (["correlate", "--space", "mlp_act_skip", "--dataset", "digits", "--metric", "loss"], "unknown metric"),
])
def test_unknown_name(tmp_path, capsys, argv, message):
    assert message in _refused(argv, tmp_path / "out.jsonl", capsys)


@pytest.mark.parametrize("argv, message", [
    ([*SCORE, "--all", "--arch", A], "--arch and --all exclude each other"),
    ([*SCORE, "--all", "--space", "nasbench101"], "space 'nasbench101' cannot list its architectures"),
    ([*SCORE, "--workers", "0"], "workers must be at least 1, got 0"),
    ([*SCORE, "--n-archs", "0"], "--n-archs must be at least 1, got 0"),
    ([*SCORE, "--address", "10.0.0.1:6379"], "--address needs --backend ray"),
    ([*SCORE, "--resume", "--restart"], "--resume and --restart exclude each other"),
])
def test_conflicting_or_impossible_options(tmp_path, capsys, argv, message):
    assert message in _refused(argv, tmp_path / "out.jsonl", capsys)


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return path


class _Evil:
    """Unpickling this calls open(target, "w"): it would create the file if it ran."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


def _bad_file(kind: str, tmp_path):
    """(command-line arguments naming a bad file of this kind, expected message, the file)."""
    corr = ["correlate", "--space", "nasbench201", "--predictors", "params", "--data", "gaussian", "--benchmark"]
    if kind == "missing image file":
        return [*SCORE, "--data", "real", "--images", str(tmp_path / "nope.npz")], "image file not found"
    if kind == "npz wrong shape":
        path = _npz(tmp_path / "x.npz", x_train=np.zeros((4, 32, 32), np.uint8), y_train=np.zeros(4, np.int64))
        return [*SCORE, "--data", "real", "--images", str(path)], "x_train must be uint8 of shape (N, H, W, 3)"
    if kind == "npz wrong labels":
        path = _npz(tmp_path / "x.npz", x_train=np.zeros((4, 8, 8, 3), np.uint8), y_train=np.zeros(3, np.int64))
        return [*SCORE, "--data", "real", "--images", str(path)], "y_train must have shape (4,)"
    if kind == "npz missing arrays":
        path = _npz(tmp_path / "x.npz", images=np.zeros((4, 8, 8, 3), np.uint8))
        return [*SCORE, "--data", "real", "--images", str(path)], "missing arrays ['x_train', 'y_train']"
    if kind == "npz truncated":
        path = _npz(tmp_path / "x.npz", x_train=np.zeros((4, 8, 8, 3), np.uint8), y_train=np.zeros(4, np.int64))
        path.write_bytes(path.read_bytes()[:100])
        return [*SCORE, "--data", "real", "--images", str(path)], "not a readable .npz"
    if kind == "missing benchmark file":
        return (["correlate", "--space", "mlp_act_skip", "--dataset", "digits", "--benchmark",
                 str(tmp_path / "nope.csv")], "benchmark file not found")
    if kind == "truncated JSON":
        path = tmp_path / "zc_nasbench201.json"
        path.write_text(json.dumps({"cifar10": {"(0, 1, 2, 3, 4, 1)": {"val_accuracy": 50.0}}})[:-5])
        return [*corr, str(path)], "truncated or invalid JSON"
    if kind == "CSV missing its columns":
        path = tmp_path / "t.csv"
        path.write_text(f"arch_str,acc\n{A},90\n")
        return [*corr, str(path)], "needs an architecture column"
    if kind == "CSV bad number":
        path = tmp_path / "t.csv"
        path.write_text(f"arch_str,test_accuracy\n{A},ninety\n")
        return [*corr, str(path)], "not a number"
    if kind == "truncated pickle":
        path = tmp_path / "nb201_cifar10_full_training.pickle"
        path.write_bytes(pickle.dumps({A: {"cifar10-valid": {"eval_acc1es": [1.0, 2.0]}}})[:-3])
        return [*corr, str(path)], "truncated or corrupt pickle"
    if kind == "pickle with a forbidden global":
        path = tmp_path / "nb201_cifar10_full_training.pickle"
        path.write_bytes(pickle.dumps({A: _Evil(str(tmp_path / "created_by_pickle.txt"))}))
        return [*corr, str(path)], "refused to unpickle (forbidden global io.open)"
    raise AssertionError(kind)


FILE_CASES = ["missing image file", "npz wrong shape", "npz wrong labels", "npz missing arrays", "npz truncated",
              "missing benchmark file", "truncated JSON", "CSV missing its columns", "CSV bad number",
              "truncated pickle", "pickle with a forbidden global"]


@pytest.mark.parametrize("kind", FILE_CASES)
def test_bad_file(tmp_path, capsys, kind):
    argv, message = _bad_file(kind, tmp_path)
    assert message in _refused(argv, tmp_path / "out", capsys)
    assert not (tmp_path / "created_by_pickle.txt").exists()  # refused, not executed


def test_resume_of_a_file_that_is_no_score_log(tmp_path, capsys):
    out = tmp_path / "other.jsonl"
    out.write_text('{"hash": "x"}\n')
    capsys.readouterr()
    assert main([*SCORE, "--resume", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"naslib-plugins: error: {out}: not a score log (no header line); pass --restart to overwrite it, "
                   "or pick another --out"]
    assert out.read_text() == '{"hash": "x"}\n'


class _Raising(Predictor):
    def score(self, model, batches, loss_fn):
        raise RuntimeError("exploded on purpose")


class _NaN(Predictor):
    def score(self, model, batches, loss_fn):
        return float("nan")


class _Fixed(Predictor):
    """What `raising` scores once its cause is fixed."""

    def score(self, model, batches, loss_fn):
        return float(sum(p.numel() for p in model.parameters())) + 0.5


@pytest.mark.parametrize("command", ["score", "correlate", "correlate from scores.csv"])
def test_retry_failed_scores_the_failed_architectures_again_and_keeps_the_rest(tmp_path, monkeypatch, capsys,
                                                                              command):
    monkeypatch.setitem(PREDICTORS._items, "raising", _Raising)
    out = tmp_path / ("log.jsonl" if command == "score" else "run")
    argv = [command.split()[0], "--space", "mlp_act_skip", "--dataset", "digits", "--predictors", "params,raising",
            "--n-archs", "4", "--out", str(out)]
    assert main(argv) == 1
    log = out if command == "score" else out / "scores.jsonl"
    _, before, _, _ = read_score_log(log)
    if command == "correlate from scores.csv":
        log.unlink()  # a committed run: its scores.csv and correlation.json only
    monkeypatch.setitem(PREDICTORS._items, "raising", _Fixed)
    assert main(argv) == 1  # a plain resume keeps the failed records
    monkeypatch.setattr(_Fixed, "score", lambda *a: pytest.fail("params' records were scored again"))
    assert main([*argv, "--restart", "--retry-failed"]) == 2
    monkeypatch.undo()
    monkeypatch.setitem(PREDICTORS._items, "raising", _Fixed)
    capsys.readouterr()
    assert main([*argv, "--retry-failed"]) == 0
    assert "scoring again the 4 architecture(s) where a predictor failed" in capsys.readouterr().err \
        or command == "correlate from scores.csv"
    if command == "score":
        _, records, _, _ = read_score_log(log)
        after = {k: (r["scores"]["params"], r["scores"]["raising"], r["status"]["raising"]) for k, r in records.items()}
    else:
        with open(out / "scores.csv") as f:
            after = {r["hash"]: (float(r["params"]), float(r["raising"]), r["raising_status"])
                     for r in csv.DictReader(f)}
        result = json.loads((out / "correlation.json").read_text())
        assert (result["predictors"]["raising"]["n_failed"], result["predictors"]["raising"]["n_valid"]) == (0, 4)
    assert sorted(after) == sorted(before)
    for key, (params, raising, status) in after.items():
        assert params == before[key]["scores"]["params"]
        assert status == "ok" and raising == pytest.approx(params * 1e6 + 0.5, rel=1e-4)


def test_failing_predictors_are_recorded_and_the_run_goes_on(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(PREDICTORS._items, "raising", _Raising)
    monkeypatch.setitem(PREDICTORS._items, "nan", _NaN)
    out = tmp_path / "out.jsonl"
    # every architecture scored and saved; exit 1 since two predictors' results are empty
    assert main(["score", "--space", "mlp_act_skip", "--dataset", "digits", "--predictors", "raising,nan,params",
                 "--n-archs", "3", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "3 with a failed predictor" in err
    assert "naslib-plugins: error: raising failed on every architecture" in err
    assert "naslib-plugins: error: nan failed on every architecture" in err
    _, records, _, _ = read_score_log(out)
    assert len(records) == 3
    for r in records.values():
        assert r["status"] == {"raising": "failed", "nan": "failed", "params": "ok"}
        assert r["reason"] == {"raising": "RuntimeError: exploded on purpose", "nan": "non-finite score nan"}
        assert r["scores"]["raising"] is None and r["scores"]["nan"] is None and r["scores"]["params"] > 0


@pytest.mark.parametrize("command, entry, message", [
    ("correlate", 'restart: "false"', "restart: expected true or false, got 'false' (str)"),
    ("search", "drop_none: 'no'", "drop_none: expected true or false, got 'no' (str)"),
    ("correlate", "n-archs: 3.5", "n-archs: expected an integer, got 3.5 (float)"),
    ("correlate", "seed: true", "seed: expected an integer, got True (bool)"),
    ("correlate", "workers: null", "workers: null is allowed only for options without a default (this one's is 1)"),
    ("search", "mu: fast", "mu: expected a number, got 'fast' (str)"),
    ("correlate", "out: 123", "out: expected a string or a list of strings, got 123 (int)"),
    ("correlate", "labels: true", "labels: expected a string or a list of strings, got True (bool)"),
    ("search", "seeds: {0: 4}", "seeds: expected a string, an integer or a list of them, got {0: 4} (dict)"),
    ("correlate", "hvp: approx", "hvp: expected one of fd, exact, got 'approx' (str)"),
    ("correlate", 'images: "x\\0y"', "images: expected text without NUL characters, got 'x\\x00y' (str)"),
])
def test_config_value_of_the_wrong_type(tmp_path, capsys, command, entry, message):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"space: mlp_act_skip\ndataset: digits\n{entry}\n")
    line = _refused([command, "--config", str(cfg)], tmp_path / "out", capsys)
    assert line == f"naslib-plugins: error: config file {cfg}: {message}"


def test_config_values_are_taken_as_the_options_take_them(tmp_path):
    from naslib_plugins.cli import _load_config, build_parser

    parser = build_parser()
    cfg = tmp_path / "c.yaml"
    cfg.write_text("drop-none: false\nmu: 2\nseeds: 0\nsteps: 3\nbenchmark: null\nrestart: true\n")
    assert _load_config(str(cfg), parser.subcommands["search"]) == {
        "drop_none": False, "mu": 2.0, "seeds": "0", "steps": 3, "benchmark": None, "restart": True}
    cfg.write_text("predictors: [zico, snip]\nscores-from: [a, b.jsonl]\nhvp: exact\n")
    assert _load_config(str(cfg), parser.subcommands["correlate"]) == {
        "predictors": "zico,snip", "scores_from": ["a", "b.jsonl"], "hvp": "exact"}
    cfg.write_text("scores-from: a\n")
    assert _load_config(str(cfg), parser.subcommands["correlate"]) == {"scores_from": ["a"]}
