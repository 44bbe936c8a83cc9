"""Reading a YAML config file, with the errors a user can fix named in one line, and which keys of
a NASLib-layout config's `search` our optimizers read (the adapter's, checked without NASLib)."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from naslib_plugins.errors import UserError, text_file

# the `search` keys of a NASLib-layout config read besides an optimizer's parameters and the data
# options: NASLib's Trainer's own, and the adapter's
NASLIB_RUN_KEYS = ("epochs", "checkpoint_freq", "seed", "progress", "device")


def naslib_search_keys(optimizer: type) -> tuple[str, ...]:
    """Every `search` key the NASLib adapter reads for `optimizer` (an Optimizer class)."""
    from naslib_plugins.data.sources import BATCH_OPTIONS
    from naslib_plugins.params import constructor_params

    return (*constructor_params(optimizer), *BATCH_OPTIONS, *NASLIB_RUN_KEYS)


def unread_search_keys(optimizer: type, search: Iterable[str]) -> list[str]:
    """The keys of `search` that the adapter does not read for `optimizer`, sorted."""
    return sorted(set(search) - set(naslib_search_keys(optimizer)))


def read_yaml(path: str | Path) -> object:
    """The parsed document (None for an empty file)."""
    import yaml

    try:
        with text_file(path, "config file"):
            text = Path(path).read_text()
    except OSError as e:
        raise UserError(f"config file {path}: {e.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise UserError(f"config file {path}: not valid YAML ({e})") from None
