"""Intervals on every correlation: the bootstrap interval of Kendall and Spearman, and the spread
over weight initialisations (`correlate --repeats K`)."""
import csv
import json

import numpy as np

from naslib_plugins.cli import main
from naslib_plugins.evaluation.correlation import correlations, with_ci


def test_bootstrap_interval_brackets_the_estimate_and_shrinks_with_more_architectures():
    rng = np.random.default_rng(0)
    widths = []
    for n in (50, 800):
        truth = rng.standard_normal(n)
        scores = truth + rng.standard_normal(n)
        c = correlations(scores.tolist(), truth.tolist())
        for key in ("kendall", "spearman"):
            low, high = c[f"{key}_ci"]
            assert low <= c[key] <= high
        assert correlations(scores.tolist(), truth.tolist()) == c  # seeded: the same interval every time
        widths.append(c["spearman_ci"][1] - c["spearman_ci"][0])
    assert widths[1] < widths[0] / 2  # ~1/sqrt(n): 4x narrower for 16x the architectures
    assert with_ci(c, "kendall") == f"{c['kendall']:.3f} [{c['kendall_ci'][0]:.3f}, {c['kendall_ci'][1]:.3f}]"


def test_no_interval_where_there_is_no_correlation():
    c = correlations([1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0])
    assert c["kendall_ci"] is None and with_ci(c, "kendall") == "n/a"


def test_repeats_score_again_under_other_initialisations(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["correlate", "--space", "mlp_act_skip", "--dataset", "digits", "--predictors",
                 "params,snip,ensemble", "--ensemble-components", "params,snip", "--n-archs", "8",
                 "--batch-size", "8", "--seed", "3", "--repeats", "3", "--out", str(out)]) == 0
    result = json.loads((out / "correlation.json").read_text())
    assert result["init_seeds"] == [3, 4, 5]
    with open(out / "repeats.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(out / "scores.csv", newline="") as f:
        first = {r["hash"]: r for r in csv.DictReader(f)}
    assert len(rows) == 3 * 8
    by_seed = {s: {r["hash"]: r for r in rows if r["init_seed"] == str(s)} for s in (3, 4, 5)}
    assert all(by_seed[3][k]["snip"] == first[k]["snip"] for k in first)  # init 3 is the run itself
    assert all(by_seed[4][k]["params"] == first[k]["params"] for k in first)  # counts do not depend on the weights
    assert any(by_seed[4][k]["snip"] != first[k]["snip"] for k in first)
    for name in ("snip", "ensemble"):
        o = result["predictors"][name]["over_inits"]
        assert o["k"] == 3 and o["spearman_std"] > 0
    # every network of this space has the same parameter count: no correlation, none over inits
    assert result["predictors"]["params"]["over_inits"] == {"k": 3, "kendall_mean": None, "kendall_std": None,
                                                            "spearman_mean": None, "spearman_std": None}
    table = (out / "correlation.md").read_text()
    assert "over the initialisation seeds 3, 4, 5" in table and " +- " in table
    assert main(["correlate", "--space", "mlp_act_skip", "--dataset", "digits", "--predictors", "params",
                 "--repeats", "0", "--out", str(tmp_path / "x")]) == 2
    assert "--repeats must be at least 1" in capsys.readouterr().err


def test_a_pass_one_predictor_reads_is_its_own_time_and_a_shared_one_is_counted_once():
    from naslib_plugins.data.batches import ImageBatches
    from naslib_plugins.evaluation.scoring import make_predictors, score_architecture
    from naslib_plugins.spaces import get_space

    space = get_space("nasbench201")
    batches = ImageBatches("cifar10", batch_size=8, seed=0, data="gaussian")
    arch = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"
    alone = score_architecture(space, arch, "cifar10", make_predictors(["snip"]), batches, 0)
    assert alone["shared_seconds"] == 0 and alone["seconds"]["snip"] > 0
    both = score_architecture(space, arch, "cifar10", make_predictors(["snip", "grad_norm", "params"]), batches, 0)
    assert both["shared_seconds"] > 0  # snip's and grad_norm's one gradient pass
    assert both["scores"]["snip"] == alone["scores"]["snip"]
