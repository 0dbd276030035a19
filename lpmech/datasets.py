"""Data sets: synthetic generators and readers for real third-party data.

Real data is never bundled: every reader takes a path (see ``../shared/data/README.md``) and raises
:class:`~lpmech.errors.InputError` with a clear message when the files are missing or malformed.

Sections: Rome road grid and synthetic road grids (Qiu et al., LR-Geo, LR-Geo); SNAP check-in files (Gowalla;
Gu et al., LE and Jiang, Li & Tandon, context-aware LIP/004).
"""

from __future__ import annotations

# ------------------------------------------------------------------ Rome road grid (Qiu et al., LR-Geo)
# Imports of this section are local to its functions (the module's import block is shared).

ROME_NODES = "reget_rome_cell_node40x40.csv"  #: the paper's "40×40" sub-grid, 1,331 cells
ROME_EDGES = "reget_rome_cost_thrhold_2.csv"  #: road edges between adjacent cells, length in km
ROME_CENTRE = (41.8757, 12.5195)  #: (lat, lon) centre of the 40×40 sub-grid (used by the synthetic grid)


class RoadGrid:
    """Cells of a road network: (lat, lon) of one node per cell, the Haversine distance ``metric``
    (the Geo-Ind d, km) and the road ``travel_cost`` tc (Dijkstra over the road edges, km).

    ``grid_index`` is the cell's index row·100 + col in the 100×100 grid of the Rome files (or
    row·W + col for a synthetic grid). Use :meth:`subset` to keep some cells and
    :meth:`instance` for an :class:`~lpmech.instance.Instance` with the travel-cost loss (5).
    """

    def __init__(self, coords, metric, travel_cost, grid_index, osmid=None, name="road grid"):
        import numpy as np

        self.coords = np.asarray(coords, float)
        self.metric = np.asarray(metric, float)
        self.travel_cost = np.asarray(travel_cost, float)
        self.grid_index = np.asarray(grid_index, int)
        self.osmid = None if osmid is None else np.asarray(osmid)
        self.name = name

    @property
    def K(self) -> int:
        return self.coords.shape[0]

    def __repr__(self) -> str:
        return f"RoadGrid({self.name!r}, K={self.K})"

    def subset(self, idx) -> RoadGrid:
        """The cells ``idx`` (distances keep the road paths of the whole grid)."""
        import numpy as np

        idx = np.asarray(idx, int)
        if idx.size == 0 or idx.min() < 0 or idx.max() >= self.K or np.unique(idx).size != idx.size:
            from .errors import InputError

            raise InputError(f"subset needs distinct cell indices in [0, {self.K}), got {idx.size}")
        return RoadGrid(self.coords[idx], self.metric[np.ix_(idx, idx)],
                        self.travel_cost[np.ix_(idx, idx)], self.grid_index[idx],
                        None if self.osmid is None else self.osmid[idx], f"{self.name}[{idx.size}]")

    def sample(self, K: int, rng) -> RoadGrid:
        """``K`` cells drawn without replacement with ``rng`` (a numpy Generator), in grid order."""
        import numpy as np

        from .errors import InputError

        if not 1 <= int(K) <= self.K:
            raise InputError(f"cannot sample K={K} cells from a grid of {self.K}")
        return self.subset(np.sort(rng.choice(self.K, size=int(K), replace=False)))

    def instance(self, *, targets=None, gamma: float = float("inf"), prior=None):
        """A lat/lon :class:`~lpmech.instance.Instance` (Haversine metric) whose loss is
        L[i, k] = Σ_l q_l |tc(i, l) − tc(k, l)| (Qiu et al., LR-Geo eqs. (3)–(5) without p_i),
        q = ``targets``."""
        from .instance import latlon, travel_cost_loss

        return latlon(self.coords, loss=travel_cost_loss(self.travel_cost, targets), gamma=gamma,
                      prior=prior)


def _road_travel_cost(K: int, u, v, length):
    """All-pairs road distance (Dijkstra, km) of an undirected graph; InputError if disconnected."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components, dijkstra

    from .errors import InputError

    g = coo_matrix((np.asarray(length, float), (u, v)), shape=(K, K)).tocsr()
    n_parts, _ = connected_components(g, directed=False)
    if n_parts > 1:
        raise InputError(f"the road graph has {n_parts} connected components; travel costs need a "
                         "connected road network (drop the isolated cells first)")
    return dijkstra(g, directed=False)


def read_rome(folder, *, nodes: str = ROME_NODES, edges: str = ROME_EDGES) -> RoadGrid:
    """The Rome road grid of the LR-Geo paper from ``folder`` (e.g. ``../shared/data/rome``).

    ``nodes``: CSV ``osmid,grid_index,y,x`` (y = latitude, x = longitude), one node per cell;
    ``edges``: CSV ``u_index,u,v_index,v,length`` of roads between cells (km). Edges touching a cell
    not in ``nodes`` are ignored. Raises InputError for a missing file, a malformed row or a
    disconnected road graph.
    """
    import csv
    from pathlib import Path

    import numpy as np

    from .errors import InputError
    from .instance import haversine

    folder = Path(folder)
    paths = [folder / nodes, folder / edges]
    for p in paths:
        if not p.is_file():
            raise InputError(f"missing Rome data file {p}; pass the folder holding {nodes} and "
                             f"{edges} (e.g. --rome-dir ../shared/data/rome)")

    def rows(path, fields):
        try:
            yield from _rows(path, fields)
        except UnicodeDecodeError as exc:
            raise InputError(f"cannot read {path}: not a UTF-8 text CSV file (byte "
                             f"{exc.object[exc.start]:#04x} at offset {exc.start} is not text)") from None
        except (OSError, csv.Error) as exc:
            raise InputError(f"cannot read {path}: {exc}") from None

    def _rows(path, fields):
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = set(fields) - set(reader.fieldnames or ())
            if missing:
                raise InputError(f"{path} lacks the column(s) {sorted(missing)}")
            for n, row in enumerate(reader, start=2):
                try:
                    yield [float(row[k]) for k in fields]
                except (TypeError, ValueError):
                    raise InputError(f"{path} line {n}: non-numeric value in {row}") from None

    node = np.array(list(rows(paths[0], ["osmid", "grid_index", "y", "x"])), float).reshape(-1, 4)
    if node.shape[0] == 0:
        raise InputError(f"{paths[0]} has no cells")
    gidx = node[:, 1].astype(np.int64)
    if np.unique(gidx).size != gidx.size:
        raise InputError(f"{paths[0]} lists a grid_index twice")
    pos = {g: i for i, g in enumerate(gidx.tolist())}
    edge = np.array(list(rows(paths[1], ["u_index", "v_index", "length"])), float).reshape(-1, 3)
    keep = np.array([int(a) in pos and int(b) in pos for a, b in edge[:, :2]], bool)
    edge = edge[keep]
    if (edge[:, 2] < 0).any() or not np.isfinite(edge[:, 2]).all():
        raise InputError(f"{paths[1]} has a negative or non-finite road length")
    u = np.array([pos[int(a)] for a in edge[:, 0]], int)
    v = np.array([pos[int(b)] for b in edge[:, 1]], int)
    coords = node[:, [2, 3]]
    tc = _road_travel_cost(len(gidx), u, v, np.maximum(edge[:, 2], 1e-9))
    return RoadGrid(coords, haversine(coords), tc, gidx, node[:, 0].astype(np.int64), name="rome")


def synthetic_road_grid(width: int = 39, height: int = 39, *, rng, cell_km: float = 0.485,
                        keep: float = 0.875, detour: tuple[float, float] = (1.0, 1.6),
                        centre=ROME_CENTRE) -> RoadGrid:
    """A random road grid shaped like the Rome default (39×39 cells of ~0.49 km, ~1,331 kept).

    Each of the W×H cells is kept with probability ``keep``; its node is jittered by up to a quarter
    cell around the cell centre. Roads join 4- and diagonal-neighbour kept cells with length =
    Haversine length × U(``detour``). The largest connected component is returned. ``rng``: a
    ``numpy.random.Generator`` (required: no hidden randomness).
    """
    import math

    import numpy as np

    from .errors import InputError
    from .instance import EARTH_RADIUS_KM, haversine

    if int(width) != width or int(height) != height or width < 2 or height < 2:
        raise InputError(f"a road grid needs at least 2x2 cells, got {width}x{height}")
    if not 0 < keep <= 1 or not cell_km > 0 or not 1 <= detour[0] <= detour[1]:
        raise InputError("synthetic_road_grid needs 0 < keep <= 1, cell_km > 0, 1 <= detour[0] <= detour[1]")
    W, H = int(width), int(height)
    from .resources import require_road_grid_memory

    require_road_grid_memory(math.ceil(W * H * keep), f"a {W}x{H} synthetic road grid")
    dlat = math.degrees(cell_km / EARTH_RADIUS_KM)
    dlon = dlat / math.cos(math.radians(centre[0]))
    r, c = np.divmod(np.arange(W * H), W)
    kept = rng.random(W * H) < keep
    jitter = rng.uniform(-0.25, 0.25, size=(W * H, 2))
    lat = centre[0] + (r - (H - 1) / 2 + jitter[:, 0]) * dlat
    lon = centre[1] + (c - (W - 1) / 2 + jitter[:, 1]) * dlon
    ids = np.flatnonzero(kept)
    pos = -np.ones(W * H, int)
    pos[ids] = np.arange(ids.size)
    coords = np.column_stack([lat[ids], lon[ids]])
    us, vs = [], []
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        ok = kept & (r + dr < H) & (c + dc >= 0) & (c + dc < W)
        a = np.flatnonzero(ok)
        b = (r[a] + dr) * W + c[a] + dc
        good = kept[b]
        us.append(pos[a[good]])
        vs.append(pos[b[good]])
    u, v = np.concatenate(us), np.concatenate(vs)
    d = haversine(coords)
    length = d[u, v] * rng.uniform(*detour, size=u.size)
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    g = coo_matrix((np.ones(u.size), (u, v)), shape=(ids.size,) * 2)
    _, label = connected_components(g, directed=False)
    main = np.flatnonzero(label == np.bincount(label).argmax())
    remap = -np.ones(ids.size, int)
    remap[main] = np.arange(main.size)
    e = (remap[u] >= 0) & (remap[v] >= 0)
    tc = _road_travel_cost(main.size, remap[u[e]], remap[v[e]], length[e])
    return RoadGrid(coords[main], d[np.ix_(main, main)], tc, ids[main], name=f"synthetic {W}x{H}")


def load_road_grid(folder=None, *, rng=None) -> RoadGrid:
    """The Rome grid from ``folder``, or the synthetic default (seeded ``rng``) when ``folder`` is None."""
    if folder is not None:
        return read_rome(folder)
    import numpy as np

    return synthetic_road_grid(rng=np.random.default_rng(0) if rng is None else rng)


# ------------------------------------------------------------------ SNAP check-ins (Gowalla)
# Imports of this section are local to its functions (the module's import block is shared).

#: bounding boxes as (lat_min, lat_max, lon_min, lon_max), degrees
GOWALLA_NY_BBOX = (40.48, 40.92, -74.26, -73.70)  # the New York subset in ../shared/data/gowalla
GOWALLA_UK_BBOX = (50.0, 55.0, -5.0, 0.0)  # Gu et al., LE §VI-B ("most of the United Kingdom")
_SNAP_CHUNK = 200_000  # lines parsed per block when streaming a SNAP file


def check_bbox(bbox) -> tuple[float, float, float, float]:
    """Validate a bounding box ``(lat_min, lat_max, lon_min, lon_max)`` in degrees."""
    import math

    from .errors import InputError

    try:
        box = tuple(float(v) for v in bbox)
    except (TypeError, ValueError):
        raise InputError(f"bbox must be four numbers (lat_min, lat_max, lon_min, lon_max), "
                         f"got {bbox!r}") from None
    if len(box) != 4 or not all(math.isfinite(v) for v in box):
        raise InputError(f"bbox must be four finite numbers (lat_min, lat_max, lon_min, lon_max), "
                         f"got {bbox!r}")
    la0, la1, lo0, lo1 = box
    if not (-90 <= la0 < la1 <= 90 and -180 <= lo0 < lo1 <= 180):
        raise InputError(f"bbox {bbox!r} is not (lat_min, lat_max, lon_min, lon_max) with "
                         "-90 ≤ lat_min < lat_max ≤ 90 and -180 ≤ lon_min < lon_max ≤ 180")
    return box


def read_checkins(path, *, bbox=None, first_per_user: bool = False) -> dict:
    """Read a SNAP check-in file (``loc-gowalla_totalCheckins.txt`` or ``loc-brightkite_...``).

    Format: one check-in a line, tab-separated ``user  time(ISO 8601, "Z")  latitude  longitude
    location_id``; gzip-compressed when the name ends in ``.gz``. The file is streamed in blocks of
    lines, so the full SNAP file (6.4 M lines) is read in bounded memory beyond what is kept.

    * ``bbox = (lat_min, lat_max, lon_min, lon_max)``: keep only check-ins with
      lat_min ≤ lat ≤ lat_max and lon_min ≤ lon ≤ lon_max (both ends inclusive).
    * ``first_per_user``: keep, for each user, the **earliest** check-in (by time, not by line:
      SNAP lists a user's check-ins newest first) among those kept, i.e. inside the box when one is
      given. This is our reading of Gu et al., LE §VI-B "locations first checked-in by users within an
      area" (spec §6.2 item 8); ties in time keep the first line.

    Returns a dict of numpy arrays of equal length, in file order (sorted by user when
    ``first_per_user``): ``user`` (int64), ``time`` (datetime64[s], UTC), ``lat``, ``lon``
    (float64, degrees) and ``location`` (int64). Blank lines are skipped; any other malformed line
    (wrong number of fields, non-numeric value, bad time, latitude outside [-90, 90] or longitude
    outside [-180, 180]) raises :class:`InputError` naming the file and the line number.
    """
    import gzip
    from pathlib import Path

    import numpy as np

    from .errors import InputError

    p = Path(path)
    if not p.is_file():
        raise InputError(f"no such SNAP check-in file: {p} (see ../shared/data/README.md; the full "
                         "file is loc-gowalla_totalCheckins.txt.gz from snap.stanford.edu)")
    box = None if bbox is None else check_bbox(bbox)
    parts: dict[str, list] = {k: [] for k in ("user", "time", "lat", "lon", "location")}
    opener = gzip.open if p.suffix == ".gz" else open
    try:
        with opener(p, "rt", encoding="utf-8", newline="") as fh:
            block: list[tuple[int, str]] = []
            for lineno, line in enumerate(fh, start=1):
                if line.strip():
                    block.append((lineno, line))
                if len(block) >= _SNAP_CHUNK:
                    _snap_parse_block(block, p, box, parts)
                    block = []
            if block:
                _snap_parse_block(block, p, box, parts)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read SNAP check-in file {p}: {exc}") from None
    out = {
        "user": np.concatenate(parts["user"]) if parts["user"] else np.zeros(0, np.int64),
        "time": (np.concatenate(parts["time"]) if parts["time"]
                 else np.zeros(0, "datetime64[s]")),
        "lat": np.concatenate(parts["lat"]) if parts["lat"] else np.zeros(0),
        "lon": np.concatenate(parts["lon"]) if parts["lon"] else np.zeros(0),
        "location": (np.concatenate(parts["location"]) if parts["location"]
                     else np.zeros(0, np.int64)),
    }
    if first_per_user and len(out["user"]):
        order = np.lexsort((np.arange(len(out["user"])), out["time"], out["user"]))
        users = out["user"][order]
        first = order[np.r_[True, users[1:] != users[:-1]]]
        out = {k: v[first] for k, v in out.items()}
    return out


def _snap_parse_block(block, path, box, parts) -> None:
    """Parse (line number, text) pairs of a SNAP file and append the kept check-ins to ``parts``."""
    import numpy as np

    from .errors import InputError

    n = len(block)
    user = np.empty(n, np.int64)
    loc = np.empty(n, np.int64)
    lat = np.empty(n)
    lon = np.empty(n)
    times: list[str] = []
    for r, (lineno, line) in enumerate(block):
        fields = line.rstrip("\r\n").split("\t")
        if len(fields) != 5:
            raise InputError(f"{path}, line {lineno}: expected 5 tab-separated fields (user, time, "
                             f"latitude, longitude, location id), got {len(fields)}: {line.strip()!r}")
        try:
            user[r], lat[r], lon[r], loc[r] = (int(fields[0]), float(fields[2]), float(fields[3]),
                                               int(fields[4]))
        except ValueError:
            raise InputError(f"{path}, line {lineno}: non-numeric user, latitude, longitude or "
                             f"location id: {line.strip()!r}") from None
        if not (-90 <= lat[r] <= 90 and -180 <= lon[r] <= 180):
            raise InputError(f"{path}, line {lineno}: coordinates ({lat[r]}, {lon[r]}) are outside "
                             "latitude [-90, 90] / longitude [-180, 180]")
        t = fields[1].strip()
        times.append(t[:-1] if t.endswith("Z") else t)
    try:
        time = np.array(times, dtype="datetime64[s]")
    except ValueError:
        for (lineno, _line), t in zip(block, times):
            try:
                np.datetime64(t, "s")
            except ValueError:
                raise InputError(f"{path}, line {lineno}: bad check-in time {t!r} (expected ISO 8601 "
                                 "like 2010-10-12T00:21:28Z)") from None
        raise
    keep = slice(None)
    if box is not None:
        la0, la1, lo0, lo1 = box
        keep = (lat >= la0) & (lat <= la1) & (lon >= lo0) & (lon <= lo1)
    for k, v in (("user", user), ("time", time), ("lat", lat), ("lon", lon), ("location", loc)):
        parts[k].append(v[keep])


def grid_counts(lat, lon, W: int, H: int, bbox):
    """Count points in a W×H grid over ``bbox = (lat_min, lat_max, lon_min, lon_max)``.

    Returns an (H, W) int64 array: **row r = latitude band r from south to north, column c =
    longitude band c from west to east**; ``counts.ravel()`` is indexed row·W + col, the order of
    :func:`lpmech.instance.grid` (x = column, y = row). Bands are half-open [lo, hi) except the last,
    which also holds its upper edge. Points outside the box are not counted.
    """
    import numpy as np

    from .errors import InputError

    la0, la1, lo0, lo1 = check_bbox(bbox)
    W, H = _check_grid_size(W, H)
    lat = np.asarray(lat, float).ravel()
    lon = np.asarray(lon, float).ravel()
    if lat.shape != lon.shape:
        raise InputError(f"lat and lon must have the same length, got {lat.size} and {lon.size}")
    inside = (lat >= la0) & (lat <= la1) & (lon >= lo0) & (lon <= lo1)
    row = np.minimum(((lat[inside] - la0) / (la1 - la0) * H).astype(np.int64), H - 1)
    col = np.minimum(((lon[inside] - lo0) / (lo1 - lo0) * W).astype(np.int64), W - 1)
    return np.bincount(row * W + col, minlength=W * H).reshape(H, W)


def _check_grid_size(W, H) -> tuple[int, int]:
    from .errors import InputError

    if int(W) != W or int(H) != H or W < 1 or H < 1:
        raise InputError(f"grid size must be positive integers, got {W}x{H}")
    return int(W), int(H)


def checkin_instance(lat, lon, W: int, H: int, bbox, *, metric: str = "euclidean"):
    """The W×H grid over ``bbox`` as an :class:`~lpmech.instance.Instance` with the counts as prior.

    Distances are in grid cells (Gu et al., LE §VI-B: d normalised by d_min, cell = 1, unit ``"cell"``),
    ``metric`` is ``"euclidean"`` or ``"manhattan"``; cells are numbered row·W + col as in
    :func:`grid_counts`. The instance holds a dense m×m metric (m = W·H), so keep m to a few
    thousand; the LE scale path (:func:`lpmech.models.le.le_grid`) takes the counts directly.
    """
    from .errors import InputError
    from .instance import grid

    counts = grid_counts(lat, lon, W, H, bbox)
    if counts.sum() == 0:
        raise InputError(f"no check-in falls inside bbox {tuple(bbox)!r}; check the box "
                         "(lat_min, lat_max, lon_min, lon_max) and the file")
    return grid(W, H, 1.0, unit="cell", metric=metric).with_counts(counts.ravel())
