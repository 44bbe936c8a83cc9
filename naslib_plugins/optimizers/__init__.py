"""Search strategies by name."""
from naslib_plugins.optimizers.base import Optimizer, SearchOutcome
from naslib_plugins.optimizers.nasi import NASI
from naslib_plugins.optimizers.zc_pt import ZeroCostPT
from naslib_plugins.optimizers.zero_shot import ZeroShotEvolution, ZeroShotRandom
from naslib_plugins.registry import Registry

OPTIMIZERS: Registry[type[Optimizer]] = Registry("optimizer")
OPTIMIZERS.add("nasi", NASI)
OPTIMIZERS.add("zc-evolution", ZeroShotEvolution)
OPTIMIZERS.add("zc-random", ZeroShotRandom)
OPTIMIZERS.add("zc-pt", ZeroCostPT)

__all__ = ["OPTIMIZERS", "Optimizer", "SearchOutcome"]
