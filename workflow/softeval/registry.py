"""Named plug-ins of one kind (judges, generation backends, model kinds, claims).

Each plug-in point keeps one `Registry`: what registers under a name is what a config (or the
claims table) can use, and a test checks that the schema's enum for that key lists exactly the
registry's names, so adding a plug-in is its own code plus one schema line (docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from softeval.schema import InputError

T = TypeVar("T")


class Registry(Generic[T]):
    """Plug-ins by name, in registration order; an unknown name is one error naming the config key."""

    def __init__(self, kind: str, config_key: str) -> None:
        self.kind, self.config_key = kind, config_key
        self._items: dict[str, T] = {}

    def add(self, name: str, item: T) -> T:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = item
        return item

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of `add`: @JUDGES.register("rule")."""
        return lambda item: self.add(name, item)

    def remove(self, name: str) -> None:
        """Unregister (tests that add a toy plug-in take it out again)."""
        del self._items[name]

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise InputError(
                f"unknown {self.kind} {name!r}; use one of {', '.join(self._items)} (config key {self.config_key})"
            ) from None

    def names(self) -> list[str]:
        return list(self._items)

    def values(self) -> list[T]:
        return list(self._items.values())

    def items(self) -> list[tuple[str, T]]:
        return list(self._items.items())

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)
