"""NASLib search-space graphs <-> our encodings.

For every space we share with NASLib, our canonical encoding is what the graph's `get_hash()`
returns (NB201 and TNB op indices, the NB301 compact genotype, the NB101 56-int tuple), and it
goes back through the graph's `set_spec`.
"""
from __future__ import annotations

from typing import Any

from naslib.search_spaces import get_search_space
from naslib.search_spaces.core.graph import Graph

from naslib_plugins.errors import ArchitectureError
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.base import SearchSpace


def from_graph(graph: Graph) -> tuple[SearchSpace, Any]:
    """Our search space and the canonical encoding of the architecture a NASLib graph holds."""
    space = get_space(graph.get_type())
    space.check_naslib_graph(graph)
    try:
        key = graph.get_hash()
    except (AttributeError, AssertionError, NotImplementedError, TypeError, ValueError) as e:
        # how NASLib's graphs fail when no architecture was set on them
        raise ArchitectureError(f"the NASLib {space.name} graph holds no architecture "
                                f"({type(e).__name__}: {e})") from None
    return space, space.parse(key)


def to_graph(arch: Any, search_space: Graph | str, dataset: str = "cifar10") -> Graph:
    """A NASLib graph holding `arch` (any encoding our space parses): a clone of `search_space`,
    or a new graph of the space named so, for `dataset`. Not parsed, as NASLib's own samples."""
    if isinstance(search_space, str):
        space = get_space(search_space)
        graph = get_search_space(space.name, space.check_dataset(dataset))
    else:
        space = get_space(search_space.get_type())
        graph = search_space.clone()
    arch = space.parse(arch)
    graph.set_spec(space.naslib_spec(arch))
    return graph
