"""Problem instances: a finite domain with its metric, prior, loss and Geo-Ind neighbour threshold.

Every check of bad input lives here. An :class:`Instance` is immutable and always valid: the
builders (:func:`grid`, :func:`points`, :func:`latlon`, :func:`from_graph`, :func:`from_matrix`,
:func:`line`) and the file readers (:func:`read_distances`, :func:`read_points`, :func:`read_edges`)
validate what they are given and raise :class:`~lpmech.errors.InputError` with a message that says
what is wrong and what to do.

Notation follows Qiu et al., LR-Geo §1: K locations v_1..v_K, metric d (the Geo-Ind distance), prior p
over the real locations, loss L[i, k] of reporting v_k when the real location is v_i (the OMG objective (4)
is Σ_i p_i Σ_k L[i, k] z[i, k]), and neighbour threshold γ of (ε, γ)-Geo-Ind (Def. 2.1).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import zipfile
import zlib
from pathlib import Path

import networkx as nx
import numpy as np

from .errors import InputError
from .resources import require_instance_memory

EARTH_RADIUS_KM = 6371.0088  # IUGG mean Earth radius, used by the Haversine metric
METRIC_TOL = 1e-9  # relative tolerance of the metric checks (scaled by the largest distance)
PRIOR_TOL = 1e-6  # a prior may miss 1 by this much; it is then renormalised exactly


@dataclasses.dataclass(frozen=True, eq=False)
class Instance:
    """A validated problem instance. Build it with the module's builders, not directly.

    Attributes:
        metric: K×K distance matrix d (the privacy metric of Geo-Ind / d-privacy).
        prior: length-K prior p over the real locations (sums to 1).
        loss: K×K loss (cost) matrix L[i, k]; defaults to the metric.
        gamma: neighbour threshold γ > 0 of (ε, γ)-Geo-Ind; ``inf`` is classical Geo-Ind.
        coords: K×2 coordinates where the domain has them ((x, y), or (lat, lon) for Haversine).
        kind: how the instance was built: grid, points, latlon, graph, matrix or line.
        unit: the distance unit (ε is per unit).
        shape: (width, height) of a grid instance.
        cell: cell size of a grid or line instance.
        labels: node labels of a graph instance, in matrix order.
        is_metric: whether d is a metric: checked for a user matrix, by construction for the other
            builders (a norm, the Haversine distance, shortest paths); False only with
            ``allow_nonmetric``.
    """

    metric: np.ndarray
    prior: np.ndarray
    loss: np.ndarray
    gamma: float = math.inf
    coords: np.ndarray | None = None
    kind: str = "matrix"
    unit: str = ""
    shape: tuple[int, int] | None = None
    cell: float | None = None
    labels: tuple | None = None
    is_metric: bool = True

    @property
    def K(self) -> int:
        """Number of locations."""
        return self.metric.shape[0]

    def with_prior(self, prior) -> Instance:
        """A copy with another prior: ``"uniform"``, or a probability vector summing to 1.

        Parameters
        ----------
        prior : str or array_like
            ``"uniform"``, or K non-negative numbers summing to 1.

        Returns
        -------
        Instance
            The copy; this instance is unchanged.

        Raises
        ------
        InputError
            A prior of the wrong length, negative, NaN or not summing to 1.

        Examples
        --------
        >>> from lpmech import instance as li
        >>> print(li.grid(2, 2).with_prior([0.1, 0.2, 0.3, 0.4]).prior)
        [0.1 0.2 0.3 0.4]
        >>> print(li.grid(2, 2).with_prior("uniform").prior)
        [0.25 0.25 0.25 0.25]
        """
        return dataclasses.replace(self, prior=make_prior(prior, self.K))

    def with_counts(self, counts) -> Instance:
        """A copy whose prior is proportional to non-negative ``counts``.

        Parameters
        ----------
        counts : array_like
            K non-negative finite numbers, not all zero.

        Returns
        -------
        Instance
            The copy; this instance is unchanged.

        Raises
        ------
        InputError
            Counts of the wrong length, negative, non-finite or all zero.

        Examples
        --------
        >>> from lpmech import instance as li
        >>> inst = li.grid(2, 2).with_counts([1, 1, 2, 0])
        >>> print(inst.prior)
        [0.25 0.25 0.5  0.  ]
        >>> print(round(float(inst.prior.sum()), 6))
        1.0
        """
        return dataclasses.replace(self, prior=prior_from_counts(counts, self.K))

    def with_loss(self, loss) -> Instance:
        """A copy with another K×K loss matrix."""
        return dataclasses.replace(self, loss=_check_loss(loss, self.K))

    def with_gamma(self, gamma: float) -> Instance:
        """A copy with another neighbour threshold γ.

        Parameters
        ----------
        gamma : float
            Neighbour threshold γ > 0 (``math.inf``: every pair is a neighbour pair).

        Returns
        -------
        Instance
            The copy; this instance is unchanged.

        Raises
        ------
        InputError
            γ not a positive number.

        Examples
        --------
        On a 2×2 unit grid γ = 1 keeps the 8 ordered side pairs and drops the diagonals:

        >>> from lpmech import instance as li
        >>> print(li.grid(2, 2).neighbours().sum(), li.grid(2, 2).with_gamma(1.0).neighbours().sum())
        12 8
        """
        return dataclasses.replace(self, gamma=_check_gamma(gamma))

    def neighbours(self) -> np.ndarray:
        """Boolean K×K mask of ordered neighbour pairs (i ≠ j and d_ij ≤ γ), Def. 2.1."""
        mask = self.metric <= self.gamma
        np.fill_diagonal(mask, False)
        return mask

    def describe(self) -> str:
        """One line naming the instance, for logs and the CLI."""
        extra = f" {self.shape[0]}x{self.shape[1]} cell={self.cell:g}" if self.shape else ""
        return f"{self.kind}{extra} K={self.K} gamma={self.gamma:g} unit={self.unit or '-'}"


# ----------------------------------------------------------------------------------------- checks


def _as_float_array(x, name: str, copy: bool = True) -> np.ndarray:
    if isinstance(x, Instance):
        raise InputError(f"{name} must be an array of numbers, got an Instance")
    if np.iscomplexobj(x):
        raise InputError(f"{name} must be real, got complex numbers (a complex matrix is not read as "
                         "its real part)")
    try:
        a = np.array(x, dtype=float) if copy else np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numeric: {exc}") from None
    if not copy and not (a.flags.c_contiguous and a.flags.writeable):
        a = np.array(a, dtype=float)
    return a


def validate_metric(
    d, *, check_triangle: bool = True, tol: float = METRIC_TOL, name: str = "distance matrix",
    copy: bool = True, verbose: bool = False,
) -> np.ndarray:
    """Check that ``d`` is a metric on K ≥ 1 points and return it as a read-only float array.

    Checks: square 2-D, not empty, finite, non-negative, zero diagonal, symmetric and (unless
    ``check_triangle`` is False) the triangle inequality d_ij ≤ d_ik + d_kj, all up to
    ``tol`` × the largest distance. Zero off-diagonal distances (a pseudometric) are allowed.
    The returned matrix is (d + dᵀ)/2 with a zero diagonal.

    ``copy=False`` lets a C-contiguous float64 ``d`` be symmetrised in place and returned (for a
    freshly read file: no second K×K array). Every check runs in row blocks, so the memory beyond
    the matrix is O(K) rows. The triangle check (:func:`_check_triangle`) is the min-plus product
    of d with itself in compiled blocks, with progress (``verbose``) and an exit at the first
    block with a violation.
    """
    d = _as_float_array(d, name, copy=copy)
    if d.ndim != 2 or d.shape[0] != d.shape[1]:
        raise InputError(f"{name} must be square, got shape {d.shape}")
    K = d.shape[0]
    if K == 0:
        raise InputError(f"{name} is empty: a domain needs at least one location")
    step = _row_block(K)
    for r0 in range(0, K, step):
        blk = d[r0:r0 + step]
        bad = ~np.isfinite(blk)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise InputError(f"{name} has a non-finite entry {blk[i, j]} at ({r0 + i}, {j}); "
                             "every distance must be a finite number")
        if (blk < 0).any():
            i, j = np.argwhere(blk < 0)[0]
            raise InputError(f"{name} has a negative entry {blk[i, j]:g} at ({r0 + i}, {j})")
    scale = max(float(d.max()), 1e-300)
    atol = tol * scale
    diag = np.abs(np.diag(d))
    if (diag > atol).any():
        i = int(np.argmax(diag))
        raise InputError(f"{name} must have a zero diagonal, but d[{i}, {i}] = {d[i, i]:g}")
    for r0 in range(0, K, step):  # blocks of rows right of the diagonal against their mirror
        asym = np.abs(d[r0:r0 + step, r0:] - d[r0:, r0:r0 + step].T)
        if (asym > atol).any():
            i, j = np.unravel_index(int(np.argmax(asym)), asym.shape)
            i, j = (i + r0, j + r0) if i + r0 < j + r0 else (j + r0, i + r0)
            raise InputError(f"{name} is not symmetric: d[{i}, {j}] = {d[i, j]:g} but "
                             f"d[{j}, {i}] = {d[j, i]:g}")
    for r0 in range(0, K, step):  # d = (d + dᵀ)/2 in place, one block row at a time
        r1 = min(r0 + step, K)
        avg = 0.5 * (d[r0:r1, r0:] + d[r0:, r0:r1].T)
        d[r0:r1, r0:] = avg
        d[r0:, r0:r1] = avg.T
    np.fill_diagonal(d, 0.0)
    if check_triangle:
        _check_triangle(d, atol, name, verbose=verbose)
    d.setflags(write=False)
    return d


def _row_block(K: int, budget: int = 32 * 2**20) -> int:
    """Rows per block so that a block of K float64 columns stays within ``budget`` bytes."""
    return max(1, budget // (8 * max(K, 1)))


#: the triangle check shows progress (a live bar in the CLI) from this many points on
PROGRESS_MIN_K = 1024


def _check_triangle(d: np.ndarray, atol: float, name: str, *, verbose: bool = False) -> None:
    """Triangle inequality d_ij ≤ d_ik + d_kj + atol for all i, j, k, else an InputError naming the
    worst triple of the first block with a violation.

    ``d`` must be symmetric with a zero diagonal (as :func:`validate_metric` leaves it). The check
    is the min-plus product of d with itself over the pairs i ≤ j in 32×32 blocks
    (:mod:`lpmech._triangle`: numba-compiled on all cores when numba is installed, numpy blocks
    otherwise): K³/2 additions, O(K) memory, the same accept/refuse as the direct triple test.
    """
    from . import _triangle as tri
    from .progress import Progress

    K = d.shape[0]
    if K < 3:
        return
    if not (d.flags.c_contiguous and d.dtype == np.float64):
        d = np.ascontiguousarray(d, dtype=np.float64)
    b = tri.BLOCK
    nb = -(-K // b)
    bi, bj = np.triu_indices(nb)
    # batches of about 2e9 sums: progress, and an early exit on the first violating batch
    per_pair = b * b * K
    batch = max(1, int(2e9 // per_pair))
    prog = None
    if K >= PROGRESS_MIN_K:
        prog = Progress(f"triangle inequality on {K} points ({tri.backend()})", verbose=verbose,
                        total=len(bi), unit="block")
    try:
        for p0 in range(0, len(bi), batch):
            ex = tri.block_excess(d, bi[p0:p0 + batch], bj[p0:p0 + batch], b)
            if prog is not None:
                prog.update(len(ex))
            if ex.max() > atol:
                p = p0 + int(np.argmax(ex))
                i, k, j, _ = tri.worst_triple(d, int(bi[p]), int(bj[p]), b)
                raise InputError(
                    f"{name} violates the triangle inequality: d[{i}, {j}] = {d[i, j]:.17g} > "
                    f"d[{i}, {k}] + d[{k}, {j}] = {d[i, k] + d[k, j]:.17g} (the triple (i, k, j) = "
                    f"({i}, {k}, {j}): d[{i}, {k}] = {d[i, k]:.17g}, d[{k}, {j}] = {d[k, j]:.17g}; "
                    f"excess {d[i, j] - (d[i, k] + d[k, j]):.3g} > tolerance {atol:.3g}); "
                    "fix the distances, or pass allow_nonmetric=True (on the command line: "
                    "--allow-nonmetric) if your model accepts a non-metric")
    finally:
        if prog is not None:
            prog.close()


def make_prior(prior, K: int) -> np.ndarray:
    """Validate a prior over K locations: ``None``/``"uniform"`` or a vector summing to 1."""
    if prior is None or (isinstance(prior, str) and prior == "uniform"):
        p = np.full(K, 1.0 / K)
    elif isinstance(prior, str):
        raise InputError(f"unknown prior {prior!r}: give 'uniform' or a probability vector")
    else:
        p = _as_float_array(prior, "prior")
        if p.shape != (K,):
            raise InputError(f"prior has shape {p.shape}, but the domain has K = {K} locations")
        if not np.isfinite(p).all():
            raise InputError("prior has a non-finite entry")
        if (p < 0).any():
            raise InputError(f"prior has a negative entry {p.min():g} at index {int(np.argmin(p))}")
        s = p.sum()
        if abs(s - 1.0) > PRIOR_TOL:
            raise InputError(f"prior sums to {s:.9g}, not 1; normalise it, or pass it as counts "
                             "(Instance.with_counts / --prior counts:FILE)")
        p = p / s
    p.setflags(write=False)
    return p


def prior_from_counts(counts, K: int) -> np.ndarray:
    """A prior proportional to non-negative, finite ``counts`` (not all zero)."""
    c = _as_float_array(counts, "counts")
    if c.shape != (K,):
        raise InputError(f"counts have shape {c.shape}, but the domain has K = {K} locations")
    if not np.isfinite(c).all() or (c < 0).any():
        raise InputError("counts must be finite and non-negative")
    if c.sum() <= 0:
        raise InputError("counts are all zero: a prior needs some mass")
    return make_prior(c / c.sum(), K)


def _check_loss(loss, K: int) -> np.ndarray:
    L = _as_float_array(loss, "loss matrix")
    if L.shape != (K, K):
        raise InputError(f"loss matrix has shape {L.shape}, but the domain needs ({K}, {K})")
    if not np.isfinite(L).all():
        raise InputError("loss matrix has a non-finite entry")
    L.setflags(write=False)
    return L


def _check_gamma(gamma) -> float:
    try:
        g = float(gamma)
    except (TypeError, ValueError):
        raise InputError(f"gamma must be a number, got {gamma!r}") from None
    if math.isnan(g) or g <= 0:
        raise InputError(f"gamma (the Geo-Ind neighbour threshold) must be > 0, got {gamma!r}")
    return g


def _finish(d, *, kind, prior=None, loss=None, gamma=math.inf, check_triangle=True,
            is_metric=True, copy=True, verbose=False, **fields):
    """Validate the parts and assemble an Instance; every builder ends here. ``check_triangle=False``
    skips the O(K³) check where d is a metric by construction (``is_metric`` stays True) or where
    the user allowed a non-metric (``is_metric=False``)."""
    d = validate_metric(d, check_triangle=check_triangle, copy=copy, verbose=verbose)
    K = d.shape[0]
    return Instance(metric=d, prior=make_prior(prior, K),
                    loss=d if loss is None else _check_loss(loss, K), gamma=_check_gamma(gamma),
                    kind=kind, is_metric=bool(is_metric), **fields)


# --------------------------------------------------------------------------------------- builders


def _check_positive(x, name: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {x!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise InputError(f"{name} must be a positive finite number, got {x!r}")
    return v


def grid(width: int, height: int, cell: float = 1.0, *, unit: str = "km",
         metric: str = "euclidean", prior=None, loss=None, gamma: float = math.inf) -> Instance:
    """A W×H grid of cell centres, ``cell`` units apart, numbered row-major (index = row·W + col).

    Parameters
    ----------
    width, height : int
        W and H, positive.
    cell : float
        Distance between neighbouring cell centres.
    unit : str
        Unit of the distances (default ``"km"``).
    metric : {"euclidean", "manhattan"}
        ``"euclidean"`` (default) or ``"manhattan"``.
    prior : str or array_like, optional
        ``"uniform"`` (default) or a probability vector summing to 1.
    loss : array_like, optional
        K×K loss matrix L (default: the metric).
    gamma : float
        Neighbour threshold γ (default ∞: every pair).

    Returns
    -------
    Instance
        K = W·H locations.

    Raises
    ------
    InputError
        A non-positive size or cell, an unknown metric, a bad prior, loss or γ, or K×K matrices
        that would not fit in memory.

    Examples
    --------
    >>> from lpmech import instance as li
    >>> inst = li.grid(3, 2, 0.5)
    >>> print(inst.describe())
    grid 3x2 cell=0.5 K=6 gamma=inf unit=km
    >>> print(round(float(inst.metric[0, 4]), 4), li.grid(3, 2, metric="manhattan").metric[0, 4])
    0.7071 2.0
    """
    if int(width) != width or int(height) != height or width < 1 or height < 1:
        raise InputError(f"grid size must be positive integers, got {width}x{height}")
    require_instance_memory(int(width) * int(height), f"a {int(width)}x{int(height)} grid")
    cell = _check_positive(cell, "cell size")
    cols, rows = np.meshgrid(np.arange(width), np.arange(height))
    xy = np.column_stack([cols.ravel(), rows.ravel()]).astype(float) * cell
    if metric == "euclidean":
        d = _euclidean(xy)
    elif metric == "manhattan":
        d = np.abs(xy[:, None, :] - xy[None, :, :]).sum(-1)
    else:
        raise InputError(f"unknown grid metric {metric!r}: use 'euclidean' or 'manhattan'")
    return _finish(d, kind="grid", prior=prior, loss=loss, gamma=gamma, check_triangle=False,
                   coords=_frozen(xy), unit=unit, shape=(int(width), int(height)), cell=cell)


def line(m: int, cell: float = 1.0, *, unit: str = "", prior=None, loss=None,
         gamma: float = math.inf) -> Instance:
    """The 1-D domain {1, ..., m} with distance cell·|i − j|."""
    if int(m) != m or m < 1:
        raise InputError(f"a line needs m ≥ 1 points, got {m}")
    require_instance_memory(int(m), "a line")
    cell = _check_positive(cell, "cell size")
    x = np.arange(1, int(m) + 1, dtype=float) * cell
    d = np.abs(x[:, None] - x[None, :])
    return _finish(d, kind="line", prior=prior, loss=loss, gamma=gamma, check_triangle=False,
                   coords=_frozen(np.column_stack([x, np.zeros_like(x)])), unit=unit, cell=cell)


def points(coords, *, metric: str = "euclidean", unit: str | None = None, prior=None, loss=None,
           gamma: float = math.inf) -> Instance:
    """Planar points (``metric="euclidean"``) or (lat, lon) in degrees (``metric="haversine"``, km)."""
    xy = _as_float_array(coords, "coordinates")
    if xy.ndim != 2 or xy.shape[1] != 2 or xy.shape[0] == 0:
        raise InputError(f"coordinates must be a non-empty N×2 array, got shape {xy.shape}")
    require_instance_memory(xy.shape[0], "points")
    if not np.isfinite(xy).all():
        raise InputError("coordinates have a non-finite entry")
    if metric == "euclidean":
        d, kind, default_unit = _euclidean(xy), "points", ""
    elif metric == "haversine":
        if (np.abs(xy[:, 0]) > 90).any() or (np.abs(xy[:, 1]) > 180).any():
            raise InputError("latitude must lie in [-90, 90] and longitude in [-180, 180] "
                             "(columns are lat, lon in degrees)")
        d, kind, default_unit = haversine(xy), "latlon", "km"
    else:
        raise InputError(f"unknown point metric {metric!r}: use 'euclidean' or 'haversine'")
    return _finish(d, kind=kind, prior=prior, loss=loss, gamma=gamma, check_triangle=False,
                   coords=_frozen(xy), unit=default_unit if unit is None else unit)


def latlon(coords, **kwargs) -> Instance:
    """(lat, lon) points in degrees with the Haversine distance in km."""
    return points(coords, metric="haversine", **kwargs)


def from_graph(graph: nx.Graph, *, weight: str = "weight", unit: str = "", prior=None, loss=None,
               gamma: float = math.inf) -> Instance:
    """The shortest-path metric of a connected, undirected networkx graph on edge ``weight``.

    Edges without the attribute count 1. Node order is ``sorted(graph.nodes)`` when the labels
    sort, else insertion order; it is kept in ``Instance.labels``.
    """
    if graph.is_directed():
        raise InputError("the graph must be undirected (a metric is symmetric)")
    if graph.number_of_nodes() == 0:
        raise InputError("the graph has no nodes")
    for u, v, w in graph.edges(data=weight, default=1.0):
        try:
            wf = float(w)
        except (TypeError, ValueError):
            raise InputError(f"edge ({u}, {v}) has a non-numeric {weight!r}: {w!r}") from None
        if not math.isfinite(wf) or wf < 0:
            raise InputError(f"edge ({u}, {v}) has weight {w!r}; weights must be finite and ≥ 0")
    try:
        nodes = sorted(graph.nodes)
    except TypeError:
        nodes = list(graph.nodes)
    if not nx.is_connected(graph):
        parts = nx.number_connected_components(graph)
        raise InputError(f"the graph has {parts} connected components; the shortest-path metric "
                         "needs a connected graph")
    d = nx.floyd_warshall_numpy(graph, nodelist=nodes, weight=weight)
    return _finish(d, kind="graph", prior=prior, loss=loss, gamma=gamma, check_triangle=False,
                   unit=unit, labels=tuple(nodes))


def from_matrix(distances, *, allow_nonmetric: bool = False, unit: str = "", prior=None,
                loss=None, gamma: float = math.inf, copy: bool = True,
                verbose: bool = False) -> Instance:
    """A user-given K×K distance matrix, checked to be a metric.

    Parameters
    ----------
    distances : array_like
        The K×K matrix d.
    allow_nonmetric : bool
        ``allow_nonmetric=True`` skips only the triangle inequality (for models that accept a
        non-metric); squareness, symmetry, zero diagonal, finiteness and non-negativity are always
        checked.
    unit : str
        Unit of the distances, for the logs.
    prior : str or array_like, optional
        ``"uniform"`` (default) or a probability vector summing to 1.
    loss : array_like, optional
        K×K loss matrix L (default: the metric).
    gamma : float
        Neighbour threshold γ (default ∞: every pair).
    copy : bool
        ``False`` lets a C-contiguous float64 ``distances`` be symmetrised in place and kept as
        the instance's metric (no second K×K array; :func:`read_distances` uses it).
    verbose : bool
        Log the progress of the triangle check (K ≥ 1,024).

    Returns
    -------
    Instance

    Raises
    ------
    InputError
        A matrix that is not a metric (the message names the first bad entry, or the worst
        violating triple (i, k, j) with its three distances), or a bad prior,
        loss or γ.

    Examples
    --------
    >>> from lpmech import instance as li
    >>> from lpmech.errors import InputError
    >>> print(li.from_matrix([[0, 1, 2], [1, 0, 1], [2, 1, 0]]).describe())
    matrix K=3 gamma=inf unit=-
    >>> try:
    ...     li.from_matrix([[0, 1, 3], [1, 0, 1], [3, 1, 0]])
    ... except InputError as exc:
    ...     print(str(exc)[:51])
    distance matrix violates the triangle inequality: d
    """
    return _finish(distances, kind="matrix", prior=prior, loss=loss, gamma=gamma,
                   check_triangle=not allow_nonmetric, is_metric=not allow_nonmetric, unit=unit,
                   copy=copy, verbose=verbose)


def travel_cost_loss(travel_cost, targets=None) -> np.ndarray:
    """Loss of Qiu et al., LR-Geo eq. (5) without p_i: L[i, k] = Σ_l q_l |tc(v_i, v_l) − tc(v_k, v_l)|.

    ``travel_cost`` is the K×K travel cost (need not be symmetric); ``targets`` the target prior q
    (uniform by default).
    """
    tc = _as_float_array(travel_cost, "travel cost")
    if tc.ndim != 2 or tc.shape[0] != tc.shape[1] or not np.isfinite(tc).all():
        raise InputError("travel cost must be a finite square matrix")
    q = make_prior(targets, tc.shape[0])
    L = np.zeros_like(tc)
    for ll in np.flatnonzero(q):
        L += q[ll] * np.abs(tc[:, ll, None] - tc[None, :, ll])
    return L


# ------------------------------------------------------------------------------------- distances


def _euclidean(xy: np.ndarray) -> np.ndarray:
    diff = xy[:, None, :] - xy[None, :, :]
    return np.sqrt((diff**2).sum(-1))


def haversine(latlon_deg: np.ndarray) -> np.ndarray:
    """Great-circle distances (km) between (lat, lon) points given in degrees."""
    lat, lon = np.radians(latlon_deg[:, 0]), np.radians(latlon_deg[:, 1])
    dlat = lat[:, None] - lat[None, :]
    dlon = lon[:, None] - lon[None, :]
    a = np.sin(dlat / 2) ** 2 + np.cos(lat)[:, None] * np.cos(lat)[None, :] * np.sin(dlon / 2) ** 2
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(a, 0.0, 1.0)))


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


# ------------------------------------------------------------------------------------------ files


def _existing(path, flag: str | None = None) -> Path:
    """``path`` as a :class:`Path` when it is an existing regular file; else an
    :class:`InputError` that says whether it is missing or a directory (``flag``, e.g.
    ``"--points"``, names the option the path came from)."""
    p = Path(path)
    if not p.is_file():
        what = f"{flag} {p}" if flag else str(p)
        if p.is_dir():
            raise InputError(f"{what} is a directory, not a file: give the file inside it")
        if p.exists():
            raise InputError(f"{what} is not a regular file")
        raise InputError(f"no such file: {p}" if flag is None else f"{flag}: no such file: {p}")
    return p


def check_seed(seed, flag: str = "--seed") -> int:
    """A random seed for :func:`numpy.random.default_rng`: a non-negative integer, else an
    :class:`InputError` naming ``flag``. The one place the commands validate their seeds."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InputError(f"{flag} must be a non-negative integer, got {seed!r}")
    if seed < 0:
        raise InputError(f"{flag} must be a non-negative integer (a numpy.random.default_rng seed), "
                         f"got {int(seed)}")
    return int(seed)


def load_numpy(path, what: str = "array") -> dict[str, np.ndarray]:
    """The arrays of a ``.npy`` (under the key ``""``) or ``.npz`` file, read safely.

    Object (pickled) arrays are never loaded. A file that is not NumPy's format, a truncated or
    corrupted archive (bad zip, bad deflate stream) and a missing file raise :class:`InputError`
    naming the file and what is wrong with it.
    """
    p = _existing(path)
    if p.suffix not in (".npy", ".npz"):
        raise InputError(f"{p}: a {what} is read from .npy or .npz files")
    with p.open("rb") as f:
        head = f.read(6)
    if p.suffix == ".npy" and head != b"\x93NUMPY":
        raise InputError(f"cannot read {what} file {p}: not a NumPy .npy file (its first bytes are "
                         "not the .npy magic string); write it with numpy.save")
    if p.suffix == ".npz" and not zipfile.is_zipfile(p):
        raise InputError(f"cannot read {what} file {p}: not a NumPy .npz archive (not a zip file); "
                         "write it with numpy.savez")
    try:
        if p.suffix == ".npy":
            return {"": np.load(p, allow_pickle=False)}
        with np.load(p, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except ValueError as exc:
        if "pickle" in str(exc):
            raise InputError(f"cannot read {what} file {p}: it holds an object (pickled) array, "
                             "which lpmech does not load for safety; save plain numeric arrays") from None
        raise InputError(f"cannot read {what} file {p}: corrupted or not NumPy's format ({exc})") from None
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error, KeyError) as exc:
        raise InputError(f"cannot read {what} file {p}: the file is corrupted or truncated "
                         f"({_exc_name(exc)}: {exc})") from None


def _exc_name(exc: BaseException) -> str:
    t = type(exc)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"


def read_distances(path, *, allow_nonmetric: bool = False, **kwargs) -> Instance:
    """A distance matrix from ``.npy`` or ``.npz``.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    allow_nonmetric : bool
        Skip the triangle inequality (:func:`from_matrix`).
    **kwargs
        ``unit``, ``prior``, ``loss``, ``gamma`` of :func:`from_matrix`.

    Returns
    -------
    Instance

    Raises
    ------
    InputError
        A missing or unreadable file, an archive without a distance matrix, or a matrix that is
        not a metric.

    Notes
    -----
    In an ``.npz`` the matrix is the array named ``distances`` (or ``metric``, as a mechanism saved
    by ``lpmech omg --out`` has it, or a single unnamed array, ``numpy.savez(FILE, d)``); any other
    archive is refused, naming the arrays it has (an archive holding only ``prior`` is not a
    distance matrix).
    Arrays named ``prior`` and ``loss`` are used too unless given in ``kwargs``.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from lpmech import instance as li
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "d.npz")
    ...     np.savez(path, distances=[[0.0, 1.0], [1.0, 0.0]], prior=[0.3, 0.7])
    ...     inst = li.read_distances(path)
    >>> print(inst.describe(), inst.prior)
    matrix K=2 gamma=inf unit=- [0.3 0.7]
    """
    arrays = load_numpy(path, "distance matrix")
    p = Path(path)
    extra = {}
    if "" in arrays:
        d = arrays[""]
    else:
        key = next((k for k in ("distances", "metric") if k in arrays), None)
        if key is None and list(arrays) == ["arr_0"]:
            key = "arr_0"  # numpy.savez(FILE, d): one unnamed array, the matrix
        if key is None:
            raise InputError(f"{p} has no array named 'distances' (found {sorted(arrays)}); save "
                             "the distance matrix as numpy.savez(FILE, distances=d[, prior=p, "
                             "loss=L])")
        d = arrays[key]
        extra = {k: arrays[k] for k in ("prior", "loss") if k in arrays}
    # the array was just read: it is validated in place (no second K×K copy)
    return from_matrix(d, allow_nonmetric=allow_nonmetric, **{"copy": False, **extra, **kwargs})


_POINT_COLUMNS = ("x", "y", "lat", "latitude", "lon", "lng", "longitude")
_EDGE_COLUMNS = ("u", "v", "source", "target", "from", "to", "weight", "length", "distance", "cost")


def _read_csv_rows(p: Path, names: tuple[str, ...], numeric: tuple[int, ...]):
    """(header, [(line number, row), ...]) of a CSV file; blank lines are skipped but counted.

    The first row is a header when it names one of ``names`` or when a cell at a position in
    ``numeric`` (columns that must hold numbers) is not a number.
    """
    try:
        with p.open(newline="") as f:
            rows = [(n, r) for n, r in enumerate(csv.reader(f), start=1)
                    if r and any(c.strip() for c in r)]
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {p}: not a UTF-8 text CSV file (byte {exc.object[exc.start]:#04x} "
                         f"at offset {exc.start} is not text)") from None
    except (OSError, csv.Error) as exc:
        raise InputError(f"cannot read {p}: {exc}") from None
    if not rows:
        raise InputError(f"{p} is empty")
    first = [c.strip().lower() for c in rows[0][1]]
    header = None
    if any(c in names for c in first) or not all(_is_number(first[i]) for i in numeric
                                                 if i < len(first)):
        header, rows = first, rows[1:]
    if not rows:
        raise InputError(f"{p} has a header but no data rows")
    return header, rows


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _column(header: list[str] | None, names: tuple[str, ...], default: int) -> int:
    if header is not None:
        for n in names:
            if n in header:
                return header.index(n)
    return default


def read_points(path, *, latlon: bool = False, **kwargs) -> Instance:
    """Points from a CSV: columns ``x,y`` (or ``lat,lon`` with ``latlon=True``), header optional.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    latlon : bool
        Read (lat, lon) in degrees; the metric is then Haversine (km).
    **kwargs
        ``unit``, ``prior``, ``loss``, ``gamma`` of :func:`points`.

    Returns
    -------
    Instance

    Raises
    ------
    InputError
        A missing file or a non-numeric row (the message names the line).

    Notes
    -----
    Without a recognised header the first two columns are used.

    Examples
    --------
    >>> import os, tempfile
    >>> from lpmech import instance as li
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "points.csv")
    ...     _ = open(path, "w").write("x,y\\n0,0\\n3,4\\n6,8\\n")
    ...     inst = li.read_points(path)
    >>> print(inst.describe(), inst.metric[0, 2])
    points K=3 gamma=inf unit=- 10.0
    """
    p = _existing(path)
    header, rows = _read_csv_rows(p, _POINT_COLUMNS, numeric=(0, 1))
    if latlon:
        cx = _column(header, ("lat", "latitude", "y"), 0)
        cy = _column(header, ("lon", "lng", "longitude", "x"), 1)
    else:
        cx, cy = _column(header, ("x",), 0), _column(header, ("y",), 1)
    xy = []
    for n, r in rows:
        try:
            xy.append((float(r[cx]), float(r[cy])))
        except (ValueError, IndexError):
            raise InputError(f"{p}, line {n}: expected two numeric columns, got {r}") from None
    return points(np.array(xy), metric="haversine" if latlon else "euclidean", **kwargs)


def read_edges(path, **kwargs) -> Instance:
    """A graph metric from a CSV edge list ``u,v,weight`` (header optional; a header may name the
    weight ``weight``, ``length``, ``distance`` or ``cost``). Missing weights count 1.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    **kwargs
        ``unit``, ``prior``, ``loss``, ``gamma`` of the instance.

    Returns
    -------
    Instance
        The shortest-path metric of the graph.

    Raises
    ------
    InputError
        A missing file, a bad row, or a disconnected graph.

    Examples
    --------
    >>> import os, tempfile
    >>> from lpmech import instance as li
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "edges.csv")
    ...     _ = open(path, "w").write("u,v,weight\\n0,1,2\\n1,2,3\\n")
    ...     inst = li.read_edges(path)
    >>> print(inst.describe(), inst.metric[0, 2])
    graph K=3 gamma=inf unit=- 5.0
    """
    p = _existing(path)
    header, rows = _read_csv_rows(p, _EDGE_COLUMNS, numeric=(2,))
    cu, cv = _column(header, ("u", "source", "from"), 0), _column(header, ("v", "target", "to"), 1)
    cw = _column(header, ("weight", "length", "distance", "cost"), 2)
    g = nx.Graph()
    for n, r in rows:
        if len(r) < 2:
            raise InputError(f"{p}, line {n}: an edge needs two endpoints, got {r}")
        try:
            w = float(r[cw]) if cw < len(r) and r[cw].strip() else 1.0
        except ValueError:
            raise InputError(f"{p}, line {n}: weight {r[cw]!r} is not a number") from None
        u, v = (_label(r[cu]), _label(r[cv]))
        if g.has_edge(u, v):
            w = min(w, g[u][v]["weight"])
        g.add_edge(u, v, weight=w)
    return from_graph(g, weight="weight", **kwargs)


def _label(s: str):
    s = s.strip()
    try:
        return int(s)
    except ValueError:
        return s
