"""[004] (Jiang, Li, Tandon, "Local information privacy and its application to privacy-preserving
data aggregation", IEEE TDSC) Figs. 7-12(a), in ``paper`` mode (the closed forms as printed; a red
ring marks a point that is NOT ε-LIP) and ``verified`` mode (certified optima). y = √MSE per user
(the papers' √(𝓔/N) for i.i.d. users); Fig 11 plots the expected Hamming distance.

* Fig 7: histogram, d = 5, θ1 uniform and θ2 = (0.025×4, 0.9) ([004] prints 0.02 for 0.9), ε 1:0.5:5:
  LIP vs context-aware LDP (GRR + MMSE) vs context-free LDP (GRR + unbiased, [004] eq. (40)-(41)).
* Fig 8: summation with a latent secret, correlation ρ ∈ {1, 0.7, 0.3} by the mixture
  T = ρI + (1−ρ)1Pᵀ (spec §11.4), prior (0.05, 0.15, 0.2, 0.25, 0.35). [004] solves ρ < 1
  numerically too, so paper mode differs from verified only at ρ = 1 (Thm 3).
* Fig 9: bounded correlation set (5 mixtures, ρ ~ U(0.3, 0.9)): BP-LIP ε and ε/2, Pufferfish, LDP,
  no observation. All numeric in [004]; one mode.
* Fig 10(a): histogram, d = 10..50, ε = 1, Dirichlet(1) prior: RR-LIP ε and ε/2, GRR-LDP, UE-LIP,
  OUE-LDP (per-bit MMSE), LH-LIP and OLH-LDP with |𝓧'| = 4 (mean over ``--hashes`` random hashes).
* Fig 10(b): d = 20, prior ∝ 1..20, ε = 1, |𝓧'| = 1..20: LH-LIP mean and best over random hashes.
* Fig 11: Hamming distance: (a) binary, P1 ∈ [0, P_max], worst case over the interval (BP-LIP [004]
  Prop. 2 vs the LP optimum vs LDP RR); (b) d = 5, uniform and θ2: RR-LIP vs GRR / LDP LP optimum.
* Fig 12(a): Gowalla New York sample (as [001] Fig 9(b)): RR-LIP, LH-LIP (|𝓧'| = min(round(e^ε+1), 8)),
  UE-LIP, OUE-LDP. Fig 12(b) (UCI Adult) is not reproduced: the data is not in ../shared/data.

    python benchmarks/lip_004_figures.py [--figs 7 8 9 10a 10b 11 12a] [--hashes 10]

Writes ``benchmarks/results/lip_004_fig<k>.csv`` and ``.png`` per figure.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lip_001_figures import gowalla_prior
from lip_common import lip_mse, plot_panels, threshold, write_csv

from lpmech.models import lip
from lpmech.models.lip import lip_closed_forms as cf
from lpmech.models.lip import lip_estimation as est

log = logging.getLogger("lpmech.benchmarks.lip_004")
MODES = ("paper", "verified")
THETA2 = np.array([0.025, 0.025, 0.025, 0.025, 0.9])
P8 = np.array([0.05, 0.15, 0.2, 0.25, 0.35])


def _row(fig, curve, mode, x, mse, ok=True, **kw):
    return {"fig": fig, "curve": curve, "mode": mode, "x": x, "mse": mse,
            "rmse": math.sqrt(max(mse, 0.0)), "lip_ok": bool(ok), **kw}


def fig7(args):
    rows = []
    for name, P in (("theta1", np.full(5, 0.2)), ("theta2", THETA2)):
        grr_of = {}
        for eps in np.arange(1, 5.01, 0.5):
            grr = cf.randomized_response(5, eps).matrix
            grr_of[eps] = (est.mmse_mse(grr, P, np.eye(5)), est.unbiased_mse(grr, P, np.eye(5)))
            for mode in MODES:
                m, ok, _ = lip_mse(P, eps, np.eye(5), mode)
                rows.append(_row("7", "eps-LIP", mode, eps, m, ok, prior=name))
                aware, free = grr_of[eps]
                rows.append(_row("7", "context-aware LDP (GRR+MMSE)", mode, eps, aware, prior=name))
                rows.append(_row("7", "context-free LDP (GRR unbiased)", mode, eps, free, prior=name))
    return rows, [(f"[004] Fig 7, {p}, {m}", {"fig": "7", "prior": p, "mode": m})
                  for p in ("theta1", "theta2") for m in MODES]


def mixture_T(P, rho):
    return rho * np.eye(P.size) + (1 - rho) * P[None, :]


def fig8(args):
    rows = []
    V = est.value_matrix("sum", 5)
    for rho in (1.0, 0.7, 0.3):
        T = None if rho == 1 else mixture_T(P8, rho)
        for eps in np.arange(0.5, 5.01, 0.5):
            ver = lip.solve(P8, eps, V=V, T=T)
            for mode in MODES:
                if mode == "paper" and rho == 1:
                    m, ok, _ = lip_mse(P8, eps, V, "paper")
                else:
                    m, ok = ver.objective, ver.certificate.satisfied
                rows.append(_row("8", f"rho={rho:g}", mode, eps, m, ok, rho=rho))
    for rho in (0.7, 0.3):
        thr = max(math.log(rho / P8.min() + 1 - rho), -math.log(1 - rho))
        print(f"   Fig 8: rho = {rho}: zero MSE from eps = {thr:.3f} (spec §5.6 threshold)")
    return rows, [(f"[004] Fig 8, latent G, {m}", {"fig": "8", "mode": m}) for m in MODES]


def fig9(args):
    rng = np.random.default_rng(args.seed)
    Ts = [mixture_T(P8, r) for r in rng.uniform(0.3, 0.9, 5)]
    V = est.value_matrix("sum", 5)
    var = est.mmse_mse(np.ones((5, 1)), P8, V)
    rows = []
    for eps in np.arange(0.5, 5.01, 0.5):
        for name, kw in (("BP-LIP eps", dict(epsilon=eps, priors=[P8] * 5, T=Ts)),
                         ("BP-LIP eps/2", dict(epsilon=eps / 2, priors=[P8] * 5, T=Ts)),
                         ("Pufferfish eps", dict(prior=P8, epsilon=eps, notion="pufferfish",
                                                 pufferfish_T=Ts)),
                         ("LDP eps", dict(prior=P8, epsilon=eps, notion="ldp"))):
            r = lip.solve(V=V, **kw)
            rows.append(_row("9", name, "verified", eps, r.objective, r.certificate.satisfied))
        rows.append(_row("9", "no observation", "verified", eps, var))
    return rows, [("[004] Fig 9, bounded correlation set (numeric in [004] too)",
                   {"fig": "9", "mode": "verified"})]


def _lh_mean(P, g, eps, V, mode, hashes, rng, ldp=False):
    vals, ok = [], True
    for _ in range(hashes):
        h = rng.integers(0, g, size=P.size)
        if ldp:
            Q = cf.lh_ldp(P.size, h, eps)
            vals.append(est.mmse_mse(Q, P, V))
            continue
        Q, m = lip.lh_lip(P, h, eps, V, paper=(mode == "paper"), rng=rng)
        ok &= lip.lip_epsilon(Q, P) <= eps * (1 + 1e-6)
        vals.append(m)
    return float(np.mean(vals)), float(np.min(vals)), ok


def fig10a(args):
    rows = []
    rng = np.random.default_rng(args.seed)
    for d in range(10, args.max_d + 1, 10):
        P = rng.dirichlet(np.ones(d))
        V = np.eye(d)
        eps = 1.0
        grr = est.mmse_mse(cf.randomized_response(d, eps).matrix, P, V)
        oue = cf.ue_mse(P, *cf.oue_ldp(eps))
        olh = _lh_mean(P, 4, eps, V, "paper", args.hashes, np.random.default_rng(d), ldp=True)[0]
        for mode in MODES:
            for name, e in (("RR eps-LIP", eps), ("RR eps/2-LIP", eps / 2)):
                m, ok, _ = lip_mse(P, e, V, mode, rng=np.random.default_rng(d))
                rows.append(_row("10a", name, mode, d, m, ok))
            rows.append(_row("10a", "RR eps-LDP (GRR)", mode, d, grr))
            q01, q10 = cf.ue_lip_paper(P, eps) if mode == "paper" else cf.ue_lip_optimal(P, eps)
            rows.append(_row("10a", "UE-LIP", mode, d, cf.ue_mse(P, q01, q10),
                             cf.ue_lip_epsilon(P, q01, q10) <= eps * (1 + 1e-6)))
            rows.append(_row("10a", "OUE-LDP", mode, d, oue))
            m, _, ok = _lh_mean(P, 4, eps, V, mode, args.hashes, np.random.default_rng(d))
            rows.append(_row("10a", "LH-LIP (4)", mode, d, m, ok))
            rows.append(_row("10a", "OLH-LDP (4)", mode, d, olh))
        log.info("fig 10a d = %d done", d)
    return rows, [(f"[004] Fig 10(a), histogram, eps = 1, {m}", {"fig": "10a", "mode": m}) for m in MODES]


def fig10b(args):
    d, eps = 20, 1.0
    P = np.arange(1, d + 1) / np.arange(1, d + 1).sum()
    rows = []
    for g in range(1, d + 1):
        for mode in MODES:
            mean, best, ok = _lh_mean(P, g, eps, np.eye(d), mode, args.hashes, np.random.default_rng(g))
            rows.append(_row("10b", "LH-LIP mean over hashes", mode, g, mean, ok))
            rows.append(_row("10b", "LH-LIP best hash", mode, g, best, ok))
    for mode in MODES:
        sel = [r for r in rows if r["mode"] == mode and r["curve"] == "LH-LIP mean over hashes"]
        print(f"   Fig 10(b) {mode}: best mean hash size {min(sel, key=lambda r: r['mse'])['x']} "
              "([004]: around 12 to 16)")
    return rows, [(f"[004] Fig 10(b), d = 20, linear prior, {m}", {"fig": "10b", "mode": m})
                  for m in MODES]


def fig11(args):
    rows = []
    for pmax in (0.1, 0.3):
        set_ = [[1.0, 0.0], [1 - pmax, pmax]]
        for eps in np.arange(0.5, 5.01, 0.5):
            E = math.exp(eps)
            prop2 = cf.bp_binary_paper(0.0, pmax, eps)
            paper = max((1 - p) * prop2[0, 1] + p * prop2[1, 0] for p in (0.0, pmax))
            ok = lip.lip_epsilon(prop2, priors=[[1.0, 0.0], [1 - pmax, pmax]]) <= eps * (1 + 1e-6)
            ver = lip.solve(priors=set_, epsilon=eps, values=[0, 1], objective="hamming")
            for mode in MODES:
                rows.append(_row("11a", "BP-LIP", mode, eps, paper if mode == "paper" else ver.objective,
                                 ok if mode == "paper" else True, pmax=pmax))
                rows.append(_row("11a", "RR-LDP", mode, eps, 1 / (1 + E), pmax=pmax))
    for name, P in (("uniform", np.full(5, 0.2)), ("theta2", THETA2)):
        for eps in np.arange(0.5, 5.01, 0.5):
            E = math.exp(eps)
            Qp = cf.rr_lip_paper(P, eps)
            ok = lip.lip_epsilon(Qp, P) <= eps * (1 + 1e-6)
            ver = lip.solve(P, eps, objective="hamming").objective
            ldp = lip.solve(P, eps, objective="hamming", notion="ldp").objective
            for mode in MODES:
                rows.append(_row("11b", "RR-LIP", mode, eps,
                                 float(P @ (1 - np.diag(Qp))) if mode == "paper" else ver,
                                 ok if mode == "paper" else True, prior=name))
                rows.append(_row("11b", "GRR-LDP", mode, eps, 4 / (E + 4), prior=name))
                rows.append(_row("11b", "LDP optimum", mode, eps, ldp, prior=name))
    for r in rows:
        r["rmse"] = r["mse"]  # Hamming distance is plotted as is
    panels = [(f"[004] Fig 11(a), P1 in [0, {p}], worst case, {m}", {"fig": "11a", "pmax": p, "mode": m})
              for p in (0.1, 0.3) for m in MODES]
    panels += [(f"[004] Fig 11(b), d = 5, {n}, {m}", {"fig": "11b", "prior": n, "mode": m})
               for n in ("uniform", "theta2") for m in MODES]
    return rows, panels


def fig12a(args):
    P, _ = gowalla_prior(args.grid)
    d = P.size
    V = np.eye(d)
    rows = []
    for eps in args.gowalla_eps:
        t0 = time.perf_counter()
        oue = cf.ue_mse(P, *cf.oue_ldp(eps))
        g = min(max(2, round(math.exp(eps) + 1)), 8)
        for mode in MODES:
            m, ok, _ = lip_mse(P, eps, V, mode, rng=np.random.default_rng(0))
            rows.append(_row("12a", "RR-LIP", mode, eps, m, ok, d=d))
            q01, q10 = cf.ue_lip_paper(P, eps) if mode == "paper" else cf.ue_lip_optimal(P, eps)
            rows.append(_row("12a", "UE-LIP", mode, eps, cf.ue_mse(P, q01, q10),
                             cf.ue_lip_epsilon(P, q01, q10) <= eps * (1 + 1e-6), d=d))
            rows.append(_row("12a", "OUE-LDP", mode, eps, oue, d=d))
            m, _, ok = _lh_mean(P, g, eps, V, mode, args.gowalla_hashes, np.random.default_rng(1))
            rows.append(_row("12a", "LH-LIP (|X'|=min(e^eps+1, 8))", mode, eps, m, ok, d=d, g=g))
        log.info("fig 12a eps %g: %.1f s", eps, time.perf_counter() - t0)
    return rows, [(f"[004] Fig 12(a), Gowalla NY ({d} cells), {m}", {"fig": "12a", "mode": m})
                  for m in MODES]


FIGS = {"7": fig7, "8": fig8, "9": fig9, "10a": fig10a, "10b": fig10b, "11": fig11, "12a": fig12a}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figs", nargs="+", default=list(FIGS), choices=list(FIGS))
    ap.add_argument("--hashes", type=int, default=10, help="random hashes per size ([004]: ≤ 100)")
    ap.add_argument("--max-d", type=int, default=50, help="Fig 10(a) largest domain")
    ap.add_argument("--grid", type=int, default=10, help="Fig 12(a) grid side")
    ap.add_argument("--gowalla-eps", type=float, nargs="+", default=[1.0, 2.0, 3.0, 4.0, 5.0])
    ap.add_argument("--gowalla-hashes", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    log.setLevel(logging.INFO)
    for f in args.figs:
        t0 = time.perf_counter()
        rows, panels = FIGS[f](args)
        write_csv(rows, f"lip_004_fig{f}")
        logy = f != "11"
        path = plot_panels(rows, f"lip_004_fig{f}", panels, "x", logy=logy,
                           xlabel={"10a": "d", "10b": "|X'|"}.get(f, "ε"))
        bad = sum(1 for r in rows if not r["lip_ok"])
        print(f"[004] Fig {f}: {len(rows)} points, {bad} paper-mode points NOT eps-LIP, "
              f"{time.perf_counter() - t0:.1f} s -> {path.name}")
    print(f"validity threshold 1/(1+e) = {threshold(1.0):.4f}")


if __name__ == "__main__":
    main()
