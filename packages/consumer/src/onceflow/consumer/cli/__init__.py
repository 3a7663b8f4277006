"""Command-line entry points: ``onceflow consumer``, ``onceflow results ...`` and ``onceflow audit``."""
