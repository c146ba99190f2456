"""Fixtures and modules shared by the suite; no tests here."""
