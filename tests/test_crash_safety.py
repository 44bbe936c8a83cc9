"""Nothing finished is lost: damaged lines in a score log or runs.jsonl cost only themselves, record
boundaries survive a missing newline, result files are replaced atomically, a damaged run does not
stop the leaderboard, a rerun with fewer seeds keeps the others, a search killed mid-seed resumes
from its journal, and a second writer is refused."""
from __future__ import annotations

import json
import math
import os
import shutil
import stat

import pytest
import torch

from naslib_plugins.cli import main
from naslib_plugins.data.batches import ImageBatches
from naslib_plugins.errors import UserError
from naslib_plugins.evaluation.journal import ScoreLog, SeedJournal, read_score_log
from naslib_plugins.evaluation.scoring import ScoringJob
from naslib_plugins.fileio import OutputLock, atomic_write, write_text_atomic
from naslib_plugins.optimizers import OPTIMIZERS
from naslib_plugins.predictors import Predictor, get_predictor
from naslib_plugins.spaces import get_space

MLP = ["--space", "mlp_act_skip", "--dataset", "digits", "--predictors", "params"]
SETTINGS = {"space": "test", "seed": 0}


def _log(path, n: int, first: int = 0, settings: dict = SETTINGS) -> list[str]:
    """A score log of n records; returns its lines."""
    with ScoreLog(path, settings, resume=False) as log:
        for i in range(first, first + n):
            log.add({"hash": f"h{i}", "scores": {"x": float(i)}})
    return path.read_text().splitlines()


def _rejected(path) -> list[dict]:
    return [json.loads(line) for line in path.with_name(path.name + ".rejected").read_text().splitlines()]


def _err_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


# --------------------------------------------------------------------------- damaged lines


def test_a_damaged_middle_line_of_a_20_record_log_costs_only_itself(tmp_path, capsys):
    out = tmp_path / "log.jsonl"
    argv = ["score", *MLP, "--n-archs", "20", "--out", str(out)]
    assert main(argv) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 21
    bad = lines[10][:25] + "\x00garbage" + lines[10][40:]  # line 11: a record damaged in place
    out.write_text("\n".join([*lines[:10], bad, *lines[11:]]) + "\n")
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 0
    err = _err_lines(capsys)
    assert f"{out}: set aside 1 damaged line(s) in {out}.rejected; kept 19 intact record(s)" in err
    assert err[-1].endswith("20 architectures (19 already there), 0 with a failed predictor")
    again = out.read_text().splitlines()
    # every intact record kept byte for byte, in its place; only the damaged one scored again
    assert again[:10] + again[10:20] == lines[:10] + lines[11:]
    assert json.loads(again[20])["hash"] == json.loads(lines[10])["hash"]
    assert _rejected(out) == [{"line": 11, "reason": "not valid JSON (a torn or damaged write)", "text": bad}]


def test_undecodable_bytes_are_set_aside_recoverably(tmp_path):
    path = tmp_path / "log.jsonl"
    lines = _log(path, 3)
    garbage = b"\xff\xfe{\x80 not utf-8"
    path.write_bytes("\n".join(lines[:2]).encode() + b"\n" + garbage + b"\n" + lines[3].encode() + b"\n")
    with ScoreLog(path, SETTINGS) as log:
        assert sorted(log.records) == ["h0", "h2"]
    (entry,) = _rejected(path)
    assert entry["line"] == 3 and entry["text"].encode("utf-8", "surrogateescape") == garbage


def test_two_logs_joined_keep_every_record(tmp_path, capsys):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a, b = _log(first, 5), _log(second, 5, first=5)
    joined = tmp_path / "joined.jsonl"
    joined.write_text("\n".join(a + b) + "\n")
    capsys.readouterr()
    with ScoreLog(joined, SETTINGS) as log:
        assert sorted(log.records) == sorted(f"h{i}" for i in range(10))
    assert joined.read_text().splitlines() == a + b[1:]
    assert _rejected(joined) == [{"line": 7, "reason": "a repeated header (two logs joined)", "text": b[0]}]
    assert len(_err_lines(capsys)) == 1


def test_records_under_a_header_of_other_settings_are_set_aside_not_mixed_in(tmp_path):
    ours, theirs = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a, b = _log(ours, 3), _log(theirs, 2, first=3, settings={**SETTINGS, "seed": 1})
    ours.write_text("\n".join(a + b) + "\n")
    with ScoreLog(ours, SETTINGS) as log:
        assert sorted(log.records) == ["h0", "h1", "h2"]
    assert ours.read_text().splitlines() == a
    assert [(r["line"], r["text"]) for r in _rejected(ours)] == [(5, b[0]), (6, b[1]), (7, b[2])]


def test_a_last_record_without_its_newline_is_not_glued_to_the_next(tmp_path):
    path = tmp_path / "log.jsonl"
    _log(path, 2)
    path.write_text(path.read_text().rstrip("\n"))
    _, _, repaired, size = read_score_log(path)
    assert repaired == size + 1  # the newline a resume adds
    with ScoreLog(path, SETTINGS) as log:
        log.add({"hash": "h2", "scores": {}})
    _, records, repaired, size = read_score_log(path)
    assert sorted(records) == ["h0", "h1", "h2"] and repaired == size
    assert not path.with_name(path.name + ".rejected").exists()


def test_reading_a_damaged_log_changes_nothing(tmp_path):
    path = tmp_path / "log.jsonl"
    lines = _log(path, 4)
    path.write_text("\n".join(lines[:2] + ["{torn", *lines[2:]]) + "\n")
    before = path.read_bytes()
    _, records, repaired, size = read_score_log(path)
    assert sorted(records) == ["h0", "h1", "h2", "h3"] and (repaired, size) == (size - len("{torn\n"), len(before))
    assert path.read_bytes() == before


def test_runs_jsonl_with_a_damaged_middle_line_resumes_every_other_seed(tmp_path, capsys):
    out = tmp_path / "s"
    argv = ["search", "--optimizer", "zc-random", *MLP[:4], "--predictor", "params", "--budget", "2",
            "--seeds", "0-2", "--out", str(out)]
    assert main(argv) == 0
    runs = out / "runs.jsonl"
    lines = runs.read_text().splitlines()
    runs.write_text("\n".join([lines[0], lines[1], lines[2][:30], lines[3]]) + "\n")
    capsys.readouterr()
    assert main(argv) == 0
    assert "resuming: seeds 0, 2 already in" in capsys.readouterr().err
    again = runs.read_text().splitlines()
    assert again[:3] == [lines[0], lines[1], lines[3]] and json.loads(again[3])["seed"] == 1
    assert [r["seed"] for r in json.loads((out / "search.json").read_text())["runs"]] == [0, 1, 2]


# --------------------------------------------------------------------------- atomic result files


def test_a_failed_rename_keeps_the_old_correlation_json(tmp_path, monkeypatch, capsys):
    argv = ["correlate", *MLP, "--n-archs", "5", "--out", str(tmp_path)]
    assert main(argv) == 0
    old = '{"an earlier": "result"}\n'
    (tmp_path / "correlation.json").write_text(old)
    replace = os.replace

    def failing(src, dst):
        if os.path.basename(dst) == "correlation.json":
            raise OSError(28, "No space left on device")  # as a full disk or a kill mid-write would
        replace(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"naslib-plugins: error: No space left on device (--out {tmp_path})"
    assert (tmp_path / "correlation.json").read_text() == old
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_atomic_write_on_error_keeps_the_old_file_and_the_permissions_of_a_plain_write(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("old")
    with pytest.raises(RuntimeError), atomic_write(path) as f:
        f.write("half")
        raise RuntimeError("killed")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.json"]
    plain = tmp_path / "plain"
    plain.write_text("x")
    write_text_atomic(tmp_path / "new", "new")
    assert (tmp_path / "new").read_text() == "new"
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)


# --------------------------------------------------------------------------- leaderboard


def test_leaderboard_skips_damaged_runs_with_a_warning_and_builds_the_rest(tmp_path, capsys):
    results = tmp_path / "results"
    assert main(["correlate", *MLP, "--n-archs", "5", "--out", str(results / "good")]) == 0
    assert main(["search", "--optimizer", "zc-random", *MLP[:4], "--predictor", "params", "--budget", "2",
                 "--out", str(results / "search")]) == 0
    shutil.copytree(results / "good", results / "broken")
    (results / "broken" / "correlation.json").write_text('{"space": "mlp_act_skip", "dat')
    shutil.copytree(results / "good", results / "no_scores")
    (results / "no_scores" / "scores.csv").unlink()
    (results / "bad_search").mkdir()
    (results / "bad_search" / "search.json").write_bytes(b"")
    capsys.readouterr()
    assert main(["leaderboard", str(results)]) == 0
    err = _err_lines(capsys)
    assert len(err) == 3, err
    assert err[0].startswith(f"naslib-plugins: warning: {results / 'broken' / 'correlation.json'}: truncated or "
                             "invalid JSON") and err[0].endswith("; run skipped")
    assert err[1].startswith(f"naslib-plugins: warning: {results / 'bad_search' / 'search.json'}: truncated or "
                             "invalid JSON") and err[1].endswith("; run skipped")
    assert err[2] == (f"naslib-plugins: warning: {results / 'no_scores' / 'scores.csv'}: no such file "
                      "(nor scores.csv.gz); plot skipped")
    board = json.loads((results / "LEADERBOARD.json").read_text())
    assert [r["file"] for r in board["correlation"][0]["rows"]] == ["good/correlation.json",
                                                                    "no_scores/correlation.json"]
    assert [r["file"] for r in board["search"]["rows"]] == ["search/search.json"]
    assert board["plots"] == ["plots/scatter/good.png", "plots/spearman_heatmap.png"]


# --------------------------------------------------------------------------- fewer seeds


def test_a_rerun_with_fewer_seeds_keeps_every_finished_seed(tmp_path, capsys):
    out = tmp_path / "s"
    argv = ["search", "--optimizer", "zc-random", *MLP[:4], "--predictor", "params", "--budget", "2", "--out",
            str(out)]
    assert main([*argv, "--seeds", "0-2"]) == 0
    first = json.loads((out / "search.json").read_text())
    capsys.readouterr()
    assert main([*argv, "--seeds", "1"]) == 0
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines() if line.startswith("seed")] == \
        ["seed 0", "seed 1", "seed 2"]
    again = json.loads((out / "search.json").read_text())
    assert again["runs"] == first["runs"] and again["config"]["seeds"] == [0, 1, 2]
    assert again["mean_test_accuracy"] == first["mean_test_accuracy"]


# --------------------------------------------------------------------------- a search killed mid-seed


def test_a_zero_shot_search_killed_mid_seed_resumes_from_its_scores_and_ends_as_one_not_killed(
        tmp_path, monkeypatch, capsys):
    """The scores of a seed in progress are journaled: a kill costs the architecture in flight, and the
    resumed search replays its proposals to the same architecture and scores, scoring only the rest."""
    argv = ["search", "--optimizer", "zc-evolution", *MLP[:4], "--predictor", "zico", "--budget", "12",
            "--population", "4", "--sample-size", "2", "--seeds", "0-1"]
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    whole = json.loads((tmp_path / "whole" / "search.json").read_text())
    real, calls, kill = ScoringJob.score, [], [True]

    def killed_at_the_sixth_of_seed_1(job, arch):
        calls.append(job.seed)
        if kill[0] and calls.count(1) == 6:
            kill[0] = False
            raise KeyboardInterrupt
        return real(job, arch)

    monkeypatch.setattr(ScoringJob, "score", killed_at_the_sixth_of_seed_1)
    out = tmp_path / "killed"
    assert main([*argv, "--out", str(out)]) == 130
    assert len(read_score_log(out / "seed1.partial.jsonl")[1]) == 5
    shutil.copytree(out, tmp_path / "restarted")
    calls.clear()
    assert main([*argv, "--out", str(tmp_path / "restarted"), "--restart"]) == 0
    assert calls == [0] * 12 + [1] * 12  # --restart discards the journal with the finished seeds
    calls.clear()
    assert main([*argv, "--out", str(out)]) == 0
    assert calls == [1] * (12 - 5)  # seed 0 was saved; seed 1 scores what its journal lacks
    assert not list(out.glob("seed*.partial.jsonl*"))  # the journals and their locks
    again = json.loads((out / "search.json").read_text())
    for a, b in zip(again["runs"], whole["runs"], strict=True):
        assert a["arch_str"] == b["arch_str"] and a["predictor_calls"] == b["predictor_calls"] == 12
    traces = [json.loads(line)["trace"] for line in (out / "runs.jsonl").read_text().splitlines()[1:]]
    assert traces[1]["resumed"]["records"] == 5 and "resumed" not in traces[0]
    assert traces[1]["top10"] == [json.loads(line)["trace"]["top10"] for line in
                                  (tmp_path / "whole" / "runs.jsonl").read_text().splitlines()[1:]][1]


class _DrawsFromTheGlobalGenerator(Predictor):
    """A predictor that draws from torch's global RNG, as Zen-NAS's inputs do, and fails on some calls."""

    def score(self, model, batches, loss_fn):
        value = float(torch.rand(()))
        return math.nan if value < 0.03 else value


class _Killed(BaseException):  # as KeyboardInterrupt: not a predictor's failure
    pass


@pytest.mark.parametrize("predictor", ["zico", "nwot_eval", "draws"])
@pytest.mark.parametrize("kill_at", [17, 63])  # proposing (of 2 x 30 evaluations), then validating
def test_zc_pt_killed_part_way_resumes_from_its_journal_and_ends_as_one_not_killed(tmp_path, monkeypatch,
                                                                                    predictor, kill_at):
    space = get_space("nasbench201")
    scorer = _DrawsFromTheGlobalGenerator() if predictor == "draws" else get_predictor(predictor)
    opt = OPTIMIZERS.get("zc-pt")(predictor=scorer, pool=2, validate_rounds=3, channels=2, cells=1)

    def search(journal=None):
        return opt.search(space, "cifar10", ImageBatches("cifar10", batch_size=4, seed=0, data="gaussian"), seed=1,
                          progress=False, journal=journal)

    whole = search()
    real, calls, armed = type(scorer).score, [], [True]

    def killed(self, *args):
        calls.append(1)
        if armed[0] and len(calls) == kill_at:
            armed[0] = False
            raise _Killed
        return real(self, *args)

    monkeypatch.setattr(type(scorer), "score", killed)
    with ScoreLog(tmp_path / "seed1.partial.jsonl", {"seed": 1}) as log, pytest.raises(_Killed):
        search(SeedJournal(log))
    calls.clear()
    with ScoreLog(tmp_path / "seed1.partial.jsonl", {"seed": 1}) as log:
        again = search(SeedJournal(log))
    assert len(calls) == whole.trace["predictor_calls"] - (kill_at - 1)  # only what the journal lacks
    assert again.trace.pop("resumed")["records"] == kill_at - 1
    assert again.arch == whole.arch and json.dumps(again.trace) == json.dumps(whole.trace)  # NaN as NaN
    if predictor == "draws":
        assert whole.trace["n_failed"] > 0


@pytest.mark.parametrize("options", [{"hvp": "fd"}, {"hvp": "exact", "nu": "fixed", "nu_samples": 2, "per_cell": True}])
def test_nasi_killed_part_way_resumes_from_its_journaled_steps_and_ends_as_one_not_killed(tmp_path, monkeypatch,
                                                                                           options):
    from naslib_plugins.optimizers.nasi import NASI

    space = get_space("nasbench201")
    nasi = NASI(steps=6, channels=2, cells=1, **options)

    def search(journal=None):
        return nasi.search(space, "cifar10", ImageBatches("cifar10", batch_size=4, seed=0, data="gaussian"), seed=3,
                           progress=False, journal=journal)

    whole = search()
    real, calls, armed = NASI._step, [], [True]

    def killed(*args):
        calls.append(1)
        if armed[0] and len(calls) == 4:
            armed[0] = False
            raise _Killed
        return real(*args)

    monkeypatch.setattr(NASI, "_step", staticmethod(killed))
    with ScoreLog(tmp_path / "seed3.partial.jsonl", {"seed": 3}) as log, pytest.raises(_Killed):
        search(SeedJournal(log))
    calls.clear()
    with ScoreLog(tmp_path / "seed3.partial.jsonl", {"seed": 3}) as log:
        again = search(SeedJournal(log))
    assert len(calls) == 6 - 3 and again.trace.pop("resumed")["records"] == 3
    assert again.arch == whole.arch and again.trace == whole.trace  # every step's score, nu and G_t, and alpha


# --------------------------------------------------------------------------- one writer at a time


def test_a_second_writer_of_a_log_is_refused_naming_the_first(tmp_path):
    path = tmp_path / "log.jsonl"
    with ScoreLog(path, SETTINGS) as log:
        log.add({"hash": "h0"})
        # flock belongs to an open file description: a second open conflicts even in this process
        with pytest.raises(UserError, match=f"{path} is being written by process {os.getpid()} "
                                            rf"\(lock {path}.lock\); wait for it to finish or pick another --out"):
            ScoreLog(path, SETTINGS)
    with pytest.raises(UserError, match="other settings"):
        ScoreLog(path, {"space": "other"})
    with ScoreLog(path, SETTINGS) as log:  # released on close and after a refused open
        assert list(log.records) == ["h0"]


@pytest.mark.parametrize("command, log", [
    (["score", *MLP, "--n-archs", "2", "--out", "{out}/x.jsonl"], "x.jsonl"),
    (["correlate", *MLP, "--n-archs", "2", "--out", "{out}"], "scores.jsonl"),
    (["search", "--optimizer", "zc-random", *MLP[:4], "--predictor", "params", "--budget", "2", "--out", "{out}"],
     "runs.jsonl"),
])
def test_a_second_run_on_the_same_out_is_refused(tmp_path, capsys, command, log):
    (tmp_path / "o").mkdir()
    held = OutputLock(tmp_path / "o" / log)  # as another process's run holds it
    try:
        capsys.readouterr()
        assert main([a.replace("{out}", str(tmp_path / "o")) for a in command]) == 2
        err = _err_lines(capsys)  # correlate says which data it reads before it opens its log
        assert err[-1] == (f"naslib-plugins: error: {tmp_path / 'o' / log} is being written by process "
                           f"{os.getpid()} (lock {tmp_path / 'o' / log}.lock); wait for it to finish or pick another "
                           "--out")
        assert not [line for line in err[:-1] if line.startswith("naslib-plugins:")]
        assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [f"{log}.lock"]
    finally:
        held.release()


def test_write_csv_compresses_a_large_table_deterministically_and_reads_either_form(tmp_path, monkeypatch):
    import gzip

    import naslib_plugins.fileio as fileio
    from naslib_plugins.errors import BenchmarkFileError

    rows = [["hash", "score"]] + [[f"({i},)", i / 7] for i in range(50)]
    path = tmp_path / "scores.csv"
    assert fileio.write_csv(path, rows) == path
    with fileio.open_csv(path) as f:
        plain = f.read()
    monkeypatch.setattr(fileio, "COMPRESS_OVER", len(plain) - 1)
    gz = fileio.write_csv(path, rows)
    assert gz.name == "scores.csv.gz" and not path.exists()
    first = gz.read_bytes()
    assert fileio.write_csv(path, rows).read_bytes() == first  # no time stamp in the gzip header
    with fileio.open_csv(path) as f:
        assert f.read() == plain
    path.write_text(plain)  # an older plain file beside the compressed one: which is current is unknown
    with pytest.raises(BenchmarkFileError, match="remove the stale one"):
        fileio.csv_path(path)
    path.unlink()
    gz.write_bytes(gzip.compress(plain.encode())[:40])  # cut short
    with pytest.raises(BenchmarkFileError, match="damaged gzip"), fileio.open_csv(path) as f:
        f.read()
    gz.unlink()
    with pytest.raises(BenchmarkFileError, match="no such file"), fileio.open_csv(path):
        pass
