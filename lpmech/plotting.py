"""Pictures of mechanisms: where a true location is reported, on the instance's own map.

:func:`plot_mechanism` draws the prior, then one panel per chosen true location v_i with the
output distribution Z[i, ·] (log colour scale, the true location marked, axes in the instance's
coordinates): a heat map on a grid, coloured points for planar or lat/lon points and for a line,
and the whole matrix Z as an image when the domain has no coordinates (graph or matrix metrics).
matplotlib is imported on use.
"""

from __future__ import annotations

import numpy as np

from .errors import InputError
from .instance import Instance
from .mechanism import Mechanism


def default_rows(instance: Instance) -> list[int]:
    """A corner, the centre and the middle of an edge (grids), else the first, middle and last:
    where a mechanism differs most (the boundary truncates the output distribution, the centre
    does not)."""
    return list(_default_picks(instance))


def _default_picks(instance: Instance) -> dict[int, str]:
    K = instance.K
    if instance.kind == "grid":
        W, H = instance.shape
        picks = [(0, "corner"), ((H // 2) * W + W // 2, "centre"), ((H // 2) * W, "edge middle")]
    else:
        picks = [(0, "first"), (K // 2, "middle"), (K - 1, "last")]
    out: dict[int, str] = {}
    for r, why in picks:  # distinct, in order
        out.setdefault(r, why)
    return out


def _axis_labels(instance: Instance) -> tuple[str, str]:
    unit = f" ({instance.unit})" if instance.unit else ""
    if instance.kind == "latlon":
        return "longitude (degrees)", "latitude (degrees)"
    if instance.kind == "line":
        return f"position{unit}", ""
    return f"x{unit}", f"y{unit}"


def plot_mechanism(mechanism: Mechanism, instance: Instance, rows=None, *, title: str = "",
                   show_prior: bool = True):
    """A matplotlib Figure of ``mechanism``'s output distributions for the true locations ``rows``.

    On a map (grid, points, lat/lon, line): one panel per true location v_i showing Z[i, ·]
    (log colour scale, v_i marked with a red x, its prior probability in the panel title), after a
    first panel with the prior itself (``show_prior``). Axes are in the instance's coordinates and
    unit. By default the true locations are a corner, the centre and the middle of an edge of a
    grid (else the first, middle and last location): boundary locations get a truncated output
    distribution, the centre does not; a note under the panels says so. Without coordinates (graph
    or matrix metrics) the whole matrix Z is drawn as an image.

    Args:
        mechanism: a K×K mechanism over the instance's locations.
        instance: gives the coordinates (and the grid shape) to draw on.
        rows: true-location indices, one panel each (default :func:`default_rows`).
        title: the figure's title.
        show_prior: draw the prior as the first panel.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    z = mechanism.matrix
    K = instance.K
    if z.shape != (K, K):
        raise InputError(f"mechanism of shape {z.shape} does not fit an instance of K = {K}")
    picks = _default_picks(instance) if rows is None else {int(r): "chosen" for r in rows}
    rows = list(picks)
    if not rows or min(rows) < 0 or max(rows) >= K:
        raise InputError(f"rows to plot must be indices in [0, {K})")
    positive = z[z > 0]
    norm = LogNorm(vmin=max(positive.min(), positive.max() * 1e-12), vmax=positive.max())
    prior = np.asarray(instance.prior, float)

    if instance.coords is None:  # graph or matrix metric: show Z itself
        fig, ax = plt.subplots(figsize=(5.5, 4.5))
        im = ax.imshow(np.where(z > 0, z, np.nan), norm=norm, cmap="viridis")
        ax.set_xlabel("reported location k")
        ax.set_ylabel("true location i")
        fig.colorbar(im, ax=ax, label="Pr[report k | true i]  (white: 0)")
    else:
        n = len(rows) + bool(show_prior)
        fig, axes = plt.subplots(1, n, figsize=(4.4 * n, 4.6), squeeze=False, layout="constrained")
        xy = np.asarray(instance.coords, float)
        if instance.kind == "latlon":
            xy = xy[:, ::-1]  # plot lon on x, lat on y
        xlabel, ylabel = _axis_labels(instance)

        def draw(ax, values, vnorm, cmap):
            v = np.where(values > 0, values, np.nan)
            if instance.kind == "grid":
                W, H = instance.shape
                c = instance.cell
                im = ax.imshow(v.reshape(H, W), norm=vnorm, cmap=cmap, origin="lower",
                               extent=(-c / 2, (W - 0.5) * c, -c / 2, (H - 0.5) * c))
            else:
                im = ax.scatter(xy[:, 0], xy[:, 1], c=v, norm=vnorm, cmap=cmap, s=40)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_aspect("equal" if instance.kind != "line" else "auto")
            return im

        panels = list(axes[0])
        if show_prior:
            ax = panels.pop(0)
            pim = draw(ax, prior, LogNorm(vmin=max(prior[prior > 0].min(), prior.max() * 1e-12),
                                          vmax=prior.max()), "magma")
            uniform = bool(np.allclose(prior, prior[0]))
            ax.set_title("prior" + (" (uniform)" if uniform else ""))
            fig.colorbar(pim, ax=ax, label="prior probability", shrink=0.8)
        for ax, r in zip(panels, rows):
            im = draw(ax, z[r], norm, "viridis")
            ax.plot(*xy[r], marker="x", color="red", markersize=10, mew=2)
            why = "" if picks[r] == "chosen" else f" ({picks[r]})"
            ax.set_title(f"true location {r}{why}, prior {prior[r]:.3g}", fontsize=9)
        fig.colorbar(im, ax=panels, label="Pr[report | true]  (white: 0)")
        if all(why != "chosen" for why in picks.values()):
            fig.supxlabel("panels: " + ", ".join(picks.values()) + " (boundary locations get a "
                          "truncated output distribution; choose others with rows=...)", fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


def save_figure(fig, path) -> None:
    """Write ``fig`` as a PNG to ``path`` atomically, then close it."""
    import matplotlib.pyplot as plt

    from .io import atomic_write, check_output_path

    p = check_output_path(path, suffix=".png")
    try:
        atomic_write(p, lambda f: fig.savefig(f, format="png", dpi=110))
    finally:
        plt.close(fig)
