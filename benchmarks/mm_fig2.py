"""Fig. 2 of seed 003: error of the E_{L¹}-LDP range mechanism (§4.1) against ε and D.

Data: n users, each coordinate drawn independently from a Zipf(1.1) law truncated to [m]
(P(k) ∝ k^−1.1, rank 1 = value 0; spec §5.16). For each D and ε, ``reps`` runs of encoding and
estimation (``lpmech.models.matrix.range_mechanism``) give

* the average squared error of single-cell estimates (all cells when m^D ≤ ``--max-cells``, else
  that many uniformly sampled cells), beside its exact value and the paper's Theorem 2 line
  κ^{2D}2^{−D}(1−q^{2D})n (constant 1), which the paper calls an upper bound;
* the average squared error over 100 random ranges (per dimension l ≤ r uniform, spec §5.17),
  beside the exact value, the Theorem 3 expression and the valid bound n κ^{2D}((1+q²)/2)^{D_R};
* ε-LDP baselines at the same settings, exact (data-independent) variances: hierarchical
  histograms (binary tree per dimension, Kronecker product over dimensions) and the Haar wavelet
  strategy (D ≤ 2), each as a Laplace matrix mechanism calibrated to ε-LDP by Proposition 2 with
  E ≡ ε, answered by least squares (B = W A⁺); and for D = 1 the §3.3 prefix mechanism under
  ε|x−x'| (program (1), solved). These are Laplace versions of the strategies of [14]/[45]; the
  sampled-level HRR/OLH oracles of [14] are not implemented.

Writes ``benchmarks/results/mm_fig2.csv`` (long format) and ``.png``.

    python benchmarks/mm_fig2.py [--dims 1 2 3 6] [--eps 0.5 1 1.5 2 3 4 5] [--n 1000] [--m 10]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from lpmech.io import write_csv
from lpmech.models.matrix import matrix_mechanism as mm
from lpmech.models.matrix import range_mechanism as rm
from lpmech.plotting import save_figure

OUT = Path(__file__).resolve().parent / "results"


def zipf(n: int, D: int, m: int, rng: np.random.Generator, a: float = 1.1) -> np.ndarray:
    p = np.arange(1, m + 1, dtype=float) ** -a
    return rng.choice(m, size=(n, D), p=p / p.sum())


def random_ranges(Q: int, D: int, m: int, rng: np.random.Generator) -> np.ndarray:
    ends = np.sort(rng.integers(0, m, (Q, D, 2)), axis=2)
    return ends


def cells(D: int, m: int, max_cells: int, rng: np.random.Generator) -> np.ndarray:
    if m ** D <= max_cells:
        c = mm.cell_coordinates((m,) * D).astype(int)
    else:
        c = rng.integers(0, m, (max_cells, D))
    return np.stack([c, c], axis=2)


def _chunked(fn, R, step=1000):
    return np.concatenate([fn(R[i:i + step]) for i in range(0, len(R), step)])


def laplace_baseline(strategy_1d: str, D: int, m: int, eps: float, n: int, queries: np.ndarray):
    """Mean exact variance of the ε-LDP Laplace matrix mechanism with a Kronecker strategy."""
    A1 = mm.make_strategy(strategy_1d, m)
    A = np.ones((1, 1))
    for _ in range(D):
        A = np.kron(A1, A)
    coords = mm.cell_coordinates((m,) * D)
    var_rows = np.ptp(A, axis=1) > 0
    if strategy_1d == "hierarchical":  # binary: Σ_k |a−b| = |col x| + |col x'| − 2 overlap
        G1 = A1.T @ A1
        G = np.ones((1, 1))
        for _ in range(D):
            G = np.kron(G1, G)
        sens = float((np.diag(G)[:, None] + np.diag(G)[None, :] - 2 * G).max())
    else:
        sens = float(mm.pair_loss(A[var_rows], np.ones(int(var_rows.sum()))).max())
    s = np.where(var_rows, sens / eps, 0.0)
    cert = mm.certify_strategy(A, s, mm.metric_from_matrix(
        eps * (1 - np.eye(m ** D)), eps, check_triangle=False)) if m ** D <= 200 else None
    if cert is not None:
        assert cert.satisfied, "baseline calibration is not eps-LDP"
    inside = ((coords[None, :, :] >= queries[:, None, :, 0]) &
              (coords[None, :, :] <= queries[:, None, :, 1])).all(axis=2).astype(float)
    B = inside @ np.linalg.pinv(A)
    return float((2 * n * (B ** 2) @ (s ** 2)).mean())


def _decompose(lo: int, hi: int, m: int, b: int) -> int:
    """Number of nodes of the canonical decomposition of [lo, hi] in the b-ary tree over [m]."""
    size = 1
    while size < m:
        size *= b

    def count(start, size):
        end = min(start + size, m) - 1
        if start > hi or end < lo or start >= m:
            return 0
        if lo <= start and end <= hi:
            return 1
        return sum(count(start + k * size // b, size // b) for k in range(b))

    return count(0, size)


def hh_oue_variance(D: int, m: int, eps: float, n: int, queries: np.ndarray, counts, b: int = 2):
    """Exact variance of hierarchical histograms with level sampling and OUE (CKS [14] style, eps-LDP).

    Each user samples one of the T = H^D − 1 level tuples (H levels per dimension, root included;
    the all-root count is n, known) and reports its node there by OUE (p = 1/2, q = 1/(e^eps+1));
    node estimates are scaled by T. A range sums the nodes of its canonical decomposition (dec),
    and (derived here) Var = n T |dec| q(1−q)/(p−q)² + c(R) (T (p(1−p) − q(1−q))/(p−q)² + T − 1)."""
    levels, size = 1, 1
    while size < m:
        size *= b
        levels += 1
    T = levels ** D - 1
    p, q = 0.5, 1 / (math.exp(eps) + 1)
    out = []
    for R, c in zip(queries, counts):
        if all(lo == 0 and hi == m - 1 for lo, hi in R):
            out.append(0.0)
            continue
        dec = math.prod(_decompose(int(lo), int(hi), m, b) for lo, hi in R)
        out.append(n * T * dec * q * (1 - q) / (p - q) ** 2
                   + c * (T * (p * (1 - p) - q * (1 - q)) / (p - q) ** 2 + T - 1))
    return float(np.mean(out))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[1, 2, 3, 6])
    ap.add_argument("--eps", type=float, nargs="+", default=[0.5, 1, 1.5, 2, 3, 4, 5])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--m", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--max-cells", type=int, default=10_000)
    ap.add_argument("--baseline-max-dim", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    n, m = args.n, args.m
    rows = []

    def add(D, eps, query, mechanism, value):
        rows.append(dict(D=D, epsilon=eps, query=query, mechanism=mechanism, value=value))

    print(f"{'D':>2} {'eps':>4} {'cell emp':>10} {'cell exact':>10} {'Thm2':>10} {'range emp':>10} "
          f"{'range exact':>11} {'Thm3 avg':>10} {'HH-OUE':>10} {'HH eLDP':>10} {'Haar eLDP':>10} "
          f"{'prefix MM':>10} {'s':>5}")
    for D in args.dims:
        rng = np.random.default_rng(args.seed + D)
        X = zipf(n, D, m, rng)
        C = cells(D, m, args.max_cells, rng)
        R = random_ranges(args.queries, D, m, rng)
        sizes = (m,) * D
        truth_c = _chunked(lambda q, X=X, sizes=sizes: rm.true_counts(X, q, sizes), C)
        truth_r = rm.true_counts(X, R, sizes)
        DR = rm.nontrivial_dims(R, sizes)
        lap = {}
        if D <= args.baseline_max_dim:
            lap = {k: laplace_baseline(k, D, m, 1.0, n, R) for k in ("hierarchical", "haar")[:1 + (D <= 2)]}
        for eps in args.eps:
            t0 = time.perf_counter()
            emp_c, emp_r = [], []
            for _ in range(args.reps):
                rep = rm.encode(X, sizes, eps, rng)
                emp_c.append(np.mean((_chunked(lambda q, rep=rep: rm.range_query(rep, q), C) - truth_c) ** 2))
                emp_r.append(np.mean((rm.range_query(rep, R) - truth_r) ** 2))
            exact_c = float(_chunked(
                lambda q, X=X, sizes=sizes, eps=eps: rm.range_variance(X, q, sizes, eps), C).mean())
            exact_r = float(rm.range_variance(X, R, sizes, eps).mean())
            thm2 = float(rm.paper_bound(D, D, eps, n))
            thm3 = float(np.mean(rm.paper_bound(D, DR, eps, n)))
            valid = float(np.mean(rm.valid_bound(D, DR, eps, n)))
            for k, v in (("ours_empirical", np.mean(emp_c)), ("ours_exact", exact_c),
                         ("paper_thm2", thm2)):
                add(D, eps, "cell", k, float(v))
            for k, v in (("ours_empirical", np.mean(emp_r)), ("ours_exact", exact_r),
                         ("paper_thm3", thm3), ("valid_bound", valid)):
                add(D, eps, "range", k, float(v))
            hh = haar = pre = math.nan
            oue = min(hh_oue_variance(D, m, eps, n, R, truth_r, b) for b in (2, 4))
            add(D, eps, "range", "hh_oue_eps_ldp", oue)
            if D <= args.baseline_max_dim:  # Laplace: variance ∝ 1/ε², computed once at ε = 1
                hh = lap["hierarchical"] / eps ** 2
                add(D, eps, "range", "hh_laplace_eps_ldp", hh)
                if D <= 2:
                    haar = lap["haar"] / eps ** 2
                    add(D, eps, "range", "haar_laplace_eps_ldp", haar)
            if D == 1:
                W = np.array([[1.0 if lo <= x <= hi else 0.0 for x in range(m)] for (lo, hi), in R])
                res = mm.solve(W, mm.line_metric(m, eps), strategy="prefix", n=n)
                pre = float(res.mechanism.query_variances(n).mean())
                add(D, eps, "range", "prefix_mm_line_metric", pre)
            print(f"{D:>2} {eps:>4g} {np.mean(emp_c):>10.4g} {exact_c:>10.4g} {thm2:>10.4g} "
                  f"{np.mean(emp_r):>10.4g} {exact_r:>11.4g} {thm3:>10.4g} {oue:>10.4g} {hh:>10.4g} "
                  f"{haar:>10.4g} {pre:>10.4g} {time.perf_counter() - t0:>5.1f}", flush=True)
    write_csv(OUT / "mm_fig2.csv", rows)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def series(D, query, mech):
        sel = [r for r in rows if r["D"] == D and r["query"] == query and r["mechanism"] == mech]
        return [r["epsilon"] for r in sel], [r["value"] for r in sel]

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    ax = axes[0]
    for i, D in enumerate(d for d in args.dims if d <= args.baseline_max_dim):
        ax.semilogy(*series(D, "range", "ours_empirical"), "o", color=f"C{i}", label=f"D={D} ours (sim.)")
        ax.semilogy(*series(D, "range", "ours_exact"), "-", color=f"C{i}", lw=1)
        ax.semilogy(*series(D, "range", "hh_oue_eps_ldp"), "-.", color=f"C{i}",
                    label=f"D={D} HH+OUE eps-LDP")
        ax.semilogy(*series(D, "range", "hh_laplace_eps_ldp"), "--", color=f"C{i}", lw=0.8,
                    label=f"D={D} HH Laplace eps-LDP")
        if D <= 2:
            ax.semilogy(*series(D, "range", "haar_laplace_eps_ldp"), ":", color=f"C{i}",
                        lw=0.8, label=f"D={D} Haar Laplace eps-LDP")
    ax.set_xlabel("epsilon")
    ax.set_ylabel(f"avg squared error, {args.queries} random ranges")
    ax.set_title(f"(a) ranges, m = {m}, n = {n} (line: exact)")
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    ax = axes[1]
    Dmax = max(args.dims)
    ax.semilogy(*series(Dmax, "cell", "ours_empirical"), "o", label="single cells, simulated")
    ax.semilogy(*series(Dmax, "cell", "ours_exact"), "-", label="single cells, exact")
    ax.semilogy(*series(Dmax, "range", "ours_empirical"), "s", label="ranges, simulated")
    ax.semilogy(*series(Dmax, "range", "ours_exact"), "-", label="ranges, exact")
    ax.semilogy(*series(Dmax, "cell", "paper_thm2"), "k--", label="Thm 2 line (constant 1)")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("avg squared error")
    ax.set_title(f"(b) D = {Dmax}, m = {m}, n = {n}")
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, OUT / "mm_fig2.png")
    print(f"wrote {OUT / 'mm_fig2.csv'} and {OUT / 'mm_fig2.png'}")


if __name__ == "__main__":
    main()
