"""Tests of optim."""
