"""Stopping a run from outside: Ctrl-C and the command line's deadline.

A stop is *requested* (:func:`request`, with the reason ``"interrupted"`` or ``"time_limit"``);
nothing is killed. Every HiGHS run of the package goes through
:func:`lpmech.solvers.highs.run_highs`, whose interrupt callback ends the run within one simplex
or interior-point iteration of a request, and every iterative driver (decomposition, cutting
planes, output and support generation, Benders, LIP column generation) checks :func:`requested`
once a round and ends with its incumbent: the best certified mechanism, the best valid bound and
the reason as its status. The command line requests a stop from its signal handler and its
deadline watchdog (:mod:`lpmech.cli`); in a Python session, Ctrl-C during a public solve
(:func:`scope`) or a HiGHS run (:func:`~lpmech.solvers.highs.run_highs`) becomes a request.

A request lasts until :func:`clear`; :func:`scope` clears it when the outermost model call that
saw it returns, so the next call of a notebook session starts afresh.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time


def _process_start() -> float:
    """``time.monotonic()`` at this process's start (Linux: from /proc), else now."""
    now = time.monotonic()
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rpartition(")")[2].split()[19])  # field 22: starttime
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        age = uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return now
    return now - age if 0 <= age < 60 else now


#: when this process started: the command line counts ``--time-limit`` from here
START = _process_start()

#: the reasons a stop can be requested for; each is also the status of the run it stops
REASONS = ("interrupted", "time_limit")

_lock = threading.Lock()
_event = threading.Event()
_reason: str | None = None
_reserve = 0.0
_depth = 0


def request(reason: str = "interrupted") -> None:
    """Ask the running solve to stop with status ``reason``; the first reason requested stands."""
    global _reason
    if reason not in REASONS:
        raise ValueError(f"unknown stop reason {reason!r}: use one of {REASONS}")
    with _lock:
        if _reason is None:
            _reason = reason
        _event.set()


def requested() -> str | None:
    """The reason of a pending stop request, or ``None``."""
    return _reason if _event.is_set() else None


def clear() -> None:
    """Forget a stop request (and the time reserved to hand over a result)."""
    global _reason, _reserve
    with _lock:
        _reason, _reserve = None, 0.0
        _event.clear()


def reserve(seconds: float) -> None:
    """Say that handing over a result after a stop (cleaning and certifying the incumbent) takes
    about ``seconds``: the command line requests its deadline's stop that much earlier."""
    global _reserve
    with _lock:
        _reserve = max(_reserve, float(seconds))


def reserved() -> float:
    """The time reserved by :func:`reserve` (0 when none)."""
    return _reserve


def _sigint(signum, frame) -> None:
    """Ctrl-C during a public solve in a Python session: a stop request; a second one, the usual
    ``KeyboardInterrupt`` (for a step that does not check for a stop)."""
    if requested() == "interrupted":
        raise KeyboardInterrupt
    request("interrupted")


@contextlib.contextmanager
def scope():
    """A model call: a stop request still pending when the outermost scope ends is cleared. In
    the main thread of a Python session (Python's own SIGINT handler in place), Ctrl-C during
    the outermost scope is a stop request (:func:`_sigint`), wherever the solve is."""
    global _depth
    with _lock:
        _depth += 1
        outermost = _depth == 1
    previous = None
    if (outermost and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        previous = signal.signal(signal.SIGINT, _sigint)
    try:
        yield
    finally:
        try:
            if previous is not None:  # (a Ctrl-C still pending is handled by _sigint first)
                signal.signal(signal.SIGINT, previous)
        finally:
            with _lock:
                _depth -= 1
                outermost = _depth == 0
            if outermost:
                clear()


def scoped(fn):
    """Decorator of a public solve: its call is a :func:`scope` (a Ctrl-C request it saw does not
    outlive the outermost such call)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with scope():
            return fn(*args, **kwargs)

    return wrapper


__all__ = ["REASONS", "START", "clear", "request", "requested", "reserve", "reserved", "scope", "scoped"]
