"""Memory estimates: refuse an instance that cannot fit *before* allocating it.

A K-location instance holds a dense K×K distance matrix, and every OMG / LR-Geo method keeps a few
more K×K float arrays (loss, factors e^{−εd}, masks, working copies). The estimate here counts those
dense arrays only, so it is a *lower* estimate of the peak: when even it exceeds the memory the
machine has available, the solve cannot succeed and :func:`require_memory` raises
:class:`~lpmech.errors.InputError` (exit 2) at once, with the estimate and what to do, instead of
a ``MemoryError`` after minutes.

The counts of K×K arrays were read off the code paths (instance validation builds one temporary
per triangle-inequality pass; the decomposition keeps the factor matrix, the master's columns and a
copy per pricing worker; ...); they are deliberately conservative (low), so that nothing that could
run is refused.
"""

from __future__ import annotations

import os

from .errors import InputError

#: dense K×K float64 arrays an instance needs while it is built and validated (metric, loss, one
#: temporary)
INSTANCE_ARRAYS = 3
#: further dense K×K arrays each OMG method keeps during a solve (lower estimates)
OMG_ARRAYS = {"full": 4, "cutting-plane": 4, "decomposition": 4, "spanner": 3, "auto": 3}
#: dense K×K arrays of an LR-Geo road grid (metric, travel cost, path distances, temporaries)
ROAD_GRID_ARRAYS = 4


def available_bytes() -> int | None:
    """Memory available to a new allocation: ``MemAvailable`` of /proc/meminfo (Linux), else the
    free physical pages from ``os.sysconf``; ``None`` when neither is known (no check is made)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def resident_bytes() -> int | None:
    """This process' resident memory (``/proc/self/statm``, Linux), ``None`` where unknown."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def release_free_memory() -> None:
    """Hand the heap's free pages back to the system (glibc's ``malloc_trim``; a no-op elsewhere),
    so that :func:`resident_bytes` counts what is in use."""
    try:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        pass


def dense_bytes(K: int, arrays: float = 1.0) -> int:
    """Bytes of ``arrays`` dense K×K float64 matrices (Python ints: no overflow at any K)."""
    return int(arrays * 8 * int(K) * int(K))


def _gb(n: int) -> str:
    return f"{n / 1e9:.3g} GB"


def require_memory(nbytes: int, what: str, advice: str) -> None:
    """Raise :class:`InputError` when ``nbytes`` (an estimate) exceeds the available memory.

    ``what`` names the allocation (``"OMG (decomposition) on K = 90000 locations"``); ``advice``
    says what to do instead. Nothing is checked when the available memory is unknown.
    """
    avail = available_bytes()
    if avail is None or nbytes <= avail:
        return
    raise InputError(f"{what} needs at least {_gb(nbytes)} of memory (dense K×K arrays alone), more "
                     f"than the {_gb(avail)} available on this machine; {advice}")


def instance_bytes(K: int) -> int:
    """Lower estimate of the memory to build and validate a K-location instance."""
    return dense_bytes(K, INSTANCE_ARRAYS)


def omg_bytes(K: int, method: str) -> int:
    """Lower estimate of the peak memory of OMG ``method`` on K locations (instance included)."""
    return dense_bytes(K, INSTANCE_ARRAYS + OMG_ARRAYS.get(method, 3))


def require_instance_memory(K: int, what: str) -> None:
    """Refuse to build a K-location instance that cannot fit."""
    require_memory(instance_bytes(K), f"{what} (K = {K:,} locations)",
                   "use a smaller instance (fewer locations)")


def require_omg_memory(K: int, method: str) -> None:
    """Refuse an OMG solve that cannot fit (called with the method :func:`omg.choose_method` chose)."""
    others = "; method 'spanner' needs the least" if method != "spanner" else ""
    require_memory(omg_bytes(K, method), f"OMG (method {method}) on K = {K:,} locations",
                   f"use a smaller instance (fewer locations, e.g. a coarser --grid){others}")


def require_road_grid_memory(K: int, what: str) -> None:
    """Refuse an LR-Geo road grid of K cells that cannot fit."""
    require_memory(dense_bytes(K, ROAD_GRID_ARRAYS), f"{what} (K = {K:,} cells)",
                   "use a smaller grid (--synthetic WxH) or keep fewer cells (--K)")


__all__ = ["available_bytes", "dense_bytes", "instance_bytes", "omg_bytes", "require_instance_memory",
           "require_memory", "require_omg_memory", "require_road_grid_memory"]
