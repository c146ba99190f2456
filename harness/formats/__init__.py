"""Readers of the file formats every layer reads (one reader per format)."""
