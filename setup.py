"""The compiled solver core (engine/solver/csrc/*.c), built by setuptools at install.

Everything else about the package is in pyproject.toml; setuptools reads
this file only for the C extension, which needs a C compiler (gcc or clang).
"""

import platform

from setuptools import Extension, setup

# POPCNT is on every x86-64 made since 2009 (x86-64-v2); without the flag gcc
# calls a library routine for every popcount, on the search's hot path.
# (BMI's tzcnt would be newer than that: ctz compiles to bsf, as fast here.)
_ARCH = ["-mpopcnt"] if platform.machine() in ("x86_64", "AMD64") else []

setup(
    ext_modules=[
        Extension(
            "engine.solver._core",
            sources=[
                "engine/solver/csrc/module.c",
                "engine/solver/csrc/position.c",
                "engine/solver/csrc/table.c",
                "engine/solver/csrc/known.c",
                "engine/solver/csrc/database.c",
                "engine/solver/csrc/search.c",
                "engine/solver/csrc/root.c",
                "engine/solver/csrc/columns.c",
            ],
            depends=[
                "engine/solver/csrc/position.h",
                "engine/solver/csrc/movesorter.h",
                "engine/solver/csrc/table.h",
                "engine/solver/csrc/known.h",
                "engine/solver/csrc/database.h",
                "engine/solver/csrc/search.h",
                "engine/solver/csrc/root.h",
                "engine/solver/csrc/columns.h",
            ],
            extra_compile_args=["-O3", "-std=c11", "-pthread", "-Wall", "-Wextra", *_ARCH],
            extra_link_args=["-pthread"],
        )
    ]
)
