"""trialtui: a tree of kernel trials, scored on every save."""

__version__ = "0.1.0"
