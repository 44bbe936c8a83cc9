"""reporting/: the published figures' markdown parser, the leaderboard, the plots and the README tables
(the package's published.csv itself: tests/test_published.py)."""
from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from naslib_plugins.cli import main
from naslib_plugins.errors import BenchmarkFileError, UserError
from naslib_plugins.evaluation.correlation import correlations, with_ci
from naslib_plugins.predictors import PREDICTORS
from naslib_plugins.reporting.leaderboard import build_leaderboard, fmt, seed_list
from naslib_plugins.reporting.plots import (
    COLOUR_ORDER,
    PALETTE,
    _spearman_table,
    axis_label,
    benchmark_label,
    nasi_agnostic_plot,
    predictor_colours,
    scatter_plots,
    spearman_heatmap,
)
from naslib_plugins.reporting.published import parse_anchors
from naslib_plugins.reporting.tables import build_tables

# the real file's layout, cut down: intro with the optimum, ZiCo table and its prose, Suite-Zero, search
ANCHORS = """# Published figures to compare against (facts with their sources)

Protocols differ (all archs vs samples): compare under one protocol. NB201 optimum (200-epoch test accuracy):
CIFAR-10 94.37, CIFAR-100 73.51, ImageNet16-120 47.31.

## Rank correlation on NAS-Bench-201 (Kendall tau / Spearman rho, all archs, test acc)
Source: ZiCo paper (Li et al., ICLR 2023), Table 3; best recent rankers from their papers.

| proxy | CIFAR-10 | CIFAR-100 | ImageNet16-120 |
|---|---|---|---|
| ZiCo | .61/.80 | .61/.81 | .60/.79 |
| NASWOT | .58/.77 | .62/.80 | .60/.78 |

ZiCo also reports NB101 .46/.63 and TransNAS-Bench-101-micro: autoencoder .24/.35,
class_scene .51/.71.

## NAS-Bench-Suite-Zero (Krishnakumar et al., NeurIPS 2022 D&B), Fig. 2
Spearman rho with validation accuracy, 1000 random archs per task (batch 64; 32 for TNB).

|proxy|NB101|201C10|mi-Scn|ma-Seg|
|---|---|---|---|---|
|nwot|.31|.77|.60|.80|
|grasp|.27|.51|-.27|-.02|

## Search results on NAS-Bench-201 (test accuracy %, cost)
Source: RoBoT (ICLR 2024) Table 2 (1080Ti GPU-seconds) unless noted.

| method | CIFAR-10 | CIFAR-100 | ImageNet16-120 | cost |
|---|---|---|---|---|
| NASI (T), NASI paper Table 4 | 93.08 +- 0.24 | 69.51 +- 0.59 | 40.87 +- 0.85 | 30 GPU-s |
| TE-NAS | 93.90 +- 0.47 | 71.24 +- 0.56 | 42.38 +- 0.46 | 1558 GPU-s |
"""


def _correlation_run(folder: Path, space: str, dataset: str, scores: dict[str, list], truth: list,
                     failed: dict[str, int] | None = None) -> dict:
    """A correlation.json + scores.csv as evaluation/correlate.py writes them; failed[name] = index of a failure."""
    folder.mkdir(parents=True)
    hashes = [f"({i}, 1)" for i in range(len(truth))]
    valid = {n: [None if (failed or {}).get(n) == i else v for i, v in enumerate(s)] for n, s in scores.items()}
    result = {"space": space, "dataset": dataset, "n_archs": len(truth), "seed": 0, "metric": "test_accuracy",
              "benchmark": "b.csv", "data": "test data", "command": "naslib-plugins correlate ...", "predictors": {}}
    for name, s in valid.items():
        c = correlations(s, truth)
        c.update(seconds_per_arch=0.25, failures=["ValueError: x"] if None in s else [])
        result["predictors"][name] = c
    (folder / "correlation.json").write_text(json.dumps(result))
    with open(folder / "scores.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["hash", "arch_str", "test_accuracy"]
                   + [c for n in scores for c in (n, f"{n}_seconds", f"{n}_status", f"{n}_reason")])
        for i, h in enumerate(hashes):
            row = [h, f"arch{i}", truth[i]]
            for n in scores:
                v = valid[n][i]
                row += ["" if v is None else v, 0.25, "failed" if v is None else "ok", "" if v is not None else "x"]
            w.writerow(row)
    return result


def _search_run(folder: Path, steps: int, accuracies: list[float], labels: str = "true",
                transfer: dict | None = None) -> None:
    folder.mkdir(parents=True)
    runs = [{"seed": s, "arch": [0] * 6, "arch_str": "a", "test_accuracy": a, "val_accuracy": a - 3,
             "search_seconds": 10.0 + s, "cpu_seconds": 20.0, "predictor_calls": 7} for s, a in enumerate(accuracies)]
    (folder / "search.json").write_text(json.dumps({
        "optimizer": "nasi", "space": "nasbench201", "dataset": "cifar10",
        "config": {"steps": steps, "mu": 1.0, "nu": "adaptive", "batch_size": 64, "labels": labels, "data": "real",
                   "seeds": list(range(len(accuracies)))},
        "runs": runs, "mean_test_accuracy": float(np.mean(accuracies)), "std_test_accuracy": float(np.std(accuracies)),
        "rank": {"test_accuracy": {"mean": 3.0, "std": 1.0, "of": 15625}},
        "mean_search_seconds": float(np.mean([r["search_seconds"] for r in runs])), "notes": ["seed 1: a note"],
        "command": "naslib-plugins search ...", **({"transfer": transfer} if transfer else {}),
    }))


def _val_search_run(folder: Path, space: str, dataset: str, config: dict, found: list[tuple[float, int]],
                    rank: dict, cpu: float | None = 2.0) -> None:
    """A search whose table holds validation metrics only (a pool, TNB): (metric, rank) per seed."""
    folder.mkdir(parents=True)
    runs = [{"seed": s, "arch": [0], "arch_str": "a", "test_accuracy": None, "val_accuracy": v,
             "val_accuracy_rank": r, "search_seconds": 1.0, "cpu_seconds": cpu, "predictor_calls": 100}
            for s, (v, r) in enumerate(found)]
    values = [v for v, _ in found]
    (folder / "search.json").write_text(json.dumps({
        "optimizer": "zc-random", "space": space, "dataset": dataset,
        "config": {**config, "seeds": list(range(len(found)))}, "runs": runs,
        "mean_test_accuracy": None, "std_test_accuracy": None, "mean_val_accuracy": float(np.mean(values)),
        "std_val_accuracy": float(np.std(values)), "rank": {"val_accuracy": rank}, "mean_search_seconds": 1.0,
        "notes": [], "command": "naslib-plugins search ..."}))


@pytest.fixture(scope="module")
def tree_template(tmp_path_factory) -> Path:
    """Made once (the bootstrap intervals take most of a second a run); each test gets a copy."""
    root = tmp_path_factory.mktemp("tree")
    rng = np.random.default_rng(0)
    truth = list(rng.uniform(10, 94, size=30))
    results = root / "results"
    _correlation_run(results / "nb201" / "c10", "nasbench201", "cifar10",
                     {"zico": [t + rng.normal(0, 5) for t in truth], "nasi": list(10 ** rng.uniform(-2, 5, 30))},
                     truth, failed={"nasi": 3})
    _correlation_run(results / "nb101", "nasbench101", "cifar10", {"nwot": list(rng.normal(size=30))}, truth)
    _search_run(results / "search" / "nasi_T100", 100, [93.0, 94.0], transfer={
        "cifar100": {"mean_test_accuracy": 70.0, "std_test_accuracy": 0.5, "n_seeds": 2}})
    _search_run(results / "search" / "nasi_random", 100, [90.0], labels="random")
    (root / "anchors.md").write_text(ANCHORS)
    return root


@pytest.fixture
def tree(tree_template: Path, tmp_path: Path) -> Path:
    shutil.copytree(tree_template, tmp_path, dirs_exist_ok=True)
    return tmp_path / "results"


def _md_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| predictor") and not line.startswith("| optimizer")]


def test_real_anchors_file_has_the_known_entries(shared_data):
    anchors = parse_anchors(shared_data.parent / "anchors.md")
    by = {(a.predictor, a.space, a.dataset, a.metric): a for a in anchors.correlation}
    zico = by["zico", "nasbench201", "cifar10", "test_accuracy"]
    assert (zico.kendall, zico.spearman, zico.source.label, zico.source.line) == (0.61, 0.80, "ZiCo Table 3", 8)
    assert by["nwot", "nasbench201", "ImageNet16-120", "test_accuracy"].spearman == 0.78  # NASWOT -> nwot
    assert by["params", "nasbench201", "cifar100", "test_accuracy"].kendall == 0.55  # #Params -> params
    nwot = by["nwot", "nasbench101", "cifar10", "val_accuracy"]
    assert nwot.spearman == 0.31 and nwot.kendall is None and "validation accuracy" in nwot.source.protocol
    assert by["grasp", "transbench101_macro", "segmentsemantic", "val_accuracy"].spearman == -0.02
    assert by["synflow", "transbench101_micro", "room_layout", "val_accuracy"].spearman == 0.30
    assert by["zico", "transbench101_micro", "normal", "test_accuracy"].spearman == 0.68  # from the prose
    assert sum(a.metric == "val_accuracy" for a in anchors.correlation) == 7 * 19
    nasi = [a for a in anchors.search if a.method == "NASI (T)" and a.dataset == "cifar10"]
    assert len(nasi) == 1 and (nasi[0].mean, nasi[0].std, nasi[0].cost) == (93.08, 0.24, "30 GPU-s")
    assert nasi[0].source.label == "NASI paper Table 4" and nasi[0].settings == {"steps": 100}
    pt = {a.settings["predictor"] for a in anchors.search if a.optimizer == "zc-pt"}
    assert pt == {"zico", ("nwot", "nwot_eval")}  # Zero-Cost-PT computes NASWOT in eval mode
    standard = {"labels": "true", "data": "real"}
    for predictor, n in (("nwot", 1), ("nwot_eval", 1), ("zico", 1), ("snip", 0)):
        found = anchors.for_search("zc-pt", "nasbench201", "cifar10", {"predictor": predictor, **standard})
        assert len(found) == n, predictor
    assert anchors.optimum[("nasbench201", "ImageNet16-120")] == 47.31
    assert anchors.note.startswith("Protocols differ")


def test_search_anchor_needs_the_same_protocol(tmp_path):
    (tmp_path / "a.md").write_text(ANCHORS)
    anchors = parse_anchors(tmp_path / "a.md")
    config = {"steps": 100, "labels": "true", "data": "real"}
    assert [a.method for a in anchors.for_search("nasi", "nasbench201", "cifar10", config)] == ["NASI (T)"]
    assert anchors.for_search("nasi", "nasbench201", "cifar10", {**config, "steps": 400}) == []
    assert anchors.for_search("nasi", "nasbench201", "cifar10", {**config, "labels": "random"}) == []
    assert anchors.for_search("nasi", "nasbench201", "cifar100", config)[0].mean == 69.51


@pytest.mark.parametrize("table, offset, message", [
    ("| model | acc |\n|---|---|\n| x | 1 |\n", 0, "a table with columns \\['model', 'acc'\\]"),
    ("|proxy|NB101|\n|---|---|\n|nwot|high|\n", 2, "not a number: 'high'"),
    ("|proxy|NB101|\n|---|---|\n|nwot|.3|.4|\n", 2, "3 cells under a header of 2"),
])
def test_anchors_bad_table_names_the_line(tmp_path, table, offset, message):
    head = ANCHORS + "\n## Extra\n\n"
    path = tmp_path / "a.md"
    path.write_text(head + table)
    with pytest.raises(BenchmarkFileError, match=f"a.md line {len(head.splitlines()) + 1 + offset}: {message}"):
        parse_anchors(path)


def test_leaderboard_tables_and_anchors(tree):
    board = build_leaderboard(tree, tree.parent / "anchors.md", plots=False)
    md = (tree / "LEADERBOARD.md").read_text()
    c10 = json.loads((tree / "nb201" / "c10" / "correlation.json").read_text())["predictors"]
    zico = c10["zico"]
    row = (f"| zico | `nb201/c10/correlation.json` | {with_ci(zico, 'kendall')} | {with_ci(zico, 'spearman')} | "
           f"{zico['top10_precision']:.3f} | 30 (0) | 0.250 | .61/.80 |  |")
    assert row in md
    assert f"| nasi | `nb201/c10/correlation.json` | {with_ci(c10['nasi'], 'kendall')} |" in md
    assert "| 29 (1) |" in md  # nasi's failed architecture
    # published-only rows for what we did not run, by our names; Suite-Zero's NB101 beside nwot on NB101
    assert "| nwot | published only |  |  |  |  |  | .58/.77 | .77 |" in md
    nb101 = md.split("### nasbench101 / cifar10")[1].split("###")[0]
    assert "| [1] ZiCo paper | [2] NAS-Bench-Suite-Zero Fig. 2 |" in nb101
    assert "| nwot | `nb101/correlation.json` |" in nb101 and "|  | .31 |" in nb101
    assert "| zico | published only |  |  |  |  |  | .46/.63 |  |" in nb101
    assert "### nasbench101 / cifar10" in md and "### nasbench201 / cifar10" in md
    assert "] **ZiCo Table 3**: ZiCo paper (Li et al., ICLR 2023), Table 3" in md
    assert "Protocol: Spearman rho with validation accuracy, 1000 random archs" in md
    # search: the true-label run matches NASI (T), the random-label run matches nothing
    rows = {r["file"]: r for r in board["search"]["rows"] if "transfer_from" not in r}
    assert rows["search/nasi_T100/search.json"]["published"] == "NASI paper Table 4: 93.08 +- 0.24, 30 GPU-s"
    assert rows["search/nasi_random/search.json"]["published"] == ""
    assert "| nasi | steps=100, mu=1.0, nu=adaptive, batch_size=64, labels=true, data=real | nasbench201 | cifar10 | " \
           "0, 1 | 93.50 +- 0.50 (n=2) | 3.0 +- 1.0 of 15625 | 10.5 / 20.0 | 7 |" in md
    assert "| 90.00 (n=1) |" in md
    assert "| TE-NAS | published only | nasbench201 | cifar10 |" in md and "| 94.37 |" in md
    assert "- `search/nasi_T100/search.json`: seed 1: a note" in md
    # the C10 search's cells on CIFAR-100: their own row, marked, matched to NASI (T)'s C100 figure
    transfer = [r for r in board["search"]["rows"] if r.get("transfer_from") == "cifar10"]
    assert [(r["dataset"], r["mean_accuracy"], r["mean_search_seconds"]) for r in transfer] == \
        [("cifar100", 70.0, None)]
    assert "| nasbench201 | cifar100 (found on cifar10) | 0, 1 | 70.00 +- 0.50 (n=2) |  | n/a / n/a |  |" in md
    assert transfer[0]["published"].startswith("NASI paper Table 4: 69.51")


def test_csv_and_json_agree_with_markdown(tree):
    build_leaderboard(tree, tree.parent / "anchors.md", plots=False)
    md_rows = _md_rows((tree / "LEADERBOARD.md").read_text())
    with open(tree / "LEADERBOARD.csv", newline="") as f:
        csv_rows = list(csv.DictReader(f))
    data = json.loads((tree / "LEADERBOARD.json").read_text())
    json_rows = [r for s in data["correlation"] for r in s["rows"] + s["published_only"]]
    json_rows += data["search"]["rows"] + data["search"]["published_only"]
    assert len(csv_rows) == len(json_rows) == len(md_rows) == 12
    for c, j, m in zip(csv_rows, json_rows, md_rows):
        assert c["method"] == j["method"] == m[0]
        if c["kind"] == "correlation":
            assert m[1] == f"`{c['file']}`" == f"`{j['file']}`"
            assert m[2:4] == [with_ci(j, "kendall"), with_ci(j, "spearman")]
            assert float(c["spearman"]) == pytest.approx(j["spearman"], abs=1e-6)
            assert m[5] == f"{c['n_valid']} ({c['n_failed']})"
        if c["kind"] == "search":
            assert m[-1] == f"`{c['file']}`" and m[5].startswith(f"{float(c['mean_accuracy']):.2f}")
        for a in j["anchors"]:
            assert a["values"] in c["published"] and a["values"] in " ".join(m)
    assert [s["ref"] for s in data["sources"]] == [1, 2, 3, 4, 5][:len(data["sources"])]


def test_without_anchors_it_says_so(tree):
    board = build_leaderboard(tree, None, plots=False)
    md = (tree / "LEADERBOARD.md").read_text()
    assert "Published figures: not available" in md and "published only" not in md
    assert all(r["published"] == "" for s in board["correlation"] for r in s["rows"])


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _assert_figure(png: Path) -> None:
    """The PNG and, beside it with the same stem, its PDF; no temporary file left."""
    assert png.suffix == ".png" and png.stat().st_size > 5000 and _png_size(png)[0] > 0
    assert png.with_suffix(".pdf").read_bytes()[:5] == b"%PDF-"
    assert not list(png.parent.glob(".*.tmp"))


def test_plots_are_written(tree):
    board = build_leaderboard(tree, tree.parent / "anchors.md", plots=True)
    assert board["plots"] == ["plots/scatter/nb101.png", "plots/scatter/nb201__c10.png", "plots/spearman_heatmap.png"]
    for p in board["plots"]:
        _assert_figure(tree / p)
    md = (tree / "LEADERBOARD.md").read_text()
    assert "- [plots/spearman_heatmap.png](plots/spearman_heatmap.png) ([PDF](plots/spearman_heatmap.pdf))" in md
    assert "spearman_bars" not in md and not (tree / "plots" / "spearman_bars.png").exists()
    assert scatter_plots(tree / "nb101").name == "scatter.png"
    _assert_figure(tree / "nb101" / "scatter.png")
    _assert_figure(spearman_heatmap(tree, tree / "heat.png"))


def test_figures_are_reproducible(tree):
    """No date nor random id in the files: an unchanged figure rewrites the same bytes."""
    first, second = (spearman_heatmap(tree, tree / folder / "heat.png") for folder in ("a", "b"))
    for suffix in (".png", ".pdf"):
        assert first.with_suffix(suffix).read_bytes() == second.with_suffix(suffix).read_bytes()


def test_spearman_heatmap_needs_runs(tmp_path):
    with pytest.raises(UserError, match="no correlation.json"):
        spearman_heatmap(tmp_path)


def _runs(spearman: dict[tuple[str, str], dict[str, float | None]], n_archs: int = 100, metric: str | None = None
          ) -> list[tuple[Path, dict]]:
    return [(Path(f"{space}/{dataset}/correlation.json"),
             {"space": space, "dataset": dataset, "n_archs": n_archs, "metric": metric,
              "predictors": {n: {"spearman": v} for n, v in by_name.items()}})
            for (space, dataset), by_name in spearman.items()]


def test_spearman_table_orders_predictors_by_mean():
    runs = _runs({("nasbench201", "cifar10"): {"zico": 0.8, "nasi": 0.5, "grasp": None},
                  ("nasbench101", "cifar10"): {"zico": 0.6, "nasi": 0.7, "grasp": 0.1}})
    runs += _runs({("nasbench201", "cifar10"): {"zico": 0.1}}, n_archs=50)  # fewer archs: not the one shown
    names, benchmarks, table, ran = _spearman_table(runs)
    assert names == ["zico", "nasi", "grasp"]  # means .70, .60, .10 (grasp's n/a left out)
    assert benchmarks == [("nasbench101", "cifar10", None), ("nasbench201", "cifar10", None)]
    assert table[0].tolist() == [0.6, 0.8] and np.isnan(table[2, 1]) and ran.all()
    names, _, table, ran = _spearman_table(runs + _runs({("transbench101_micro", "jigsaw"): {"nwot": 0.9}}))
    assert names[0] == "nwot" and np.isnan(table[0, :2]).all() and ran[0].tolist() == [False, False, True]


def test_spearman_heatmap_keeps_a_benchmarks_validation_runs_apart(tmp_path):
    # NB201's protocol P2 (validation accuracy) beside P1 (test), on as many cells: two columns
    runs = _runs({("nasbench201", "cifar10"): {"zico": 0.8}}, metric="test_accuracy")
    runs += _runs({("nasbench201", "cifar10"): {"zico": 0.7}}, metric="val_accuracy")
    runs += _runs({("nasbench101", "cifar10"): {"zico": 0.6}}, metric="val_accuracy")
    names, benchmarks, table, _ = _spearman_table(runs)
    assert benchmarks == [("nasbench101", "cifar10", "val_accuracy"), ("nasbench201", "cifar10", "test_accuracy"),
                          ("nasbench201", "cifar10", "val_accuracy")]
    assert table[0].tolist() == [0.6, 0.8, 0.7]
    _assert_figure(spearman_heatmap(tmp_path, tmp_path / "heat.png", runs))


def test_spearman_heatmap_stays_narrow(tmp_path):
    """20 benchmarks x every registered predictor: within ~2400 px wide, whatever the count."""
    rng = np.random.default_rng(0)
    names = PREDICTORS.names()
    spaces = ["nasbench101", "nasbench201", "nasbench301", "transbench101_micro", "transbench101_macro"]
    runs = _runs({(space, f"task_{i}"): {n: float(rng.uniform(-1, 1)) for n in names[: 3 + i % len(names)]}
                  for i, space in enumerate(spaces * 4)})
    png = spearman_heatmap(tmp_path, tmp_path / "heat.png", runs)
    _assert_figure(png)
    width, height = _png_size(png)
    assert 1200 < width <= 2400 and height < width
    width_40, _ = _png_size(spearman_heatmap(tmp_path, tmp_path / "heat40.png", runs + _runs(
        {("nasbench201", f"more_{i}"): {"zico": 0.5} for i in range(20)})))
    assert width_40 <= 2400


def test_predictor_colours_are_distinct_and_fixed():
    names = PREDICTORS.names()
    colours = predictor_colours(names)
    assert len(set(colours.values())) == len(names) <= len(PALETTE)
    assert colours["ensemble"] != colours["nasi"]
    assert predictor_colours(["zico", "nasi"]) == {"zico": colours["zico"], "nasi": colours["nasi"]}  # not by place
    others = predictor_colours([*names, "custom_b", "custom_a"])
    assert len(set(others.values())) == len(names) + 2 and others["custom_a"] == predictor_colours(["custom_a"])[
        "custom_a"]
    assert len(set(PALETTE)) == len(PALETTE)


def test_every_predictor_has_its_own_place_in_the_colour_order():
    """A predictor missing from COLOUR_ORDER would take a colour by sorted name among the unlisted,
    so registering another could change it: every registered one is listed, once."""
    assert set(PREDICTORS.names()) <= set(COLOUR_ORDER) and len(set(COLOUR_ORDER)) == len(COLOUR_ORDER)


@pytest.mark.parametrize("field, space, dataset, label", [
    ("test_accuracy", "nasbench201", "cifar10", "test accuracy (%)"),
    ("val_accuracy", "nasbench101", "cifar10", "validation accuracy (%)"),
    ("train_accuracy", "", "", "training accuracy (%)"),
    ("val_accuracy", "transbench101_micro", "autoencoder", "validation SSIM"),
    ("val_accuracy", "transbench101_macro", "jigsaw", "validation top-1 accuracy (%)"),
    ("val_accuracy", "transbench101_micro", "room_layout", "validation negative loss"),
    ("zico", "nasbench201", "cifar10", "zico score"),
])
def test_axis_labels_are_words(field, space, dataset, label):
    assert axis_label(field, space, dataset) == label


def test_benchmark_labels_are_words():
    assert benchmark_label("nasbench201", "cifar10") == "NB201 CIFAR-10"
    assert benchmark_label("nasbench201", "ImageNet16-120") == "NB201 ImageNet16-120"
    assert benchmark_label("transbench101_micro", "jigsaw") == "TNB-micro jigsaw"
    assert benchmark_label("transbench101_macro", "room_layout") == "TNB-macro room layout"
    assert benchmark_label("my_space", "my_data") == "my space my data"


def test_nasi_agnostic_plot_pairs_by_hash(tmp_path):
    rng = np.random.default_rng(1)
    truth = list(rng.uniform(10, 94, size=20))
    base = list(rng.uniform(1, 50, size=20))
    _correlation_run(tmp_path / "true", "nasbench201", "cifar10", {"nasi": base}, truth)
    _correlation_run(tmp_path / "labels", "nasbench201", "cifar10", {"nasi": [2 * b for b in base]}, truth,
                     failed={"nasi": 5})
    noise = rng.normal(0, 10, size=20)
    _correlation_run(tmp_path / "gauss", "nasbench201", "cifar10", {"nasi": list(np.array(base) + noise)}, truth)
    rows = (tmp_path / "gauss" / "scores.csv").read_text().splitlines()
    (tmp_path / "gauss" / "scores.csv").write_text("\n".join([rows[0]] + rows[:0:-1]) + "\n")  # other order
    out = tmp_path / "fig" / "agnostic.png"
    rho_labels, rho_data = nasi_agnostic_plot(tmp_path / "true", tmp_path / "labels", tmp_path / "gauss", out)
    assert rho_labels == pytest.approx(1.0)  # the failed architecture is dropped, the rest pairs exactly
    assert rho_data == pytest.approx(np.corrcoef(base, np.array(base) + noise)[0, 1])
    assert out.read_bytes()[:4] == b"\x89PNG"
    _correlation_run(tmp_path / "few", "nasbench201", "cifar10", {"nasi": base[:2]}, truth[:2])
    with pytest.raises(UserError, match="share 2 architectures"):
        nasi_agnostic_plot(tmp_path / "true", tmp_path / "labels", tmp_path / "few", out)


def test_nasi_agnostic_plot_missing_column(tmp_path):
    _correlation_run(tmp_path / "true", "nasbench201", "cifar10", {"zico": [1.0, 2.0, 3.0]}, [1.0, 2.0, 3.0])
    with pytest.raises(BenchmarkFileError, match="scores.csv: missing columns nasi"):
        nasi_agnostic_plot(tmp_path / "true", tmp_path / "true", tmp_path / "true", tmp_path / "x.png")


@pytest.mark.parametrize("content, message", [
    ('{"space": "nasbench201", "dataset": "cif', "truncated or invalid JSON"),
    ('{"space": "nasbench201"}', "missing dataset, n_archs, seed, metric, predictors"),
    ("[1, 2]", "expected a JSON object"),
])
def test_cli_skips_a_corrupt_run_with_one_warning_and_builds_the_rest(tree, capsys, content, message):
    bad = tree / "nb101" / "correlation.json"
    bad.write_text(content)
    assert main(["leaderboard", str(tree), "--anchors", str(tree.parent / "anchors.md"), "--no-plots"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"naslib-plugins: warning: {bad}: ") and message in err[0]
    assert "run skipped" in err[0] and (tree / "LEADERBOARD.md").is_file()


def test_cli_default_is_the_package_file(tree, monkeypatch, capsys):
    """A fresh clone: no data folder, no anchors file, and the published figures are there."""
    monkeypatch.delenv("NASLIB_PLUGINS_DATA", raising=False)
    assert main(["leaderboard", str(tree), "--no-plots"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("published.csv")
    md = (tree / "LEADERBOARD.md").read_text()
    assert "Published figures from `naslib_plugins/reporting/published.csv`" in md
    c10 = md.split("### nasbench201 / cifar10")[1].split("###")[0]
    zico = json.loads((tree / "nb201" / "c10" / "correlation.json").read_text())["predictors"]["zico"]
    assert f"| zico | `nb201/c10/correlation.json` | {with_ci(zico, 'kendall')} | {with_ci(zico, 'spearman')} |" in c10
    assert "] ZiCo Table 3 |" in c10 and "] VKDNW Table 1 |" in c10 and "| .61/.80 |" in c10
    assert "| graf | published only (a trained predictor, not training-free) |" in c10
    assert "**ZiCo Table 3**: ZiCo (Li et al., ICLR 2023), Table 3. Protocol: 15625 archs, test accuracy." in c10
    board = json.loads((tree / "LEADERBOARD.json").read_text())
    assert board["anchors_file"] == "naslib_plugins/reporting/published.csv"
    search = {r["file"]: r for r in board["search"]["rows"] if "transfer_from" not in r}
    assert search["search/nasi_T100/search.json"]["published"] == "NASI Table 4: 93.08 +- 0.24, 30 GPU-s"
    assert "| TE-NAS | published only | nasbench201 | cifar10 |" in md and "| 94.37 |" in md
    # anchors.md beside the data folder is no longer read
    data = tree.parent / "benchdata"
    data.mkdir()
    monkeypatch.setenv("NASLIB_PLUGINS_DATA", str(data))
    assert main(["leaderboard", str(tree), "--no-plots"]) == 0
    assert "Published figures from `naslib_plugins/reporting/published.csv`" in (tree / "LEADERBOARD.md").read_text()
    capsys.readouterr()
    assert main(["leaderboard", str(tree), "--anchors", str(tree / "none.md"), "--no-plots"]) == 2
    assert f"anchors file {tree / 'none.md'}: No such file" in capsys.readouterr().err


def test_cli_markdown_anchors_given_explicitly(tree, capsys):
    assert main(["leaderboard", str(tree), "--anchors", str(tree.parent / "anchors.md"), "--no-plots"]) == 0
    assert capsys.readouterr().out.rstrip().endswith(f"anchors: {tree.parent / 'anchors.md'}")
    md = (tree / "LEADERBOARD.md").read_text()
    assert f"Published figures from `{tree.parent / 'anchors.md'}`" in md
    assert "**ZiCo Table 3**: ZiCo paper (Li et al., ICLR 2023), Table 3; best recent rankers from their papers " \
           "(anchors.md line 7)." in md
    assert "VKDNW" not in md  # only what the file holds


def test_seed_list():
    assert (seed_list([0, 1, 2, 3, 4]), seed_list([0, 2, 5]), seed_list([3])) == ("0-4", "0, 2, 5", "3")


# README tables (reporting/tables.py) from a manifest
MANIFEST = {
    "tables": {
        "nb201": {"kind": "correlation", "title": "NB201", "runs": {"cifar10": "nb201/c10", "cifar100": "nb201/c100"},
                  "targets": {"cifar10": {"zico": 0.5, "nasi": 0.99}}},
        "summary": {"kind": "correlation-summary", "runs": {"cifar10": "nb201/c10"}, "caption": "{n_archs} archs."},
        "spaces": {"kind": "suite-zero", "runs": ["spaces/*"], "gap": 0.1},
        "spaces-summary": {"kind": "suite-zero-summary", "runs": ["spaces/*"], "gap": 0.1},
        "searches": {"kind": "searches", "runs": ["search/*"], "datasets": ["cifar10", "cifar100"]},
    },
    "page": {"file": "README.md", "contents": [{"text": "# Results\n\nIntro."}, {"table": "nb201"},
                                               {"table": "spaces"}, {"text": "### Searches"}, {"table": "searches"}]},
    "readme": {"file": "../README.md", "blocks": {"summary": "summary", "spaces": "spaces-summary"}},
}
README = ("# Top\n\n<!-- summary:start -->\nold\n<!-- summary:end -->\n\ntext\n"
          "<!-- spaces:start -->\n<!-- spaces:end -->\n")


@pytest.fixture(scope="module")
def tables_template(tree_template: Path, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tables")
    shutil.copytree(tree_template, root, dirs_exist_ok=True)
    results = root / "results"
    rng = np.random.default_rng(2)
    truth = list(rng.uniform(80, 94, size=25))
    params = list(rng.uniform(0.1, 2, size=25))
    for task, noise in (("cifar10", 0.2), ("other", 2.0)):
        _correlation_run(results / "spaces" / f"correlate_{task}", "nasbench101", task,
                         {"nwot": [p + rng.normal(0, noise) for p in params], "params": params}, truth)
    (root / "README.md").write_text(README)
    (results / "tables.yaml").write_text(yaml.safe_dump(MANIFEST, sort_keys=False))
    return root


@pytest.fixture
def tables_tree(tables_template: Path, tmp_path: Path, monkeypatch) -> Path:
    """`tree` plus two NB101 runs with params, a README with blocks and a manifest; returns the manifest.
    No NASLib zc files: their columns stay empty and say why (one warning)."""
    monkeypatch.delenv("NASLIB_PLUGINS_DATA", raising=False)
    shutil.copytree(tables_template, tmp_path, dirs_exist_ok=True)
    return tmp_path / "results" / "tables.yaml"


def _scores(folder: Path, name: str) -> list[float]:
    with open(folder / "scores.csv", newline="") as f:
        return [float(r[name]) for r in csv.DictReader(f)]


NO_ZC = "NASLib's zc file of nasbench101 is not under $NASLIB_PLUGINS_DATA"


def test_tables_page_and_readme_blocks(tables_tree):
    results = tables_tree.parent
    with pytest.warns(UserWarning, match=re.escape(NO_ZC)) as caught:
        written = build_tables(tables_tree, results.parent / "anchors.md")
    assert len(caught) == 1  # once, though every run of the space has the columns
    assert written == [str(results / "README.md"), f"{results.parent / 'README.md'} (blocks summary, spaces)"]
    page = (results / "README.md").read_text()
    assert page.startswith("# Results\n\nIntro.\n\n### NB201 cifar10: 30 archs, seed 0, test_accuracy\n")
    c10 = json.loads((results / "nb201" / "c10" / "correlation.json").read_text())["predictors"]
    z, n = c10["zico"], c10["nasi"]
    met = " met" if z["spearman"] >= 0.5 else " **missed**"
    assert (f"| zico | {with_ci(z, 'kendall')} | {with_ci(z, 'spearman')} | {z['top10_precision']:.3f} | 30/0 | 0.250 "
            f"| >= 0.50{met} | 0.61/0.80 |  |") in page  # the ZiCo paper's K/S beside ours, no Suite-Zero figure
    assert f"| nasi | {with_ci(n, 'kendall')} | {with_ci(n, 'spearman')} | {n['top10_precision']:.3f} | 29/1 |" in page
    assert "| >= 0.99 **missed** |" in page
    assert "### NB201 cifar100: not run yet" in page  # a run the manifest names that is not there
    # NB101 beside Suite-Zero's nwot .31; how much nwot follows params, from the scores
    nb101 = json.loads((results / "spaces" / "correlate_cifar10" / "correlation.json").read_text())["predictors"]
    s = nb101["nwot"]["spearman"]
    size = stats.spearmanr(*(_scores(results / "spaces" / "correlate_cifar10", c) for c in ("nwot", "params")))
    gap = f"{s - 0.31:+.2f}" + (" **>0.1**" if abs(s - 0.31) > 0.1 else "")
    nwot = nb101["nwot"]
    assert (f"| nwot | {with_ci(nwot, 'spearman')} | {with_ci(nwot, 'kendall')} | 25/0 | 0.250 | 0.310 | {gap} |  |  "
            f"| {size.statistic:.3f} |  |  |") in page
    # not "0 archs": that would say NASLib recorded nothing
    assert "NASLib recorded S (its zc file is not here)" in page and "### nasbench101 other (" in page
    # searches: the published protocol's settings unsaid, the transfer marked, the published figure beside
    assert ("| nasi | steps=100, mu=1.0, nu=adaptive, batch_size=64 | 93.50 +- 0.50 (n=2), rank 3 +- 1 of 15625 / "
            "NASI paper Table 4: "
            "93.08 +- 0.24 | 70.00 +- 0.50 (n=2, found on C10) / NASI paper Table 4: 69.51 +- 0.59 | 10 / 20 |") in page
    assert ("| nasi | steps=100, mu=1.0, nu=adaptive, batch_size=64, labels=random | 90.00 (n=1), rank 3 of 15625 "
            "|  | 10 / 20 |") in page
    assert page.endswith(" | 10 / 20 |\n")
    readme = (results.parent / "README.md").read_text()
    assert readme.startswith("# Top\n\n<!-- summary:start -->\n30 archs.\n\n| predictor | cifar10 | s/arch (C10) |")
    assert f"| zico | {with_ci(z, 'spearman')} / {with_ci(z, 'kendall')} | 0.250 |\n| nasi | " in readme
    assert " | 0.250 |\n<!-- summary:end -->\n\ntext\n" in readme
    assert "`nasbench101` (2 run(s), 2 task(s)):\n\n| predictor | cifar10 | other | s/arch |" in readme
    assert readme.endswith("| params | " + " | ".join(
        with_ci(json.loads((results / "spaces" / f"correlate_{t}" / "correlation.json").read_text())
                ["predictors"]["params"], "spearman") for t in ("cifar10", "other"))
        + " | 0.250 |\n<!-- spaces:end -->\n")


def test_spaces_summary_puts_a_tasks_runs_in_one_column(tables_tree):
    # the Suite-Zero measures, scored apart on the same task: their rows join its column
    results = tables_tree.parent
    rng = np.random.default_rng(5)
    truth = list(rng.uniform(80, 94, size=20))
    _correlation_run(results / "spaces" / "correlate_suite_zero_cifar10", "nasbench101", "cifar10",
                     {"zen": [t + rng.normal(0, 3) for t in truth], "params": list(rng.uniform(0.1, 2, size=20))},
                     truth)
    build_tables(tables_tree, results.parent / "anchors.md")
    readme = (results.parent / "README.md").read_text()
    assert "`nasbench101` (3 run(s), 2 task(s)):\n\n| predictor | cifar10 | other | s/arch |" in readme
    zen = json.loads((results / "spaces" / "correlate_suite_zero_cifar10" / "correlation.json").read_text())
    assert f"| zen | {with_ci(zen['predictors']['zen'], 'spearman')} |  | " in readme
    # params is in both cifar10 runs: the one with more architectures (25 against 20) gives its cell
    params = json.loads((results / "spaces" / "correlate_cifar10" / "correlation.json").read_text())
    assert f"| params | {with_ci(params['predictors']['params'], 'spearman')} | " in readme


def test_suite_zero_table_leaves_size_blank_for_a_run_without_params(tables_tree):
    results = tables_tree.parent
    rng = np.random.default_rng(6)
    truth = list(rng.uniform(80, 94, size=20))
    _correlation_run(results / "spaces" / "correlate_zen_only", "nasbench101", "zen_only",
                     {"zen": [t + rng.normal(0, 3) for t in truth]}, truth)
    build_tables(tables_tree, results.parent / "anchors.md")
    block = (results / "README.md").read_text().split("### nasbench101 zen_only")[1].split("###")[0]
    row = next(line for line in block.splitlines() if line.startswith("| zen |"))
    assert "constant" not in row and row.endswith("|  |  |  |  |  |  |")


def test_tables_skip_a_damaged_run_with_a_warning(tables_tree):
    results = tables_tree.parent
    broken = results / "spaces" / "correlate_broken"
    broken.mkdir()
    (broken / "correlation.json").write_text('{"space": "nasbench101", "dat')
    no_scores = results / "spaces" / "correlate_other" / "scores.csv"
    no_scores.unlink()
    with pytest.warns(UserWarning) as caught:
        build_tables(tables_tree, results.parent / "anchors.md")
    messages = sorted(str(w.message) for w in caught if NO_ZC not in str(w.message))
    assert len(messages) == 2  # once each, though two tables read them
    assert messages[0].startswith(f"{broken / 'correlation.json'}: truncated or invalid JSON")
    assert messages[1] == f"{no_scores}: no such file (nor scores.csv.gz); run skipped"
    page = (results / "README.md").read_text()
    assert "### nasbench101 cifar10 (" in page and "broken" not in page and "nasbench101 other" not in page
    # the summary reads no scores.csv: the run without one is still there
    assert "`nasbench101` (2 run(s), 2 task(s)):" in (results.parent / "README.md").read_text()


def _agreement_run(folder: Path, seed: int, ours: dict[str, list], theirs: dict[str, list], data: str) -> None:
    folder.mkdir(parents=True)
    n = len(next(iter(ours.values())))
    predictors = {name: {**correlations(ours[name], theirs[name]), "exact": sum(
        float(a) == float(b) for a, b in zip(ours[name], theirs[name]))} for name in ours}
    (folder / "agreement.json").write_text(json.dumps({
        "space": "nasbench201", "dataset": "cifar10", "n_archs": n, "seed": seed, "zc_file": "zc.json", "data": data,
        "command": f"naslib-plugins naslib-agreement --seed {seed}", "predictors": predictors}))
    with open(folder / "scores.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["hash", "arch_str", *(c for name in ours for c in (name, f"{name}_naslib"))])
        for i in range(n):
            w.writerow([f"({i}, 1)", f"arch{i}", *(v for name in ours for v in (ours[name][i], theirs[name][i]))])


def test_tables_agreement_and_input_checks(tmp_path):
    rng = np.random.default_rng(3)
    params, snip, truth = (list(rng.uniform(0, 1, size=20)) for _ in range(3))
    snip0, snip1 = ([s + rng.normal(0, 0.3) for s in snip] for _ in range(2))
    results = tmp_path / "results"
    _agreement_run(results / "agree", 0, {"params": params, "snip": snip0}, {"params": params, "snip": snip}, "real")
    _agreement_run(results / "agree_seed1", 1, {"snip": snip1}, {"snip": snip}, "CIFAR-10 resized to 64x64, batch 8")
    for labels, scores in (("true", snip0), ("random", snip1)):
        _correlation_run(results / f"labels_{labels}", "nasbench201", "cifar10", {"snip": scores, "params": params},
                         truth)
    (tmp_path / "anchors.md").write_text(ANCHORS)
    (results / "tables.yaml").write_text(yaml.safe_dump({
        "tables": {
            "agreement": {"kind": "naslib-agreement", "run": "agree", "noise_run": "agree_seed1", "exact": ["params"],
                          "caption": "Why."},
            "resolution": {"kind": "resolution", "runs": ["agree*"]},
            "labels": {"kind": "labels", "true_labels": "labels_true", "random_labels": "labels_random",
                       "caption": "{n_shared} cells: {commands}"}},
        "page": {"file": "README.md", "contents": [{"table": "agreement"}, {"table": "resolution"},
                                                   {"table": "labels"}]}}))
    build_tables(results / "tables.yaml", tmp_path / "anchors.md")
    page = (results / "README.md").read_text()
    assert page.startswith("### Agreement with NASLib's recorded scores (zc.json, cifar10, 20 archs)\n\nData: real. "
                           "Command: `naslib-plugins naslib-agreement --seed 0`\n\nWhy.\n\n")
    assert "| params | 1.000 [1.000, 1.000] | 1.000 [1.000, 1.000] | 20/20 |" in page
    assert "| n/a (random init) |" in page
    rhos = [stats.spearmanr(x, y).statistic for x, y in
            ((snip0, snip1), (snip, snip1), (snip, stats.rankdata(snip0) + stats.rankdata(snip1)))]
    assert "| predictor | ours seed 0 vs ours seed 1 | NASLib vs ours seed 1 | NASLib vs mean rank of our 2 seeds |" \
        in page
    assert "| snip | " + " | ".join(f"{v:.3f}" for v in rhos) + " |" in page
    assert "| nasbench201 | cifar10 | 20 | native | params |" in page and "| 64x64 | snip |" in page
    assert "20 cells: `naslib-plugins correlate ...` and `naslib-plugins correlate ...`" in page
    same = stats.spearmanr(snip0, snip1).statistic
    assert f" / {fmt(stats.spearmanr(snip1, params).statistic)} | {same:.3f} |" in page
    assert "| params |" not in page.split("20 cells")[1]  # size against itself says nothing


@pytest.mark.parametrize("change, message", [
    (lambda m: m["tables"]["nb201"].update(colour="red"),
     r"tables.yaml: tables.nb201 \(correlation\): unknown key 'colour' \(known: kind, title, runs, targets\)"),
    (lambda m: m.update(pages={}), "tables.yaml: unknown key 'pages' \\(known: tables, page, readme\\)"),
    (lambda m: m["tables"]["nb201"].update(kind="bars"), "tables.nb201: 'kind' must be one of correlation, "),
    (lambda m: m["tables"]["nb201"].pop("title"), r"tables.nb201 \(correlation\): missing title"),
    (lambda m: m["tables"]["nb201"].update(runs="nb201/c10"),
     "tables.nb201.runs: expected dict\\[str, str\\], got 'nb201/c10'"),
    (lambda m: m["tables"]["spaces"].update(gap="big"), "tables.spaces.gap: expected <class 'float'>, got 'big'"),
    (lambda m: m["page"]["contents"].append({"table": "nope"}), r"page.contents\[5\]: no table 'nope'"),
    (lambda m: m["page"]["contents"].append({"txt": "x"}), r"page.contents\[5\]: expected \{text: MARKDOWN\}"),
    (lambda m: m["readme"]["blocks"].update(other="summary"), "README.md: no block <!-- other:start -->"),
    (lambda m: m["tables"]["summary"].update(caption="{n} archs"), r"unknown field 'n' \(offered: \{n_archs\}\)"),
])
def test_tables_manifest_errors_are_one_line(tables_tree, capsys, change, message):
    manifest = yaml.safe_load(tables_tree.read_text())
    change(manifest)
    tables_tree.write_text(yaml.safe_dump(manifest))
    anchors = tables_tree.parent.parent / "anchors.md"
    assert main(["tables", str(tables_tree), "--anchors", str(anchors)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("naslib-plugins: error: ")
    assert re.search(message, err[0]), err[0]
    assert not (tables_tree.parent / "README.md").exists()  # nothing written
    assert (tables_tree.parent.parent / "README.md").read_text() == README


def test_cli_tables(tables_tree, capsys):
    """No data folder and no --anchors: the package's published figures."""
    results = tables_tree.parent
    (results / "spaces" / "correlate_other" / "correlation.json").write_text("[]")
    assert main(["tables", str(tables_tree)]) == 0
    out, err = capsys.readouterr()
    assert out == f"wrote {results / 'README.md'}; {results.parent / 'README.md'} (blocks summary, spaces)\n"
    assert err == (f"naslib-plugins: warning: {results / 'spaces' / 'correlate_other' / 'correlation.json'}: "
                   f"expected a JSON object, got list; run skipped\nnaslib-plugins: warning: {NO_ZC}: the tables' "
                   "NASLib-recorded columns are empty and say so\n")
    page = (results / "README.md").read_text()
    zico = json.loads((results / "nb201" / "c10" / "correlation.json").read_text())["predictors"]["zico"]
    # the ZiCo paper's Table 3 in its column, not VKDNW's re-run of ZiCo; Suite-Zero's NB101 nwot beside ours
    assert f"| zico | {with_ci(zico, 'kendall')} | {with_ci(zico, 'spearman')} |" in page
    assert " | 0.61/0.80 |  |" in page
    assert "| nwot | " in page and "| 0.310 |" in page
    assert " / NASI Table 4: 93.08 +- 0.24 | " in page


def test_committed_tables_are_what_the_manifest_makes(shared_data, tmp_path, monkeypatch):
    """results/README.md and README.md's blocks, made again from the committed runs and NASLib's zc files."""
    repo = Path(__file__).resolve().parents[1]
    shutil.copytree(repo / "results", tmp_path / "results")
    shutil.copy(repo / "README.md", tmp_path / "README.md")
    monkeypatch.setenv("NASLIB_PLUGINS_DATA", str(shared_data))
    build_tables(tmp_path / "results" / "tables.yaml")
    assert (tmp_path / "results" / "README.md").read_text() == (repo / "results" / "README.md").read_text()
    assert (tmp_path / "README.md").read_text() == (repo / "README.md").read_text()


def test_search_settings_name_what_tells_two_runs_apart_beyond_the_key_settings(tmp_path):
    """Settings a run leaves to the space (None) are not shown."""
    results = tmp_path / "results"
    for name, tau in (("a", 1.0), ("b", 0.5)):
        _search_run(results / name, 100, [93.0])
        path = results / name / "search.json"
        data = json.loads(path.read_text())
        # xi is the same in both: left out; channels None (the space's size) says nothing: left out
        data["config"].update(tau=tau, xi=1.0, channels=None)
        path.write_text(json.dumps(data))
    _search_run(results / "c", 400, [94.0])  # its key settings already tell it apart
    board = build_leaderboard(results, None, plots=False)
    settings = {r["file"]: r["settings"] for r in board["search"]["rows"]}
    base = "steps=100, mu=1.0, nu=adaptive, batch_size=64, labels=true, data=real"
    assert settings == {"a/search.json": f"{base}, tau=1.0", "b/search.json": f"{base}, tau=0.5",
                        "c/search.json": base.replace("steps=100", "steps=400")}


def test_a_search_through_naslibs_trainer_is_labelled_so_even_alone(tmp_path):
    """naslib-run's search.json says `route: naslib-trainer`: its row says so first, whether or
    not a `search` command's run of the same settings stands beside it."""
    results = tmp_path / "results"
    for name in ("trainer", "trainer_alone"):
        _search_run(results / name, 100 if name == "trainer" else 400, [93.0])
        path = results / name / "search.json"
        data = json.loads(path.read_text())
        data["config"]["route"] = "naslib-trainer"
        path.write_text(json.dumps(data))
    _search_run(results / "direct", 100, [93.0])
    board = build_leaderboard(results, None, plots=False)
    settings = {r["file"]: r["settings"] for r in board["search"]["rows"]}
    base = "steps=100, mu=1.0, nu=adaptive, batch_size=64, labels=true, data=real"
    assert settings == {"direct/search.json": base, "trainer/search.json": f"route=naslib-trainer, {base}",
                        "trainer_alone/search.json": f"route=naslib-trainer, {base.replace('100', '400')}"}


def test_leaderboard_shows_the_validation_metric_and_rank_of_a_pool_search(tmp_path):
    _val_search_run(tmp_path / "zc_random" / "nb101_pool", "nasbench101", "cifar10",
                    {"predictor": "zico", "budget": 100, "pool": 500}, [(94.0, 2), (93.0, 4)],
                    {"mean": 3.0, "std": 1.0, "of": 500})
    board = build_leaderboard(tmp_path, None, plots=False)
    md = (tmp_path / "LEADERBOARD.md").read_text()
    assert "| predictor=zico, budget=100, pool=500 | nasbench101 | cifar10 | 0, 1 | val 93.50 +- 0.50 (n=2) | " \
           "3.0 +- 1.0 of 500 | 1.0 / 2.0 | 100 |" in md
    row = board["search"]["rows"][0]
    assert (row["metric"], row["mean_accuracy"], row["mean_rank"], row["rank_of"], row["mean_predictor_calls"]) == \
        ("val_accuracy", 93.5, 3.0, 500, 100)


def test_searches_table_marks_validation_and_rank_and_names_spaces(tmp_path):
    for space, acc in (("nasbench101", 93.5), ("nasbench301", 94.25)):
        _val_search_run(tmp_path / "zc_random" / f"{space}_pool", space, "cifar10",
                        {"predictor": "zico", "budget": 10, "pool": 500}, [(acc, 3)],
                        {"mean": 3.0, "std": 0.0, "of": 500}, cpu=None)
    manifest = {"tables": {"s": {"kind": "searches", "runs": ["zc_random/*"], "datasets": ["cifar10"]}},
                "page": {"file": "README.md", "contents": [{"table": "s"}]}}
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    build_tables(tmp_path / "tables.yaml", None)
    page = (tmp_path / "README.md").read_text()
    assert "| space | optimizer | settings | cifar10 | s/run C10 (wall / CPU) |" in page
    assert "| nasbench101 | zc-random | predictor=zico, budget=10, pool=500 | val 93.50 (n=1), rank 3 of 500 | " \
           "1 / n/a |" in page
    assert "| nasbench301 | zc-random |" in page


def _p2_run(tmp_path, space, dataset, scores, truth):
    """A correlation run against validation accuracy, as the P2 table reads."""
    folder = tmp_path / "runs" / f"{space}_{dataset}"
    run = _correlation_run(folder, space, dataset, scores, truth)
    data = json.loads((folder / "correlation.json").read_text())
    (folder / "correlation.json").write_text(json.dumps({**data, "metric": "val_accuracy"}))
    return run


def _p2_page(tmp_path, ours):
    manifest = {"tables": {"p2": {"kind": "protocol-p2", "runs": ["runs/*"], "ours": ours,
                                  "published": ["az_nas", "libra"]}},
                "page": {"file": "README.md", "contents": [{"table": "p2"}]}}
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    build_tables(tmp_path / "tables.yaml", None)
    return (tmp_path / "README.md").read_text()


def test_protocol_p2_table_means_over_the_tasks_every_column_has(tmp_path):
    rng = np.random.default_rng(0)
    truth = list(rng.uniform(80, 94, size=20))
    ours = {}
    # mlp_act_skip has no published figure: listed, but left out of the means
    for space, dataset in (("nasbench201", "cifar10"), ("nasbench101", "cifar10"), ("mlp_act_skip", "digits")):
        scores = {"union_agg": [t + rng.normal(0, 2) for t in truth], "az_nas": [t + rng.normal(0, 4) for t in truth]}
        ours[space] = _p2_run(tmp_path, space, dataset, scores, truth)
    page = _p2_page(tmp_path, ["union_agg", "az_nas"])
    assert "| space | task | archs | union_agg | az_nas | az_nas (published) | libra (published) |" in page
    # L-SWAG Table 1: AZ-NAS .91 / .54 and LIBRA .89 / .77 on NB201 CIFAR-10 and NB101
    assert "| 0.91 | 0.89 |" in page and "| 0.54 | 0.77 |" in page
    assert "| mlp_act_skip | digits | 20 | " in page
    mean_ours = (ours["nasbench201"]["predictors"]["union_agg"]["spearman"]
                 + ours["nasbench101"]["predictors"]["union_agg"]["spearman"]) / 2
    assert (f"| mean over the 2 task(s) every column has |  |  | **{mean_ours:.3f}** | " in page
            and "| **0.725** | **0.830** |" in page)


def test_protocol_p2_table_gives_a_ranker_run_on_more_tasks_its_own_mean(tmp_path):
    rng = np.random.default_rng(1)
    truth = list(rng.uniform(80, 94, size=20))
    ours = {}
    # the fast ranker on three tasks, the costly one on the first only
    for space, dataset in (("nasbench201", "cifar10"), ("nasbench101", "cifar10"), ("nasbench301", "cifar10")):
        scores = {"union_fast": [t + rng.normal(0, 2) for t in truth]}
        if space == "nasbench201":
            scores["union_agg"] = [t + rng.normal(0, 1) for t in truth]
        ours[space] = _p2_run(tmp_path, space, dataset, scores, truth)
    page = _p2_page(tmp_path, ["union_agg", "union_fast"])
    assert "| mean over the 1 task(s) every column has |" in page
    fast = sum(r["predictors"]["union_fast"]["spearman"] for r in ours.values()) / 3
    # L-SWAG Table 1 over NB201 C10, NB101, NB301: AZ-NAS (.91 + .54 + .70) / 3, LIBRA (.89 + .77 + .74) / 3
    assert f"| mean over the 3 task(s) union_fast has |  |  |  | **{fast:.3f}** | **0.717** | **0.800** |" in page
    assert "task(s) union_agg has" not in page


def test_searches_table_fills_a_dataset_with_the_cells_found_on_the_first_column(tmp_path):
    """A dataset searched by no run shows the transfer from the first column's dataset (CIFAR-10, as
    the papers report it), though a run on another dataset with the same settings transfers too."""
    for name, dataset, c100 in (("a_in16", "ImageNet16-120", 60.0), ("b_c10", "cifar10", 70.0)):
        _search_run(tmp_path / "search" / name, 100, [93.0], transfer={
            "cifar100": {"mean_test_accuracy": c100, "std_test_accuracy": 0.0, "n_seeds": 1}})
        path = tmp_path / "search" / name / "search.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "dataset": dataset}))
    manifest = {"tables": {"s": {"kind": "searches", "runs": ["search/*"],
                                 "datasets": ["cifar10", "cifar100", "ImageNet16-120"]}},
                "page": {"file": "README.md", "contents": [{"table": "s"}]}}
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    build_tables(tmp_path / "tables.yaml", None)
    page = (tmp_path / "README.md").read_text()
    assert "| 70.00 (n=1, found on C10) " in page and "found on IN16" not in page


def test_searches_table_reference_rows_set_ours_against_robot_and_the_tables_best_and_mean(tmp_path):
    """TNB rows: the validation metric and rank mean +- std over seeds, then the published searches
    no run matches (RoBoT Table 3's ranks, from the package's figures) and the table's best and
    mean, recorded by the run."""
    _val_search_run(tmp_path / "zc_random" / "tnb_micro_scene", "transbench101_micro", "class_scene",
                    {"predictor": "zico", "budget": 100}, [(54.0, 20), (53.0, 60)],
                    {"mean": 40.0, "std": 20.0, "of": 4096, "table_best": 54.94, "table_mean": 44.94})
    manifest = {"tables": {"s": {"kind": "searches", "runs": ["zc_random/*"], "datasets": ["class_scene", "jigsaw"],
                                 "reference_rows": True}},
                "page": {"file": "README.md", "contents": [{"table": "s"}]}}
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    build_tables(tmp_path / "tables.yaml")
    lines = (tmp_path / "README.md").read_text().splitlines()
    assert "| zc-random | predictor=zico, budget=100 | val 53.50 +- 0.50 (n=2), rank 40 +- 20 of 4096 |  | 1 / 2 |" \
        in lines
    robot = next(line for line in lines if line.startswith("| RoBoT | published (RoBoT"))
    assert robot.endswith("| 2 +- 0 (rank) |  |  |")  # no run on jigsaw: its RoBoT figure stays out
    assert "| table best | the benchmark table | val 54.94 (of 4096) |  |  |" in lines
    assert "| table mean | the benchmark table | val 44.94 (of 4096) |  |  |" in lines
