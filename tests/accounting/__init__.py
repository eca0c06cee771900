"""Tests of accounting."""
