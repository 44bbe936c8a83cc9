"""Zero-cost predictors by name: `PREDICTORS.get("zico")()` gives a ZiCo scorer."""
from naslib_plugins.predictors import az_nas as _az_nas  # noqa: F401  (registers)
from naslib_plugins.predictors import ensemble as _ensemble  # noqa: F401  (registers)
from naslib_plugins.predictors import gradient as _gradient  # noqa: F401  (registers)
from naslib_plugins.predictors import meco as _meco  # noqa: F401  (registers)
from naslib_plugins.predictors import model_stats as _model_stats  # noqa: F401  (registers)
from naslib_plugins.predictors import naslib_measures as _naslib_measures  # noqa: F401  (registers)
from naslib_plugins.predictors import ntk as _ntk  # noqa: F401  (registers)
from naslib_plugins.predictors import nwot as _nwot  # noqa: F401  (registers)
from naslib_plugins.predictors import swap as _swap  # noqa: F401  (registers)
from naslib_plugins.predictors import vkdnw as _vkdnw  # noqa: F401  (registers)
from naslib_plugins.predictors.base import PREDICTORS, Predictor, Requirements, SetPredictor


def get_predictor(name: str, **options) -> Predictor | SetPredictor:
    return PREDICTORS.get(name)(**options)


__all__ = ["PREDICTORS", "Predictor", "Requirements", "SetPredictor", "get_predictor"]
