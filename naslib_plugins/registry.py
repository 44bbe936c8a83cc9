"""One small name -> object registry, shared by spaces, predictors and optimizers."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from naslib_plugins.errors import UserError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}
        self._aliases: dict[str, str] = {}

    def register(self, name: str, *, aliases: tuple[str, ...] = ()) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            self.add(name, obj, aliases=aliases)
            return obj

        return deco

    def add(self, name: str, obj: T, *, aliases: tuple[str, ...] = ()) -> None:
        for key in (name, *aliases):
            if key in self._items or key in self._aliases:
                raise KeyError(f"duplicate {self.kind} name {key!r}")
        self._items[name] = obj
        for alias in aliases:
            self._aliases[alias] = name

    def canonical(self, name: str) -> str:
        if name in self._items:
            return name
        if name in self._aliases:
            return self._aliases[name]
        raise UserError(
            f"unknown {self.kind} {name!r}; known: {', '.join(sorted(self._items))}"
        )

    def get(self, name: str) -> T:
        return self._items[self.canonical(name)]

    def names(self) -> list[str]:
        return list(self._items)

    def name_of(self, obj: T) -> str | None:
        """The name `obj` is registered under, None if it is not registered."""
        return next((name for name, item in self._items.items() if item is obj), None)

    def __contains__(self, name: str) -> bool:
        return name in self._items or name in self._aliases

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)
