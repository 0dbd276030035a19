"""Prototype: starting columns (and duals) from overlapping tiles solved at full resolution.

The coarse-to-fine start (``omg_large.coarse_start``) solves the instance on every other cell: its
columns are a coarse image of the optimum's. Here the grid is also cut into overlapping square
tiles of ``--tile`` cells a side (stride ``--stride``); each tile is an OMG instance of its own
(the metric, prior and loss restricted to its cells, the prior renormalised), solved to a relative
gap of 1e-4. Each output takes the used columns of the tile whose centre is nearest to it, lifted to
the whole grid by the smallest extension in the cone (the max of the scaled tents of its entries), in addition
to the coarse start's columns. With ``--duals`` the fine solve also prices first at the tiles'
row multipliers (each location's from its own tile, rescaled by the tile's prior mass).

Each configuration is a whole ``solve_decomposition`` in the same process (time includes the
tiles' solves), in turn:

    python benchmarks/prototypes/omg_tiles.py [--sizes 15 20] [--eps 1] [--tile 10 --stride 5]

Writes ``benchmarks/results/omg_tiles.csv``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

from lpmech import instance as li
from lpmech.io import write_csv
from lpmech.models.omg import omg_large as ol

OUT = Path(__file__).resolve().parents[1] / "results"


def tiles(g: int, tile: int, stride: int) -> list[int]:
    starts = list(range(0, max(g - tile, 0) + 1, stride))
    if starts[-1] != max(g - tile, 0):
        starts.append(max(g - tile, 0))
    return starts


def smallest_lift(metric, S, U, eps: float) -> np.ndarray:
    """The smallest extension in the cone of the columns ``U`` (given on ``S``): the max of their
    scaled tents, V_i = max_t U_t e^{−ε d(S_t, i)} (equal to U on S, since U is in the cone there)."""
    D = np.exp(-eps * metric[S])  # (|S|, K)
    return np.stack([np.max(U[:, c, None] * D, axis=0) for c in range(U.shape[1])], axis=1)


def tile_start(inst, eps: float, tile: int, stride: int):
    """(columns, duals, seconds): every output's columns from the tile nearest its centre."""
    t0 = time.perf_counter()
    g = inst.shape[0]
    ix = np.rint(inst.coords / inst.cell).astype(np.int64)
    ix -= ix.min(axis=0)
    starts = tiles(g, tile, stride)
    centres = np.array([s + (min(tile, g) - 1) / 2 for s in starts])
    own = np.stack([np.argmin(np.abs(ix[:, a, None] - centres[None, :]), axis=1)
                    for a in range(2)], axis=1)
    d, p, L = inst.metric, inst.prior, inst.loss
    cols, mu = [], np.zeros(inst.K)
    for a, sx in enumerate(starts):
        for b, sy in enumerate(starts):
            S = np.nonzero((ix[:, 0] >= sx) & (ix[:, 0] < sx + tile)
                           & (ix[:, 1] >= sy) & (ix[:, 1] < sy + tile))[0]
            mass = float(p[S].sum())
            dm = d[np.ix_(S, S)].copy()
            dm.setflags(write=False)
            sub = dataclasses.replace(inst, metric=dm, prior=p[S] / mass, loss=L[np.ix_(S, S)],
                                      coords=inst.coords[S], shape=(tile, tile), labels=None)
            res = ol.solve_decomposition(sub, eps, tol=1e-4)
            Z = res.x.reshape(S.size, S.size)
            mine = np.nonzero((own[S, 0] == a) & (own[S, 1] == b))[0]
            mine = mine[Z[:, mine].max(axis=0) > 1e-9]
            V = smallest_lift(d, S, Z[:, mine], eps)
            cols += [(int(S[c]), V[:, j]) for j, c in enumerate(mine)]
            if res.duals is not None:
                inside = (own[S, 0] == a) & (own[S, 1] == b)
                mu[S[inside]] = mass * np.asarray(res.duals, float)[:S.size][inside]
    return cols, mu, time.perf_counter() - t0


def run(inst, eps: float, mode: str, tile: int, stride: int) -> dict:
    real = ol.coarse_start
    t0 = time.perf_counter()
    more, mu, tile_s = tile_start(inst, eps, tile, stride) if mode != "coarse" else ([], None, 0.0)

    def patched(instance, e, **kw):
        cols, duals = real(instance, e, **kw)
        return (cols + more, duals) if instance.K == inst.K else (cols, duals)

    ol.coarse_start = patched
    try:
        res = ol.solve_decomposition(inst, eps, dual_start=mu if mode == "tiles+duals" else None)
        secs = time.perf_counter() - t0
    finally:
        ol.coarse_start = real
    return dict(K=inst.K, eps=eps, mode=mode, tile=tile, stride=stride, seconds=round(secs, 2),
                rounds=res.stats["rounds"], objective=res.optimality.objective,
                gap=res.optimality.gap_rel, status=res.status, tile_s=round(tile_s, 2),
                tile_columns=len(more))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[15, 20])
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--tile", type=int, default=10)
    ap.add_argument("--stride", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modes", nargs="+", default=["coarse", "tiles", "tiles+duals"])
    args = ap.parse_args()
    rows = []
    for g in args.sizes:
        inst = li.grid(g, g).with_prior(np.random.default_rng(args.seed).dirichlet(np.ones(g * g)))
        base = None
        for mode in args.modes:
            r = run(inst, args.eps, mode, args.tile, args.stride)
            base = base or r["seconds"]
            r["ratio"] = round(base / r["seconds"], 3)
            rows.append(r)
            print(r, flush=True)
    OUT.mkdir(exist_ok=True)
    write_csv(OUT / "omg_tiles.csv", rows)


if __name__ == "__main__":
    main()
