"""Types of the compiled solver core (engine/solver/csrc/module.c)."""

FULL: int
OK: int
ABORTED: int
NEAR_END_BYTES: int
CHECK_EVERY: int

def prefix_sums(gaps: bytes | memoryview, keys: object) -> bool: ...

class Core:
    deadline: float
    @property
    def width(self) -> int: ...
    @property
    def height(self) -> int: ...
    @property
    def key_bits(self) -> int: ...
    @property
    def table_bytes(self) -> int: ...
    @property
    def known_max_ply(self) -> int: ...
    def __init__(
        self,
        width: int,
        height: int,
        table_bytes: int,
        near_end_cells: int = ...,
        mirror_cells: int = ...,
        etc_cells: int = ...,
    ) -> None: ...
    def init(self, cur: int, mask: int, ply: int) -> tuple[int, int, int]: ...
    def known(self, cur: int, mask: int, ply: int) -> tuple[int, int] | None: ...
    def step(
        self,
        cur: int,
        mask: int,
        ply: int,
        lo: int,
        hi: int,
        best: int,
        weak: bool,
        nodes: int,
        node_limit: int,
    ) -> tuple[int, int, int, bool, int]: ...
    def batch(
        self, notations: list[str], weak: bool, analyze: bool, strict: bool, node_limit: int
    ) -> tuple[
        list[int],
        list[int],
        list[int],
        list[int],
        list[int],
        list[int],
        list[float],
        list[list[int]] | None,
    ]: ...
    def put(self, key: int, empty: int, lower: int, upper: int, move: int, work: int) -> None: ...
    def get(self, key: int, empty: int) -> int: ...
    # Buffers (array.array, numpy arrays, a memory map): uint64 keys, int8 scores and best.
    def add_known(self, keys: object, scores: object, best: object) -> None: ...
    def clear_known(self) -> None: ...
    def interrupt(self) -> None: ...
    def reset(self) -> None: ...
