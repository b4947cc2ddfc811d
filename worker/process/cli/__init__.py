"""The ``plybot`` subcommands that run the service: ``worker``, ``up``, ``book``."""
