"""The package's version, in a module of its own so that every layer may read it without importing the facade."""

__version__ = "0.1.0"
