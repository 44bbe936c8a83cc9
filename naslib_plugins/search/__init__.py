"""Search strategies by name."""
from naslib_plugins.registry import Registry
from naslib_plugins.search.base import Optimizer, SearchOutcome
from naslib_plugins.search.nasi import NASI
from naslib_plugins.search.zc_pt import ZeroCostPT
from naslib_plugins.search.zero_shot import ZeroShotEvolution, ZeroShotRandom

OPTIMIZERS: Registry[type[Optimizer]] = Registry("optimizer")
OPTIMIZERS.add("nasi", NASI)
OPTIMIZERS.add("zc-evolution", ZeroShotEvolution)
OPTIMIZERS.add("zc-random", ZeroShotRandom)
OPTIMIZERS.add("zc-pt", ZeroCostPT)

__all__ = ["OPTIMIZERS", "Optimizer", "SearchOutcome"]
