"""The ``plybot`` subcommands of the worker package: ``worker``, ``up``, ``loadtest``, ``chaos``."""
