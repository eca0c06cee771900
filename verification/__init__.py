"""The papers' claims as executable checks, each returning a verdict with its evidence."""
