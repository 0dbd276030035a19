"""Output generation with and without seeded rows, across notions, priors and ε, in one process.

An output joining the restricted LP of output generation starts with the rows its pricing LP
holds (``lpmech.design.outputs.SEED_ROWS``) or, as before, with the notion's starting rows. For
each case (Geo-Ind ∧ LIP on a W×W grid with the Gowalla NYC prior or a Dirichlet(1) prior, and
LE's LP (8) with the co-location loss on the Gowalla grid) both arms are solved through
``lpmech.design.solve(method="outputs")``, alternating which runs first, and certified; prints the
times, their ratio (without / with) and the objectives' difference. Writes
``benchmarks/results/outputs_seed_rows.csv``.

    python benchmarks/outputs_seed_rows.py [--size 10] [--eps-lip 1 2] [--le-eps 1 2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from design_composed import DEFAULT_FILE, gowalla_grid

from lpmech.design import LIP, DPrivacy, outputs, solve
from lpmech.io import write_csv
from lpmech.models import le

OUT = Path(__file__).resolve().parent / "results"


def timed(notion, prior, loss, seed_rows: bool):
    outputs.SEED_ROWS = seed_rows
    t0 = time.perf_counter()
    res = solve(notion, prior=prior, loss=loss, method="outputs")
    return time.perf_counter() - t0, res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=10, help="grid side W (K = W²)")
    ap.add_argument("--eps", type=float, default=1.0, help="Geo-Ind ε per cell")
    ap.add_argument("--eps-lip", type=float, nargs="+", default=[1.0, 2.0])
    ap.add_argument("--le-eps", type=float, nargs="+", default=[1.0, 2.0])
    ap.add_argument("--name", default="outputs_seed_rows")
    args = ap.parse_args(argv)
    base = gowalla_grid(DEFAULT_FILE, args.size)
    dirichlet = base.with_prior(np.random.default_rng(0).dirichlet(np.ones(base.K)))
    cases = [(f"geo-ind & lip {e:g}, {name}", DPrivacy(inst, args.eps) & LIP(inst.prior, e),
              inst.prior, inst.loss)
             for e in args.eps_lip for name, inst in (("gowalla", base), ("dirichlet", dirichlet))]
    cases += [(f"LE LP (8) eps {e:g}, gowalla", DPrivacy(base.metric, e, n_near=8), base.prior,
               le.range_loss(base.metric, 0.0)) for e in args.le_eps]
    rows = []
    try:
        for c, (label, notion, prior, loss) in enumerate(cases):
            order = (True, False) if c % 2 == 0 else (False, True)
            got = {arm: timed(notion, prior, loss, arm) for arm in order}
            (t_on, on), (t_off, off) = got[True], got[False]
            row = dict(case=label, K=base.K, seeded_s=t_on, unseeded_s=t_off,
                       ratio=t_off / t_on, objective=on.objective,
                       diff=abs(on.objective - off.objective), gap=on.gap,
                       rounds=on.stats.get("rounds"), status=on.status)
            rows.append(row)
            print(f"{label}: seeded {t_on:.1f} s, unseeded {t_off:.1f} s, ratio {row['ratio']:.2f}, "
                  f"objective {on.objective:.7f} (|diff| {row['diff']:.1e}, gap {on.gap:.1e})",
                  flush=True)
    finally:
        outputs.SEED_ROWS = True
    OUT.mkdir(parents=True, exist_ok=True)
    write_csv(OUT / f"{args.name}.csv", rows)
    print(f"wrote {OUT / (args.name + '.csv')}")


if __name__ == "__main__":
    main()
