"""Search strategies by name (NASI, zero-shot evolution, Zero-Cost-PT arrive in later issues)."""
from naslib_plugins.registry import Registry

OPTIMIZERS: Registry[type] = Registry("optimizer")

__all__ = ["OPTIMIZERS"]
