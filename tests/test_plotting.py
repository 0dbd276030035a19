"""Pictures show the matrix they claim to show: the drawn data are read back from the figure."""

import os

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg
import networkx as nx
import numpy as np
import pytest

from lpmech import instance as li
from lpmech.cli import main
from lpmech.errors import InputError
from lpmech.models import baselines
from lpmech.plotting import default_rows, plot_mechanism, save_figure


def drawn(values):
    """Masked/NaN-for-zero data as drawn, back to plain probabilities (0 where blank)."""
    a = np.ma.filled(np.ma.masked_invalid(np.ma.asarray(values, dtype=float)), 0.0)
    return np.asarray(a, float)


def test_grid_panels_show_the_rows_on_the_map():
    inst = li.grid(4, 3, cell=0.5)
    mech = baselines.planar_laplace(inst, 1.0)
    rows = [0, 5, 11]
    fig = plot_mechanism(mech, inst, rows)
    panels = [ax for ax in fig.axes if ax.images and ax.get_title().startswith("true location")]
    assert [ax.get_title() for ax in panels] == [f"true location {r}, prior {1 / 12:.3g}" for r in rows]
    for ax in panels:
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("x (km)", "y (km)")
    for ax, r in zip(panels, rows):
        img = drawn(ax.images[0].get_array())
        # row-major grid numbering: index = row·W + col, drawn with origin at the bottom left
        expected = np.array([[mech.matrix[r, y * 4 + x] for x in range(4)] for y in range(3)])
        np.testing.assert_allclose(img, expected, rtol=1e-12)
        # the red cross sits on the true cell's centre
        cross = ax.lines[0].get_xydata()[0]
        np.testing.assert_allclose(cross, [(r % 4) * 0.5, (r // 4) * 0.5])


def test_points_and_latlon_scatter_colours_are_the_rows():
    rng = np.random.default_rng(0)
    for inst in (li.points(rng.uniform(0, 5, (9, 2))),
                 li.latlon(np.column_stack([41.9 + rng.uniform(0, 0.05, 9),
                                            12.5 + rng.uniform(0, 0.05, 9)]))):
        mech = baselines.exponential(inst, 1.0)
        fig = plot_mechanism(mech, inst, [2, 7])
        panels = [ax for ax in fig.axes if ax.collections and ax.get_title().startswith("true")]
        assert len(panels) == 2
        for ax, r in zip(panels, [2, 7]):
            np.testing.assert_allclose(drawn(ax.collections[0].get_array()), mech.matrix[r])
            xy = ax.collections[0].get_offsets()
            coords = inst.coords if inst.kind == "points" else inst.coords[:, ::-1]
            np.testing.assert_allclose(xy, coords)


def test_graph_without_coordinates_shows_the_whole_matrix():
    inst = li.from_graph(nx.path_graph(6))
    mech = baselines.exponential(inst, 0.5)
    fig = plot_mechanism(mech, inst)
    np.testing.assert_allclose(drawn(fig.axes[0].images[0].get_array()), mech.matrix)


def test_default_rows_and_bad_rows():
    assert default_rows(li.grid(5, 4)) == [0, 2 * 5 + 2, 2 * 5]
    assert default_rows(li.line(7)) == [0, 3, 6]
    assert default_rows(li.line(1)) == [0]
    inst = li.grid(2, 2)
    mech = baselines.exponential(inst, 1.0)
    with pytest.raises(InputError, match=r"indices in \[0, 4\)"):
        plot_mechanism(mech, inst, [4])
    with pytest.raises(InputError, match="does not fit"):
        plot_mechanism(mech, li.grid(3, 3))


def test_save_figure_writes_a_png_atomically(tmp_path):
    inst = li.grid(3, 3)
    fig = plot_mechanism(baselines.exponential(inst, 1.0), inst)
    save_figure(fig, tmp_path / "m.png")
    assert os.listdir(tmp_path) == ["m.png"]
    img = mpimg.imread(tmp_path / "m.png")
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100
    with pytest.raises(InputError, match=r"must end in \.png"):
        save_figure(fig, tmp_path / "m.jpg")


def test_cli_plot_written_only_on_success(tmp_path, capsys):
    ok = tmp_path / "ok.png"
    assert main(["omg", "--grid", "3x3", "--plot", str(ok)]) == 0
    assert mpimg.imread(ok).shape[0] > 100
    bad = tmp_path / "bad.png"
    assert main(["omg", "--grid", "3x3", "--max-loss", "0.01", "--plot", str(bad)]) == 3
    assert not bad.exists()
    assert sorted(os.listdir(tmp_path)) == ["ok.png"]
    capsys.readouterr()


def test_prior_panel_shows_the_prior_and_default_panels_are_explained():
    """The first panel is the instance's prior (read back from the image); default panels are a
    corner, the centre and an edge middle, named in their titles and in a note under them."""
    prior = np.random.default_rng(3).dirichlet(np.ones(12))
    inst = li.grid(4, 3).with_prior(prior)
    fig = plot_mechanism(baselines.exponential(inst, 1.0), inst)
    prior_ax = next(ax for ax in fig.axes if ax.get_title() == "prior")
    expected = np.array([[prior[y * 4 + x] for x in range(4)] for y in range(3)])
    np.testing.assert_allclose(drawn(prior_ax.images[0].get_array()), expected, rtol=1e-12)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title().startswith("true location")]
    assert titles == [f"true location {r} ({why}), prior {prior[r]:.3g}"
                      for r, why in ((0, "corner"), (1 * 4 + 2, "centre"), (1 * 4, "edge middle"))]
    assert any("corner, centre, edge middle" in t.get_text() for t in fig.texts)
    lat = li.latlon(np.array([[41.9, 12.5], [41.95, 12.52], [41.92, 12.55]]))
    fig = plot_mechanism(baselines.exponential(lat, 1.0), lat, show_prior=False)
    assert all((ax.get_xlabel(), ax.get_ylabel()) == ("longitude (degrees)", "latitude (degrees)")
               for ax in fig.axes if ax.get_title().startswith("true location"))
    assert not any(ax.get_title().startswith("prior") for ax in fig.axes)
