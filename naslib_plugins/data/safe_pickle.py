"""Reading benchmark pickles without executing anything they name.

A pickle can call any importable function while it loads; ground-truth tables only need
containers and numbers, so everything else is refused before it is looked up."""
from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any

from naslib_plugins.errors import BenchmarkFileError

# plain containers, and numpy scalars/arrays (numbers), under numpy 1 and 2 module names
_ALLOWED = {
    ("builtins", "dict"), ("builtins", "list"), ("builtins", "tuple"), ("builtins", "set"),
    ("builtins", "frozenset"), ("builtins", "int"), ("builtins", "float"), ("builtins", "complex"),
    ("builtins", "str"), ("builtins", "bytes"), ("builtins", "bool"),
    ("collections", "OrderedDict"), ("collections", "defaultdict"),
    ("numpy", "dtype"), ("numpy", "ndarray"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
}


class ForbiddenGlobal(pickle.UnpicklingError):
    pass


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise ForbiddenGlobal(f"forbidden global {module}.{name}")
        return super().find_class(module, name)


def safe_load(path: str | Path) -> Any:
    """Unpickle a file that may hold only containers and numbers; anything else is refused."""
    path = Path(path)
    if not path.is_file():
        raise BenchmarkFileError(f"benchmark file not found: {path}")
    data = path.read_bytes()
    try:
        return _RestrictedUnpickler(io.BytesIO(data)).load()
    except ForbiddenGlobal as e:
        raise BenchmarkFileError(
            f"{path}: refused to unpickle ({e}); only containers and numbers are allowed"
        ) from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            ImportError) as e:
        raise BenchmarkFileError(f"{path}: truncated or corrupt pickle ({type(e).__name__}: {e})") from None
