"""Search spaces by name (NASLib's `get_type()` names)."""
from naslib_plugins.registry import Registry
from naslib_plugins.spaces.base import SearchSpace
from naslib_plugins.spaces.mlp_act_skip import MLPActSkipSpace
from naslib_plugins.spaces.nasbench101 import NasBench101Space
from naslib_plugins.spaces.nasbench201 import NasBench201Space
from naslib_plugins.spaces.nasbench301 import NasBench301Space
from naslib_plugins.spaces.transbench101 import TransBench101MacroSpace, TransBench101MicroSpace

SPACES: Registry[type[SearchSpace]] = Registry("search space")
SPACES.add("nasbench201", NasBench201Space, aliases=("nb201",))
SPACES.add("nasbench301", NasBench301Space, aliases=("darts", "nb301"))
SPACES.add("nasbench101", NasBench101Space, aliases=("nb101",))
SPACES.add("transbench101_micro", TransBench101MicroSpace, aliases=("tnb101_micro",))
SPACES.add("transbench101_macro", TransBench101MacroSpace, aliases=("tnb101_macro",))
SPACES.add("mlp_act_skip", MLPActSkipSpace, aliases=("mlp",))


def get_space(name: str, **options) -> SearchSpace:
    """The registered space `name`, built with its constructor's options (mlp_act_skip's depth and
    width; nasbench101's and the TNB spaces' weight init)."""
    return SPACES.get(name)(**options)


__all__ = ["SPACES", "SearchSpace", "get_space"]
