"""plybot's HTTP API (FastAPI): analyses, games against the bot, status and metrics.

``api.main.create_app()`` builds the app; ``plybot serve`` runs it under uvicorn.
Nothing is imported here, so importing a light module of the package (its settings,
say) does not load FastAPI.
"""
