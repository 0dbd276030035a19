"""Progress of long solves: log lines and a live status line, in one place.

Every long-running solve reports through a :class:`Progress`:

- ``verbose=True`` makes its INFO lines (round, bounds, gap, elapsed) reach stderr even from a plain
  script with no logging set up (:func:`verbose_logging` adds a handler only when none would print);
- a live status line (tqdm) is drawn only inside :func:`live_progress` (the CLI enters it when stderr
  is a terminal and ``--json`` is off), so library calls, tests and pipes stay quiet.

Usage::

    with Progress("OMG decomposition", verbose=verbose, unit="round") as prog:
        for rnd in ...:
            prog.update(round=rnd, lower=lb, upper=ub, gap=gap)
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import sys
import time

_LIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("lpmech_live_progress", default=False)
_ROOT = "lpmech"


@contextlib.contextmanager
def live_progress(enabled: bool = True):
    """Within this block, :class:`Progress` draws a live status line on stderr (if ``enabled``)."""
    token = _LIVE.set(bool(enabled))
    try:
        yield
    finally:
        _LIVE.reset(token)


def live_enabled() -> bool:
    return _LIVE.get()


@contextlib.contextmanager
def verbose_logging(verbose: bool, fmt: str = "lpmech: %(message)s", *, force: bool = False):
    """With ``verbose``, INFO records of the ``lpmech`` loggers reach stderr during the block.

    A handler is added only when the records would otherwise be lost (no handler on ``lpmech`` or
    its ancestors), so a user's own logging set-up is respected; the level is raised to INFO only
    where it is stricter. ``force=True`` (the CLI, which owns its process's stderr) always adds it.
    """
    if not verbose:
        yield
        return
    logger = logging.getLogger(_ROOT)
    handler = None
    if force or not logger.hasHandlers():
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(fmt))
        logger.addHandler(handler)
    old_level = logger.level
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.setLevel(old_level)
        if handler is not None:
            logger.removeHandler(handler)


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


class Progress:
    """Report the progress of one long solve: a log line per :meth:`update`, and a live bar.

    Args:
        what: a short name, e.g. ``"OMG decomposition K=400"``.
        verbose: make the log lines visible on stderr (see :func:`verbose_logging`).
        total: the number of steps, when known (a bar); ``None`` gives a status line.
        unit: what one step is (``"round"``, ``"iteration"``, ``"user"``).
        logger: the logger of the calling module (default ``lpmech.progress``).
    """

    def __init__(self, what: str, *, verbose: bool = False, total: int | None = None,
                 unit: str = "round", logger: logging.Logger | None = None):
        self.what, self.unit, self.total = what, unit, total
        self.log = logger or logging.getLogger(__name__)
        self._stack = contextlib.ExitStack()
        self._stack.enter_context(verbose_logging(verbose))
        self.t0 = time.perf_counter()
        self.steps = 0
        self.bar = None
        if live_enabled() and not verbose:  # verbose lines and a bar would overwrite each other
            from tqdm.auto import tqdm

            try:  # a terminal without a width (or none): a fixed width, not an empty line
                dynamic = os.get_terminal_size(sys.stderr.fileno()).columns > 0
            except (OSError, ValueError, AttributeError):
                dynamic = False
            self.bar = tqdm(total=total, desc=what, unit=unit, file=sys.stderr, leave=False,
                            dynamic_ncols=dynamic, ncols=None if dynamic else 100,
                            mininterval=0.5)
        self.log.info("%s: started", what)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def note(self, message: str, *args) -> None:
        """A one-off line (a phase change, a fallback): logged, and written above the bar (whose
        description stays the run's name, so its bounds and gap keep their place)."""
        self.log.info("%s: " + message, self.what, *args)
        if self.bar is not None:
            self.bar.write(f"{self.what}: {message % args if args else message}", file=sys.stderr)

    def update(self, n: int = 1, **fields) -> None:
        """One or ``n`` more steps done; ``fields`` (bounds, gap, ...) are shown and logged."""
        self.steps += n
        text = ", ".join(f"{k} {_fmt(v)}" for k, v in fields.items())
        self.log.info("%s: %s %d%s (%.1fs)", self.what, self.unit, self.steps,
                      f", {text}" if text else "", self.elapsed)
        if self.bar is not None:
            self.bar.set_postfix_str(text, refresh=False)
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        self._stack.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
