"""The test suite, one folder per layer of the package (see docs/architecture.md)."""
