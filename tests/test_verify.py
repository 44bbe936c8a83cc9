"""`verify` re-scores committed rows with the settings a run recorded; `correlate --rescore` brings
a run's changed predictors up to date and keeps the rest."""
import csv
import json
import shutil
import sys

import pytest

from naslib_plugins.cli import main

RUN = ["correlate", "--space", "mlp_act_skip", "--dataset", "digits", "--predictors", "params,synflow,snip,ensemble",
       "--ensemble-components", "synflow,snip", "--n-archs", "6", "--seed", "0", "--batch-size", "8"]


def run(monkeypatch, argv):
    monkeypatch.setattr(sys, "argv", ["naslib-plugins", *argv])  # what the outputs record as the command
    return main(argv)


def rows(folder):
    with open(folder / "scores.csv", newline="") as f:
        return list(csv.DictReader(f))


def edit(folder, column, factor, row=0):
    table = rows(folder)
    table[row][column] = repr(float(table[row][column]) * factor)
    with open(folder / "scores.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0]))
        w.writeheader()
        w.writerows(table)
    return table[row]["hash"]


@pytest.fixture
def made(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    assert run(monkeypatch, [*RUN, "--out", str(out)]) == 0
    capsys.readouterr()
    return out


def test_an_untouched_run_verifies(made, tmp_path, monkeypatch, capsys):
    report = tmp_path / "reports" / "verify.json"  # a folder --out makes
    assert run(monkeypatch, ["verify", str(made.parent), "--all-rows", "--out", str(report)]) == 0
    data = json.loads(report.read_text())
    (rep,) = data["runs"]
    assert set(rep["predictors"]) == {"params", "synflow", "snip", "ensemble"}
    assert all(c["checked"] == 6 and c["mismatched"] == 0 for c in rep["predictors"].values())
    assert "1 runs: 0 with a score beyond" in capsys.readouterr().out
    assert report.with_suffix(".md").is_file()


def test_a_changed_score_is_found(made, monkeypatch, capsys):
    edit(made, "synflow", 1.01, row=2)
    assert run(monkeypatch, ["verify", str(made), "--all-rows", "--predictors", "synflow,snip"]) == 1
    out = capsys.readouterr().out
    assert f"| {made} | synflow | 6 | 1 | 0.001 |" in out and f"| {made} | snip | 6 | 0 | 0.001 |" in out
    assert run(monkeypatch, ["verify", str(made), "--all-rows", "--predictors", "synflow", "--rtol", "0.02"]) == 0


def test_architecture_counts_are_held_exactly(made, monkeypatch, capsys):
    edit(made, "params", 1 + 1e-6)  # far inside the float tolerance, still a wrong parameter count
    assert run(monkeypatch, ["verify", str(made), "--all-rows", "--predictors", "params"]) == 1
    assert f"| {made} | params | 6 | 1 | 1e-12 |" in capsys.readouterr().out


def test_rescore_replaces_one_predictor_and_keeps_the_others(made, monkeypatch, capsys):
    before = {r["hash"]: r for r in rows(made)}
    edit(made, "synflow", 2.0)
    kept = edit(made, "params", 3.0, row=1)
    assert run(monkeypatch, [*RUN, "--out", str(made), "--rescore", "synflow"]) == 0
    assert "scoring now: synflow" in capsys.readouterr().err
    after = {r["hash"]: r for r in rows(made)}
    assert all(after[k]["synflow"] == before[k]["synflow"] for k in before)  # scored again: as first made
    assert float(after[kept]["params"]) == 3.0 * float(before[kept]["params"])  # kept as committed
    assert not (made / "rescore.jsonl").exists()
    assert "--rescore synflow" in json.loads((made / "correlation.json").read_text())["command"]


def test_a_rescored_run_resumed_from_its_log_keeps_the_new_scores(made, monkeypatch, capsys):
    from naslib_plugins.predictors import PREDICTORS

    synflow = PREDICTORS.get("synflow")
    before = {r["hash"]: float(r["synflow"]) for r in rows(made)}
    original = synflow.score
    monkeypatch.setattr(synflow, "score", lambda self, *a: 2 * original(self, *a))  # its code changed
    assert run(monkeypatch, [*RUN, "--out", str(made), "--rescore", "synflow"]) == 0
    assert (made / "scores.jsonl").exists()
    capsys.readouterr()
    assert run(monkeypatch, [*RUN, "--out", str(made)]) == 0  # resumes from the log: nothing scored
    assert "resuming: 6 of 6 already scored" in capsys.readouterr().err
    after = {r["hash"]: float(r["synflow"]) for r in rows(made)}
    assert after == pytest.approx({k: 2 * v for k, v in before.items()})


def test_predictors_added_to_a_finished_run_are_scored_alone_whether_or_not_its_log_is_kept(made, monkeypatch,
                                                                                           capsys):
    """The fast rankers first, the costly ones later into the same folder: only the added ones are
    scored, the others taken from the run, with or without its (uncommitted) score log."""
    before = {r["hash"]: r for r in rows(made)}
    more = [*RUN[:6], "params,synflow,snip,ensemble,grad_norm", *RUN[7:]]
    clone = made.with_name("clone")  # a clone of the repo: the outputs only
    shutil.copytree(made, clone, ignore=shutil.ignore_patterns("*.jsonl", "*.lock"))
    for folder in (made, clone):
        capsys.readouterr()
        assert run(monkeypatch, [*more, "--out", str(folder)]) == 0
        assert "scoring now: grad_norm on 6 architectures" in capsys.readouterr().err
        after = {r["hash"]: r for r in rows(folder)}
        assert all(after[k]["snip"] == before[k]["snip"] and after[k]["grad_norm"] for k in before)
        assert not (folder / "added.jsonl").exists()
        assert run(monkeypatch, [*more, "--out", str(folder)]) == 0  # the same command again scores nothing
        assert "scoring now: nothing" in capsys.readouterr().err
        assert {r["hash"]: r["grad_norm"] for r in rows(folder)} == {k: r["grad_norm"] for k, r in after.items()}


def test_rescore_names_only_the_runs_predictors(made, monkeypatch, capsys):
    assert run(monkeypatch, [*RUN, "--out", str(made), "--rescore", "zico"]) == 2
    assert "--rescore zico: not among this run's per-architecture predictors" in capsys.readouterr().err


def test_a_run_that_verify_cannot_remake_is_reported(made, tmp_path, monkeypatch, capsys):
    meta = json.loads((made / "correlation.json").read_text())
    meta["command"] = "naslib-plugins search --out somewhere"
    (made / "correlation.json").write_text(json.dumps(meta))
    assert run(monkeypatch, ["verify", str(made)]) == 1
    assert "not re-run: UserError: made by `naslib-plugins search`" in capsys.readouterr().out
    assert run(monkeypatch, ["verify", str(tmp_path / "nothing")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_the_same_command_on_a_finished_run_rewrites_it_from_its_scores(made, monkeypatch, capsys):
    before = rows(made)[0]["snip"]
    shared = [r["shared_seconds"] for r in rows(made)]
    summary = json.loads((made / "correlation.json").read_text())["shared_seconds_per_arch"]
    kept = edit(made, "snip", 5.0)  # stands for a score no code now would give: kept, so not re-scored
    (made / "correlation.md").unlink()
    (made / "scores.jsonl").unlink()  # as in a fresh clone: logs are not committed
    assert run(monkeypatch, [*RUN, "--out", str(made)]) == 0
    assert "scoring now: nothing" in capsys.readouterr().err
    assert (made / "correlation.md").is_file()
    assert {r["hash"]: r["snip"] for r in rows(made)}[kept] == repr(5.0 * float(before))
    # the time the scores' shared passes took is kept with them, not lost for want of a new pass
    assert [r["shared_seconds"] for r in rows(made)] == shared and all(t != "" for t in shared)
    assert json.loads((made / "correlation.json").read_text())["shared_seconds_per_arch"] == summary is not None
    assert run(monkeypatch, [*RUN, "--out", str(made), "--restart"]) == 0  # --restart scores everything again
    assert "reused" not in capsys.readouterr().err


def test_verify_rebuilds_the_network_a_run_chose():
    from naslib_plugins.cli import _recorded_args, _space

    meta = {"kind": "naslib-agreement", "command": "naslib-plugins --quiet naslib-agreement --space nasbench101 "
            "--zc-file zc.json --out o --init naslib"}
    assert _space(_recorded_args(meta)).init == "naslib"
    meta["command"] = meta["command"].replace(" --init naslib", "")
    assert _space(_recorded_args(meta)).init == "default"


def test_a_run_too_large_to_keep_plain_is_written_compressed_and_read_back(tmp_path, monkeypatch, capsys):
    # a full-space run's scores pass the limit; six rows do with the limit set low
    import naslib_plugins.fileio as fileio
    from naslib_plugins.reporting.runs import read_scores

    monkeypatch.setattr(fileio, "COMPRESS_OVER", 100)
    out = tmp_path / "run"
    assert run(monkeypatch, [*RUN, "--out", str(out)]) == 0
    assert (out / "scores.csv.gz").is_file() and not (out / "scores.csv").exists()
    assert len(read_scores(out, ["params", "snip"])) == 6
    assert run(monkeypatch, ["verify", str(tmp_path), "--all-rows"]) == 0
    (out / "scores.jsonl").unlink()  # resumed from its compressed scores, as in a fresh clone
    assert run(monkeypatch, [*RUN, "--out", str(out)]) == 0
    assert "scoring now: nothing" in capsys.readouterr().err
    monkeypatch.setattr(fileio, "COMPRESS_OVER", 10**9)  # small again: plain, and the .gz is gone
    assert run(monkeypatch, [*RUN, "--out", str(out)]) == 0
    assert (out / "scores.csv").is_file() and not (out / "scores.csv.gz").exists()


@pytest.fixture
def regen(script):
    """scripts/regenerate_searches.py"""
    return script("regenerate_searches")


def test_regenerate_searches_swaps_a_run_so_that_a_kill_anywhere_loses_neither(tmp_path, regen):
    """scripts/regen.py replaces a committed search folder with its regenerated one:
    killed at any step of the swap, the next start (`recover`) leaves one whole run in place, the new
    one once it was moved in, else the old, whose regenerated copy is still under results_next."""
    def folders(tag):
        run, new = tmp_path / "results" / "zc" / "run", tmp_path / "next" / "zc" / "run"
        for folder, text in ((run, "old"), (new, tag)):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "search.json").write_text(text)
        return run, new

    run, new = folders("new")
    regen.put_in_place(new, run)
    assert (run / "search.json").read_text() == "new" and not new.exists() and not run.with_name("run.old").exists()
    shutil.rmtree(tmp_path / "results")
    # killed after the old run was moved aside, before the new one came in: the old run goes back
    run, new = folders("new")
    run.rename(run.with_name("run.old"))
    regen.recover(tmp_path / "results")
    assert (run / "search.json").read_text() == "old" and (new / "search.json").exists()
    # killed after the new one came in, before the old one was deleted: the old one goes
    run.rename(run.with_name("run.old"))
    new.rename(run)
    (run / "search.json").write_text("new")
    regen.recover(tmp_path / "results")
    assert (run / "search.json").read_text() == "new" and not run.with_name("run.old").exists()


def test_regenerate_searches_reruns_a_search_with_the_options_it_recorded(regen):
    """A default that changed since a run was recorded is given back as the run had it (NASI runs
    recorded before fd existed used the exact double backward, and record no hvp); an option the
    command cannot give back stops the script before any search."""
    nasi = ["naslib-plugins", "search", "--config", "configs/nasi_nasbench201.yaml", "--out", "x"]
    config = {"steps": 100, "mu": 1.0, "nu": "adaptive", "nu0": 1000.0, "nu_scale": 1.0, "nu_samples": 50,
              "tau": 1.0, "xi": 1.0, "channels": 16, "cells": 5}
    assert regen.pinned_argv(nasi, config) == nasi + ["--hvp", "exact"]
    assert regen.pinned_argv(nasi, {**config, "hvp": "fd"}) == nasi
    with pytest.raises(SystemExit, match=r"steps 50 -> 100"):
        regen.pinned_argv(nasi, {**config, "steps": 50})
    # zc-pt records the supernet size the space resolves (NB201: C = 16, N = 5) when none is given
    zc_pt = ["naslib-plugins", "search", "--space", "nasbench201", "--optimizer", "zc-pt", "--predictor", "zico",
             "--out", "x"]
    recorded = {"predictor": "zico", "pool": 10, "validate_rounds": 100, "edge_order": "random", "channels": 16,
                "cells": 5}
    assert regen.pinned_argv(zc_pt, recorded) == zc_pt
    with pytest.raises(SystemExit, match=r"cells 1 -> 5"):
        regen.pinned_argv(zc_pt, {**recorded, "cells": 1})


def test_regenerate_searches_records_the_folder_a_run_goes_to(tmp_path, regen):
    """A regenerated run is searched into results_next/ and moved to results/: the command it records
    is the one that writes results/, its data path left as recorded."""
    new, run = tmp_path / "results_next" / "zc" / "run", tmp_path / "results" / "zc" / "run"
    new.mkdir(parents=True)
    command = (f'naslib-plugins search --benchmark "$NASLIB_PLUGINS_DATA"/nb201.csv --out {new.as_posix()} '
               "--hvp exact")
    (new / "search.json").write_text(json.dumps({"command": command, "runs": [{"seed": 0}]}))
    regen.record_final_out(new, run)
    assert json.loads((new / "search.json").read_text()) == {"command": (
        f'naslib-plugins search --benchmark "$NASLIB_PLUGINS_DATA"/nb201.csv --out {run.as_posix()} --hvp exact'),
        "runs": [{"seed": 0}]}
    with pytest.raises(SystemExit, match="records no `--out"):
        regen.record_final_out(new, run)  # no longer names results_next/: refused, not guessed


def test_regenerate_searches_takes_the_runs_that_record_a_machine_path_first(regen):
    assert regen.records_machine_path({"command": "naslib-plugins search --benchmark /data/nb201.csv --out x"})
    assert regen.records_machine_path({"notes": ["no test_accuracy in zc.json: /data/zc.json: [0, 1]"]})
    assert not regen.records_machine_path({
        "command": 'naslib-plugins search --benchmark "$NASLIB_PLUGINS_DATA"/nb201.csv --out results/x',
        "notes": ["1/5 seeds", "+-/"], "runs": [{"seed": 0}]})


def test_regenerate_searches_keeps_what_was_made_from_a_run_only_while_it_finds_the_same(tmp_path, regen):
    """A file another command made from the found architecture moves with the regenerated run when
    every seed finds what it found before, and is named, not carried, when one seed finds another."""
    def folders(new_arch):
        run, new = tmp_path / "results" / "run", tmp_path / "next" / "run"
        for folder, arch in ((run, [1, 2]), (new, new_arch)):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            (folder / "search.json").write_text(json.dumps({"runs": [{"seed": 0, "arch": arch}]}))
            (folder / "runs.jsonl").write_text(str(arch))
        (run / "eval_network_params.jsonl").write_text("made from [1, 2]")
        (run / "plots").mkdir()
        (run / "plots" / "found.png").write_text("made from [1, 2]")
        (run / "runs.jsonl.lock").write_text("")
        return run, new

    run, new = folders([1, 2])
    assert regen.keep_side_files(new, run) == []
    assert sorted(p.name for p in new.iterdir()) == ["eval_network_params.jsonl", "plots", "runs.jsonl", "search.json"]
    assert (new / "eval_network_params.jsonl").read_text() == (new / "plots" / "found.png").read_text() == \
        "made from [1, 2]"
    assert (new / "runs.jsonl").read_text() == "[1, 2]"  # the new run's own files are its own
    run, new = folders([2, 1])
    assert regen.keep_side_files(new, run) == [run / "eval_network_params.jsonl", run / "plots"]
    assert sorted(p.name for p in new.iterdir()) == ["runs.jsonl", "search.json"]


def test_default_tolerance_is_the_measured_kernel_drift_where_larger():
    from naslib_plugins.evaluation.verify import DEFAULT_RTOL, tolerance

    assert tolerance("grasp", None) == 3e-2 and tolerance("epe_nas", None) == 4e-3
    assert tolerance("snip", None) == DEFAULT_RTOL
    assert tolerance("grasp", 1e-4) == 1e-4  # a given --rtol holds for every predictor
    assert tolerance("params", None) == tolerance("params", 0.5) == 1e-12  # counts stay exact
