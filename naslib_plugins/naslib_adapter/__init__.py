"""NASLib adapter: our predictors as NASLib zero-cost measures and predictors, our optimizers as
NASLib optimizers, and converters between NASLib graphs and our encodings.

NASLib (github.com/automl/NASLib, branch Develop or zerocost) is no dependency of naslib_plugins:
this package imports it, or fails with one ImportError naming what is missing. Importing it also
runs `register()`, so `naslib.predictors.ZeroCost(method_type="zico")` works from then on;
`set_batch_mode` chooses how ZiCo gets its two mini-batches there (default "split").
"""
from naslib_plugins.naslib_adapter._naslib import load_naslib

load_naslib()

from naslib_plugins.naslib_adapter.converters import from_graph, to_graph  # noqa: E402
from naslib_plugins.naslib_adapter.measures import (  # noqa: E402
    BATCH_MODES,
    FixedBatches,
    batch_mode,
    register,
    set_batch_mode,
)
from naslib_plugins.naslib_adapter.optimizers import (  # noqa: E402
    NASLIB_OPTIMIZERS,
    NASIOptimizer,
    PluginOptimizer,
    ZeroCostEvolution,
    ZeroCostPT,
    ZeroCostRandom,
    make_optimizer,
)
from naslib_plugins.naslib_adapter.predictors import PluginZeroCost  # noqa: E402

register()

__all__ = ["BATCH_MODES", "FixedBatches", "NASIOptimizer", "NASLIB_OPTIMIZERS", "PluginOptimizer", "PluginZeroCost",
           "ZeroCostEvolution", "ZeroCostPT", "ZeroCostRandom", "batch_mode", "from_graph", "make_optimizer",
           "register", "set_batch_mode", "to_graph"]
