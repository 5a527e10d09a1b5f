"""Binary rows as bits, for Numba CPU kernels: ``x_i . x_j`` as the popcount of ``x_i & x_j``.

Many sets hold only ones and zeros (one-hot categories, presence of a word: the LIBSVM
``a*a`` and ``w*a`` sets, a pandas ``get_dummies`` frame). Their dot products are counts
of shared columns: with each row packed into ``ceil(d / 64)`` 64-bit words, one row
against another costs that many
``and`` + popcount instructions where a sparse product gathers every stored value. The
words are stored word by word (``bits[k, i]``: word k of row i), so a loop over the
rows for one word reads consecutive memory and SIMD runs it (``vpopcntq`` where the CPU
has it).
The squared distance ``|x_i| + |x_j| - 2 x_i . x_j`` is then a small integer, so a
kernel ``k(distance)`` is a table lookup rather than a function evaluation.
"""

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

WORD = 64


@intrinsic
def popcount(typingctx, word):
    """The number of set bits of a uint64 (LLVM's ``ctpop``: one instruction where the CPU
    has it), as an int64."""
    if word != types.uint64:
        return None

    def codegen(context, builder, sig, args):
        counted = builder.ctpop(args[0])
        return counted  # uint64 and int64 share the LLVM type i64

    return types.int64(types.uint64), codegen


@njit(cache=True)
def _pack_csr(indices, indptr, n, words):
    bits = np.zeros((words, n), dtype=np.uint64)
    ones = np.empty(n, dtype=np.int32)
    for i in range(n):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            bits[j // WORD, i] |= np.uint64(1) << np.uint64(j % WORD)
        ones[i] = indptr[i + 1] - indptr[i]
    return bits, ones


@njit(cache=True)
def _only_zeros_and_ones(X):
    """Whether every value of the dense X is 0 or 1 (stops at the first that is not)."""
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            if X[i, j] != 0 and X[i, j] != 1:
                return False
    return True


@njit(cache=True)
def _pack_dense(X, words):
    n, d = X.shape
    bits = np.zeros((words, n), dtype=np.uint64)
    ones = np.zeros(n, dtype=np.int32)
    for i in range(n):
        for j in range(d):
            if X[i, j] == 1:
                bits[j // WORD, i] |= np.uint64(1) << np.uint64(j % WORD)
                ones[i] += 1
    return bits, ones


def binary_rows(X, *, max_words=None):
    """``(bits, ones)`` for a dense 2-D array of zeros and ones, or a canonical CSR matrix X
    (sorted indices, no duplicates) whose stored values are all 1: ``bits`` (ceil(d / 64), n)
    uint64, column j of row i in bit ``j % 64`` of ``bits[j // 64, i]``, and ``ones`` (n,)
    int32, each row's count of ones (its squared norm). None where X is not such a matrix
    (another format, a value other than 0 or 1, an explicit zero) or where a CSR row would
    need more than ``max_words`` words (default: the mean count of stored values a row,
    beyond which popcounts cost more than the sparse product's gathers; a dense row's
    product reads all d values, 64 times the words)."""
    if X.ndim != 2 or X.shape[0] == 0:
        return None
    n, d = X.shape
    words = max(1, -(-d // WORD))
    if isinstance(X, np.ndarray):  # checked before the bits are allocated (most dense data fail at once)
        return _pack_dense(X, words) if _only_zeros_and_ones(X) else None
    if not hasattr(X, "indptr") or X.format != "csr":
        return None
    limit = max(1.0, X.nnz / n) if max_words is None else max_words
    if words > limit or not X.has_canonical_format or not np.all(X.data == 1):
        return None
    return _pack_csr(X.indices, X.indptr, n, words)
