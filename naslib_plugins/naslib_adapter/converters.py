"""NASLib search-space graphs <-> our encodings.

For every space we share with NASLib, our canonical encoding is what the graph's `get_hash()`
returns (NB201 and TNB op indices, the NB301 compact genotype, the NB101 56-int tuple), and it
goes back through the graph's `set_spec`.
"""
from __future__ import annotations

import inspect
from typing import Any

from naslib.search_spaces import get_search_space
from naslib.search_spaces.core.graph import Graph

from naslib_plugins.errors import ArchitectureError
from naslib_plugins.spaces import get_space
from naslib_plugins.spaces.base import SearchSpace

# where NASLib's graphs keep a set architecture: op_indices (NB201, TNB), compact (NB301), spec (NB101)
ARCHITECTURE_ATTRIBUTES = ("op_indices", "compact", "spec")
# NASLib graph constructor keywords kept under another attribute name
CONSTRUCTOR_ATTRIBUTES = {"n_classes": "num_classes", "auxiliary": "auxiliary_output"}


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
    """A NASLib graph holding `arch` (any encoding our space parses), for `dataset` when
    `search_space` names a space. From a graph object: a clone of it while it holds no
    architecture; once it holds one (NASLib sets an architecture only once), a new graph of its
    class built with its settings. `search_space` itself is left as it is. Not parsed, as
    NASLib's own samples."""
    if isinstance(search_space, str):
        space = get_space(search_space)
        graph = get_search_space(space.name, space.check_dataset(dataset))
    else:
        space = get_space(search_space.get_type())
        graph = _blank_like(search_space) if holds_architecture(search_space) else search_space.clone()
    arch = space.parse(arch)
    graph.set_spec(space.naslib_spec(arch))
    return graph


def holds_architecture(graph: Graph) -> bool:
    """Whether an architecture was set on a NASLib graph: each of its spaces keeps it in one of
    these, None until then."""
    return any(getattr(graph, name, None) is not None for name in ARCHITECTURE_ATTRIBUTES)


def _blank_like(graph: Graph) -> Graph:
    """A new graph of `graph`'s class, its constructor given the settings `graph` keeps."""
    kwargs = {}
    for name, parameter in inspect.signature(type(graph).__init__).parameters.items():
        if name == "self" or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        attribute = CONSTRUCTOR_ATTRIBUTES.get(name, name)
        if hasattr(graph, attribute):
            kwargs[name] = getattr(graph, attribute)
    return type(graph)(**kwargs)
