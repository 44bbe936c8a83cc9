"""Training-free NAS predictors, optimizers and search spaces for the NASLib ecosystem.

The Python interface is `score`, `correlate`, `search` and `load_results` (naslib_plugins.api),
imported on first use so that the command line starts without torch."""
__version__ = "0.1.0"
__all__ = ["score", "correlate", "search", "load_results"]


def __getattr__(name: str):
    if name in __all__:
        from naslib_plugins import api

        return getattr(api, name)
    raise AttributeError(f"module 'naslib_plugins' has no attribute {name!r}")
