"""LP (8)+(12) restricted to local columns: each output's column free on a ball, zero outside.

At large ε the optimum of LP (8) is local: an output's column decays like e^{−ε d} away from its
output, so on Gowalla 32×32 at ε = 2 the entries past 10 cells are below e^{−20}. This prototype
solves LP (8) over the columns that are zero outside a ball of radius ``R`` around their output
(one column per output of positive weight) and one global column for all outputs of weight 0
(their columns sum to one column of the cone, which the objective does not read). d-privacy rows
are added lazily (HiGHS' dual simplex, warm after each batch). The matrix is then closed into
the cone and its rows renormalised (``lpmech.mechanism.clean_and_certify``): the tails the ball
left out are raised to their least d-private values, which moves the objective by about e^{−εR}.
The bound is the Lagrangian one at the restricted LP's row multipliers, every output priced
exactly over all points (``le_support._price``).

Compared in one process with support generation (``lpmech.models.le.solve``), the package's path.

    python benchmarks/prototypes/le_local_columns.py --size 16 --eps 2 --radius 8
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from lpmech.design.geoind import column_rows
from lpmech.mechanism import clean_and_certify
from lpmech.models import le
from lpmech.models.le import le_support
from lpmech.solvers.highs import add_rows, model_status, new_highs, run_highs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from le_gap_real import DEFAULT_FILE, gowalla_instance

#: a d-privacy row joins the LP when the point violates it by more than this
TOL = 1e-10
#: each point's rows to this many nearest points of its block at the start
NEAR = 4


class Block:
    """One column's variables: the points P (global indices) at offset ``off``."""

    def __init__(self, P, off, E):
        self.P, self.off = P, off
        self.F = E[np.ix_(P, P)]
        self.ok = (self.F > 0) & ~np.eye(P.size, dtype=bool)
        self.has = np.zeros((P.size, P.size), bool)

    def rows(self, mask, n):
        i, j = np.nonzero(mask & self.ok & ~self.has)
        self.has[i, j] = True
        R = column_rows(self.F, i, j, self.P.size)
        R = sp.csr_matrix((R.data, R.indices + self.off, R.indptr), shape=(i.size, n))
        return R

    def start(self, n):
        s = self.P.size
        near = np.argsort(-self.F, axis=0, kind="stable")[1:NEAR + 1]
        mask = np.zeros((s, s), bool)
        cols = np.broadcast_to(np.arange(s), near.shape)
        mask[near, cols] = mask[cols, near] = True
        return self.rows(mask, n)

    def violated(self, v, n):
        viol = self.F * v[:, None] - v[None, :]
        viol[~self.ok | self.has] = -np.inf
        at = np.arange(v.size)
        mask = np.zeros_like(self.has)
        wi, wj = viol.argmax(axis=0), viol.argmax(axis=1)
        hit = viol[wi, at] > TOL
        mask[wi[hit], at[hit]] = True
        hit = viol[at, wj] > TOL
        mask[at[hit], wj[hit]] = True
        return self.rows(mask, n)


def solve_local(D, w, eps, radius, *, verbose=True):
    """The restricted LP; returns (matrix m×m, row multipliers λ of the max form, stats)."""
    t0 = time.perf_counter()
    m = w.size
    E = np.exp(-eps * D)
    outs = np.flatnonzero(w > 0)
    dump = np.flatnonzero(w <= 0)
    blocks, off = [], 0
    for k in outs:
        P = np.flatnonzero(D[:, k] <= radius)
        blocks.append(Block(P, off, E))
        off += P.size
    if dump.size:
        blocks.append(Block(np.arange(m), off, E))
        off += m
    n = off
    h = new_highs("simplex")
    cost = np.zeros(n)
    for b, k in zip(blocks, outs):
        cost[b.off + int(np.searchsorted(b.P, k))] = -w[k]
    h.addVars(n, np.zeros(n), np.ones(n))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
    rows = np.concatenate([b.P for b in blocks])
    cols = np.concatenate([b.off + np.arange(b.P.size) for b in blocks])
    S = sp.csr_matrix((np.ones(n), (rows, cols)), shape=(m, n))
    add_rows(h, S, np.ones(m), np.ones(m))
    R = sp.vstack([b.start(n) for b in blocks], format="csr")
    add_rows(h, R, np.full(R.shape[0], -np.inf), np.zeros(R.shape[0]))
    lazy = 0
    while True:
        run_highs(h)
        st = model_status(h)
        if st != "optimal":
            raise RuntimeError(f"restricted LP: {st}")
        x = np.asarray(h.getSolution().col_value)
        new = [b.violated(x[b.off:b.off + b.P.size], n) for b in blocks]
        R = sp.vstack(new, format="csr")
        lazy += 1
        if verbose:
            print(f"  lazy round {lazy}: gain {-h.getInfo().objective_function_value:.9f}, "
                  f"rows {h.getNumRow() - m}, +{R.shape[0]} ({time.perf_counter() - t0:.1f}s)",
                  flush=True)
        if R.shape[0] == 0:
            break
        add_rows(h, R, np.full(R.shape[0], -np.inf), np.zeros(R.shape[0]))
    Z = np.zeros((m, m))
    for b, k in zip(blocks, outs):
        Z[b.P, k] = x[b.off:b.off + b.P.size]
    if dump.size:
        b = blocks[-1]
        Z[:, dump[0]] = x[b.off:b.off + m]
    lam = -np.asarray(h.getSolution().row_dual)[:m]
    return Z, lam, {"vars": n, "rows": h.getNumRow() - m, "lazy_rounds": lazy,
                    "lp_s": time.perf_counter() - t0}


def local_path(inst, eps, radius, tol=1e-7):
    t0 = time.perf_counter()
    D = np.asarray(inst.metric, float)
    w = np.asarray(inst.prior, float)
    Z, lam, st = solve_local(D, w, eps, radius)
    z, cert = clean_and_certify(Z, D, eps)
    W = float(w.sum())
    cost = W - float(w @ np.diag(z))
    t1 = time.perf_counter()
    E = np.exp(-eps * D)
    thr = 0.1 * tol * cost / w.size
    values, _, _ = le_support._price(E, w, np.arange(w.size), lam, thr)
    bound = W - float(lam.sum() + values.sum())
    st.update(cost=cost, bound=bound, gap=(cost - bound) / cost, eps_realised=cert.realized_epsilon,
              price_s=time.perf_counter() - t1, time_s=time.perf_counter() - t0)
    return st


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=16)
    ap.add_argument("--eps", type=float, default=2.0)
    ap.add_argument("--radius", type=float, nargs="+", default=[8.0])
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--no-baseline", action="store_true")
    a = ap.parse_args(argv)
    inst, _ = gowalla_instance(DEFAULT_FILE, a.size)
    for r in a.radius:
        st = local_path(inst, a.eps, r)
        print(f"local R={r:g}: cost {st['cost']:.9f}, bound {st['bound']:.9f}, gap {st['gap']:.2e}, "
              f"realised eps {st['eps_realised']:.9g}, {st['vars']} vars, {st['rows']} rows, "
              f"LP {st['lp_s']:.1f}s, pricing {st['price_s']:.1f}s, total {st['time_s']:.1f}s",
              flush=True)
    if not a.no_baseline:
        t0 = time.perf_counter()
        res = le.solve(inst, a.eps, time_limit=a.time_limit)
        cert = res.optimality
        print(f"support generation: cost {cert.objective:.9f}, bound {cert.bound}, "
              f"{time.perf_counter() - t0:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
