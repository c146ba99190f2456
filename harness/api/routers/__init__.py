"""One `APIRouter` per resource: jobs, attempts, providers, health and metrics."""

from harness.api.routers import attempts, health, jobs, metrics, providers

ROUTERS = (jobs.router, attempts.router, providers.router, health.router, metrics.router)
"""Every router of the API, in the order the app includes them."""

__all__ = ["ROUTERS", "attempts", "health", "jobs", "metrics", "providers"]
