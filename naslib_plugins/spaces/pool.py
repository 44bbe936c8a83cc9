"""A search space restricted to the architectures a benchmark table holds (`search --within-table`).

NB101 and NB301 have accuracy here only for the 500 and 725 architectures of NASLib's zc files,
so a search of the whole space finds architectures no table can score. Within a pool:
- `sample` draws a pool member uniformly (zc-random: random order over the pool);
- `mutate` draws the child uniformly among the parent's k nearest other pool members, by
  Hamming distance between the flattened encodings (members tied with the k-th all included),
  k the number of one-step neighbours the space's own mutation gives the parent (NB101 3-23,
  NB301 120): the pool's mutation graph has the space's degree. A pool of 500 out of NB101's
  423k cells, or 725 out of NB301's ~10^18, holds almost no pair of one-edit neighbours, so
  keeping only the mutations that land in the pool would leave evolution nothing to do. The
  rule before this one moved the space's mutation to the single nearest member: a mutation
  moves the encoding by one entry, so the same member came back nearly every time, and in
  NB301's pool evolution cycled (10,000 proposals without a new architecture, after 37-66 of
  a budget of 100, in 4 of 5 seeds).
Everything else (networks, hashes, strings, losses) is the wrapped space's.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from naslib_plugins.errors import UserError


def flat_encoding(arch: Any) -> tuple[int, ...]:
    """The integers of a parsed architecture in order, nested tuples and lists flattened."""
    if isinstance(arch, (tuple, list)):
        return tuple(v for item in arch for v in flat_encoding(item))
    return (int(arch),)


class PoolSpace:
    def __init__(self, space: Any, archs: Iterable[Any]):
        self.space = space
        pool: dict[str, Any] = {}
        for arch in archs:
            parsed = space.parse(arch)
            pool.setdefault(space.hash(parsed), parsed)
        if len(pool) < 2:
            raise UserError(f"a pool search needs two or more architectures of {space.name} in the table; "
                            f"it holds {len(pool)}")
        self.pool = pool
        self._keys = list(pool)
        self._position = {k: i for i, k in enumerate(self._keys)}
        codes = [flat_encoding(a) for a in pool.values()]
        if len({len(c) for c in codes}) != 1:
            raise UserError(f"{space.name}'s architectures have encodings of different lengths; "
                            "a pool search measures distance between equal-length encodings")
        self._codes = np.array(codes, dtype=np.int64)

    def __getattr__(self, name: str) -> Any:
        # only reached for attributes PoolSpace lacks: the wrapped space answers (not for `space`
        # itself, which a copy or unpickling asks for before it is set)
        if name == "space":
            raise AttributeError(name)
        return getattr(self.space, name)

    def sample(self, rng: np.random.Generator) -> Any:
        return self.pool[self._keys[int(rng.integers(len(self._keys)))]]

    def mutate(self, arch: Any, rng: np.random.Generator) -> Any:
        parent = self.space.parse(arch)
        distance = (self._codes != np.array(flat_encoding(parent), dtype=np.int64)).sum(axis=1)
        key = self.space.hash(parent)
        others = len(self._keys)
        if key in self._position:
            distance[self._position[key]] = np.iinfo(np.int64).max
            others -= 1
        k = min(max(len(self.space.neighbours(parent)), 1), others)
        near = np.flatnonzero(distance <= np.partition(distance, k - 1)[k - 1])
        return self.pool[self._keys[int(rng.choice(near))]]

    def neighbours(self, arch: Any) -> list[Any]:
        return [a for a in self.space.neighbours(arch) if self.space.hash(a) in self.pool]

    def all(self) -> Iterator[Any]:
        return iter(self.pool.values())
