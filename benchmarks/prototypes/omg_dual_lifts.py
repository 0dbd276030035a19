"""Prototype: first Lagrangian bounds of the fine OMG problem at coarse duals lifted two ways.

The coarse-to-fine start (``omg_large.coarse_start``) solves the instance on every other cell and
lifts its row multipliers μ_c to the fine locations by prior mass, μ_i = μ_c p_i / p_c
(``lift_duals``). This script compares that lift with a smoother one: the multiplier per unit of
prior mass g_c = μ_c / p_c interpolated bilinearly between the coarse cells' centres and scaled by
each location's prior, y_i = p_i g(x_i), as is and rescaled to the same Σ y; each also shrunk by a
factor θ ≤ 1 (a lower y makes the pricing terms less negative). For each point it prints the
Lagrangian bound L(y) = Σ y + Σ_k min over the cone of (c_k − y)·v (every output priced exactly:
a valid lower bound on the optimum, :func:`lpmech.models.omg.omg_large._relaxed_lower_bound`).

With ``--solve``, whole decompositions (``solve_decomposition(..., dual_start=θ·y)``, y the
prior-mass lift) for each θ, in turn and twice, in one process: the rounds and times.

    python benchmarks/prototypes/omg_dual_lifts.py [--size 20] [--eps 1] [--thetas 1 0.97 0.9]
    python benchmarks/prototypes/omg_dual_lifts.py --size 15 --eps 0.5 --thetas 1 0.9 --solve

Writes ``benchmarks/results/omg_dual_lifts.csv`` (``omg_dual_lifts_solve.csv``). Measured
(Dirichlet(1) prior seed 0), not kept: K = 400, ε = 1 (optimum 1.621323): prior mass 1.129,
1.248, 1.366 at θ = 1, 0.97, 0.9; bilinear 0.563, 0.778, 1.109; bilinear rescaled 0.699, 0.880,
1.153. K = 400, ε = 0.5: prior mass 2.573 and 2.898 (= Σ θy: dual feasible) at θ = 1, 0.9;
bilinear −2.996, 2.188; rescaled 0.314, 2.740. Whole solves, K = 225, ε = 0.5: θ = 1 54 rounds,
85.5 s and 77.6 s; θ = 0.9 61 rounds, 88.4 s and 92.4 s (a dual-feasible first point prices no
column out, so the first round adds nothing to the master).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from scipy.interpolate import RegularGridInterpolator

from lpmech import instance as li
from lpmech.io import write_csv
from lpmech.models.omg import omg_large as ol

OUT = Path(__file__).resolve().parents[1] / "results"


def bilinear_lift(inst, S: np.ndarray, coarse, mu: np.ndarray) -> np.ndarray:
    """y_i = p_i g(x_i), g the bilinear interpolant of μ_c / p_c over the coarse cells (a grid)."""
    gc = np.divide(mu, coarse.prior, out=np.zeros_like(mu), where=coarse.prior > 0)
    cc = inst.coords[S]
    gx, gy = np.unique(cc[:, 0]), np.unique(cc[:, 1])
    G = np.zeros((gx.size, gy.size))
    G[np.searchsorted(gx, cc[:, 0]), np.searchsorted(gy, cc[:, 1])] = gc
    interp = RegularGridInterpolator((gx, gy), G, bounds_error=False, fill_value=None)
    return inst.prior * interp(inst.coords)


def lifts(inst, eps: float) -> tuple[dict[str, np.ndarray], float]:
    """The lifted duals by name, and the coarse solve's seconds."""
    S = ol.coarse_points(inst)
    coarse, label = ol.coarse_instance(inst, S)
    t0 = time.perf_counter()
    res = ol.solve_decomposition(coarse, eps, tol=ol.COARSE_TOL)
    coarse_s = time.perf_counter() - t0
    mu = np.asarray(res.duals, float)[:coarse.K]
    mass = ol.lift_duals(inst.prior, label, mu)
    smooth = bilinear_lift(inst, S, coarse, mu)
    return {"prior mass": mass, "bilinear": smooth,
            "bilinear rescaled": smooth * mass.sum() / smooth.sum()}, coarse_s


def bounds(inst, eps: float, thetas) -> list[dict]:
    """One row per (lift, θ): Σ y and L(θ y)."""
    ys, coarse_s = lifts(inst, eps)
    F, C = ol.factor_matrix(inst, eps), ol._costs(inst)
    rows = []
    for name, y in ys.items():
        for th in thetas:
            t0 = time.perf_counter()
            L = ol._relaxed_lower_bound(F, C, th * y, 0)
            rows.append({"K": inst.K, "eps": eps, "lift": name, "theta": th,
                         "sum_y": float(th * y.sum()), "bound": L, "coarse_s": coarse_s,
                         "pricing_s": time.perf_counter() - t0})
            print(f"{name:18s} θ={th:<5g} Σy {th * y.sum():.6f}  L {L:.6f}  "
                  f"({rows[-1]['pricing_s']:.1f} s)", flush=True)
    return rows


def solves(inst, eps: float, thetas, repeat: int = 2) -> list[dict]:
    """Whole decompositions priced first at θ·(prior-mass lift), each θ in turn, ``repeat`` times."""
    y = lifts(inst, eps)[0]["prior mass"]
    rows = []
    for _ in range(repeat):
        for th in thetas:
            t0 = time.perf_counter()
            r = ol.solve_decomposition(inst, eps, dual_start=th * y)
            rows.append({"K": inst.K, "eps": eps, "theta": th, "status": r.status,
                         "objective": r.objective, "rounds": r.stats.get("rounds"),
                         "time_s": time.perf_counter() - t0})
            print(f"θ={th:<5g} {r.status} objective {r.objective:.7f} rounds "
                  f"{rows[-1]['rounds']} {rows[-1]['time_s']:.1f} s", flush=True)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=20)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--thetas", type=float, nargs="+", default=[1.0, 0.97, 0.9])
    ap.add_argument("--solve", action="store_true", help="whole solves started at θ·y")
    a = ap.parse_args(argv)
    g = a.size
    inst = li.grid(g, g).with_prior(np.random.default_rng(a.seed).dirichlet(np.ones(g * g)))
    rows = (solves if a.solve else bounds)(inst, a.eps, a.thetas)
    OUT.mkdir(exist_ok=True)
    name = "omg_dual_lifts_solve.csv" if a.solve else "omg_dual_lifts.csv"
    print("wrote", write_csv(OUT / name, rows))


if __name__ == "__main__":
    main()
