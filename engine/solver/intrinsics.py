"""Machine instructions the compiled solver needs and numba does not expose.

* ``popcount``/``ctz`` map to LLVM's ``ctpop``/``cttz`` (one instruction each
  on any x86-64 with POPCNT/BMI, which numba targets when the host has them).
* ``monotonic()`` reads ``CLOCK_MONOTONIC`` through ``clock_gettime`` from
  inside compiled code: the same clock as :func:`time.monotonic`, so an
  absolute deadline taken in Python is checked as is. The call goes through
  the C library by symbol name (not a ctypes address), so functions that use
  it can still be cached on disk (``cache=True``). It costs ~30 ns; the search
  calls it once every few thousand nodes.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

#: ``CLOCK_MONOTONIC`` on Linux; what ``time.monotonic()`` reads there.
_CLOCK_MONOTONIC = 1


def _popcount(_typingctx, x):
    """Number of set bits of a uint64 (as uint64)."""
    if x != types.uint64:
        return None

    def codegen(_context, builder, _signature, args):
        return builder.ctpop(args[0])

    return types.uint64(types.uint64), codegen


def _ctz(_typingctx, x):
    """Index of the lowest set bit of a non-zero uint64 (as uint64)."""
    if x != types.uint64:
        return None

    def codegen(_context, builder, _signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return types.uint64(types.uint64), codegen


def _bit_length(_typingctx, x):
    """``int.bit_length`` of a uint64 (0 for 0), as uint64."""
    if x != types.uint64:
        return None

    def codegen(_context, builder, _signature, args):
        i64 = ir.IntType(64)
        leading = builder.ctlz(args[0], ir.Constant(ir.IntType(1), 0))
        return builder.sub(ir.Constant(i64, 64), leading)

    return types.uint64(types.uint64), codegen


def _monotonic(_typingctx):
    """Seconds on ``CLOCK_MONOTONIC`` (float64), comparable with ``time.monotonic()``."""

    def codegen(_context, builder, _signature, _args):
        i64 = ir.IntType(64)
        timespec = ir.LiteralStructType([i64, i64])
        fnty = ir.FunctionType(ir.IntType(32), [ir.IntType(32), timespec.as_pointer()])
        clock_gettime = cgutils.get_or_insert_function(builder.module, fnty, "clock_gettime")
        ts = cgutils.alloca_once(builder, timespec)
        builder.call(clock_gettime, [ir.Constant(ir.IntType(32), _CLOCK_MONOTONIC), ts])
        sec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 0))
        nsec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 1))
        f64 = ir.DoubleType()
        frac = builder.fmul(builder.sitofp(nsec, f64), ir.Constant(f64, 1e-9))
        return builder.fadd(builder.sitofp(sec, f64), frac)

    return types.float64(), codegen


# Typed as Any: to mypy they are opaque compiled callables.
popcount: Any = intrinsic(_popcount)
ctz: Any = intrinsic(_ctz)
bit_length: Any = intrinsic(_bit_length)
monotonic: Any = intrinsic(_monotonic)


def _prefetch(_typingctx, array, index):
    """Start loading the cache line of ``array[index]`` (1-D, C order); no effect on results."""
    if not (
        isinstance(array, types.Array) and array.ndim == 1 and isinstance(index, types.Integer)
    ):
        return None

    def codegen(context, builder, signature, args):
        array_type, _ = signature.args
        ary = context.make_array(array_type)(context, builder, args[0])
        pointer = builder.gep(ary.data, [args[1]], inbounds=True)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        # read, keep in all cache levels, data cache
        builder.call(
            fn,
            [
                builder.bitcast(pointer, i8p),
                ir.Constant(i32, 0),
                ir.Constant(i32, 3),
                ir.Constant(i32, 1),
            ],
        )
        return context.get_dummy_value()

    return types.none(array, index), codegen


prefetch: Any = intrinsic(_prefetch)
