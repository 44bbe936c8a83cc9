"""The command line behaves alike across commands: help names defaults and registered names,
--quiet silences what is not an error or warning, one spelling per idea (old ones still parse),
`score --out` resumes by default, and `score --shard` + `merge` equal one unsharded run."""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import zlib
from pathlib import Path

import pytest

from naslib_plugins import errors
from naslib_plugins.cli import build_parser, main, parse_command
from naslib_plugins.evaluation.journal import read_score_log
from naslib_plugins.evaluation.scoring import distinct_sample
from naslib_plugins.optimizers import OPTIMIZERS
from naslib_plugins.predictors import PREDICTORS
from naslib_plugins.spaces import SPACES, get_space

ROOT = Path(__file__).resolve().parents[1]
# small and fast, as tests/test_stream.py's correlate test
MLP = ["--space", "mlp_act_skip", "--dataset", "digits", "--predictors", "params,synflow", "--batch-size", "8"]
SCORE = ["score", *MLP, "--n-archs", "12"]
TIMING = ("seconds", "shared_seconds")  # what two scorings of one architecture may differ in


def _err(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def _one_error(capsys) -> str:
    err = _err(capsys)
    assert len(err) == 1 and err[0].startswith("naslib-plugins: error: "), err
    return err[0]


def _records(path: Path) -> tuple[dict, dict[str, dict]]:
    header, records, good, size = read_score_log(path)
    assert good == size
    return header, {k: {f: v for f, v in r.items() if f not in TIMING} for k, r in records.items()}


# --------------------------------------------------------------------------- help


def _help_blocks(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each option's help, by its first flag, one line each."""
    return {block.split()[0].rstrip(","): " ".join(block.split())
            for block in re.split(r"\n(?=  -)", parser.format_help()) if block.startswith("  -")}


def test_help_states_every_default_once_and_the_registered_names(monkeypatch):
    monkeypatch.setenv("COLUMNS", "3000")  # no line wrapped
    parser = build_parser()
    for name, sub in [("", parser), *parser.subcommands.items()]:
        blocks = _help_blocks(sub)
        for action in [a for a in sub._actions if a.option_strings]:
            stated = blocks[action.option_strings[0]].count("(default:")
            if action.nargs != 0 and action.default not in (None, argparse.SUPPRESS):
                assert stated == 1, (name, action.option_strings)
            else:  # a switch, or an option left to a function's or class's default: its help as written
                assert stated == (action.help or "").count("(default:"), (name, action.option_strings)
    for name in ("correlate", "naslib-agreement", "score", "search", "export-zc"):
        assert "one of: " + ", ".join(SPACES.names()) in _help_blocks(parser.subcommands[name])["--space"]
    assert "one of: " + ", ".join(OPTIMIZERS.names()) in _help_blocks(parser.subcommands["search"])["--optimizer"]


@pytest.mark.parametrize("argv, message", [
    (["score", "--space", "nb999", "--data", "gaussian"], "unknown search space 'nb999'"),
    (["search", "--optimizer", "nasii", "--data", "gaussian", "--out", "unused"], "unknown optimizer 'nasii'"),
])
def test_an_unknown_registered_name_is_one_line(argv, message, capsys):
    assert main(argv) == 2
    assert message in _one_error(capsys)


# --------------------------------------------------------------------------- --quiet

SEARCH = ["search", "--optimizer", "zc-random", "--space", "mlp_act_skip", "--dataset", "digits", "--predictor",
          "params", "--budget", "3", "--batch-size", "8"]


def test_quiet_search_prints_no_progress_before_or_after_the_command(tmp_path, capsys):
    assert main([*SEARCH, "--seed", "0-1", "--out", str(tmp_path / "a")]) == 0
    assert "seed 1: " in capsys.readouterr().err
    assert main([*SEARCH, "--seed", "0-1", "--out", str(tmp_path / "b"), "--quiet"]) == 0
    assert main(["--quiet", *SEARCH, "--seed", "0-2", "--out", str(tmp_path / "b")]) == 0  # a resume
    captured = capsys.readouterr()
    assert captured.err == "" and "seed 2: " in captured.out  # the results still print
    assert errors.quiet is False  # main() leaves the switch as it found it


def test_quiet_score_and_correlate_print_only_errors(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    assert main([*SCORE, "--out", str(log), "--quiet"]) == 0
    assert main([*SCORE, "--out", str(log), "--quiet"]) == 0  # a resume
    assert main(["correlate", *MLP, "--n-archs", "5", "--scores-from", str(log), "--out", str(tmp_path / "c"),
                 "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "| params |" in captured.out
    assert main([*SCORE, "--seed", "1", "--out", str(log), "--quiet"]) == 2
    assert "other settings (seed)" in _one_error(capsys)


# --------------------------------------------------------------------------- spellings


def test_old_and_new_spellings_parse_alike():
    parser = build_parser()
    for command in ("search", "demo"):
        assert vars(parser.parse_args([command, "--seed", "0-2,7"])) == vars(
            parser.parse_args([command, "--seeds", "0-2,7"]))
    assert vars(parser.parse_args(["naslib-run", "--config", "c.yaml"])) == vars(
        parser.parse_args(["naslib-run", "--config-file", "c.yaml"]))
    assert parser.parse_args(["naslib-run", "--config", "c.yaml"]).config_file == "c.yaml"
    assert parser.parse_args(["correlate"]).repeats == 1
    assert parser.parse_args(["correlate", "--repeats", "3"]).repeats == 3


def test_every_recorded_command_still_parses(monkeypatch):
    monkeypatch.chdir(ROOT)  # recorded --config paths are relative to the repository
    commands = set()
    for path in (ROOT / "results").rglob("*.json"):
        command = json.loads(path.read_text()).get("command") if path.stat().st_size < 10**6 else None
        if isinstance(command, str) and command.startswith("naslib-plugins "):
            commands.add(command)
    assert any("--seeds" in c for c in commands)
    for command in commands:
        parse_command(build_parser(), [os.path.expandvars(w) for w in shlex.split(command)[1:]])


def test_correlate_repeats_below_one_is_one_line(tmp_path, capsys):
    argv = ["correlate", *MLP, "--n-archs", "5", "--repeats", "0", "--out", str(tmp_path / "c"), "--quiet"]
    assert main(argv) == 2  # quiet: errors print all the same
    assert "--repeats must be at least 1, got 0" in _one_error(capsys)


# --------------------------------------------------------------------------- resume by default


def test_score_out_resumes_by_default_and_restart_overwrites(tmp_path, unsharded, capsys):
    log = tmp_path / "log.jsonl"
    lines = unsharded.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:5]))  # the header and 4 records: a run stopped there
    capsys.readouterr()
    assert main([*SCORE, "--out", str(log)]) == 0
    assert _err(capsys)[-1].endswith("12 architectures (4 already there), 0 with a failed predictor")
    assert log.read_text().startswith("".join(lines[:5])) and _records(log) == _records(unsharded)
    full = log.read_bytes()
    assert main([*SCORE, "--out", str(log), "--resume"]) == 0  # the old spelling, now the default
    assert log.read_bytes() == full
    capsys.readouterr()
    # other settings are refused, in one line, and leave the log as it was
    assert main([*SCORE, "--seed", "1", "--out", str(log)]) == 2
    assert "written with other settings (seed)" in _one_error(capsys)
    assert log.read_bytes() == full
    assert main([*SCORE, "--seed", "1", "--out", str(log), "--restart"]) == 0
    assert read_score_log(log)[0]["seed"] == 1


# --------------------------------------------------------------------------- shards


@pytest.fixture(scope="module")
def unsharded(tmp_path_factory):
    path = tmp_path_factory.mktemp("whole") / "whole.jsonl"
    assert main([*SCORE, "--out", str(path)]) == 0
    return path


def test_shards_merged_equal_the_unsharded_run(tmp_path, unsharded, capsys):
    header, whole = _records(unsharded)
    shards = [tmp_path / f"shard{i}.jsonl" for i in range(3)]
    for i, path in enumerate(shards):
        assert main([*SCORE, "--shard", f"{i}/3", "--out", str(path)]) == 0
        part_header, part = _records(path)
        assert part_header == {**header, "shard": f"{i}/3"}
        assert part and all(zlib.crc32(k.encode()) % 3 == i for k in part)
    merged = tmp_path / "merged.jsonl"
    assert main(["merge", *reversed([str(p) for p in shards]), str(shards[0]), "--out", str(merged)]) == 0
    assert _records(merged) == (header, whole)
    # the merged log is the unsharded run's: resuming it scores nothing
    before = merged.read_bytes()
    assert main([*SCORE, "--out", str(merged)]) == 0
    assert merged.read_bytes() == before

    # a missing shard is named, and resuming the merged log scores its architectures
    capsys.readouterr()
    assert main(["merge", str(shards[0]), str(shards[2]), "--out", str(merged)]) == 0
    assert "no log of shard 1/3" in capsys.readouterr().err
    assert main([*SCORE, "--out", str(merged)]) == 0
    assert _records(merged) == (header, whole)


def test_a_shard_holds_the_same_architectures_in_any_order(tmp_path):
    space = get_space("mlp_act_skip")
    keys = [space.hash(a) for a in distinct_sample(space, 8, 0)]
    parts = []
    for order in (keys, keys[::-1]):
        out = tmp_path / f"{len(parts)}.jsonl"
        archs = [a for k in order for a in ("--arch", k)]
        assert main(["score", *MLP, *archs, "--shard", "1/2", "--out", str(out)]) == 0
        parts.append(set(_records(out)[1]))
    assert parts[0] == parts[1] == {k for k in keys if zlib.crc32(k.encode()) % 2 == 1} != set()


@pytest.mark.parametrize("shard", ["2/2", "x/3", "0/0", "-1/3", "1/2/3", "3", "1/"])
def test_a_bad_shard_is_one_line(shard, tmp_path, capsys):
    out = tmp_path / "s.jsonl"
    assert main([*SCORE, f"--shard={shard}", "--out", str(out)]) == 2
    assert f"--shard {shard}: want I/N with 0 <= I < N" in _one_error(capsys)
    assert not out.exists()


def test_merge_refuses_logs_of_other_settings_or_overlapping_records(tmp_path, unsharded, capsys):
    a, b, out = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "merged.jsonl"
    assert main([*SCORE, "--shard", "0/2", "--out", str(a)]) == 0
    assert main([*SCORE, "--shard", "1/2", "--seed", "1", "--out", str(b)]) == 0
    capsys.readouterr()
    assert main(["merge", str(a), str(b), "--out", str(out)]) == 2
    assert f"{b} was written with other settings than {a} (seed)" in _one_error(capsys)
    # the unsharded run scored shard 0's architectures again: same scores, other timings
    assert main(["merge", str(a), str(unsharded), "--out", str(out)]) == 2
    assert "has different records in" in _one_error(capsys)
    assert not out.exists()
    shutil.copy(a, b)  # the same shard twice merges
    assert main(["merge", str(a), str(b), "--out", str(out)]) == 0
    assert _records(out)[1] == _records(a)[1]


def test_list_inputs_says_what_each_predictor_reads(capsys):
    assert main(["list", "--inputs"]) == 0
    rows = dict(line.strip("|").split("|")[:2] for line in capsys.readouterr().out.splitlines()[2:])
    rows = {k.strip(): v.strip() for k, v in rows.items()}
    assert set(rows) == set(PREDICTORS.names())
    assert rows["zico"] == "2 mini-batches of images and their labels; train mode"
    assert rows["params"] == "the architecture alone (a count)"
    assert rows["vkdnw"].startswith("no data: the input shape only")
    assert rows["nwot_eval"].endswith("eval mode") and rows["zen"].startswith("Gaussian inputs")
    assert rows["az_nas"].startswith("set-level: ranks its components (flops_conv, az_expressivity")
