"""Data shipped with the engine: the Connect Four opening book (see ``engine.book``)."""
