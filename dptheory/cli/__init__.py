"""The ``dptheory`` command line."""
