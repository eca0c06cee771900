"""Development tooling: regenerate the docs' tables and examples, keep the scheduling hints.

Not part of the installed package (``pyproject.toml`` ships ``accounting``, ``dptheory`` and
``verification`` only); run from a checkout, e.g. ``python -m tools.readme_table --help``.
"""
