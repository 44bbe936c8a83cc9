"""Parameters read from a constructor's signature, as scikit-learn's `get_params`: the signature is
the one place an option and its default are written, and options(), the CLI's flags and the NASLib
adapter's config keys are all derived from it."""
from __future__ import annotations

import inspect
from typing import Any, get_type_hints


def constructor_params(cls: type) -> dict[str, inspect.Parameter]:
    """name -> Parameter of `cls.__init__`, without self, *args and **kwargs."""
    signature = inspect.signature(cls.__init__)
    return {name: p for name, p in signature.parameters.items()
            if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def defaults(cls: type) -> dict[str, Any]:
    """The class's own default of every parameter that has one."""
    return {name: p.default for name, p in constructor_params(cls).items() if p.default is not p.empty}


def get_params(obj: Any) -> dict[str, Any]:
    """The value of every constructor parameter, read from the attribute of the same name (every
    class using this stores each parameter under its own name)."""
    return {name: getattr(obj, name) for name in constructor_params(type(obj))}


def annotations(cls: type) -> dict[str, Any]:
    """name -> the evaluated annotation of every constructor parameter that has one."""
    hints = get_type_hints(cls.__init__)
    return {name: hints[name] for name in constructor_params(cls) if name in hints}
