"""The triangle-inequality check of a symmetric distance matrix, blocked and compiled.

For a symmetric d with zero diagonal, every triple is checked by the min-plus product of d with
itself: the worst excess of the pair (i, j) is d_ij − min_k fl(d_ik + d_jk), and d violates the
triangle inequality (with absolute tolerance ``atol``) iff some excess exceeds ``atol``. Since
fl(a + b) = fl(b + a), d_jk = d_kj (d is exactly symmetric) and min is exact, this is the same
accept/refuse, bit for bit, as the direct test d_ij − fl(d_ik + d_kj) > atol on every triple.

Only the pairs i ≤ j are computed (m³/2 sums), in b×b blocks of pairs with the sums taken over
chunks of k that stay in cache. With numba (an optional dependency) the block kernel is compiled and
runs on all cores; without it, numpy computes the same blocks (broadcast sums, then a contiguous
min), several times slower. Both return the same numbers.
"""

from __future__ import annotations

import concurrent.futures
import os

import numpy as np

from . import _jit

#: pairs per block side
BLOCK = 32
#: k per chunk of the sums (two rows of it stay in L1)
K_CHUNK = 512

#: the numba module to use (:func:`lpmech._jit.load`), or None to force the numpy blocks; ``...``
#: until the first check asks
_numba = ...


def _load():
    return _jit.load() if _numba is ... else _numba


_KERNEL = None


def backend() -> str:
    """``"numba"`` when the compiled kernel is available, else ``"numpy"``."""
    return "numba" if _load() is not None else "numpy"


def _compile():
    """The numba block kernel. Sums of two non-negative doubles are compared through their bit
    patterns as int64 (IEEE order equals integer order for non-negative doubles), which LLVM
    vectorises; numba's float min is not vectorised."""
    global _KERNEL
    if _KERNEL is not None:
        return _KERNEL
    nb = _load()
    big = int(np.array([np.inf]).view(np.int64)[0])

    @nb.njit(parallel=True, fastmath=True, cache=True, nogil=True)
    def kernel(d, bi, bj, b, bk, out):  # pragma: no cover - compiled
        m = d.shape[0]
        for p in nb.prange(bi.shape[0]):
            i0 = bi[p] * b
            j0 = bj[p] * b
            i1 = min(i0 + b, m)
            j1 = min(j0 + b, m)
            S = np.full((b, b), big, dtype=np.int64)
            tmp = np.empty(bk)
            ti = tmp.view(np.int64)
            for k0 in range(0, m, bk):
                k1 = min(k0 + bk, m)
                n = k1 - k0
                for ii in range(i0, i1):
                    a = d[ii, k0:k1]
                    for jj in range(j0, j1):
                        c = d[jj, k0:k1]
                        for k in range(n):
                            tmp[k] = a[k] + c[k]
                        s = S[ii - i0, jj - j0]
                        for k in range(n):
                            v = ti[k]
                            s = v if v < s else s
                        S[ii - i0, jj - j0] = s
            Sf = S.view(np.float64)
            worst = -np.inf
            for ii in range(i0, i1):
                for jj in range(j0, j1):
                    e = d[ii, jj] - Sf[ii - i0, jj - j0]
                    if e > worst:
                        worst = e
            out[p] = worst

    _KERNEL = kernel
    return kernel


def _numpy_block(d: np.ndarray, i: int, j: int, b: int, bk: int) -> float:
    m = d.shape[0]
    rows, cols = slice(i * b, min(i * b + b, m)), slice(j * b, min(j * b + b, m))
    S = np.full((rows.stop - rows.start, cols.stop - cols.start), np.inf)
    tmp = np.empty((S.shape[0], S.shape[1], bk))
    part = np.empty_like(S)
    for k0 in range(0, m, bk):
        K = slice(k0, min(k0 + bk, m))
        t = tmp[:, :, :K.stop - K.start]
        np.add(d[rows, None, K], d[None, cols, K], out=t)
        np.min(t, axis=2, out=part)
        np.minimum(S, part, out=S)
    return float((d[rows, cols] - S).max())


def block_excess(d: np.ndarray, bi: np.ndarray, bj: np.ndarray, b: int | None = None,
                 bk: int | None = None) -> np.ndarray:
    """Worst excess max_{i∈I, j∈J} d_ij − min_k (d_ik + d_jk) of each block pair (I, J) =
    (``bi[p]``, ``bj[p]``) of ``b`` indices each. ``d`` must be a C-contiguous, symmetric,
    finite, non-negative float64 array (as :func:`lpmech.instance.validate_metric` leaves it)."""
    b = BLOCK if b is None else b
    bk = K_CHUNK if bk is None else bk
    bi = np.ascontiguousarray(bi, np.int64)
    bj = np.ascontiguousarray(bj, np.int64)
    out = np.empty(len(bi))
    if _load() is not None:
        _compile()(d, bi, bj, int(b), int(bk), out)
        return out
    workers = max(1, min(len(bi), os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:  # numpy releases the GIL
        out[:] = list(ex.map(lambda p: _numpy_block(d, int(bi[p]), int(bj[p]), b, bk),
                             range(len(bi))))
    return out


def worst_triple(d: np.ndarray, i: int, j: int, b: int = BLOCK) -> tuple[int, int, int, float]:
    """(i, k, j, excess) of the largest d_ij − (d_ik + d_kj) in the block pair (i, j)."""
    m = d.shape[0]
    rows = np.arange(i * b, min(i * b + b, m))
    J = np.arange(j * b, min(j * b + b, m))
    best = (-1, -1, -1, -np.inf)
    for x in rows:  # one row at a time: b×m sums
        sums = d[x, None, :] + d[J, :]
        k = np.argmin(sums, axis=1)
        ex = d[x, J] - sums[np.arange(len(J)), k]
        w = int(np.argmax(ex))
        if ex[w] > best[3]:
            best = (int(x), int(k[w]), int(J[w]), float(ex[w]))
    return best
