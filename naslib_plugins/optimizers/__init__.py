"""Search strategies by name (zero-shot evolution and Zero-Cost-PT arrive in later issues)."""
from naslib_plugins.optimizers.base import Optimizer, SearchOutcome
from naslib_plugins.optimizers.nasi import NASI
from naslib_plugins.registry import Registry

OPTIMIZERS: Registry[type[Optimizer]] = Registry("optimizer")
OPTIMIZERS.add("nasi", NASI)

__all__ = ["OPTIMIZERS", "Optimizer", "SearchOutcome"]
