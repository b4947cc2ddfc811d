"""The ``plybot`` subcommands of the benchmarks: ``loadtest``, ``analysisbench``, ``chaos``."""
