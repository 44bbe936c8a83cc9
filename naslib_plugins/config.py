"""Reading a YAML config file, with the errors a user can fix named in one line."""
from __future__ import annotations

from pathlib import Path

from naslib_plugins.errors import UserError, text_file


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
