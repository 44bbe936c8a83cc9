"""`export-zc`: score logs as NASLib's zc_<space>.json, read back by this package's zc reader (the
one the NASLib adapter's tests check against NASLib's own zc_api layout)."""
from __future__ import annotations

import json
import math

from naslib_plugins.cli import main
from naslib_plugins.evaluation.ground_truth import load_ground_truth, load_zc_scores
from naslib_plugins.spaces import get_space

NB201 = get_space("nasbench201")


def _log(tmp_path, name="s.jsonl", predictors="params,synflow"):
    log = tmp_path / name
    assert main(["score", "--space", "nasbench201", "--dataset", "cifar10", "--predictors", predictors,
                 "--n-archs", "3", "--data", "gaussian", "--device", "cpu", "--out", str(log)]) == 0
    return log, [json.loads(line) for line in log.read_text().splitlines()[1:]]


def test_a_score_log_exports_to_naslibs_layout_and_reads_back(tmp_path, shared_data, monkeypatch):
    monkeypatch.setenv("NASLIB_PLUGINS_DATA", str(shared_data))
    log, records = _log(tmp_path)
    out = tmp_path / "zc_nasbench201.json"
    assert main(["export-zc", "--space", "nasbench201", "--dataset", "cifar10", "--from", str(log),
                 "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert set(data) == {"cifar10"} and set(data["cifar10"]) == {r["hash"] for r in records}
    for r in records:
        entry = data["cifar10"][r["hash"]]
        assert entry["params"] == {"score": r["scores"]["params"], "time": r["seconds"]["params"]}
        # as NASLib's ZeroCost.query stores SynFlow: the natural log of the sum
        assert entry["synflow"] == {"score": math.log(r["scores"]["synflow"]), "time": r["seconds"]["synflow"]}
        assert isinstance(entry["val_accuracy"], float) and isinstance(entry["idx"], int)
    read = load_zc_scores(out, NB201, "cifar10")
    assert {k: {n: v[n] for n in ("params", "synflow")} for k, v in read.items()} == {
        r["hash"]: {"params": r["scores"]["params"], "synflow": math.log(r["scores"]["synflow"])} for r in records}
    table = load_ground_truth(shared_data / NB201.benchmark_file, NB201, "cifar10", "val_accuracy")
    read = load_ground_truth(out, NB201, "cifar10", "val_accuracy")
    assert len(read) == 3 and read.values == {k: table.values[k] for k in read.values}
    assert read.index == {k: table.index[k] for k in read.index}


def test_an_existing_file_is_merged_into(tmp_path):
    log, records = _log(tmp_path)
    key = records[0]["hash"]
    out = tmp_path / "zc.json"
    out.write_text(json.dumps({"cifar100": {"(0, 0, 0, 0, 0, 0)": {"params": {"score": 1.0, "time": 0.0}}},
                               "cifar10": {key: {"jacov": {"score": 5.0, "time": 1.0},
                                                 "params": {"score": -1.0, "time": 0.0}}}}))
    assert main(["export-zc", "--space", "nasbench201", "--from", str(log), "--out", str(out),
                 "--benchmark", str(tmp_path / "none.csv")]) == 2  # a benchmark named but not there
    assert main(["export-zc", "--space", "nasbench201", "--from", str(log), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["cifar100"] == {"(0, 0, 0, 0, 0, 0)": {"params": {"score": 1.0, "time": 0.0}}}
    assert data["cifar10"][key]["jacov"] == {"score": 5.0, "time": 1.0}
    assert data["cifar10"][key]["params"]["score"] == records[0]["scores"]["params"]


def test_a_log_of_another_space_is_one_line_and_exit_2(tmp_path, capsys):
    log, _ = _log(tmp_path)
    capsys.readouterr()
    assert main(["export-zc", "--space", "mlp_act_skip", "--dataset", "digits", "--from", str(log),
                 "--out", str(tmp_path / "zc.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds nasbench201/cifar10 scores, not mlp_act_skip/digits" in err[0]
    assert not (tmp_path / "zc.json").exists()


def test_out_may_lie_in_a_folder_not_made_yet(tmp_path):
    log, records = _log(tmp_path)
    out = tmp_path / "NASLib" / "naslib" / "data" / "zc_nasbench201.json"  # where NASLib reads it
    assert main(["export-zc", "--space", "nasbench201", "--from", str(log), "--out", str(out)]) == 0
    assert set(json.loads(out.read_text())["cifar10"]) == {r["hash"] for r in records}


def test_naslib_agreement_compares_like_with_like(tmp_path, capsys):
    """A zc file exported from our own scores (SynFlow stored as NASLib stores it, the log) agrees
    exactly with scoring the same architectures again; the output names the batch sizes."""
    log, records = _log(tmp_path)
    zc = tmp_path / "zc.json"
    assert main(["export-zc", "--space", "nasbench201", "--from", str(log), "--out", str(zc)]) == 0
    capsys.readouterr()
    out = tmp_path / "agree"
    assert main(["naslib-agreement", "--space", "nasbench201", "--predictors", "params,synflow", "--data", "gaussian",
                 "--device", "cpu", "--zc-file", str(zc), "--out", str(out)]) == 0
    table = (out / "agreement.md").read_text()
    assert "batch 32 (NASLib's zc files: 32)" in table
    assert "| synflow | 1.000 | 1.000 | 3/3 |" in table and "| params | 1.000 | 1.000 | 3/3 |" in table
