"""One `APIRouter` per resource: jobs, their attempts, providers, and the health probe."""

from harness.api.routers import attempts, health, jobs, providers

ROUTERS = (jobs.router, attempts.router, providers.router, health.router)
"""Every router of the API, in the order the app includes them."""

__all__ = ["ROUTERS", "attempts", "health", "jobs", "providers"]
