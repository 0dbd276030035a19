"""Shared helpers of the LIP benchmark scripts (``benchmarks/lip_*.py``): the per-user quantities
of the papers' curves in both modes, CSV and PNG output.

``paper`` mode uses the papers' closed forms as printed (and records whether each point is really
ε-LIP); ``verified`` mode uses the certified optimum of :func:`lpmech.models.lip.solve` (exact
vertex method for d ≤ 8, column generation with local pricing above).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from lpmech import io as lpio
from lpmech.models import lip
from lpmech.models.lip import lip_closed_forms as cf
from lpmech.plotting import save_figure

OUT = Path(__file__).resolve().parent / "results"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def lip_mse(P, eps, V, mode, rng=None, **kw) -> tuple[float, bool, float]:
    """(per-user MSE, certified ε-LIP?, realised ε) of RR-LIP in ``mode`` for prior P."""
    if mode == "paper":
        Q = cf.rr_lip_paper(P, eps)
        real = lip.lip_epsilon(Q, P)
        from lpmech.models.lip.lip_estimation import mmse_mse
        return mmse_mse(Q, P, V), real <= eps * (1 + 1e-6), real
    method = "auto" if len(P) <= lip.VERTEX_MAX_D else "local"
    r = lip.solve(P, eps, V=V, method=method, rng=rng or np.random.default_rng(0), **kw)
    return r.objective, r.certificate.satisfied, r.certificate.realized_epsilon


def write_csv(rows: list[dict], name: str) -> Path:
    OUT.mkdir(exist_ok=True)
    return lpio.write_csv(OUT / f"{name}.csv", rows)


#: the bottom of a log-scale panel: smaller values (down to 0) are drawn on it as ▼
LOG_FLOOR = 1e-6


def plot_panels(rows: list[dict], name: str, panels: list[tuple[str, dict]], x: str, *,
                y: str = "rmse", logy: bool = True, xlabel: str | None = None) -> Path:
    """One subplot per (title, filter) panel; one line per ``curve``; dashed = paper mode; a red
    ring marks a paper-mode point that is NOT ε-LIP; on a log scale a value below ``LOG_FLOOR`` is a
    ▼ on the floor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(panels)
    cols = min(n, 3)
    fig, axes = plt.subplots((n + cols - 1) // cols, cols, figsize=(5 * cols, 3.8 * ((n + cols - 1) // cols)),
                             squeeze=False)
    for ax, (title, flt) in zip(axes.ravel(), panels, strict=False):
        sel = [r for r in rows if all(r.get(k) == v for k, v in flt.items())]
        curves = list(dict.fromkeys((r["curve"], r["mode"]) for r in sel))
        names = list(dict.fromkeys(r["curve"] for r in rows))  # one colour per curve, all panels
        for curve, mode in curves:
            pts = sorted((r[x], r[y], r.get("lip_ok", True)) for r in sel
                         if r["curve"] == curve and r["mode"] == mode)
            xs, ys, _ = zip(*pts, strict=True)
            ls = "--" if mode == "paper" else "-"
            color = f"C{names.index(curve) % 10}"
            if logy:  # values below the floor (CIP's tails at large N, down to 0) sit on it as ▼
                ys = np.array(ys, float)
                low = ys < LOG_FLOOR
                ys = np.maximum(ys, LOG_FLOOR)
                if low.any():
                    ax.plot(np.array(xs)[low], ys[low], "v", color=color, ms=6)
            ax.plot(xs, ys, ls, marker=".", color=color, label=f"{curve} ({mode})")
            bad = [(a, b) for (a, _, o), b in zip(pts, ys, strict=True) if o is False]
            if bad:
                ax.plot(*zip(*bad, strict=True), "o", mfc="none", mec="red", ms=8)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(xlabel or x)
        ax.set_ylabel(y)
        if logy:
            ax.set_yscale("log")
        ax.legend(fontsize=6)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    fig.tight_layout()
    path = OUT / f"{name}.png"
    save_figure(fig, path)
    return path


def threshold(eps: float) -> float:
    """The validity threshold 1/(1 + e^ε) of the RR-LIP closed form."""
    return 1 / (1 + math.exp(eps))
