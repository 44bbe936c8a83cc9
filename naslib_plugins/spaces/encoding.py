"""Reading encodings, shared by the spaces: Python literals in text, ints of any kind, and op
indices checked against a list of ops."""
from __future__ import annotations

import ast
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from naslib_plugins.errors import ArchitectureError


def is_int(v: Any) -> bool:
    """A Python or numpy int; bools are not (True would pass for op 1)."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def literal(text: str, what: str, original: Any) -> Any:
    """The Python literal in `text`; `what` names the expected encoding in the error."""
    try:
        # text like `1_02x` makes the compiler warn on stderr before it fails: the error says it all
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ArchitectureError(f"unreadable {what} {original!r}") from None


def literal_sequence(text: str, what: str, original: Any) -> Sequence[Any]:
    """The tuple or list literal in `text`."""
    values = literal(text, what, original)
    if not isinstance(values, (tuple, list)):
        raise ArchitectureError(f"unreadable {what} {original!r}")
    return values


def check_op_indices(values: Sequence[Any], ops: Sequence[str], length: int, original: Any, space: str,
                     item: str, items: str) -> tuple[int, ...]:
    """`length` indices into `ops` -> a tuple of Python ints; errors name `space`, an index as
    `item` ("op index") and several as `items` ("op indices")."""
    if len(values) != length:
        raise ArchitectureError(f"{space} architecture needs {length} {items}, got {len(values)}: {original!r}")
    out = []
    for v in values:
        if not is_int(v):
            raise ArchitectureError(f"{space} {item} {v!r} is not an int in {original!r}")
        if not 0 <= int(v) < len(ops):
            legend = ", ".join(f"{i} {op}" for i, op in enumerate(ops))
            raise ArchitectureError(
                f"{space} {item} {int(v)} out of range 0..{len(ops) - 1} ({legend}) in {original!r}"
            )
        out.append(int(v))  # numpy ints would spell keys as "np.int64(1)" under numpy 2
    return tuple(out)
