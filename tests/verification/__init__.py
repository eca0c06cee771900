"""Tests of verification."""
