"""Compiling the allocator's loops with numba, and what happens without it.

The loops are written in the subset of Python numba compiles, so without numba they still run,
as plain Python: one source per loop, compiled or not. ``compiled`` makes a kernel (a loop the
allocator calls); ``python(kernel)`` is that kernel's own source, uncompiled (the ``"numpy"``
allocator runs its walks so); ``helper`` marks a small function the kernels call (a dominant
share, a comparison), compiled into each kernel that calls it and plain Python when Python calls
it. Compiled code is cached on disk (next to the sources, in ``NUMBA_CACHE_DIR``, or in the
user's cache directory); where none of those is writable the loops are compiled in each process
instead of failing to import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; this keeps the numpy path usable
    numba = None  # type: ignore[assignment]

AVAILABLE = numba is not None

F = TypeVar("F", bound=Callable[..., Any])


def compiled(fn: F) -> F:
    """``fn`` compiled (cached when possible), or ``fn`` itself without numba."""
    if numba is None:  # pragma: no cover
        return fn
    try:
        return cast(F, numba.njit(cache=True, nogil=True)(fn))
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return cast(F, numba.njit(nogil=True)(fn))


def python(kernel: F) -> F:
    """``kernel``'s own source, run by the interpreter (itself without numba)."""
    return cast(F, getattr(kernel, "py_func", kernel))


def helper(fn: F) -> F:
    """``fn``, callable from compiled kernels (compiled into each) and, unchanged, from Python:
    numba's ``register_jitable``. Python callers (the reference, the core) and the kernels then
    run one definition."""
    if numba is None:  # pragma: no cover
        return fn
    from numba.extending import register_jitable

    return register_jitable(fn)


def prefetch(arr: Any, i: int, j: int) -> None:
    """``prefetch(arr, i, j)``: ask the CPU to start loading the cache line of ``arr[i, j]`` (a
    2-d array; of ``arr[i]`` for a 1-d one, ``j`` ignored) now. The walks visit agents in a
    random order, so each agent's rows are cache misses the CPU cannot foresee; a walk knows
    which agent comes a few steps ahead and asks for its rows early. Only a hint (LLVM's
    ``llvm.prefetch``: read, high locality): it changes no result, and called from plain Python
    (without numba, or a loop's ``py_func``) it does nothing. Callers keep ``i, j`` in range:
    the address is computed as for ``arr[i, j]``, without a bounds check."""


if numba is not None:
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic, overload

    @intrinsic
    def _prefetch(typingctx: Any, arr: Any, i: Any, j: Any) -> Any:
        sig = types.void(arr, i, j)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            index = [
                context.cast(builder, args[1], signature.args[1], types.intp),
                context.cast(builder, args[2], signature.args[2], types.intp),
            ][: aryty.ndim]
            ptr = cgutils.get_item_pointer(  # type: ignore[no-untyped-call]
                context, builder, aryty, ary, index, wraparound=False
            )
            byte_ptr = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fnty = ir.FunctionType(ir.VoidType(), [byte_ptr, i32, i32, i32])
            fn = cgutils.get_or_insert_function(  # type: ignore[no-untyped-call]
                builder.module, fnty, "llvm.prefetch.p0"
            )
            # rw 0 (read), locality 3 (keep in every level), cache type 1 (data).
            builder.call(fn, [builder.bitcast(ptr, byte_ptr), i32(0), i32(3), i32(1)])
            return context.get_dummy_value()

        return sig, codegen

    @overload(prefetch)
    def _prefetch_compiled(arr: Any, i: Any, j: Any) -> Any:
        # Annotated as the typing function is: numba holds the two signatures equal.
        def impl(arr: Any, i: Any, j: Any) -> None:
            _prefetch(arr, i, j)  # type: ignore[call-arg]  # typingctx is numba's to pass

        return impl
