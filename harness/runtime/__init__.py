"""Drivers that run the engine: service wiring, the worker and its schedulers."""
