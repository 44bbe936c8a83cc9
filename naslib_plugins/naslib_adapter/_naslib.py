"""Importing NASLib, which the core never does, and finding its zero-cost measure registry."""
from __future__ import annotations

import collections
import collections.abc
import importlib
from types import ModuleType

# the Develop branch and the zerocost branch keep the measures in different packages
MEASURE_MODULES = ("naslib.predictors.utils.pruners.measures", "naslib.predictors.pruners.measures")
# what the adapter uses of NASLib; importing these pulls in nearly all of NASLib's dependencies
NASLIB_MODULES = ("naslib", "naslib.predictors", "naslib.optimizers.core.metaclasses", "naslib.search_spaces")


def _missing_message(e: ImportError) -> str:
    if e.name == "naslib":
        return ("naslib_plugins.naslib_adapter needs NASLib, which is not importable: put the source of "
                "github.com/automl/NASLib (branch Develop) on PYTHONPATH (it is on no package registry)")
    return (f"naslib_plugins.naslib_adapter needs NASLib and its dependencies; importing NASLib failed: {e}. "
            "Install what is missing (the rest of naslib_plugins works without NASLib)")


def load_naslib() -> None:
    """Import NASLib, or raise one ImportError naming what is missing."""
    # NASLib still imports `collections.Iterable`, removed in Python 3.10
    if not hasattr(collections, "Iterable"):
        collections.Iterable = collections.abc.Iterable
    try:
        for name in NASLIB_MODULES:
            importlib.import_module(name)
        measure_registry()
    except ImportError as e:
        raise ImportError(_missing_message(e), name=e.name) from None


def measure_registry() -> ModuleType:
    """NASLib's module holding `measure`, `_measure_impls` and `available_measures`."""
    for name in MEASURE_MODULES:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name is None or not name.startswith(e.name):
                raise  # the package exists but one of its own imports is missing
    raise ImportError(f"NASLib has none of the measure packages {', '.join(MEASURE_MODULES)}",
                      name=MEASURE_MODULES[0])
