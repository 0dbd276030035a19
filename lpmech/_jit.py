"""numba, imported on first use (it adds about half a second and 100 MB to a process)."""

from __future__ import annotations

_numba = ...


def load():
    """The numba module, or None where it is not installed."""
    global _numba
    if _numba is ...:
        try:
            import numba
        except ImportError:  # pragma: no cover - numba is a dependency
            numba = None
        _numba = numba
    return _numba


_COMPILED: dict = {}


def compiled(fn):
    """``fn`` compiled by numba (``njit``, cached on disk, releasing the GIL) on first use, or None
    without numba."""
    if fn not in _COMPILED:
        nb = load()
        _COMPILED[fn] = None if nb is None else nb.njit(cache=True, nogil=True)(fn)
    return _COMPILED[fn]
