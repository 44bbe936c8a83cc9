"""Build results/README.md from the run outputs under results/ and the published figures in
anchors.md (parsed at run time, never typed in here).

    python scripts/summarize_results.py [--anchors ../shared/anchors.md] [--results results]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from naslib_plugins.reporting.published import Anchors, parse_anchors
from naslib_plugins.reporting.leaderboard import accuracy_cell, search_section

DATASETS = ("cifar10", "cifar100", "ImageNet16-120")
DATASET_SHORT = {"cifar10": "C10", "cifar100": "C100", "ImageNet16-120": "IN16"}
# the targets for Spearman on NB201 CIFAR-10 (1000 archs, seed 0, test accuracy)
TARGETS = {"zico": 0.75, "synflow": 0.70, "snip": 0.53, "grasp": 0.45, "params": 0.70}


def nb201_anchors(anchors: Anchors) -> tuple[dict, dict]:
    """(ZiCo-paper Kendall/Spearman on all NB201 archs, Suite-Zero Spearman), keyed (predictor, dataset)."""
    nb201 = [a for a in anchors.correlation if a.space == "nasbench201"]
    zico = {(a.predictor, a.dataset): (a.kendall, a.spearman) for a in nb201 if a.metric == "test_accuracy"}
    suite = {(a.predictor, a.dataset): a.spearman for a in nb201 if a.metric == "val_accuracy"}
    return zico, suite


def fmt(v) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def run_heading(title: str, r: dict, columns: list[str]) -> list[str]:
    """A correlate run's heading, its data and command, and the head of its table."""
    return [f"### {title}: {r['n_archs']} archs, seed {r['seed']}, {r['metric']}", "",
            f"Data: {r['data']}. Command: `{r['command']}`", "",
            "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


def correlation_section(results: Path, zico: dict, suite: dict) -> list[str]:
    out = []
    for ds in DATASETS:
        path = results / "nasbench201" / f"correlate_{ds}" / "correlation.json"
        if not path.exists():
            out += [f"### NAS-Bench-201 {ds}: not run yet", ""]
            continue
        r = json.loads(path.read_text())
        out += run_heading(f"NAS-Bench-201 {ds}", r, [
            "predictor", "Kendall", "Spearman", "top-10% prec.", "valid/failed", "s/arch", "target (Spearman)",
            "ZiCo paper K/S (all archs, test)", "Suite-Zero S (1000 archs, val)"])
        for name, c in r["predictors"].items():
            target = TARGETS.get(name) if ds == "cifar10" else None
            met = "" if target is None or c["spearman"] is None else (" met" if c["spearman"] >= target else " **missed**")
            zk = zico.get((name, ds))
            out.append(
                f"| {name} | {fmt(c['kendall'])} | {fmt(c['spearman'])} | {fmt(c['top10_precision'])} | "
                f"{c['n_valid']}/{c['n_failed']} | {c['seconds_per_arch']:.3f} | "
                f"{'' if target is None else f'>= {target:.2f}{met}'} | "
                f"{'' if zk is None else f'{zk[0]:.2f}/{zk[1]:.2f}'} | {fmt(suite.get((name, ds))) if (name, ds) in suite else ''} |"
            )
        out.append("")
    return out


def read_scores_csv(folder: Path) -> dict[str, dict[str, str]]:
    """A run's scores.csv as {hash: row} ({} where the run wrote none)."""
    import csv

    path = folder / "scores.csv"
    if not path.exists():
        return {}
    with open(path) as f:
        return {row["hash"]: row for row in csv.DictReader(f)}


def agreement_section(results: Path) -> list[str]:
    from scipy import stats

    base = results / "nasbench201" / "naslib_agreement_cifar10"
    path = base / "agreement.json"
    if not path.exists():
        return ["### Agreement with NASLib's recorded scores: not run yet", ""]
    r = json.loads(path.read_text())
    out = [
        f"### Agreement with NASLib's recorded scores ({r['zc_file']}, {r['dataset']}, {r['n_archs']} archs)",
        "",
        f"Data: {r['data']}. Command: `{r['command']}`",
        "",
        "Spearman between our score and NASLib's for the same architecture. Only params and FLOPs are",
        "fixed by the architecture alone; the other proxies also depend on the random initialisation",
        "and mini-batch, which differ from NASLib's run, so their agreement is bounded by their own",
        "run-to-run noise (next table).",
        "",
        "| predictor | Spearman | Kendall | exact (rel. 1e-6) |",
        "|---|---|---|---|",
    ]
    for name, c in r["predictors"].items():
        exact = f"{c['exact']}/{r['n_archs']}" if name in ("params", "flops") else "n/a (random init)"
        out.append(f"| {name} | {fmt(c['spearman'])} | {fmt(c['kendall'])} | {exact} |")
    out.append("")
    seed1 = results / "nasbench201" / "naslib_agreement_cifar10_seed1"
    a, b = read_scores_csv(base), read_scores_csv(seed1)
    if a and b:
        r1 = json.loads((seed1 / "agreement.json").read_text())
        keys = sorted(set(a) & set(b))
        out += [
            "Run-to-run noise: the same architectures scored again with seed 1 (another initialisation",
            f"and batch). Command: `{r1['command']}`",
            "",
            "| predictor | ours seed 0 vs ours seed 1 | NASLib vs ours seed 1 | NASLib vs mean rank of our 2 seeds |",
            "|---|---|---|---|",
        ]
        for name in r1["predictors"]:
            s0 = [float(a[k][name]) for k in keys]
            s1 = [float(b[k][name]) for k in keys]
            theirs = [float(a[k][f"{name}_naslib"]) for k in keys]
            mean_rank = stats.rankdata(s0) + stats.rankdata(s1)
            out.append(
                f"| {name} | {stats.spearmanr(s0, s1).statistic:.3f} | {stats.spearmanr(theirs, s1).statistic:.3f} "
                f"| {stats.spearmanr(theirs, mean_rank).statistic:.3f} |"
            )
        out.append("")
    return out


def readme_block(results: Path) -> list[str]:
    """The compact table README.md carries between its results markers."""
    runs = {}
    for ds in DATASETS:
        path = results / "nasbench201" / f"correlate_{ds}" / "correlation.json"
        if path.exists():
            runs[ds] = json.loads(path.read_text())
    if not runs:
        return ["(no runs yet)"]
    names = list(next(iter(runs.values()))["predictors"])
    n = next(iter(runs.values()))["n_archs"]
    lines = [
        f"NAS-Bench-201, {n} archs sampled with seed 0, Spearman / Kendall with 200-epoch test accuracy,",
        "real CIFAR-10 images (CIFAR-100 and ImageNet16-120: the same images, random labels over their",
        "classes), batch 64, two single-threaded workers on 2 CPU cores. Made by `bash scripts/reproduce_nb201.sh` then",
        "`python scripts/summarize_results.py`; details and published figures in `results/README.md`.",
        "",
        "| predictor | " + " | ".join(runs) + " | s/arch (C10) |",
        "|---|" + "---|" * (len(runs) + 1),
    ]
    for name in names:
        cells = []
        for r in runs.values():
            c = r["predictors"][name]
            cells.append(f"{fmt(c['spearman'])} / {fmt(c['kendall'])}")
        secs = runs.get("cifar10", next(iter(runs.values())))["predictors"][name]["seconds_per_arch"]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {secs:.3f} |")
    return lines


OTHER_SPACES = ("nasbench101", "nasbench301", "transbench101_micro", "transbench101_macro")
GAP = 0.1  # the issue asks for every Suite-Zero gap above this to be explained
# NASLib records no NASI score. Its grad_norm, a sum of per-layer gradient norms, is the nearest
# to NASI's squared norm of the whole gradient, so nasi is compared with it, named in the row
NASLIB_COUNTERPART = {"nasi": "grad_norm"}


def suite_zero(anchors: Anchors) -> dict[tuple[str, str, str], float]:
    """NAS-Bench-Suite-Zero's Spearman with the validation metric, keyed (predictor, space, dataset)."""
    return {(a.predictor, a.space, a.dataset): a.spearman for a in anchors.correlation
            if a.metric == "val_accuracy" and a.spearman is not None}


def rank_cell(v: float | None) -> str:
    """A Spearman computed by _spearman: None there means a constant side."""
    return "constant" if v is None else fmt(v)


def _spearman(pairs: list[tuple[float, float]]) -> float | None:
    """None where either side is constant: it ranks nothing."""
    from scipy import stats

    if len(pairs) < 3 or len({x for x, _ in pairs}) < 2 or len({y for _, y in pairs}) < 2:
        return None
    return float(stats.spearmanr(*zip(*pairs)).statistic)


def recorded_scores(space: str, dataset: str) -> dict[str, dict[str, float]]:
    """The scores NASLib recorded in its zc_<space>.json for one dataset/task ({} without the data):
    Suite-Zero's own scores on that file's architectures, a reference that shares Suite-Zero's data
    and initialisations but not our inputs."""
    from naslib_plugins.evaluation.ground_truth import ZC_FILES, load_zc_scores
    from naslib_plugins.data.batches import data_dir
    from naslib_plugins.spaces import get_space

    root = data_dir()
    if root is None or not (root / ZC_FILES[space]).is_file():
        return {}
    return load_zc_scores(root / ZC_FILES[space], get_space(space), dataset)


def our_scores(run_dir: Path) -> dict[str, dict[str, float]]:
    """{hash: {predictor: score}} of a correlate run's valid scores, from its scores.csv."""
    rows = read_scores_csv(run_dir)
    names = [k[: -len("_status")] for k in next(iter(rows.values()), {}) if k.endswith("_status")]
    return {h: {n: float(r[n]) for n in names if r[f"{n}_status"] == "ok"} for h, r in rows.items()}


def other_spaces_section(results: Path, anchors: Anchors) -> list[str]:
    """Every correlate run under results/<space>/ for the four other spaces, Spearman beside
    NAS-Bench-Suite-Zero's for the same proxy and task (validation metric), gaps over GAP marked;
    NASLib's recorded scores on its zc file as a same-protocol reference: their Spearman with the
    validation metric, how much each score follows model size there and here, and the
    per-architecture agreement on the architectures both hold."""
    suite = suite_zero(anchors)
    out = []
    for space in OTHER_SPACES:
        for path in sorted((results / space).glob("correlate_*/correlation.json")):
            r = json.loads(path.read_text())
            recorded = recorded_scores(space, r["dataset"])
            ours = our_scores(path.parent)
            shared = [k for k in ours if k in recorded]
            gaps = 0
            rows = []
            for name, c in r["predictors"].items():
                ref = suite.get((name, space, r["dataset"]))
                gap = None if ref is None or c["spearman"] is None else c["spearman"] - ref
                gaps += gap is not None and abs(gap) > GAP
                flag = "" if gap is None else f"{gap:+.2f}" + (f" **>{GAP}**" if abs(gap) > GAP else "")
                # how much ours follows size needs no NASLib counterpart (ZiCo has none)
                vs_params = rank_cell(_spearman([(v[name], v["params"]) for v in ours.values()
                                                 if name in v and "params" in v]))
                cols = ["", "", vs_params, "", ""]
                theirs = NASLIB_COUNTERPART.get(name, name)
                on_file = [v for v in recorded.values() if theirs in v]
                if on_file:
                    both = [k for k in shared if name in ours[k] and theirs in recorded[k] and "val_accuracy" in recorded[k]]
                    cols = [rank_cell(_spearman([(v[theirs], v["val_accuracy"]) for v in on_file if "val_accuracy" in v])),
                            rank_cell(_spearman([(v[theirs], v["params"]) for v in on_file if "params" in v])),
                            vs_params,
                            rank_cell(_spearman([(ours[k][name], recorded[k][theirs]) for k in both]))]
                    # the same architectures on both sides: what is left of a gap is not the sample
                    on_shared = [_spearman([(src[k][key], recorded[k]["val_accuracy"]) for k in both])
                                 for src, key in ((ours, name), (recorded, theirs))]
                    cols.append(" / ".join(rank_cell(v) for v in on_shared))
                rank = "constant" if "constant_score" in c else fmt(c["spearman"])
                label = name if theirs == name else f"{name} (NASLib: {theirs})"
                rows.append(f"| {label} | {rank} | {fmt(c['kendall'])} | {c['n_valid']}/{c['n_failed']} "
                            f"| {c['seconds_per_arch']:.3f} | {fmt(ref) if ref is not None else ''} | {flag} | "
                            + " | ".join(cols) + " |")
            out += [*run_heading(f"{space} {r['dataset']} ({gaps} gap(s) over {GAP} to Suite-Zero)", r, [
                "predictor", "Spearman", "Kendall", "valid/failed", "s/arch", "Suite-Zero S", "ours - Suite-Zero",
                f"NASLib recorded S ({len(recorded)} archs of its zc file)", "NASLib's vs params S",
                "ours vs params S", f"ours vs NASLib's per arch S ({len(shared)} shared)",
                "on the shared archs: ours / NASLib's S"]), *rows, ""]
    return out


def input_checks_section(results: Path) -> list[str]:
    """The runs that tell which of our inputs moves a proxy: agreement with NASLib's recorded
    scores on the same architectures at two TNB input resolutions, and NB201 with true against
    random labels."""
    out = []
    runs = sorted(results.glob("transbench101_*/naslib_agreement_*/agreement.json"))
    if runs:
        out += ["### Input checks: TNB input resolution", "",
                "Spearman between our score and NASLib's recorded one for the same architectures (seeded",
                "sample of its zc file), with our inputs at two resolutions; the benchmark's is 256.", "",
                "| space | task | archs | resolution | predictor | Spearman with NASLib's | command |",
                "|---|---|---|---|---|---|---|"]
        for path in runs:
            r = json.loads(path.read_text())
            res = r["data"].split(" resized to ")[1].split(",")[0] if " resized to " in r["data"] else "native"
            for name, c in r["predictors"].items():
                out.append(f"| {r['space']} | {r['dataset']} | {r['n_archs']} | {res} | {name} | {fmt(c['spearman'])} "
                           f"| `{r['command']}` |")
        out.append("")
    labels = {m: results / "nasbench201" / f"grasp_labels_cifar10_{m}" for m in ("true", "random")}
    if all((d / "correlation.json").exists() for d in labels.values()):
        r = {m: json.loads((d / "correlation.json").read_text()) for m, d in labels.items()}
        ours = {m: our_scores(d) for m, d in labels.items()}
        keys = sorted(set(ours["true"]) & set(ours["random"]))
        out += ["### Input checks: labels (NAS-Bench-201 CIFAR-10)", "",
                f"{len(keys)} cells, seed 0, true CIFAR-10 labels against random ones. Commands: "
                + " and ".join(f"`{r[m]['command']}`" for m in labels), "",
                "| predictor | Spearman, true labels | Spearman, random labels | vs params S, true / random "
                "| true vs random per arch S |", "|---|---|---|---|---|"]
        for name in r["true"]["predictors"]:
            if name == "params":
                continue
            size = [_spearman([(v[name], v["params"]) for v in ours[m].values() if name in v]) for m in labels]
            same = _spearman([(ours["true"][k][name], ours["random"][k][name]) for k in keys
                              if name in ours["true"][k] and name in ours["random"][k]])
            out.append(f"| {name} | {fmt(r['true']['predictors'][name]['spearman'])} "
                       f"| {fmt(r['random']['predictors'][name]['spearman'])} | {fmt(size[0])} / {fmt(size[1])} "
                       f"| {fmt(same)} |")
        out.append("")
    return out


def spaces_block(results: Path, anchors: Anchors) -> list[str]:
    """README: per space, each predictor's Spearman on every task with Suite-Zero's in brackets
    and the mean seconds per architecture over the tasks."""
    suite = suite_zero(anchors)
    lines = [
        "Spearman with the benchmark's validation metric, NAS-Bench-Suite-Zero's figure for the same",
        "proxy and task in brackets, gaps over 0.1 in bold; s/arch: mean over the tasks, two",
        "single-threaded workers on 2 CPU cores. NB101 and NB301: every architecture of NASLib's zc",
        "file; TNB-101: 500 archs sampled with seed 0, CIFAR-10 images at 64x64 with synthetic targets",
        "(no Taskonomy data here), batch 32. Made by `bash scripts/reproduce_spaces.sh` then",
        "`python scripts/summarize_results.py`; per-task tables, data and commands in `results/README.md`.",
    ]
    for space in OTHER_SPACES:
        runs = [json.loads(p.read_text()) for p in sorted((results / space).glob("correlate_*/correlation.json"))]
        if not runs:
            continue
        tasks = [r["dataset"] for r in runs]
        lines += ["", f"`{space}` ({len(runs)} run(s)):", "",
                  "| predictor | " + " | ".join(tasks) + " | s/arch |", "|---|" + "---|" * (len(tasks) + 1)]
        for name in runs[0]["predictors"]:
            cells, secs = [], []
            for r in runs:
                c = r["predictors"].get(name)
                if c is None:
                    cells.append("")
                    continue
                secs.append(c["seconds_per_arch"])
                ref = suite.get((name, space, r["dataset"]))
                cell = "constant" if "constant_score" in c else fmt(c["spearman"])
                if ref is not None and c["spearman"] is not None and abs(c["spearman"] - ref) > GAP:
                    cell = f"**{cell}**"
                cells.append(cell + ("" if ref is None else f" ({ref:.2f})"))
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {sum(secs) / len(secs):.3f} |")
    return lines


def search_block(results: Path, anchors: Anchors) -> list[str]:
    """NB201 searches: one row per optimizer and settings, one column per dataset, our mean
    +- std over seeds beside the published figure the leaderboard matches to it."""
    section = search_section(results, anchors)
    rows: dict[tuple[str, str], dict[str, dict]] = {}
    standard = {"labels=true", "data=real"}  # the published protocol: said only where a run differs
    for r in section["rows"]:
        if r["space"] == "nasbench201":
            settings = ", ".join(kv for kv in r["settings"].split(", ") if kv not in standard)
            by_ds = rows.setdefault((r["method"], settings), {})
            if "transfer_from" not in r or r["dataset"] not in by_ds:  # a search on the dataset itself wins
                by_ds[r["dataset"]] = r
    if not rows:
        return ["(no NB201 searches yet)"]
    lines = [
        "NAS-Bench-201 searches, test accuracy % (200 epochs) of the architecture found, mean +- std over",
        "seeds (n), published figure after the slash; seconds per run on this 2-core CPU (wall / process",
        "CPU, CIFAR-10; runs shared the cores, so wall exceeds CPU). CIFAR-100 and ImageNet16-120",
        "searches see the CIFAR-10 sample (16x16 for ImageNet16-120) with random labels over their",
        "classes, as `correlate` does (no such images here). \"found on C10\": no search on that dataset,",
        "the test accuracy there of the cells found on CIFAR-10. Commands in each `search.json`;",
        "all of them: `bash scripts/reproduce_zero_shot.sh` (zero-shot searches) and",
        "`bash scripts/reproduce_nasi.sh` (NASI; its single-seed ablations name their command only in",
        "`search.json`). Table made by",
        "`python scripts/summarize_results.py`.",
        "",
        "| optimizer | settings | " + " | ".join(DATASETS) + " | s/run C10 (wall / CPU) |",
        "|---|---|" + "---|" * (len(DATASETS) + 1),
    ]
    for (method, settings), by_ds in sorted(rows.items()):
        cells = []
        for ds in DATASETS:
            r = by_ds.get(ds)
            if r is None:
                cells.append("")
                continue
            published = r["published"].split(",")[0] if r["published"] else ""
            found_on = f"found on {DATASET_SHORT[r['transfer_from']]}" if "transfer_from" in r else ""
            cells.append(accuracy_cell(r, found_on) + (f" / {published}" if published else ""))
        c10 = by_ds.get("cifar10")
        secs = "" if c10 is None else f"{c10['mean_search_seconds']:.0f} / {c10['mean_cpu_seconds']:.0f}"
        lines.append(f"| {method} | {settings} | " + " | ".join(cells) + f" | {secs} |")
    return lines


def update_readme(readme: Path, block: list[str], marker: str = "results") -> None:
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    text = readme.read_text()
    if start not in text or end not in text:
        return
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    readme.write_text(head + start + "\n" + "\n".join(block) + "\n" + end + tail)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--anchors", default=str(Path(__file__).resolve().parents[2] / "shared" / "anchors.md"))
    ap.add_argument("--results", default="results")
    args = ap.parse_args()
    results = Path(args.results)
    anchors = parse_anchors(Path(args.anchors))
    zico, suite = nb201_anchors(anchors)
    searches = search_block(results, anchors)
    lines = [
        "# Results",
        "",
        "Made by `python scripts/summarize_results.py` from the run outputs below; the runs themselves",
        "by `bash scripts/reproduce_nb201.sh` (commands repeated under each table). Published figures",
        "are read from `shared/anchors.md`: ZiCo paper (Li et al., ICLR 2023) Table 3, all 15,625 archs,",
        "test accuracy; NAS-Bench-Suite-Zero (Krishnakumar et al., NeurIPS 2022 D&B) Fig. 2, 1000 archs,",
        "validation accuracy. Our protocol: 1000 uniformly sampled archs, 200-epoch test accuracy,",
        "one batch of 64 (ZiCo: two), PyTorch default initialisation, CPU.",
        "",
        *correlation_section(results, zico, suite),
        *agreement_section(results),
        *other_spaces_section(results, anchors),
        *input_checks_section(results),
        "### Searches",
        "",
        *searches,
        "",
    ]
    (results / "README.md").write_text("\n".join(lines))
    update_readme(Path("README.md"), readme_block(results))
    update_readme(Path("README.md"), searches, "search")
    update_readme(Path("README.md"), spaces_block(results, anchors), "spaces")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
