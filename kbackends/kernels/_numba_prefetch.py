"""A software prefetch for Numba CPU kernels: ``prefetch(array, index)`` asks the CPU
to bring the cache line of ``array[index]`` towards the core, without waiting for it
and without faulting (LLVM's ``llvm.prefetch``: a read, kept in every cache level).

For loops that visit rows in an order known in advance (stochastic steps over
sampled rows): each visit's loads depend on one another (a row's offset, then its
values), which the processor cannot run ahead of, so the loop waits on memory a row
at a time unless the next rows are asked for early. An index out of the array is
harmless (a prefetch never faults), but callers pass valid ones.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    """Prefetch the cache line holding ``array[index]`` (an integer index), or for a 2-D
    array the start of row ``index``."""
    if not isinstance(array, types.Array) or array.ndim > 2 or not isinstance(index, types.Integer):
        return None
    signature = types.void(array, index)

    def codegen(context, builder, sig, args):
        array_type = sig.args[0]
        view = context.make_array(array_type)(context, builder, args[0])
        indices = [args[1]] + [context.get_constant(types.intp, 0)] * (array_type.ndim - 1)
        pointer = cgutils.get_item_pointer(context, builder, array_type, view, indices, wraparound=False)
        byte_pointer = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        fn_type = ir.FunctionType(ir.VoidType(), [byte_pointer, int32, int32, int32])
        fn = cgutils.get_or_insert_function(builder.module, fn_type, "llvm.prefetch.p0")
        # (address, read = 0, locality 3 = keep in all levels, data cache = 1)
        builder.call(fn, [builder.bitcast(pointer, byte_pointer), int32(0), int32(3), int32(1)])
        return context.get_dummy_value()

    return signature, codegen
