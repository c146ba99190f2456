"""Fixtures and helpers shared by the suite; no tests here."""
