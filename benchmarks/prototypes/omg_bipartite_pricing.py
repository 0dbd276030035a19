"""Pricing OMG outputs as bipartite generalised transportation problems, against the lazy rows.

For a metric, the pricing LP min w·v over v ∈ C ∩ [0, 1]^K (C the Geo-Ind cone) needs only the
rows from a location of negative cost to one of non-negative cost: in its dual (a generalised
flow from the locations of negative cost, each arc multiplying the flow by e^{ε d}), a path through
a third location gains at least as much as the direct arc (the triangle inequality), so the other
arcs carry nothing; and the optimum v of the bipartite LP, raised to the max of its scaled tents,
is in C with the same value. So each pricing LP can hold every such row at once (|S|·|T| rows for
|S| locations of negative cost) and needs one HiGHS run, where the lazy LP adds rows over several.

Records the pricing costs W of every round of one solve (``omg_pricing_replay.record``), then
prices every ``--every``-th output again, round by round, in this process, with (a) the package's
lazy pricing LP and (b) the same LP holding every bipartite row of the current costs (rows from
earlier rounds kept, no oracle: the bound comes from the held rows' multipliers, the column from
the repair into C). Prints per round the time per LP, the runs per LP, the rows held, and the
largest difference of the two paths' pricing values and bounds; writes
``benchmarks/results/omg_bipartite_pricing.csv``.

    python benchmarks/prototypes/omg_bipartite_pricing.py --size 15 --every 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from lpmech import instance as li
from lpmech.design import decomposition as dc
from lpmech.design.geoind import GeoInd, column_rows, factor_matrix
from lpmech.io import write_csv

sys.path.insert(0, str(Path(__file__).resolve().parent))
from omg_pricing_replay import record

OUT = Path(__file__).resolve().parents[1] / "results"


class Counted(dc.DualPricingLP):
    """The package's pricing LP with its HiGHS runs counted."""

    runs = 0

    def _solve_round(self, rnd: int) -> str:
        type(self).runs += 1
        return super()._solve_round(rnd)


class Bipartite(Counted):
    """The pricing LP holding every row F_st v_s ≤ v_t from a location s of negative cost to a
    location t of non-negative cost (rows of earlier costs kept), without an oracle."""

    runs = 0

    def __init__(self, notion, k, G):
        self.G = G
        self.present = np.zeros((notion.K, notion.K), dtype=bool)
        super().__init__(notion, k)
        self.oracle = lambda x: None  # exact by the argument above; the bound is the held rows'

    def _add(self, A) -> None:
        coo = sp.coo_matrix(A)
        pos, neg = coo.data > 0, coo.data < 0
        self.present[coo.col[pos], coo.col[neg]] = True  # one positive and one −1 per row
        super()._add(A)

    def price(self, w: np.ndarray):
        s, t = np.nonzero(w < 0)[0], np.nonzero(w >= 0)[0]
        si, tj = np.repeat(s, t.size), np.tile(t, s.size)
        new = ~self.present[si, tj]
        if new.any():
            if self.h is None:
                self._wake()
            self._add(column_rows(self.G, si[new], tj[new], self.K))
            self._forget()
        return super().price(w)


def replay(make, rounds, ks):
    lps = {k: make(k) for k in ks}
    cls = type(next(iter(lps.values())))
    out = []
    for W in rounds:
        cls.runs = 0
        t0 = time.perf_counter()
        vals, bounds = [], []
        for k in ks:
            _, value, rho = lps[k].price(W[:, k])
            vals.append(value)
            bounds.append(float(dc.lagrangian(rho, lps[k].ub[:len(rho)])))
        out.append({"s": time.perf_counter() - t0, "runs": cls.runs / len(ks),
                    "rows": np.mean([lp.n_rows for lp in lps.values()]),
                    "values": np.array(vals), "bounds": np.array(bounds)})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=15, help="grid side g (K = g*g)")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--every", type=int, default=3, help="replay every this many-th output")
    ap.add_argument("--rounds", help="an .npz of recorded rounds (arr_0, arr_1, ...) to replay")
    ap.add_argument("--name", default="omg_bipartite_pricing")
    args = ap.parse_args(argv)
    g, eps = args.size, args.epsilon
    inst = li.grid(g, g).with_prior(np.random.default_rng(args.seed).dirichlet(np.ones(g * g)))
    if args.rounds:
        z = np.load(args.rounds)
        rounds = [z[f"arr_{r}"] for r in range(len(z.files))]
    else:
        rounds = record(inst, eps)
    G = np.exp(-eps * inst.metric)
    np.fill_diagonal(G, 0.0)
    notion = GeoInd(factor_matrix(inst, eps), closure=np.exp(-eps * inst.metric).T.copy())
    ks = list(range(0, inst.K, args.every))
    print(f"K = {inst.K}, ε = {eps:g}: {len(rounds)} rounds, {len(ks)} outputs replayed")
    lazy = replay(lambda k: Counted(notion, k), rounds, ks)
    bip = replay(lambda k: Bipartite(notion, k, G), rounds, ks)
    rows = []
    print(f"{'round':>5} {'lazy ms/LP':>10} {'runs':>5} {'rows':>6} {'bipartite ms/LP':>15} {'runs':>5} "
          f"{'rows':>6} {'max |Δ value|':>13} {'max |Δ bound|':>13}")
    for r, (a, b) in enumerate(zip(lazy, bip), start=1):
        dv = float(np.abs(a["values"] - b["values"]).max())
        db = float(np.abs(a["bounds"] - b["bounds"]).max())
        row = {"round": r, "lazy_ms_per_lp": 1e3 * a["s"] / len(ks), "lazy_runs": a["runs"],
               "lazy_rows": a["rows"], "bipartite_ms_per_lp": 1e3 * b["s"] / len(ks),
               "bipartite_runs": b["runs"], "bipartite_rows": b["rows"], "max_value_diff": dv,
               "max_bound_diff": db, "lazy_bound_sum": float(a["bounds"].sum()),
               "bipartite_bound_sum": float(b["bounds"].sum())}
        rows.append(row)
        print(f"{r:>5} {row['lazy_ms_per_lp']:>10.2f} {a['runs']:>5.2f} {a['rows']:>6.0f} "
              f"{row['bipartite_ms_per_lp']:>15.2f} {b['runs']:>5.2f} {b['rows']:>6.0f} {dv:>13.2e} "
              f"{db:>13.2e}")
    ta, tb = sum(x["s"] for x in lazy), sum(x["s"] for x in bip)
    print(f"all rounds: lazy {ta:.2f} s, bipartite {tb:.2f} s (lazy/bipartite {ta / tb:.2f})")
    OUT.mkdir(exist_ok=True)
    write_csv(OUT / f"{args.name}.csv", rows)


if __name__ == "__main__":
    main()
