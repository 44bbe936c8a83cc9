"""Zero-shot searches driven by one predictor's score, no training: aging evolution as in ZiCo's
search (Real et al. 2019, regularised evolution) and random search (the NASWOT-style baseline).

The budget counts distinct architectures scored. Scores are cached by the space's hash, so an
architecture proposed twice costs nothing the second time. Each architecture is scored exactly
as `correlate` scores it (weights seeded from (search seed, hash)), so a search's fitness values
are the same numbers a correlation run with that seed reports, and a search killed part-way
resumes from its journal of them: the search replays its seeded proposals, reading each score
it holds, and ends where an uninterrupted one would.
"""
from __future__ import annotations

import collections
import math
import sys
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from naslib_plugins.data.batches import BatchSource
from naslib_plugins.device import CPU
from naslib_plugins.errors import UserError
from naslib_plugins.evaluation.journal import SeedJournal
from naslib_plugins.evaluation.scoring import ScoringJob
from naslib_plugins.optimizers.base import Optimizer, SearchOutcome, predictor_name, scoring_predictor
from naslib_plugins.predictors import Predictor, SetPredictor, get_predictor
from naslib_plugins.spaces.base import SearchSpace

# proposals in a row without a new architecture before a search gives up: the space is exhausted
# (random search) or the population has converged on a neighbourhood it has scored (evolution)
MAX_STALE_PROPOSALS = 10_000
# ZiCo's own search (Li et al., ICLR 2023) scores with ZiCo
ZICO = get_predictor("zico")


def _positive_int(label: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"{label} must be a positive integer, got {value!r}")
    return value


class _Fitness:
    """Score-by-hash cache; failed or non-finite scores rank below every valid one. With a
    set-level predictor (a rank aggregate) its components are scored per architecture and an
    architecture's fitness is the aggregate over every architecture scored so far, as AZ-NAS's
    evolution ranks within its history: the same architecture's fitness moves as the set grows.
    `journal`: the seed's scores so far, read instead of scoring again, and appended to."""

    def __init__(self, space: SearchSpace, dataset: str, predictor: Predictor | SetPredictor, batches: BatchSource,
                 seed: int, budget: int, progress: bool, desc: str, device: torch.device,
                 journal: SeedJournal | None = None):
        self.space = space
        self.journal = journal if journal is not None else SeedJournal()
        self.name = predictor_name(predictor)
        self.aggregate = predictor if isinstance(predictor, SetPredictor) else None
        scorers = ({c: get_predictor(c) for c in predictor.base_components} if self.aggregate is not None
                   else {self.name: predictor})
        self.job = ScoringJob(space, dataset, scorers, batches, seed, device=str(device))
        self.budget = budget
        self.columns: dict[str, list[float | None]] = {n: [] for n in scorers}
        self.archs: dict[str, Any] = {}  # hash -> architecture, in scoring order
        self.failures: dict[str, str] = {}
        self.seconds = 0.0
        self.cache_hits = 0
        self._scores: dict[str, float | None] | None = None
        self._bar = tqdm(total=budget, desc=desc, unit="arch", file=sys.stderr, dynamic_ncols=True,
                         mininterval=2.0, disable=not progress)

    @property
    def exhausted(self) -> bool:
        return len(self.archs) >= self.budget

    @property
    def scores(self) -> dict[str, float | None]:
        """hash -> fitness of every architecture scored (None: no score)."""
        if self._scores is None:
            values = (self.columns[self.name] if self.aggregate is None
                      else self.aggregate.combine(self.columns)[0])
            self._scores = dict(zip(self.archs, values))
        return self._scores

    def propose(self, arch: Any) -> bool:
        """Score `arch` unless it was scored before; True if it was new."""
        key = self.space.hash(arch)
        if key in self.archs:
            self.cache_hits += 1
            return False
        record = self.journal.get(key)
        if record is None:
            record = self.job.score(arch)
            self.journal.add(key, record)
        self.archs[key] = self.space.parse(arch)
        for name, column in self.columns.items():
            column.append(record["scores"][name])
        self._scores = None
        self.seconds += sum(record["seconds"].values()) + record.get("shared_seconds", 0.0)
        failed = [f"{n}: {record['reason'][n]}" if self.aggregate is not None else record["reason"][n]
                  for n in self.columns if record["status"][n] != "ok"]
        if failed:
            self.failures[key] = "; ".join(failed)
        self._bar.update(1)
        return True

    def value(self, arch: Any) -> float:
        score = self.scores[self.space.hash(arch)]
        return -math.inf if score is None else score

    def outcome(self, extra: dict, short_because: str = "the space ran out of new architectures") -> SearchOutcome:
        self._bar.close()
        valid = {k: v for k, v in self.scores.items() if v is not None}
        if not valid:
            raise UserError(f"{self.name} failed on every architecture scored, e.g. "
                            f"{next(iter(self.failures.values()), 'no architecture scored')}")
        best = max(valid, key=lambda k: (valid[k], k))  # ties broken by hash, not by order
        top = sorted(valid, key=lambda k: (-valid[k], k))[:10]
        trace = {"predictor": self.name, "predictor_calls": len(self.archs), "cache_hits": self.cache_hits,
                 "predictor_seconds": round(self.seconds, 3), "best_score": valid[best],
                 "n_failed": len(self.failures), "failures": sorted(set(self.failures.values()))[:5],
                 "top10": [[self.space.to_string(self.archs[k]), valid[k]] for k in top],
                 **self.journal.trace(), **extra}
        if self.aggregate is not None:
            trace["components"] = list(self.columns)  # n_failed: architectures some component failed on
        if len(self.archs) < self.budget:
            trace["warnings"] = [f"{short_because} after {len(self.archs)} of the budget of {self.budget}"]
        return SearchOutcome(arch=self.archs[best], trace=trace)


class _ZeroShot(Optimizer):
    searches_by_sampling = True
    journals_work = True
    param_help = {
        "predictor": "the predictor whose score is searched on; a rank aggregate (ensemble, az_nas, ...) ranks "
                     "each architecture within all those scored so far",
        "budget": "architectures scored",
    }

    def __init__(self, predictor: Predictor | SetPredictor = ZICO, budget: int = 1000):
        self.predictor = predictor if isinstance(predictor, SetPredictor) else scoring_predictor(self.name, predictor)
        self.budget = _positive_int(f"{self.name} budget", budget)


class ZeroShotRandom(_ZeroShot):
    """Score `budget` distinct uniformly sampled architectures and keep the best."""

    name = "zc-random"

    def search(self, space: SearchSpace, dataset: str, batches: BatchSource, seed: int,
               progress: bool = True, device: torch.device = CPU, journal: SeedJournal | None = None) -> SearchOutcome:
        rng = np.random.default_rng(seed)
        fitness = _Fitness(space, dataset, self.predictor, batches, seed, self.budget, progress,
                           f"zc-random seed {seed}", device, journal)
        stale = 0
        while not fitness.exhausted and stale < MAX_STALE_PROPOSALS:
            stale = 0 if fitness.propose(space.sample(rng)) else stale + 1
        return fitness.outcome({})


class ZeroShotEvolution(_ZeroShot):
    """Aging evolution: a population of P, each step the best of S sampled members is mutated by
    the space's `mutate`, the child joins and the oldest member leaves; the best architecture
    ever scored is the result (Real et al. 2019, Algorithm 1)."""

    name = "zc-evolution"
    param_help = {
        **_ZeroShot.param_help,
        "population": "population size P",
        "sample_size": "tournament size S",
    }

    def __init__(self, predictor: Predictor | SetPredictor = ZICO, budget: int = 1000, population: int = 64,
                 sample_size: int = 16):
        super().__init__(predictor, budget)
        self.population = _positive_int("zc-evolution population", population)
        self.sample_size = _positive_int("zc-evolution sample size", sample_size)
        if self.sample_size > self.population:
            raise UserError(f"zc-evolution sample size ({sample_size}) cannot exceed the population ({population})")
        if self.population > self.budget:
            raise UserError(f"zc-evolution population ({population}) cannot exceed the budget ({budget})")

    def search(self, space: SearchSpace, dataset: str, batches: BatchSource, seed: int,
               progress: bool = True, device: torch.device = CPU, journal: SeedJournal | None = None) -> SearchOutcome:
        rng = np.random.default_rng(seed)
        fitness = _Fitness(space, dataset, self.predictor, batches, seed, self.budget, progress,
                           f"zc-evolution seed {seed}", device, journal)
        population: collections.deque = collections.deque()
        stale = 0
        # the initial population: distinct random architectures, as many as fit the budget
        while len(population) < self.population and stale < MAX_STALE_PROPOSALS:
            arch = space.sample(rng)
            if fitness.propose(arch):
                population.append(arch)
                stale = 0
            else:
                stale += 1
        space_exhausted = stale >= MAX_STALE_PROPOSALS  # then the population may be under the tournament size
        stale = 0
        mutations = 0
        while not space_exhausted and not fitness.exhausted and stale < MAX_STALE_PROPOSALS:
            members = rng.choice(len(population), size=self.sample_size, replace=False)
            parent = max((population[int(i)] for i in members), key=lambda a: (fitness.value(a), space.hash(a)))
            child = space.mutate(parent, rng)
            stale = 0 if fitness.propose(child) else stale + 1
            population.append(child)
            population.popleft()
            mutations += 1
        if space_exhausted:
            return fitness.outcome({"mutations": mutations})
        return fitness.outcome({"mutations": mutations},
                               f"the evolution stalled ({MAX_STALE_PROPOSALS} mutations in a row gave only "
                               f"architectures scored before: the population converged)")
