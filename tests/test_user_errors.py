"""What a user can get wrong is one `naslib-plugins: error:` line naming the file or option, and exit
status 2; never a traceback, and never a run that goes on with a setting silently ignored or
misread. A run whose results for some predictor are empty exits 1.

Cases tests/test_reliability.py and tests/test_crash_safety.py run already (unknown names, malformed
architectures, config values of the wrong type, truncated files) are not repeated here."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from naslib_plugins.cli import main
from naslib_plugins.predictors import PREDICTORS, Predictor

MLP = ["--space", "mlp_act_skip", "--dataset", "digits", "--predictors", "params"]
NB201 = ["--space", "nasbench201", "--predictors", "params", "--data", "gaussian"]
TNB = ["--space", "transbench101_micro", "--dataset", "class_scene", "--predictors", "params", "--data", "gaussian"]
BINARY = bytes(range(256))  # not UTF-8: 0x80 cannot start a character
LATIN1 = "n-archs: 3\nlabels: caf\xe9\n".encode("latin-1")  # text, in another encoding


def _file(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def _images(path: Path, labels: np.ndarray) -> str:
    np.savez(path, x_train=np.zeros((len(labels), 32, 32, 3), np.uint8), y_train=labels)
    return str(path)


def _log_with_header(path: Path, header: object) -> str:
    path.write_text(json.dumps({"header": header}) + "\n")
    return str(path)


def _case(kind: str, t: Path) -> tuple[list[str], str]:
    """(the command line, what its error line must say) of each kind of mistake."""
    out = str(t / "out.jsonl")
    if kind == "read-only output folder":
        # sysfs refuses to create a file even for root, for whom a folder's permissions are no bar
        return ["score", *MLP, "--out", "/sys/naslib-plugins-test.jsonl"], "/sys/naslib-plugins-test.jsonl"
    if kind == "--out inside a file":
        (t / "a_file").write_text("x")
        return ["score", *MLP, "--out", str(t / "a_file" / "out.jsonl")], f"{t / 'a_file'} is not a folder"
    if kind == "binary config":
        return ["correlate", "--config", _file(t / "c.yaml", BINARY)], f"config file {t / 'c.yaml'}: not UTF-8 text"
    if kind == "latin-1 config":
        return ["correlate", "--config", _file(t / "c.yaml", LATIN1)], f"config file {t / 'c.yaml'}: not UTF-8 text"
    if kind == "binary CSV benchmark":
        return (["correlate", *MLP, "--benchmark", _file(t / "b.csv", BINARY), "--out", str(t / "o")],
                f"benchmark file {t / 'b.csv'}: not UTF-8 text")
    if kind == "binary JSON benchmark":
        return (["correlate", *NB201, "--benchmark", _file(t / "zc_nasbench201.json", BINARY), "--out", str(t / "o")],
                f"benchmark file {t / 'zc_nasbench201.json'}: not UTF-8 text")
    if kind == "binary search benchmark":
        return (["search", "--optimizer", "zc-random", *MLP[:4], "--predictor", "params", "--benchmark",
                 _file(t / "b.csv", BINARY), "--out", str(t / "o")], f"benchmark file {t / 'b.csv'}: not UTF-8 text")
    if kind == "binary zc file":
        return (["naslib-agreement", *NB201, "--zc-file", _file(t / "zc.json", BINARY), "--out", str(t / "o")],
                f"zc file {t / 'zc.json'}: not UTF-8 text")
    if kind == "binary anchors file":
        (t / "results").mkdir()
        return (["leaderboard", str(t / "results"), "--anchors", _file(t / "anchors.md", BINARY)],
                f"anchors file {t / 'anchors.md'}: not UTF-8 text")
    if kind == "log header a list":
        return ["score", *MLP, "--resume", "--out", _log_with_header(t / "log.jsonl", [1, 2])], "not a score log"
    if kind == "log header a string":
        return ["score", *MLP, "--resume", "--out", _log_with_header(t / "log.jsonl", "x")], "not a score log"
    if kind == "negative --seed":
        return ["score", *MLP, "--seed", "-1", "--out", out], "--seed -1: seeds run from 0 to 4294967295"
    if kind == "--seed past what torch takes":
        return ["correlate", *MLP, "--seed", str(2**64), "--out", str(t / "o")], f"--seed {2**64}: seeds run from 0"
    if kind == "negative seed in --seeds":
        return (["search", "--optimizer", "zc-random", *MLP[:4], "--predictor", "params", "--seeds", "0,-3", "--out",
                 str(t / "o")], "bad seed '-3' in --seed '0,-3'")
    if kind == "negative seed in a config":
        cfg = _file(t / "c.yaml", b"space: mlp_act_skip\ndataset: digits\nseed: -2\n")
        return ["correlate", "--config", cfg, "--out", str(t / "o")], "--seed -2: seeds run from 0"
    # settings that would otherwise be ignored or misread without a word
    if kind.startswith("--images labels"):
        labels = {"out of range": np.array([0, 3, 10, 2]), "negative": np.array([0, -1, 2, 3]),
                  "NaN": np.array([0.0, np.nan, 1.0, 2.0]), "strings": np.array(["cat", "dog", "cat", "ship"])}
        path = _images(t / "x.npz", labels[kind.split(" labels ")[1]])
        return ["score", *NB201, "--data", "real", "--images", path, "--out", out], f"{path}: y_train must hold"
    if kind == "--resolution where the input size is fixed":
        return ["score", *NB201, "--resolution", "64", "--out", out], "--resolution 64: cifar10 has a fixed input size"
    if kind == "--resolution of flat inputs":
        return ["score", *MLP, "--resolution", "8", "--out", out], "--resolution 8: digits has a fixed input size"
    if kind == "--resolution 0":
        return ["score", *TNB, "--resolution", "0", "--out", out], "resolution 0 too small for class_scene"
    if kind == "negative --resolution":
        return ["score", *TNB, "--resolution", "-32", "--out", out], "resolution -32 too small for class_scene"
    if kind == "--n-archs 0 for correlate":
        return ["correlate", *MLP, "--n-archs", "0", "--out", str(t / "o")], "--n-archs must be at least 1, got 0"
    if kind == "negative --n-archs for correlate":
        return ["correlate", *MLP, "--n-archs", "-3", "--out", str(t / "o")], "--n-archs must be at least 1, got -3"
    if kind == "n_archs: null in a config":
        cfg = _file(t / "c.yaml", b"space: mlp_act_skip\ndataset: digits\nn_archs: null\n")
        return ["correlate", "--config", cfg, "--out", str(t / "o")], "n_archs: null is allowed only for options"
    if kind.startswith("dangling symbolic link as --out"):
        os.symlink(t / "nowhere" / "target", t / "link")
        command = ["score", *MLP] if kind.endswith("score") else ["correlate", *MLP, "--n-archs", "3"]
        return [*command, "--out", str(t / "link")], f"--out {t / 'link'} is a symbolic link to {t / 'nowhere'}"
    if kind == "binary scores.csv for --scores-from":
        run = t / "earlier"
        run.mkdir()
        (run / "correlation.json").write_text(json.dumps({"space": "mlp_act_skip", "dataset": "digits"}))
        _file(run / "scores.csv", BINARY)
        return (["correlate", *MLP, "--n-archs", "3", "--scores-from", str(run), "--out", str(t / "o")],
                f"scores file {run / 'scores.csv'}: not UTF-8 text")
    raise AssertionError(kind)


USER_ERRORS = ["read-only output folder", "--out inside a file", "binary config", "latin-1 config",
               "binary CSV benchmark", "binary JSON benchmark", "binary search benchmark", "binary zc file",
               "binary anchors file", "log header a list", "log header a string", "negative --seed",
               "--seed past what torch takes", "negative seed in --seeds", "negative seed in a config",
               "binary scores.csv for --scores-from"]
SILENTLY_WRONG = ["--images labels out of range", "--images labels negative", "--images labels NaN",
                  "--images labels strings", "--resolution where the input size is fixed",
                  "--resolution of flat inputs", "--resolution 0", "negative --resolution", "--n-archs 0 for correlate",
                  "negative --n-archs for correlate", "n_archs: null in a config",
                  "dangling symbolic link as --out of score", "dangling symbolic link as --out of correlate"]


@pytest.mark.parametrize("kind", USER_ERRORS + SILENTLY_WRONG)
def test_one_line_and_exit_2(tmp_path, capsys, kind):
    if kind == "read-only output folder" and not Path("/sys/kernel").is_dir():
        pytest.skip("needs Linux's sysfs")
    argv, message = _case(kind, tmp_path)
    before = sorted(tmp_path.iterdir())
    capsys.readouterr()
    assert main(argv) == 2
    # correlate names its data on stderr before it reads anything else
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("data: ")]
    assert len(err) == 1 and err[0].startswith("naslib-plugins: error: "), err
    assert message in err[0]
    # nothing begun and no link followed (a log's lock file stays by design: see fileio.OutputLock)
    assert [p for p in sorted(tmp_path.iterdir()) if p.suffix != ".lock"] == before
    assert not (tmp_path / "nowhere").exists()


class _Raising(Predictor):
    def score(self, model, batches, loss_fn):
        raise RuntimeError("exploded on purpose")


@pytest.mark.parametrize("command", [["score", "--n-archs", "3", "--out", "{t}/log.jsonl"],
                                     ["correlate", "--n-archs", "4", "--out", "{t}/run"]])
def test_a_predictor_failing_on_every_architecture_exits_1_naming_it(tmp_path, monkeypatch, capsys, command):
    monkeypatch.setitem(PREDICTORS._items, "raising", _Raising)
    argv = [a.replace("{t}", str(tmp_path)) for a in command]
    capsys.readouterr()
    assert main([*argv, "--space", "mlp_act_skip", "--dataset", "digits", "--predictors", "params,raising"]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("naslib-plugins:")]
    assert errors == ["naslib-plugins: error: raising failed on every architecture (RuntimeError: exploded on "
                      "purpose); once the cause is fixed, rerun with --retry-failed (a plain resume keeps the failed "
                      "records)"]
    assert list(tmp_path.iterdir())  # what was scored is kept
