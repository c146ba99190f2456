"""The HTTP API: FastAPI app factory, routers, problem details and response models."""

from harness.api.app import create_app

__all__ = ["create_app"]
