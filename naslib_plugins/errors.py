"""Errors a user can cause and fix; the CLI prints them as one line and exits with 2."""


class UserError(ValueError):
    """Bad input: an unknown name, a malformed architecture, a missing or corrupt file."""


class ArchitectureError(UserError):
    """An architecture encoding that does not belong to its search space."""


class BenchmarkFileError(UserError):
    """A ground-truth file that is missing, truncated or not in the expected layout."""
