"""The OMG robustness sweep (issue 12): instance families, priors, and one checked cell.

A method is done when it answers across ε, metrics, priors and sizes (DESIGN, "Robust across the
parameter space"). This module holds the parts that ``benchmarks/omg_sweep.py`` (the full sweep,
CSV + PNG) and ``tests/test_omg_sweep.py`` (the fast K ≤ 36 subset, property tests) share:

* :func:`sweep_instance`: a family at about K locations — ``grid`` (unit cells), ``points``
  (uniform in a √K×√K square: one point per unit² like the grid), ``graph`` (a connected
  Watts–Strogatz graph with weights in [0.5, 2], shortest paths), ``latlon`` (points in a √K km
  square around Rome, Haversine km) and ``neardup`` (random points of which about a quarter are
  copies of others moved by 0, 1e-13, 1e-11, 1e-7 or 1e-4);
* :func:`sweep_prior`: ``uniform``, ``dirichlet`` (Dirichlet(1)) or ``spiky`` (Dirichlet(0.05):
  a few locations carry almost all the mass, many carry ~1e-20);
* :func:`run_cell`: solve one (instance, ε, method), catch the package's errors into a status, and
  check the result: ``ok`` iff status ``optimal``, gap ≤ ``GAP_TOL`` (or an absolute gap within
  ``ABS_TOL``·max L for a near-zero optimum), realised ε ≤ ε(1 + 1e-6) and the objective within
  the same tolerances of the reference (the raw full LP), above it or below it (:func:`agree`).
"""

from __future__ import annotations

import math
import time

import networkx as nx
import numpy as np

from ... import instance as li
from ...errors import LpmechError
from ...mechanism import EPS_RTOL
from . import omg

METRICS = ("grid", "points", "graph", "latlon", "neardup")
PRIORS = ("uniform", "dirichlet", "spiky")
EPSILONS = (0.05, 0.3, 1.0, 4.0, 10.0, 30.0)
METHODS = ("full", "cutting-plane", "decomposition", "auto")
#: a cell's relative gap and agreement with the reference must be within this
GAP_TOL = 1e-6
#: ... or, for a near-zero optimum, within this times the largest loss: cleaning a point that is
#: feasible to HiGHS' 1e-9 tolerance moves about that much expected loss (at ε = 30 on a unit grid
#: the optimum itself is ~1e-9, and no relative gap can be proved there)
ABS_TOL = 1e-8
NEAR_SEPARATIONS = (0.0, 1e-13, 1e-11, 1e-7, 1e-4)
_ROME = (41.9, 12.5)
_KM_PER_DEG_LAT = 111.2


def sweep_instance(metric: str, K: int, seed: int = 0) -> li.Instance:
    """An instance of family ``metric`` with about ``K`` locations (a grid: the nearest square)."""
    rng = np.random.default_rng(seed)
    side = math.sqrt(K)
    if metric == "grid":
        s = max(1, round(side))
        return li.grid(s, s)
    if metric == "points":
        return li.points(rng.uniform(0, side, size=(K, 2)))
    if metric == "graph":
        g = nx.connected_watts_strogatz_graph(K, min(4, K - 1), 0.3, seed=seed)
        for a, b in g.edges:
            g[a][b]["weight"] = float(rng.uniform(0.5, 2.0))
        return li.from_graph(g)
    if metric == "latlon":
        km = rng.uniform(0, side, size=(K, 2))
        lat = _ROME[0] + km[:, 0] / _KM_PER_DEG_LAT
        lon = _ROME[1] + km[:, 1] / (_KM_PER_DEG_LAT * math.cos(math.radians(_ROME[0])))
        return li.latlon(np.column_stack([lat, lon]))
    if metric == "neardup":
        n = max(2, K - K // 4)
        base = rng.uniform(0, side, size=(n, 2))
        picks = rng.integers(0, n, K - n)
        seps = rng.choice(NEAR_SEPARATIONS, K - n)
        angle = rng.uniform(0, 2 * math.pi, K - n)
        moved = base[picks] + seps[:, None] * np.column_stack([np.cos(angle), np.sin(angle)])
        return li.points(np.vstack([base, moved]))
    raise ValueError(f"unknown sweep metric {metric!r}: use one of {', '.join(METRICS)}")


def sweep_prior(prior: str, K: int, seed: int = 0) -> np.ndarray:
    """The prior of family ``prior`` over K locations."""
    rng = np.random.default_rng(seed + 1)
    if prior == "uniform":
        return np.full(K, 1.0 / K)
    if prior == "dirichlet":
        return rng.dirichlet(np.ones(K))
    if prior == "spiky":
        p = rng.dirichlet(np.full(K, 0.05))
        return p / p.sum()
    raise ValueError(f"unknown sweep prior {prior!r}: use one of {', '.join(PRIORS)}")


def make_instance(metric: str, prior: str, K: int, seed: int = 0) -> li.Instance:
    inst = sweep_instance(metric, K, seed)
    return inst.with_prior(sweep_prior(prior, inst.K, seed))


def agree(value: float | None, reference: float | None, scale: float) -> bool:
    """``value`` (the objective of a *certified* mechanism) is within GAP_TOL relative of
    ``reference`` (or ABS_TOL·``scale`` absolute), on either side.

    Two-sided, as the LE sweep's check: above the reference, the method missed the optimum; below
    it, either the method's objective is wrong (not the expected loss of a private mechanism) or the
    reference is suboptimal (HiGHS once ended the reduced full LP of a near-duplicate instance
    "optimal" 7e-5 above the optimum: neardup/spiky, K = 30, ε = 4). Either way the cell is not
    ``ok`` and is listed; the row records ``rel_diff`` with its sign, which says which side.
    """
    if value is None or reference is None:
        return False
    return abs(value - reference) <= max(GAP_TOL * abs(reference), ABS_TOL * scale)


def run_cell(inst: li.Instance, eps: float, method: str, *, reference: float | None = None,
             time_limit: float | None = None, keep: bool = False, solve=None,
             scale: float | None = None) -> dict:
    """Solve one cell and check it (see the module doc). Never raises a package error.

    ``keep`` puts the :class:`~lpmech.solvers.result.Result` in the row (key ``result``).
    ``solve(inst, eps, method, time_limit)`` solves another model's cell (default: OMG's
    :func:`~lpmech.models.omg.solve`), ``scale`` its largest loss (default: the instance's).
    """
    t0 = time.perf_counter()
    row = {"K": inst.K, "epsilon": eps, "method": method}
    try:
        if solve is None:
            res = omg.solve(inst, eps, method=method, time_limit=time_limit)
        else:
            res = solve(inst, eps, method, time_limit)
    except LpmechError as exc:
        partial = exc.result
        row.update(status=exc.status, time_s=time.perf_counter() - t0, error=str(exc)[:200],
                   rounds=None if partial is None else partial.stats.get("rounds"), ok=False)
        return row
    scale = float(inst.loss.max(initial=0.0)) if scale is None else scale
    gap_abs = res.optimality.gap_abs
    gap_ok = res.gap is not None and (res.gap <= GAP_TOL or gap_abs <= ABS_TOL * scale)
    real = res.certificate.realized_epsilon
    row.update(status=res.status, time_s=time.perf_counter() - t0, objective=res.objective,
               bound=res.bound, gap=res.gap, gap_abs=gap_abs, realized_epsilon=real,
               eps_ok=real <= eps * (1 + EPS_RTOL), gap_ok=gap_ok,
               method_run=res.stats.get("method"), rounds=res.stats.get("rounds"),
               merged=res.stats.get("quotient_merged", 0), error="")
    if reference is not None:
        row["reference"] = reference
        diff = res.objective - reference
        row["abs_diff"] = diff
        # relative only where the reference is not at the solver's noise level (ε = 30: ~0)
        row["rel_diff"] = diff / abs(reference) if abs(reference) > 1e-12 * scale else math.nan
        row["agrees"] = agree(res.objective, reference, scale)
    row["ok"] = bool(res.status == "optimal" and gap_ok and row["eps_ok"]
                     and row.get("agrees", True))
    if keep:
        row["result"] = res
    return row


__all__ = ["ABS_TOL", "EPSILONS", "GAP_TOL", "METHODS", "METRICS", "PRIORS", "agree", "make_instance",
           "run_cell", "sweep_instance", "sweep_prior"]
