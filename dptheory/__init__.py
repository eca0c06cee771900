"""dptheory: how much noise does a private optimizer need, and how private is it really?

The stable Python API lives here; it stays light (no torch, sympy or matplotlib at import).
"""

__version__ = "0.1.0"
