"""The price of a second notion: Geo-Ind ∧ LIP on a grid with a Gowalla prior, certified.

On a W×W grid over the Gowalla NYC box (prior ∝ each user's earliest check-in per cell, loss the
Euclidean distance in cells) this solves, through the design engine (``lpmech.design.solve``):

* Geo-Ind alone (d-privacy, ε per cell) — the OMG optimum;
* Geo-Ind ∧ ε_LIP-LIP for the same prior, for each ``--eps-lip`` — one certificate per notion;
* a user-defined factor notion written in three lines (case ``user``): (ε, γ)-Geo-Ind with
  γ = 2 cells given as a raw factor matrix F_ij = e^{−ε d_ij}·1[d_ij ≤ 2].

The price of adding LIP is (OPT(Geo-Ind ∧ LIP) − OPT(Geo-Ind)) / OPT(Geo-Ind), each optimum
certified (gap ≤ 1e-6, realised ε of every notion ≤ target·(1 + 1e-6)). Baseline in the same
process: Geo-Ind alone through the OMG decomposition (``lpmech.models.omg``); the time ratio is
printed. Writes ``benchmarks/results/design_composed.csv`` and ``.png``.

    python benchmarks/design_composed.py [--size 10] [--eps 1] [--eps-lip 0.5 1 2 4]
        [--cases geo user composed] [--method auto|full|decomposition|outputs] [--prior gowalla|dirichlet]

K = 400 (each notion certified; Geo-Ind alone by ``omg.solve``, Geo-Ind ∧ LIP by output generation,
what ``auto`` picks for a LIP with ε ≤ 1):
    python benchmarks/design_composed.py --size 20 --prior dirichlet --geo-method omg \
        --cases geo composed --eps-lip 1 --no-baseline --name design_composed_k400
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from lpmech import datasets
from lpmech import instance as li
from lpmech.design import LIP, DPrivacy, Factor, solve
from lpmech.errors import LpmechError
from lpmech.io import write_csv
from lpmech.models import omg

OUT = Path(__file__).resolve().parent / "results"
DATA = Path(os.environ.get("LPMECH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
DEFAULT_FILE = DATA / "gowalla" / "loc-gowalla_totalCheckins.sample.txt.gz"


def gowalla_grid(path: Path, size: int):
    d = datasets.read_checkins(path, bbox=datasets.GOWALLA_NY_BBOX, first_per_user=True)
    counts = datasets.grid_counts(d["lat"], d["lon"], size, size, datasets.GOWALLA_NY_BBOX).ravel()
    return li.grid(size, size, 1.0, unit="cell").with_counts(counts)


def add_prior_options(ap, alphas) -> None:
    """The grid and prior options of the Geo-Ind ∧ LIP sweeps (``design_auto``, ``design_cover``)."""
    ap.add_argument("--size", type=int, default=10, help="grid side W (K = W²)")
    ap.add_argument("--alpha", type=float, nargs="+", default=alphas,
                    help="Dirichlet concentrations (besides the Gowalla prior)")
    ap.add_argument("--no-gowalla", action="store_true", help="Dirichlet priors only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds per solve")


def sweep_priors(args) -> list:
    """``(label, instance)``: the Gowalla grid of ``args.size`` with its check-in prior (unless
    ``--no-gowalla``) and with a Dirichlet(α) prior (seed ``args.seed``) for each ``args.alpha``."""
    if not DEFAULT_FILE.is_file():
        raise SystemExit(f"no Gowalla file at {DEFAULT_FILE} (set LPMECH_DATA)")
    base = gowalla_grid(DEFAULT_FILE, args.size)
    priors = [] if args.no_gowalla else [("gowalla", base)]
    return priors + [(f"dirichlet({a:g})", base.with_prior(
        np.random.default_rng(args.seed).dirichlet(np.full(base.K, a)))) for a in args.alpha]


def record(label, eps_lip, res, seconds, base=None):
    certs = res.stats["certificates"]
    row = dict(case=label, eps_lip=eps_lip, K=res.stats["K"], status=res.status,
               objective=res.objective, bound=res.bound, gap=res.gap, time_s=seconds,
               method=res.stats.get("method"), rounds=res.stats.get("rounds"),
               master_share=res.stats.get("master_share"))
    for c in certs:
        row[f"realized_{c['notion']}"] = c["realized"]
        row[f"target_{c['notion']}"] = c["target"]
    if base is not None:
        row["price_abs"] = res.objective - base
        row["price_rel"] = (res.objective - base) / base
    return row


def plot(rows, geo, path: Path, K: int, eps: float):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    comp = [r for r in rows if r["case"] == "geo-ind & lip" and "objective" in r]
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    if comp:
        e = [r["eps_lip"] for r in comp]
        ax[0].plot(e, [r["objective"] for r in comp], "o-", label="Geo-Ind ∧ LIP")
        if geo is not None:
            ax[0].axhline(geo, color="k", ls="--", label="Geo-Ind alone")
        ax[0].set_xscale("log")
        ax[0].set_xlabel("ε_LIP")
        ax[0].set_ylabel("expected distance (cells), certified optimum")
        ax[0].legend()
        ax[1].semilogx(e, [100 * r.get("price_rel", float("nan")) for r in comp], "s-")
        ax[1].set_xlabel("ε_LIP")
        ax[1].set_ylabel("price of adding LIP (%)")
    fig.suptitle(f"K = {K} cells, Geo-Ind ε = {eps:g} per cell")
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, path)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_FILE)
    ap.add_argument("--size", type=int, default=10, help="grid side W (K = W²)")
    ap.add_argument("--eps", type=float, default=1.0, help="Geo-Ind ε per cell")
    ap.add_argument("--prior", default="gowalla", choices=["gowalla", "dirichlet"],
                    help="gowalla: the check-in prior; dirichlet: Dirichlet(1), seed --seed (the "
                         "omg_scaling instance: the decomposition needs far fewer rounds on it)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eps-lip", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0])
    ap.add_argument("--method", default="auto", choices=["auto", "full", "decomposition", "outputs"])
    ap.add_argument("--geo-method", default=None, choices=["auto", "full", "decomposition", "outputs", "omg"],
                    help="path of the Geo-Ind-alone case (default: --method; omg: omg.solve, the OMG "
                         "decomposition with its coarse start, the fastest exact path at K = 400)")
    ap.add_argument("--cases", nargs="+", default=["geo", "user", "composed"],
                    choices=["geo", "user", "composed"],
                    help="what to solve, in this order (the price of LIP needs 'geo' first)")
    ap.add_argument("--time-limit", type=float, default=900.0)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--user", action="store_true", help="(kept for old command lines: 'user' is in "
                    "--cases by default)")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--name", default="design_composed")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    if not args.data.is_file():
        raise SystemExit(f"no Gowalla file at {args.data} (set --data or LPMECH_DATA)")
    OUT.mkdir(parents=True, exist_ok=True)
    inst = gowalla_grid(args.data, args.size)
    if args.prior == "dirichlet":
        inst = inst.with_prior(np.random.default_rng(args.seed).dirichlet(np.ones(inst.K)))
    K, p, L = inst.K, inst.prior, inst.loss
    print(f"{args.size}x{args.size} grid, {args.prior} prior: K = {K}, {int((p == 0).sum())} empty cells",
          flush=True)
    opts = dict(method=args.method, time_limit=args.time_limit, workers=args.workers,
                verbose=args.verbose)
    rows = []
    geo = None
    csv = OUT / f"{args.name}.csv"

    def run_case(label, notion, eps_lip=None, path=None):
        t0 = time.perf_counter()
        try:
            if path == "omg":
                res = omg.solve(inst, args.eps, time_limit=args.time_limit)
                res.stats["certificates"] = [{"notion": "d-privacy", "realized":
                                              res.certificate.realized_epsilon, "target": args.eps}]
                res.stats["K"] = K
            else:
                res = solve(notion, prior=p, loss=L, **dict(opts, method=path or args.method))
        except LpmechError as exc:
            got = getattr(exc, "result", None)
            rows.append(dict(case=label, eps_lip=eps_lip, K=K, status=type(exc).__name__,
                             time_s=time.perf_counter() - t0, error=str(exc)[:200],
                             rounds=None if got is None else got.stats.get("rounds")))
            print(rows[-1], flush=True)
            write_csv(csv, rows)
            return None
        rows.append(record(label, eps_lip, res, time.perf_counter() - t0,
                           base=None if geo is None or eps_lip is None else geo.objective))
        print(rows[-1], flush=True)
        write_csv(csv, rows)
        return res

    for case in args.cases:
        if case == "geo":
            t0 = time.perf_counter()
            geo = run_case("geo-ind", DPrivacy(inst, args.eps), path=args.geo_method)
            t_geo = time.perf_counter() - t0
            if geo is not None and not args.no_baseline:
                t0 = time.perf_counter()
                ref = omg.solve(inst, args.eps, method="decomposition" if K > 25 else "full",
                                time_limit=args.time_limit)
                t_ref = time.perf_counter() - t0
                print(f"baseline: engine {geo.objective:.10f} in {t_geo:.1f}s, OMG {ref.objective:.10f} "
                      f"in {t_ref:.1f}s: ratio engine/OMG = {t_geo / t_ref:.2f}, |diff| "
                      f"{abs(geo.objective - ref.objective):.1e}", flush=True)
                rows.append(dict(case="baseline omg.solve", K=K, status=ref.status, objective=ref.objective,
                                 bound=ref.bound, gap=ref.gap, time_s=t_ref,
                                 ratio_engine_over_omg=t_geo / t_ref))
        elif case == "user":
            # the user's notion in three lines: (ε, γ)-Geo-Ind with γ = 2 cells as a raw factor matrix
            F = np.exp(-args.eps * inst.metric) * (inst.metric <= 2.0)
            run_case("user factor", Factor(F, name="geo-ind(gamma=2)"))
        else:
            for e in args.eps_lip:
                run_case("geo-ind & lip", DPrivacy(inst, args.eps) & LIP(p, e), e)
    write_csv(csv, rows)
    plot(rows, None if geo is None else geo.objective, OUT / f"{args.name}.png", K, args.eps)
    print(f"wrote {OUT / (args.name + '.csv')} and .png")


if __name__ == "__main__":
    main()
