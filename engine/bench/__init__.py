"""The engine's benchmarks (``plybot bench``), apart from the engine they measure.

``sets`` reads Pons' benchmark sets, ``solving`` runs the solver on them and
prints the table, ``games`` plays the ``perfect`` level, ``cli`` is the
command. Nothing in the engine imports this package (``tests/test_layers.py``).
"""
