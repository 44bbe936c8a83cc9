"""The published figures shipped as package data (reporting/published.csv): every row valid and
traceable, every figure of the older anchors.md still there, another CSV read the same way, and a
damaged one a one-line error."""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from naslib_plugins.cli import main
from naslib_plugins.errors import BenchmarkFileError
from naslib_plugins.optimizers import OPTIMIZERS
from naslib_plugins.reporting.published import (
    CSV_COLUMNS,
    FIGURE_KEY,
    METRICS,
    PACKAGE_ORIGIN,
    default_anchors,
    load_anchors,
    parse_anchors,
    standard_view,
)
from naslib_plugins.spaces import SPACES, get_space

STANDARD = {"labels": "true", "data": "real"}
# anchors.md named these two by paper; the package file by method
OLD_NAMES = {"AZ-NAS (CVPR 2024)": "az_nas", "VKDNW (CVPR 2025)": "vkdnw_agg"}


def _rows() -> list[dict]:
    return list(csv.DictReader(io.StringIO(default_anchors().read_text(encoding="utf-8"), newline="")))


def test_the_package_file_loads_by_default():
    anchors = load_anchors()
    assert anchors.origin == PACKAGE_ORIGIN == load_anchors(default_anchors()).origin
    assert len(_rows()) == 2 * sum(a.kendall is not None for a in anchors.correlation) \
        + sum(a.kendall is None for a in anchors.correlation) + len(anchors.search) + len(anchors.optimum)
    by = {(a.predictor, a.space, a.dataset, a.source.label): a for a in anchors.correlation}
    zico = by["zico", "nasbench201", "cifar10", "ZiCo Table 3"]
    assert (zico.kendall, zico.spearman, zico.text, zico.metric) == (0.61, 0.80, ".61/.80", "test_accuracy")
    assert zico.source.protocol == "15625 archs, test accuracy" and zico.source.line is None
    grasp = by["grasp", "transbench101_macro", "segmentsemantic", "NAS-Bench-Suite-Zero Fig. 2"]
    assert (grasp.kendall, grasp.spearman, grasp.text, grasp.metric) == (None, -0.02, "-.02", "val_accuracy")
    assert grasp.source.protocol == "1000 archs, validation accuracy, batch 32"
    assert by["vkdnw_agg", "nasbench201", "ImageNet16-120", "VKDNW Table 1"].text == ".743/.906"
    assert "not training-free" in by["graf", "nasbench201", "cifar10", "VKDNW Table 1"].note
    assert anchors.optimum[("nasbench201", "cifar100")] == 73.51


def test_every_row_is_valid_and_traceable():
    rows = _rows()
    assert list(rows[0]) == list(CSV_COLUMNS)
    for line, row in enumerate(rows, start=2):
        where = f"published.csv line {line}"
        assert row["space"] in SPACES.names(), where
        assert row["dataset"] in get_space(row["space"]).datasets, where
        assert row["metric"] in METRICS[row["kind"]], where
        value = float(row["value"])
        if row["kind"] == "correlation":
            assert -1 <= value <= 1 and row["split"] in ("test", "val"), where
        elif row["metric"] == "rank":
            assert value >= 1, where
        else:
            assert 0 <= value <= 100, where
        assert re.fullmatch(r"[a-z][a-z0-9_-]*", row["method"]), where
        if row["settings"]:  # compared with our runs: the method is our optimizer
            assert row["kind"] == "search" and row["method"] in OPTIMIZERS.names(), where
        # authors or the paper's name, venue and year, and the table or figure (or that it was not recorded)
        assert re.search(r"\(.*\b20\d\d\b.*\)", row["source"]), where
        assert re.search(r"(Table|Fig\.) \d+|table number not recorded|benchmark table", row["source"]), where


def test_no_figure_twice():
    keys = [tuple(r[c] for c in FIGURE_KEY) for r in _rows()]
    assert len(keys) == len(set(keys))


def test_keeps_every_figure_of_anchors_md(shared_data, require):
    old = parse_anchors(require(shared_data.parent / "anchors.md"))
    new = load_anchors()
    for a in old.correlation:
        name = OLD_NAMES.get(a.predictor, a.predictor)
        found = [b for b in new.correlation if (b.predictor, b.space, b.dataset, b.metric) ==
                 (name, a.space, a.dataset, a.metric) and b.spearman == pytest.approx(a.spearman, abs=5e-4)
                 and (a.kendall is None or b.kendall == pytest.approx(a.kendall, abs=5e-4))]
        assert found, a
    for a in old.search:
        found = [b for b in new.search if (b.method, b.optimizer, b.settings, b.space, b.dataset, b.mean, b.std) ==
                 (a.method, a.optimizer, a.settings, a.space, a.dataset, a.mean, a.std)
                 and b.cost == ("" if a.cost == "-" else a.cost)]
        assert len(found) == 1, a
    assert new.optimum == old.optimum


def test_optimum_is_the_benchmarks_best(shared_data, require):
    from naslib_plugins.evaluation.ground_truth import load_ground_truth

    space = get_space("nasbench201")
    bench = require(shared_data / space.benchmark_file)
    for (name, dataset), best in load_anchors().optimum.items():
        assert name == "nasbench201"
        values = load_ground_truth(bench, space, dataset).values
        assert round(max(values.values()), 2) == best


def test_package_search_figures_match_only_their_protocol():
    anchors = load_anchors()
    nasi = anchors.for_search("nasi", "nasbench201", "cifar10", {"steps": 100, **STANDARD})
    assert [(a.method, a.source.label, a.text) for a in nasi] == [("NASI (T)", "NASI Table 4", "93.08 +- 0.24")]
    assert anchors.for_search("nasi", "nasbench201", "cifar10", {"steps": 100, "labels": "random", "data": "real"}) \
        == []
    for predictor in ("nwot", "nwot_eval"):
        found = anchors.for_search("zc-pt", "nasbench201", "cifar100", {"predictor": predictor, **STANDARD})
        assert [a.mean for a in found] == [70.77]
    # CIFAR-10's .npz standing in for CIFAR-100's absent images draws random labels over its classes:
    # that is the protocol's data as far as it goes here; random labels on CIFAR-10 itself are not
    stand_in = {"predictor": "nwot", "labels": "random", "data": "real", "images": "cifar10_convnetjs_5k.npz"}
    assert [a.mean for a in anchors.for_search("zc-pt", "nasbench201", "cifar100",
                                               standard_view(stand_in, "cifar100"))] == [70.77]
    assert standard_view(stand_in, "cifar10") == stand_in
    assert anchors.for_search("zc-pt", "nasbench201", "cifar10", standard_view(stand_in, "cifar10")) == []
    assert standard_view({**stand_in, "data": "gaussian"}, "cifar100")["labels"] == "random"
    # DARTS figures are test errors after training: no NB301 run of ours is set beside them
    assert anchors.for_search("nasi", "nasbench301", "cifar10", {"steps": 100, **STANDARD}) == []
    darts = [a for a in anchors.search if a.space == "nasbench301"]
    assert darts and all(a.text.endswith("(test error)") for a in darts)


HEADER = ",".join(CSV_COLUMNS)
# two halves of one figure, a search figure with settings, an optimum
GOOD = [
    "correlation,zico,ZiCo,nasbench201,cifar10,kendall,0.5,,test,100,,,,,,,\"P (A et al., X 2024), Table 1\",",
    "correlation,zico,ZiCo,nasbench201,cifar10,spearman,0.70,,test,100,,,,,,,\"P (A et al., X 2024), Table 1\",",
    "search,nasi,NASI x,nasbench201,cifar10,test_accuracy,93.1,0.2,test,,,,,9 s,steps=100 mu=1.0|2.0,,"
    "\"Q (2024), Table 2\",n",
    "optimum,optimum,best,nasbench201,cifar10,test_accuracy,94.37,,test,,,,,,,,\"R (2020), benchmark table\",",
]


def _csv(path: Path, rows: list[str], header: str = HEADER) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def test_another_csv_reads_the_same_way(tmp_path):
    anchors = load_anchors(_csv(tmp_path / "mine.csv", GOOD))
    assert anchors.origin == str(tmp_path / "mine.csv")
    [zico] = anchors.correlation
    assert (zico.kendall, zico.spearman, zico.text) == (0.5, 0.7, ".5/.70")
    assert zico.source.label == "P Table 1" and zico.source.protocol == "100 archs, test accuracy"
    [nasi] = anchors.search
    assert (nasi.optimizer, nasi.settings, nasi.values(), nasi.note) == \
        ("nasi", {"steps": 100, "mu": (1.0, 2.0)}, "93.1 +- 0.2, 9 s", "n")
    assert anchors.for_search("nasi", "nasbench201", "cifar10", {"steps": 100, "mu": 2.0, **STANDARD}) == [nasi]
    assert anchors.for_search("nasi", "nasbench201", "cifar10", {"steps": 100, "mu": 3.0, **STANDARD}) == []
    assert anchors.optimum == {("nasbench201", "cifar10"): 94.37}
    kendall = load_anchors(_csv(tmp_path / "k.csv", GOOD[:1])).correlation[0]
    assert kendall.text == ".5 (Kendall)"  # alone, it would read as a Spearman


def _bad(row: str, column: str, value: str) -> str:
    cells = next(csv.reader([row]))
    cells[CSV_COLUMNS.index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(cells)
    return out.getvalue()


@pytest.mark.parametrize("rows, header, message", [
    ([_bad(GOOD[0], "metric", "pearson")], HEADER, "line 2: metric 'pearson': a correlation figure is one of kendall"),
    ([_bad(GOOD[1], "value", "1.5")], HEADER, "line 2: spearman 1.5 is out of range"),
    ([_bad(GOOD[2], "value", "101")], HEADER, "line 2: test_accuracy 101 is out of range"),
    ([_bad(_bad(GOOD[2], "metric", "rank"), "value", "0")], HEADER, "line 2: rank 0 is out of range"),
    ([_bad(GOOD[2], "value", "high")], HEADER, "line 2: value: not a number: 'high'"),
    ([_bad(_bad(GOOD[2], "metric", "rank"), "value", "inf")], HEADER, "line 2: rank inf is out of range"),
    ([_bad(GOOD[2], "std", "-1")], HEADER, "line 2: std -1 is negative"),
    ([_bad(GOOD[0], "split", "")], HEADER, "line 2: split '': expected test or val \\(a correlation must say which\\)"),
    ([_bad(GOOD[2], "split", "train")], HEADER, "line 2: split 'train': expected test or val or empty"),
    ([_bad(GOOD[0], "kind", "table")], HEADER, "line 2: kind 'table': expected one of correlation, search, optimum"),
    ([_bad(GOOD[0], "source", "")], HEADER, "line 2: empty source"),
    ([_bad(GOOD[0], "n_archs", "all")], HEADER, "line 2: n_archs: expected a positive integer, got 'all'"),
    ([_bad(GOOD[2], "settings", "steps")], HEADER, "line 2: settings: expected KEY=VALUE, got 'steps'"),
    ([_bad(GOOD[0], "settings", "steps=1")], HEADER, "line 2: settings are for search figures only"),
    ([GOOD[0], GOOD[1], GOOD[0]], HEADER, "line 4: the same figure as line 2"),
    ([GOOD[0] + ",extra"], HEADER, "line 2: expected 18 cells"),
    ([GOOD[0][:-1]], HEADER.removesuffix(",note"), "mine.csv: missing columns note$"),
    ([GOOD[0] + ","], HEADER + ",colour", "mine.csv: unknown columns colour$"),
])
def test_a_damaged_csv_is_one_error_naming_the_line(tmp_path, rows, header, message):
    with pytest.raises(BenchmarkFileError, match=f"mine.csv {message}" if message.startswith("line") else message):
        load_anchors(_csv(tmp_path / "mine.csv", rows, header))


@pytest.mark.parametrize("command", ["leaderboard", "tables"])
def test_cli_damaged_csv_exits_2_with_one_line(tmp_path, capsys, command):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "tables.yaml").write_text("tables: {s: {kind: resolution, runs: ['*']}}\n")
    bad = _csv(tmp_path / "mine.csv", [_bad(GOOD[1], "value", "1.5")])
    target = tmp_path / "results" / ("tables.yaml" if command == "tables" else "")
    assert main([command, str(target), "--anchors", str(bad), *(["--no-plots"] if command == "leaderboard" else [])]) \
        == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"naslib-plugins: error: {bad} line 2: spearman 1.5 is out of range"]
    assert not (tmp_path / "results" / "LEADERBOARD.md").exists()


def test_the_file_ships_with_the_package():
    tomllib = pytest.importorskip("tomllib")
    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert "reporting/published.csv" in pyproject["tool"]["setuptools"]["package-data"]["naslib_plugins"]
