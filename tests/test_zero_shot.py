"""Zero-shot searches (zc-evolution, zc-random), NASWOT and the rank-aggregation ensemble."""
from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
import torch
import torch.nn as nn
from scipy import stats

from naslib_plugins.cli import main
from naslib_plugins.data.batches import ImageBatches
from naslib_plugins.errors import UserError
from naslib_plugins.evaluation.ground_truth import load_ground_truth
from naslib_plugins.evaluation.scoring import ScoringJob
from naslib_plugins.optimizers import OPTIMIZERS, zero_shot
from naslib_plugins.predictors import Predictor, get_predictor
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.pool import PoolSpace


@pytest.fixture
def counted(monkeypatch):
    """Count real predictor calls per architecture hash, and make `params` the fitness (exact, fast)."""
    calls: dict[str, int] = {}
    real = ScoringJob.score

    def spy(job, arch):
        key = job.space.hash(arch)
        calls[key] = calls.get(key, 0) + 1
        return real(job, arch)

    monkeypatch.setattr(ScoringJob, "score", spy)
    return calls


def _batches():
    return ImageBatches("cifar10", batch_size=2, seed=0, data="gaussian")


def test_evolution_never_rescores_and_spends_exactly_the_budget(counted):
    space = get_space("nasbench201")
    opt = OPTIMIZERS.get("zc-evolution")(predictor=get_predictor("params"), budget=30, population=8, sample_size=4)
    outcome = opt.search(space, "cifar10", _batches(), seed=3, progress=False)
    assert len(counted) == 30 and set(counted.values()) == {1}
    assert outcome.trace["predictor_calls"] == 30
    assert outcome.trace["mutations"] >= 30 - 8
    # the result is the best architecture ever scored (params: the most parameters)
    best = max(outcome.trace["top10"], key=lambda row: row[1])
    assert space.to_string(outcome.arch) == best[0]
    assert space.hash(space.parse(outcome.arch)) in counted


def test_evolution_improves_on_its_initial_population():
    space = get_space("nasbench201")
    opt = OPTIMIZERS.get("zc-evolution")(predictor=get_predictor("params"), budget=60, population=10, sample_size=5)
    rng = np.random.default_rng(0)
    initial = [space.sample(rng) for _ in range(10)]  # the same draws the search starts from
    params = get_predictor("params")
    start_best = max(params.score(space.build_model(a, "cifar10"), _batches(), None) for a in initial)
    outcome = opt.search(space, "cifar10", _batches(), seed=0, progress=False)
    assert outcome.trace["best_score"] > start_best


def test_random_search_keeps_the_best_of_its_budget(counted):
    space = get_space("nasbench201")
    opt = OPTIMIZERS.get("zc-random")(predictor=get_predictor("params"), budget=12)
    outcome = opt.search(space, "cifar10", _batches(), seed=1, progress=False)
    assert len(counted) == 12
    scores = [row[1] for row in outcome.trace["top10"]]
    assert outcome.trace["best_score"] == max(scores) and scores == sorted(scores, reverse=True)


def test_evolution_on_a_rank_aggregate_ranks_within_everything_scored(counted):
    """Fitness is the aggregate over all architectures scored so far; the result is the
    architecture the aggregate puts first over the whole history, its components each scored once."""
    space = get_space("nasbench201")
    ens = get_predictor("ensemble", components="params,flops")
    opt = OPTIMIZERS.get("zc-evolution")(predictor=ens, budget=25, population=6, sample_size=3)
    outcome = opt.search(space, "cifar10", _batches(), seed=2, progress=False)
    assert len(counted) == 25 and set(counted.values()) == {1}
    assert outcome.trace["components"] == ["params", "flops"] and outcome.trace["predictor"] == "ensemble"
    # recompute the aggregate from each scored architecture's own component scores
    scored = [space.parse(a) for a in {k: None for k in counted}]
    job = ScoringJob(space, "cifar10", {"params": get_predictor("params"), "flops": get_predictor("flops")},
                     _batches(), 2)
    records = [job.score(a) for a in scored]
    values, _ = ens.combine({n: [r["scores"][n] for r in records] for n in ("params", "flops")})
    best = max(range(len(scored)), key=lambda i: (values[i], records[i]["hash"]))
    assert space.hash(outcome.arch) == records[best]["hash"]
    assert outcome.trace["best_score"] == pytest.approx(values[best])


def test_search_options_name_an_aggregate_and_build_it_from_its_name():
    opt = OPTIMIZERS.get("zc-random").from_args({"predictor": "az_nas", "budget": 3})
    assert type(opt.predictor).__name__ == "AZNAS" and opt.options()["predictor"] == "az_nas"
    ens = OPTIMIZERS.get("zc-evolution")(predictor=get_predictor("ensemble", components="zico,params"),
                                        budget=10, population=4, sample_size=2)
    assert ens.options()["predictor_options"] == {"components": ["zico", "params"]}


def test_same_seed_same_search_other_seed_other_path():
    space = get_space("nasbench201")
    opt = OPTIMIZERS.get("zc-evolution")(predictor=get_predictor("params"), budget=20, population=6, sample_size=3)
    a = opt.search(space, "cifar10", _batches(), seed=5, progress=False)
    b = opt.search(space, "cifar10", _batches(), seed=5, progress=False)
    c = opt.search(space, "cifar10", _batches(), seed=6, progress=False)
    def untimed(trace):
        return {k: v for k, v in trace.items() if k != "predictor_seconds"}

    assert a.arch == b.arch and untimed(a.trace) == untimed(b.trace)
    assert a.trace["top10"] != c.trace["top10"]


def test_exhausted_space_stops_with_a_warning(monkeypatch):
    space = get_space("nasbench201")
    monkeypatch.setattr(zero_shot, "MAX_STALE_PROPOSALS", 50)
    monkeypatch.setattr(space, "sample", lambda rng: (0, 0, 0, 0, 0, int(rng.integers(2))))
    opt = OPTIMIZERS.get("zc-random")(predictor=get_predictor("params"), budget=5)
    outcome = opt.search(space, "cifar10", _batches(), seed=0, progress=False)
    assert outcome.trace["predictor_calls"] == 2
    assert "ran out of new architectures" in outcome.trace["warnings"][0]


def test_evolution_on_an_exhausted_space_stops_before_its_tournament(monkeypatch):
    # two architectures for a population of 6 and tournaments of 3: no tournament can be drawn
    space = get_space("nasbench201")
    monkeypatch.setattr(zero_shot, "MAX_STALE_PROPOSALS", 50)
    monkeypatch.setattr(space, "sample", lambda rng: (0, 0, 0, 0, 0, int(rng.integers(2))))
    opt = OPTIMIZERS.get("zc-evolution")(predictor=get_predictor("params"), budget=20, population=6, sample_size=3)
    outcome = opt.search(space, "cifar10", _batches(), seed=0, progress=False)
    assert outcome.trace["predictor_calls"] == 2 and outcome.trace["mutations"] == 0
    assert outcome.trace["warnings"] == ["the space ran out of new architectures after 2 of the budget of 20"]


def test_converged_evolution_says_it_stalled_not_that_the_space_ran_out(monkeypatch):
    space = get_space("nasbench201")
    monkeypatch.setattr(zero_shot, "MAX_STALE_PROPOSALS", 50)
    monkeypatch.setattr(space, "mutate", lambda arch, rng: arch)  # every child was scored as its parent
    opt = OPTIMIZERS.get("zc-evolution")(predictor=get_predictor("params"), budget=20, population=6, sample_size=3)
    outcome = opt.search(space, "cifar10", _batches(), seed=0, progress=False)
    assert outcome.trace["predictor_calls"] == 6 and outcome.trace["mutations"] == 50
    assert outcome.trace["warnings"][0].startswith("the evolution stalled (50 mutations in a row")
    assert outcome.trace["warnings"][0].endswith("after 6 of the budget of 20")


@pytest.mark.parametrize("kwargs, message", [
    ({"budget": 0}, "budget must be a positive integer"),
    ({"population": 10, "sample_size": 11}, "cannot exceed the population"),
    ({"budget": 5, "population": 8, "sample_size": 2}, "cannot exceed the budget"),
    ({"predictor": "zico"}, "predictor must be a Predictor object"),
])
def test_bad_evolution_options(kwargs, message):
    with pytest.raises(UserError, match=message):
        OPTIMIZERS.get("zc-evolution")(**kwargs)


def test_search_cli_writes_the_schema(tmp_path, shared_data, capsys):
    bench = shared_data / get_space("nasbench201").benchmark_file
    argv = ["search", "--optimizer", "zc-evolution", "--predictor", "params", "--budget", "12", "--population",
            "4", "--sample-size", "2", "--seeds", "0-1", "--data", "gaussian", "--batch-size", "2",
            "--benchmark", str(bench), "--out", str(tmp_path)]
    assert main(argv) == 0
    result = json.loads((tmp_path / "search.json").read_text())
    assert result["optimizer"] == "zc-evolution" and result["config"]["budget"] == 12
    assert [r["seed"] for r in result["runs"]] == [0, 1]
    for run in result["runs"]:
        assert set(run) >= {"seed", "arch", "arch_str", "test_accuracy", "val_accuracy", "search_seconds"}
        assert 0 < run["test_accuracy"] < 100
    assert result["mean_test_accuracy"] == pytest.approx(np.mean([r["test_accuracy"] for r in result["runs"]]))
    # the found cells' accuracy on the other two datasets, read from the same benchmark
    space = get_space("nasbench201")
    for ds in ("cifar100", "ImageNet16-120"):
        truth = load_ground_truth(bench, space, ds, "test_accuracy")
        accs = [truth.get(space.hash(r["arch"])) for r in result["runs"]]
        assert [r["transfer_test_accuracy"][ds] for r in result["runs"]] == accs
        assert result["transfer"][ds]["mean_test_accuracy"] == pytest.approx(np.mean(accs))
        assert result["transfer"][ds]["n_seeds"] == 2
    assert "cifar10" not in result["transfer"]
    assert "the same cells on ImageNet16-120: " in capsys.readouterr().out
    assert main(argv + ["--budget", "13"]) == 2  # resuming with other settings is refused
    assert "other settings" in capsys.readouterr().err


# --------------------------------------------------------------------------- nwot


def test_nwot_equals_the_log_det_of_the_hamming_kernel():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 9), nn.ReLU(), nn.Linear(9, 7), nn.ReLU(), nn.Linear(7, 3))
    batches = ImageBatches("cifar10", batch_size=5, seed=0, data="gaussian", resolution=2)
    x, _ = batches.batch(0)
    h1 = model[1](model[0](x))
    h2 = model[3](torch.relu(h1))
    codes = torch.cat([h1 > 0, h2 > 0], dim=1).double()
    hamming = (codes[:, None, :] != codes[None, :, :]).sum(-1).double()
    expected = torch.linalg.slogdet(codes.shape[1] - hamming)[1]
    assert get_predictor("nwot").score(model, batches, None) == pytest.approx(float(expected), rel=1e-12)


def test_nwot_eval_reads_codes_with_batch_norm_running_statistics():
    torch.manual_seed(0)
    # 32 units: with a handful, two of the 5 samples can share every code on some CPUs (K singular)
    linear, head = nn.Linear(12, 32), nn.Linear(32, 3)
    with_bn = nn.Sequential(nn.Flatten(), linear, nn.BatchNorm1d(32), nn.ReLU(), head)
    without = nn.Sequential(nn.Flatten(), linear, nn.ReLU(), head)
    batches = ImageBatches("cifar10", batch_size=5, seed=0, data="gaussian", resolution=2)
    # at initialisation the running statistics are 0 and 1: eval mode does not normalise
    nwot, nwot_eval = get_predictor("nwot"), get_predictor("nwot_eval")
    assert nwot_eval.score(with_bn, batches, None) == nwot.score(without, batches, None)
    # train mode normalises with the batch's statistics, which changes the codes
    assert nwot.score(with_bn, batches, None) != nwot_eval.score(with_bn, batches, None)


def test_nwot_reports_identical_codes_as_non_finite():
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 4), nn.ReLU(), nn.Linear(4, 2))
    with torch.no_grad():
        model[1].weight.zero_()
        model[1].bias.fill_(1.0)  # every sample gets the same code and the same output
    batches = ImageBatches("cifar10", batch_size=4, seed=0, data="gaussian", resolution=2)
    with pytest.raises(FloatingPointError, match="nwot is -inf"):
        get_predictor("nwot").score(model, batches, None)


# --------------------------------------------------------------------------- ensemble


def test_ensemble_is_the_sum_of_log_normalised_ranks():
    ens = get_predictor("ensemble", components="zico,params")
    columns = {"zico": [3.0, 1.0, 2.0, 5.0], "params": [0.1, 0.4, 0.2, 0.3]}
    values, reasons = ens.combine(columns)
    expected = np.log(stats.rankdata(columns["zico"]) / 4) + np.log(stats.rankdata(columns["params"]) / 4)
    assert values == pytest.approx(expected.tolist()) and reasons == [None] * 4


def test_ensemble_ranks_a_failed_component_score_tied_at_the_bottom():
    ens = get_predictor("ensemble", components="zico,params")
    values, reasons = ens.combine({"zico": [3.0, None, 2.0, -math.inf], "params": [0.1, 0.4, float("nan"), 0.2]})
    # zico ranks 3 (3.0), 2 (2.0) and the failed and -inf scores tied at 1.5; params: nan at the bottom
    zico = np.log(np.array([4, 1.5, 3, 1.5]) / 4)
    params = np.log(np.array([2, 4, 1, 3]) / 4)
    assert values == pytest.approx((zico + params).tolist()) and reasons == [None] * 4
    _, reasons = ens.combine({"zico": [None, None], "params": [1.0, 2.0]})
    assert reasons == ["component zico failed on every architecture"] * 2


@pytest.mark.parametrize("components, message", [("zico", "two or more distinct"), ("zico,zico", "two or more"),
                                                 ("zico,ensemble", "cannot be a component of an ensemble")])
def test_bad_ensembles(components, message):
    with pytest.raises(UserError, match=message):
        get_predictor("ensemble", components=components)


def test_ensemble_ranks_a_set_level_component_by_its_aggregate():
    # vkdnw_single is log denserank(aleph, vkdnw): aleph decides, vkdnw breaks its ties
    ens = get_predictor("ensemble", components="vkdnw_single,params")
    assert ens.base_components == ["aleph", "vkdnw", "params"]
    assert ens.options() == {"components": ["vkdnw_single", "params"], "skip_undefined": False}
    columns = {"aleph": [5.0, 5.0, 3.0, 7.0], "vkdnw": [0.2, 0.9, 0.5, 0.1], "params": [0.1, 0.4, 0.2, 0.3]}
    values, reasons = ens.combine(columns)
    pair = np.log(np.array([2, 3, 1, 4]) / 4)  # (5, .2) < (5, .9); (3, .5) lowest, (7, .1) highest
    expected = pair + np.log(stats.rankdata(columns["params"]) / 4)
    assert values == pytest.approx(expected.tolist()) and reasons == [None] * 4
    # a component the nested aggregate reads but nothing scored is a usage error
    with pytest.raises(UserError, match="components not scored: vkdnw"):
        ens.combine({"aleph": [1.0], "params": [1.0]})


def test_union_aggregate_sums_its_components_and_leaves_out_an_undefined_one():
    union = get_predictor("union_agg")
    rng = np.random.default_rng(0)
    columns = {c: rng.normal(size=6).tolist() for c in union.base_components}
    columns["aleph"] = [3.0, 3.0, 1.0, 2.0, 2.0, 5.0]
    tuples = list(zip(columns["aleph"], columns["vkdnw"]))
    pair = np.array([sorted(set(tuples)).index(t) + 1 for t in tuples])  # dense rank, aleph first
    singles = [c for c in union.components if c != "vkdnw_single"]
    expected = sum(np.log(stats.rankdata(columns[c]) / 6) for c in singles)
    values, reasons = union.combine(columns)
    assert values == pytest.approx((expected + np.log(stats.rankdata(np.log(pair)) / 6)).tolist())
    # VKDNW's Fisher fails on every architecture (a regression task): the pair is left out, not the set
    values, reasons = union.combine({**columns, "vkdnw": [None] * 6})
    assert values == pytest.approx(expected.tolist())
    values, reasons = union.combine({**columns, "meco": [None] * 6, "vkdnw": [None] * 6})
    assert reasons == [None] * 6 and values[0] is not None
    values, reasons = union.combine({c: [None] * 2 for c in union.base_components})
    assert reasons == ["every component failed on every architecture"] * 2


def test_fast_union_is_union_agg_without_its_two_costly_components():
    union, fast = get_predictor("union_agg"), get_predictor("union_fast")
    assert set(union.components) - set(fast.components) == {"vkdnw_single", "swap"}
    assert set(fast.components) < set(union.components) and "vkdnw" not in fast.base_components
    rng = np.random.default_rng(1)
    columns = {c: rng.normal(size=5).tolist() for c in union.base_components}
    expected = sum(np.log(stats.rankdata(columns[c]) / 5) for c in fast.components)
    values, reasons = fast.combine(columns)
    assert values == pytest.approx(expected.tolist()) and reasons == [None] * 5


def test_consensus_union_leaves_out_the_components_that_rank_against_the_others():
    cons, fast = get_predictor("union_consensus"), get_predictor("union_fast")
    assert cons.components == fast.components
    rng = np.random.default_rng(2)
    base = rng.normal(size=40)
    columns = {c: (base + rng.normal(0, 0.5, size=40)).tolist() for c in cons.base_components}
    # all agree: union_fast itself
    assert cons.combine(columns)[0] == pytest.approx(fast.combine(columns)[0])
    against, flat = cons.components[0], cons.components[1]
    columns[against] = (-base).tolist()  # ranks the set the other way round
    columns[flat] = [1.0] * 40  # ranks nothing: its Spearman is undefined
    agreeing = [c for c in cons.components if c not in (against, flat)]
    expected = sum(np.log(stats.rankdata(columns[c]) / 40) for c in agreeing)
    values, reasons = cons.combine(columns)
    assert values == pytest.approx(expected.tolist()) and reasons == [None] * 40
    # by hand: the Spearman of `against` with the sum of the others' log ranks is negative
    others = sum(np.log(stats.rankdata(columns[c]) / 40) for c in cons.components if c != against)
    assert stats.spearmanr(columns[against], others)[0] < 0
    # no component agrees with the rest (the two left disagree): the plain sum of both
    first, second = cons.components[:2]
    two = {**{c: [None] * 40 for c in cons.base_components}, first: base.tolist(), second: (-base).tolist()}
    expected = np.log(stats.rankdata(base) / 40) + np.log(stats.rankdata(-base) / 40)
    assert cons.combine(two)[0] == pytest.approx(expected.tolist())


def test_ensemble_cannot_score_one_architecture(capsys):
    assert main(["score", "--predictors", "ensemble", "--data", "gaussian"]) == 2
    assert "ranks a whole set" in capsys.readouterr().err


def test_correlate_reuses_earlier_scores_and_adds_the_ensemble(tmp_path, shared_data, capsys):
    bench = shared_data / get_space("nasbench201").benchmark_file
    common = ["correlate", "--n-archs", "5", "--seed", "0", "--batch-size", "2", "--data", "gaussian",
              "--benchmark", str(bench)]
    assert main(common + ["--predictors", "params,flops", "--out", str(tmp_path / "a")]) == 0
    first = json.loads((tmp_path / "a" / "correlation.json").read_text())
    argv = common + ["--predictors", "ensemble", "--ensemble-components", "params,flops,synflow",
                     "--scores-from", str(tmp_path / "a"), "--out", str(tmp_path / "b")]
    assert main(argv) == 0
    assert "reused from earlier runs: params (5 of 5), flops (5 of 5); scoring now: synflow on 5 architectures" \
        in capsys.readouterr().err
    second = json.loads((tmp_path / "b" / "correlation.json").read_text())
    assert list(second["predictors"]) == ["params", "flops", "synflow", "ensemble"]
    assert second["predictors"]["params"] == first["predictors"]["params"]
    header = json.loads((tmp_path / "b" / "scores.jsonl").read_text().splitlines()[0])["header"]
    assert header["predictors"] == ["synflow"]
    assert second["set_level"]["ensemble"]["components"] == ["params", "flops", "synflow"]
    # scores made with other data settings are refused, naming the difference
    assert main(argv[:6] + ["4"] + argv[7:]) == 2
    assert "other settings" in capsys.readouterr().err
    # a sample's scores stand in for those architectures of a larger run: only the others are scored
    lines = bench.read_text().splitlines()
    sampled = {r["arch_str"] for r in csv.DictReader(open(tmp_path / "a" / "scores.csv", newline=""))}
    small = tmp_path / "small.csv"  # the 5 sampled cells and 3 others
    small.write_text("\n".join([lines[0], *[ln for ln in lines[1:] if ln.split(",")[1] in sampled],
                                 *[ln for ln in lines[1:] if ln.split(",")[1] not in sampled][:3]]) + "\n")
    assert main(["correlate", "--all", "--seed", "0", "--batch-size", "2", "--data", "gaussian",
                 "--benchmark", str(small), "--predictors", "params,flops",
                 "--scores-from", str(tmp_path / "a"), "--out", str(tmp_path / "c")]) == 0
    assert "params (5 of 8), flops (5 of 8); scoring now: params, flops on 3 architectures" in capsys.readouterr().err
    log = (tmp_path / "c" / "scores.jsonl").read_text().splitlines()
    assert json.loads(log[0])["header"]["keys"] == 3 and len(log) == 4
    third = json.loads((tmp_path / "c" / "correlation.json").read_text())
    assert third["n_archs"] == 8 and third["predictors"]["params"]["n_valid"] == 8


# --------------------------------------------------------------------------- zc-pt


class _CountConv3(Predictor):
    """A stand-in predictor: on the supernet, the total mixing weight of nor_conv_3x3 over the
    edges, so removing conv3 lowers the score most on every edge; 0 on stand-alone networks.
    Records every edge's weights it was shown."""

    def __init__(self):
        self.seen = []

    def score(self, model, batches, loss_fn):
        weights = getattr(model, "weights", None)
        if weights is None:
            return 0.0
        self.seen.append([w.clone() for w in weights])
        return float(sum(w[2] for w in weights))


def test_zc_pt_masks_one_op_at_a_time_and_keeps_the_most_important():
    fake = _CountConv3()
    opt = OPTIMIZERS.get("zc-pt")(predictor=fake, pool=2, validate_rounds=1, channels=2, cells=1)
    outcome = opt.search(get_space("nasbench201"), "cifar10", _batches(), seed=0, progress=False)
    assert outcome.arch == (2,) * 6 and outcome.trace["predictor_calls"] == 2 * 6 * 5 + 1
    first_pass = fake.seen[:30]
    edges = outcome.trace["passes"][0]["edge_order"]
    assert sorted(edges) == list(range(6))
    for step, weights in enumerate(first_pass):
        edge, op = edges[step // 5], step % 5
        expected = torch.full((5,), 0.2)
        expected[op] = 0.0
        assert torch.equal(weights[edge], expected)
        for done in edges[: step // 5]:  # edges fixed earlier in the pass are one-hot on conv3
            assert torch.equal(weights[done], torch.nn.functional.one_hot(torch.tensor(2), 5).float())
        for later in edges[step // 5 + 1:]:  # the rest stay near uniform (alpha = 1e-3 randn)
            assert torch.allclose(weights[later], torch.full((5,), 0.2), atol=1e-3)


def test_zc_pt_returns_a_valid_architecture_and_repeats_with_its_seed():
    space = get_space("nasbench201")
    opt = OPTIMIZERS.get("zc-pt")(predictor=get_predictor("nwot"), pool=2, validate_rounds=2, channels=2, cells=1)
    a = opt.search(space, "cifar10", ImageBatches("cifar10", batch_size=4, seed=0, data="gaussian"), seed=1,
                   progress=False)
    b = opt.search(space, "cifar10", ImageBatches("cifar10", batch_size=4, seed=0, data="gaussian"), seed=1,
                   progress=False)
    assert space.parse(a.arch) == a.arch and a.arch == b.arch and a.trace == b.trace
    assert a.trace["predictor_calls"] == 2 * 30 + 2 * len(a.trace["candidates"])
    with pytest.raises(UserError, match="no .mixed. supernet for search space .mlp_act_skip."):
        opt.check(get_space("mlp_act_skip"), "digits")
    with pytest.raises(UserError, match="unknown zc-pt edge order"):
        OPTIMIZERS.get("zc-pt")(edge_order="sideways")


def test_zc_pt_on_tnb_micro_returns_a_valid_cell_and_repeats_with_its_seed():
    from naslib_plugins.data.tasks import TaskBatches

    space = get_space("transbench101_micro")
    opt = OPTIMIZERS.get("zc-pt")(predictor=get_predictor("nwot_eval"), pool=1, validate_rounds=1)
    runs = [opt.search(space, "class_scene", TaskBatches("class_scene", batch_size=4, seed=0, data="gaussian",
                                                              resolution=32), seed=2, progress=False)
            for _ in range(2)]
    a, b = runs
    assert space.parse(a.arch) == a.arch and a.arch == b.arch and a.trace == b.trace
    # 6 edges x 4 ops on the supernet, then one validation round per distinct candidate
    assert a.trace["predictor_calls"] == 24 + len(a.trace["candidates"]) and a.trace["n_failed"] == 0


def test_soft_mixture_is_the_weighted_sum_of_the_ops():
    from naslib_plugins.spaces.nasbench201 import NB201MixedEdge

    torch.manual_seed(0)
    edge = NB201MixedEdge(3).train()
    x = torch.randn(2, 3, 5, 5)
    w = torch.tensor([0.1, 0.3, 0.2, 0.0, 0.4])
    expected = sum(w[int(k)] * op(x) for k, op in edge.ops.items())
    assert torch.allclose(edge(x, w, chosen=4), expected, atol=1e-6)
    one_hot = torch.nn.functional.one_hot(torch.tensor(2), 5).float()
    assert torch.equal(edge(x, one_hot, chosen=2), edge.ops["2"](x))


class _DeepSep3(Predictor):
    """A stand-in predictor on the DARTS supernet: each edge adds its sep_conv_3x3 weight times
    (1 + its input node), so removing sep_conv_3x3 lowers the score most on every edge and a node
    loses its lowest-numbered inputs first; 0 on stand-alone networks."""

    def __init__(self):
        self.seen = []

    def score(self, model, batches, loss_fn):
        from naslib_plugins.spaces.nasbench301 import DARTS_EDGES

        weights = getattr(model, "weights", None)
        if weights is None:
            return 0.0
        self.seen.append([w.clone() for w in weights])
        return float(sum(w[3] * (1 + DARTS_EDGES[e % 14][1]) for e, w in enumerate(weights)))


def test_zc_pt_on_darts_fixes_ops_then_keeps_two_inputs_per_node():
    fake = _DeepSep3()
    space = get_space("nasbench301")
    opt = OPTIMIZERS.get("zc-pt")(predictor=fake, pool=1, validate_rounds=1, channels=2, cells=1)
    outcome = opt.search(space, "cifar10", _batches(), seed=0, progress=False)
    # node k keeps its two highest inputs k and k+1, every op sep_conv_3x3, in both cells
    cell = tuple((j, 3) for k in range(4) for j in (k, k + 1))
    assert outcome.arch == (cell, cell)
    # 2 x 14 edges x 7 ops, then nodes of 3, 4, 5 inputs drop 1, 2, 3 edges: 3 + (4 + 3) + (5 + 4 + 3) per cell
    assert outcome.trace["predictor_calls"] == 2 * 14 * 7 + 2 * 22 + 1
    order = outcome.trace["passes"][0]["edge_order"]
    assert sorted(order[0::2]) == list(range(14)) and sorted(order[1::2]) == list(range(14, 28))  # cells take turns
    topology = fake.seen[2 * 14 * 7:]
    for weights in topology:  # every op is fixed by then: one-hot or a removed (all-zero) edge
        assert all(float(w.sum()) in (0.0, 1.0) for w in weights)
    first = topology[0]
    removed = [e for e, w in enumerate(first) if float(w.sum()) == 0.0]
    assert len(removed) == 1  # one trial edge at a time
    assert space.parse(outcome.arch) == outcome.arch


def test_darts_mixed_edge_is_the_weighted_sum_and_all_zero_removes_it():
    from naslib_plugins.spaces.nasbench301 import DartsMixedEdge

    torch.manual_seed(0)
    edge = DartsMixedEdge(4, stride=1).train()
    x = torch.randn(2, 4, 6, 6)
    w = torch.tensor([0.1, 0.0, 0.2, 0.3, 0.0, 0.4, 0.0])
    expected = sum(w[k] * op(x) for k, op in enumerate(edge.ops) if w[k] != 0)
    assert torch.allclose(edge(x, w), expected, atol=1e-6)
    assert edge(x, torch.zeros(7)) is None


def test_darts_supernet_runs_a_projected_genotype_and_leaves_removed_edges_out():
    from naslib_plugins.spaces.nasbench301 import DartsSupernet

    torch.manual_seed(0)
    net = DartsSupernet(num_classes=10, C=2, N=1)
    weights = [torch.softmax(1e-3 * torch.randn(7), dim=-1) for _ in net.groups]
    weights[5] = torch.zeros(7)  # node 1 of the normal cell loses its edge from input 0
    weights[14] = torch.nn.functional.one_hot(torch.tensor(3), 7).float()
    out = net(torch.randn(2, 3, 8, 8), weights)
    assert out.shape == (2, 10) and torch.isfinite(out).all()
    out.sum().backward()
    cells = list(net.cells)
    normal, reduce = cells[0], cells[1]
    assert all(p.grad is None for p in normal.edges[5].parameters())
    assert all(p.grad is None for k, op in enumerate(reduce.edges[0].ops) if k != 3 for p in op.parameters())
    assert any(p.grad is not None for p in reduce.edges[0].ops[3].parameters())


# --------------------------------------------------------------------------- pool search


def _pool(space, n, seed=0):
    rng = np.random.default_rng(seed)
    return PoolSpace(space, [space.sample(rng) for _ in range(n)])


@pytest.mark.parametrize("optimizer, options", [("zc-evolution", {"population": 6, "sample_size": 3}),
                                                ("zc-random", {})])
def test_pool_search_never_leaves_the_pool_spends_the_budget_and_repeats(optimizer, options, counted):
    space = get_space("nasbench201")
    pool = _pool(space, 40)
    opt = OPTIMIZERS.get(optimizer)(predictor=get_predictor("params"), budget=15, **options)
    first = opt.search(pool, "cifar10", _batches(), seed=4, progress=False)
    assert len(counted) == 15 and set(counted) <= set(pool.pool)  # scored only pool members, each once
    assert space.hash(first.arch) in pool.pool
    again = opt.search(pool, "cifar10", _batches(), seed=4, progress=False)
    assert again.arch == first.arch and again.trace["top10"] == first.trace["top10"]


def test_pool_mutation_draws_among_the_parents_k_nearest_members_k_the_spaces_degree():
    space = get_space("nasbench201")
    parent = (0, 0, 0, 0, 0, 0)
    assert len(space.neighbours(parent)) == 24  # 6 edges x 4 other ops
    # 10 members one edit away, 14 two edits away, 6 of the 20 three edits away tie at the cut
    # (the 24th nearest is two edits away), and the far ones
    one = [tuple(int(i == e) * op for i in range(6)) for e in range(5) for op in (1, 2)]
    two = [tuple(op if i in (e, e + 1) else 0 for i in range(6)) for e in range(5) for op in (1, 2, 3)][:14]
    far = [tuple((e + i) % 4 + 1 for i in range(6)) for e in range(4)]
    pool = PoolSpace(space, [parent, *one, *two, *far])
    rng = np.random.default_rng(0)
    children = [pool.mutate(parent, rng) for _ in range(2000)]
    assert set(children) == set(one) | set(two)  # the 24 nearest, never the parent nor a far one
    # and uniformly: each of the 24 about 2000 / 24 = 83 times
    assert min(children.count(c) for c in set(children)) > 50
    assert {pool.sample(rng) for _ in range(400)} == {parent, *one, *two, *far}
    with pytest.raises(UserError, match="two or more architectures"):
        PoolSpace(space, [parent, parent])


def test_pool_evolution_in_nb301s_sparse_pool_spends_its_budget_on_new_members(tmp_path, shared_data):
    """725 members among ~10^18 cells: no two are one edit apart, and a mutation to the single
    nearest member cycled among a handful (37 of a budget of 100 before 10,000 stale proposals)."""
    zc = shared_data / "nasbench301" / "zc_nasbench301.json"
    # the settings of the pool runs in results/ (the old rule: 42 new members at seed 0)
    argv = ["search", "--optimizer", "zc-evolution", "--population", "20", "--sample-size", "5", "--space",
            "nasbench301", "--predictor", "params", "--budget", "100", "--seed", "0", "--within-table",
            "--benchmark", str(zc), "--data", "gaussian", "--batch-size", "2", "--out", str(tmp_path)]
    assert main(argv) == 0
    result = json.loads((tmp_path / "search.json").read_text())
    assert [r["predictor_calls"] for r in result["runs"]] == [100]
    assert not any("ran out" in n for n in result["notes"])


def test_search_within_table_reports_ranks_in_the_pool(tmp_path, shared_data, capsys):
    zc = shared_data / "nasbench101" / "zc_nasbench101.json"
    argv = ["search", "--optimizer", "zc-random", "--space", "nasbench101", "--predictor", "params", "--budget", "5",
            "--seed", "0-1", "--within-table", "--benchmark", str(zc), "--data", "gaussian", "--batch-size", "2",
            "--out", str(tmp_path)]
    assert main(argv) == 0
    result = json.loads((tmp_path / "search.json").read_text())
    assert result["config"]["pool"] == 500 and result["rank"]["val_accuracy"]["of"] == 500
    table = list(load_ground_truth(zc, get_space("nasbench101"), "cifar10", "val_accuracy").values.values())
    for run in result["runs"]:
        assert run["val_accuracy_rank"] == 1 + sum(v > run["val_accuracy"] for v in table)
    # what the found architectures are set against: the pool's best and mean
    assert result["rank"]["val_accuracy"]["table_best"] == max(table)
    assert result["rank"]["val_accuracy"]["table_mean"] == pytest.approx(np.mean(table), rel=1e-12)
    # the file has validation accuracy only: one short line says so, naming the file, not its path
    assert result["notes"] == ["zc_nasbench101.json holds no test_accuracy for nasbench101/cifar10: the runs "
                               "report val_accuracy only"]
    assert "rank" in capsys.readouterr().out
    capsys.readouterr()
    nb201 = shared_data / get_space("nasbench201").benchmark_file
    assert main(["search", "--optimizer", "zc-pt", "--within-table", "--benchmark", str(nb201),
                 "--out", str(tmp_path / "pt")]) == 2
    assert "zc-pt builds a supernet of the whole space" in capsys.readouterr().err
