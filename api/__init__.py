"""plybot's HTTP API (FastAPI): analyses, games against the bot, status and metrics.

``create_app()`` builds the app; ``plybot serve`` runs it under uvicorn.
"""

from api.main import create_app

__all__ = ["create_app"]
