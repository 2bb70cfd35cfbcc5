"""HPRM core: a deterministic reactor runtime with Lingua Franca semantics."""

__version__ = "0.1.0"
