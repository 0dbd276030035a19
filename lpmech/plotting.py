"""Pictures of mechanisms: where a true location is reported, on the instance's own map.

:func:`plot_mechanism` draws one panel per chosen true location v_i with the output distribution
Z[i, ·] (log colour scale, the true location marked): a heat map on a grid, coloured points for
planar or lat/lon points and for a line, and the whole matrix Z as an image when the domain has no
coordinates (graph or matrix metrics). matplotlib is imported on use.
"""

from __future__ import annotations

import numpy as np

from .errors import InputError
from .instance import Instance
from .mechanism import Mechanism


def default_rows(instance: Instance) -> list[int]:
    """A corner, the centre and the middle of an edge (grids), else the first, middle and last."""
    K = instance.K
    if instance.kind == "grid":
        W, H = instance.shape
        picks = [0, (H // 2) * W + W // 2, (H // 2) * W]
    else:
        picks = [0, K // 2, K - 1]
    return list(dict.fromkeys(picks))  # distinct, in order


def plot_mechanism(mechanism: Mechanism, instance: Instance, rows=None, *, title: str = ""):
    """A matplotlib Figure of ``mechanism``'s output distributions for the true locations ``rows``.

    Args:
        mechanism: a K×K mechanism over the instance's locations.
        instance: gives the coordinates (and the grid shape) to draw on.
        rows: true-location indices, one panel each (default :func:`default_rows`).
        title: the figure's title.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    z = mechanism.matrix
    K = instance.K
    if z.shape != (K, K):
        raise InputError(f"mechanism of shape {z.shape} does not fit an instance of K = {K}")
    rows = default_rows(instance) if rows is None else [int(r) for r in rows]
    if not rows or min(rows) < 0 or max(rows) >= K:
        raise InputError(f"rows to plot must be indices in [0, {K})")
    positive = z[z > 0]
    norm = LogNorm(vmin=max(positive.min(), positive.max() * 1e-12), vmax=positive.max())

    if instance.coords is None:  # graph or matrix metric: show Z itself
        fig, ax = plt.subplots(figsize=(5.5, 4.5))
        im = ax.imshow(np.where(z > 0, z, np.nan), norm=norm, cmap="viridis")
        ax.set_xlabel("reported location k")
        ax.set_ylabel("true location i")
        fig.colorbar(im, ax=ax, label="Pr[report k | true i]  (white: 0)")
    else:
        fig, axes = plt.subplots(1, len(rows), figsize=(4.2 * len(rows), 4), squeeze=False)
        xy = np.asarray(instance.coords, float)
        if instance.kind == "latlon":
            xy = xy[:, ::-1]  # plot lon on x, lat on y
        for ax, r in zip(axes[0], rows):
            p = np.where(z[r] > 0, z[r], np.nan)
            if instance.kind == "grid":
                W, H = instance.shape
                c = instance.cell
                im = ax.imshow(p.reshape(H, W), norm=norm, cmap="viridis", origin="lower",
                               extent=(-c / 2, (W - 0.5) * c, -c / 2, (H - 0.5) * c))
            else:
                im = ax.scatter(xy[:, 0], xy[:, 1], c=p, norm=norm, cmap="viridis", s=40)
            ax.plot(*xy[r], marker="x", color="red", markersize=10, mew=2)
            ax.set_title(f"true location {r}")
            ax.set_aspect("equal" if instance.kind != "line" else "auto")
        fig.colorbar(im, ax=list(axes[0]), label="Pr[report | true]  (white: 0)")
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
