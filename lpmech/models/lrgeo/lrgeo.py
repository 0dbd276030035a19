"""LR-Geo: locally relevant geo-obfuscation (Qiu et al., LR-Geo §4, eqs. (11)–(31), (80)–(86)).

Pieces, in the order of the paper:

* :func:`build_structure` — per user m at v_m: the Geo-Ind graph (edges d ≤ γ) and its path
  distances D, the LR set 𝒩_m = {j : D_mj ≤ Γ} (11) (optionally capped), the obfuscation range
  𝒪_m = {k : d_mk ≤ r_obf} (12), the exponential indicator Q (q_ik = 1 iff d_ik > r_exp), the
  exponential coefficients of (18), and the cost coefficients: true c (5), upper ĉ (25) and lower
  c̃ (31) from a cost reference table (:class:`CostTable`).
* :func:`clr_problem` — CLR-Geo (19)–(21) in Benders form (:class:`~lpmech.solvers.benders.BendersProblem`):
  shared y, one block per user holding its LR-OMG (14)–(17) with the exponential entries tied to y.
  ``exponential=False`` gives the relaxed problem (29)–(30) (M independent LR-OMGs).
* :func:`build_pyomo` — the same CLR-Geo / relaxed problem as a declarative Pyomo model (one
  LR-OMG block per user, ties (18) as explicit equations), for extension and cross-checks.
* :func:`solve` — Benders (default) or the monolithic LP, then the users' matrices are cleaned and
  certified; the result carries the bounds, the relaxed lower bound, GV ratio (32) and GVE (33).

Paper ambiguities (spec §9) are fields of :class:`LRGeoParams`; ``params.choices()`` is logged and
stored in ``Result.stats["choices"]`` with every result. Unit: km (ε in km⁻¹).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, dijkstra

from ... import stop
from ...errors import InputError
from ...mechanism import (
    MAX_EPS_D,
    Mechanism,
    PrivacyCertificate,
    check_epsilon,
    check_epsilon_scale,
    clean_and_certify,
)
from ...solvers.benders import (
    BendersProblem,
    Block,
    make_executor,
    map_blocks,
    map_tasks,
    solve_benders,
    solve_block_alone,
)
from ...solvers.highs import METHODS, solve_lp
from ...solvers.result import Result
from ..common import raise_for_status, require_certified

log = logging.getLogger(__name__)

_EXP_FORMS = ("truncated", "paper")
_OUTSIDE = ("zero", "exp")
_SELECT = ("nearest", "random")
_ROW_PRIOR = ("uniform", "prior")
_COSTS = ("upper", "true", "lower")
#: HiGHS options of the per-user LPs. The Geo-Ind rows carry factors down to e^{−εγ} (e^{−10} by
#: default), so the LPs are ill-conditioned: on Rome, HiGHS' presolve returned a vertex of cost
#: 0.240 where 0.0129 is feasible within 1e-9 (and is what the monolithic LP finds); without
#: presolve the block LPs agree with the monolithic LP.
BLOCK_OPTIONS = {"presolve": "off"}
#: ``retain_after="auto"``: below this many nonzeros in the CLR-Geo LP, every block joins the Benders
#: master after RETAIN_AFTER block passes without a certified gap, and the whole LP is solved by row
#: generation over the Geo-Ind rows (:func:`~lpmech.solvers.benders.solve_whole_lazy`). Measured
#: (issue 13, loaded 2-core machine): 8×8 sweep cells with 5 users (3.5·10⁴ nonzeros) and Rome with
#: 10 users where the ties bind (1.4·10⁵) solve whole in 0.2–3 s while cuts alone need 57–200
#: passes there; Rome with 50 users at ε = 3, r_exp = 1.5 (6.7·10⁵): 150 s in all (the whole LP
#: with lazy rows 139 s, 5.8·10⁴ of 2.5·10⁵ rows) against 342 s for the cuts alone (146
#: iterations) and a HiGHS error after 150 s for the monolithic LP. With 200 users (2.7·10⁶) the
#: whole LP with lazy rows ends in a HiGHS solve error (the basis of ~1.4·10⁵ rows is numerically
#: singular), so larger LPs stay with the cuts. At the paper's parameters Benders certifies in two
#: iterations and never retains. Profile (session 5, ``benchmarks/lrgeo_users.py --only whole``):
#: what makes the whole LP slow is the shared y, not the rows or their scaling. At 50 users the
#: same lazy-row LP takes 114 s with y free (a dual simplex iteration costs 0.1 ms while the
#: model has ≤ 2.5·10⁴ rows, then 7–12 ms once y enters the basis: 534 of 1311 y lie strictly
#: inside their bounds at the optimum and couple every user's rows) and 8 s with y fixed at its
#: optimum (0.06–0.5 ms per iteration); boxing y within 1 % of the optimum still takes 42 s.
#: Splitting y into per-user copies, dropping the near-collinear Geo-Ind pairs, the master rows or
#: the redundant upper bounds changed neither the time nor the breakdown. At 100 users (1.3·10⁶)
#: the 4th round breaks down with Devex (Markowitz warnings, primal infeasibilities of 1e9), is
#: recovered with dual steepest edge (92 s); the 5th round (9.6·10⁴ rows) broke down again and its
#: cold restart had not finished when the 900 s limit came (777 s in that round). The threshold stays:
#: at 200 users the cuts alone certify (79 iterations; 606 s on a 2-worker pool alone on the machine,
#: 972 s under load), where the monolithic LP, in the same run and given as long, ends in a HiGHS
#: error after 274 s by dual simplex and has no point after 611 s by interior point. Measured and
#: rejected for the cuts (50 users, session 6): a box trust region on y (worse: the radius shrinks,
#: the tail lengthens), in-out weight 0.8 (130 iterations against 136), a y start from the relaxed
#: LR-OMGs (they put almost no mass on the tied entries).
RETAIN_NNZ = 1_000_000
RETAIN_AFTER = 1


@dataclasses.dataclass(frozen=True)
class LRGeoParams:
    """Parameters of LR-Geo; every choice the paper leaves open is a field (spec §9 item in brackets).

    Attributes:
        epsilon: privacy budget ε, km⁻¹ (paper 10).
        gamma: Geo-Ind neighbour threshold γ, km [§9.4: not given; 1 km ≈ 2 Rome cells keeps the
            Geo-Ind graph connected]; ``inf`` is LR-Geo-F.
        Gamma: LR distance threshold Γ, km (paper 20).
        r_obf: obfuscation-range radius, km (paper 4).
        r_exp: exponential threshold, r_exp ≤ r_obf [§9.3: not given; default 3.5 km].
        lr_cap: cap on |𝒩_m| [§9.5: the authors' code uses 20]; ``None`` = no cap.
        lr_select: which capped LR locations: ``"nearest"`` (smallest path distance D, v_m first;
            default: the strongly linked ones of §3) or ``"random"`` (v_m plus a uniform sample of
            the Γ-ball, as the authors' code; needs an ``rng``).
        exp_form: exponential entries (18): ``"truncated"`` z = y_k e^{−ε min(d_ik, r_obf)/2}
            (default; makes Thm 4.5 exact, spec §6) or ``"paper"`` (e^{−ε d_ik/2} in 𝒪_m,
            e^{−ε r_obf/2} outside) [§9.1].
        outside: columns k ∉ 𝒪_m: ``"zero"`` (ξ = 0, the authors' code; default) or ``"exp"``
            (ξ tied to y as (18), priced with the same cost coefficients) [§9.2, §9.20].
        q_strict: q_ik = 1 iff d_ik > r_exp (True) or ≥ r_exp [§9.3].
        row_prior: p_i over 𝒩_m in (5): ``"uniform"`` (1/|𝒩_m|) or ``"prior"`` (the given prior
            renormalised on 𝒩_m) [§9.8].
        costs: coefficients CLR-Geo is optimised with: ``"upper"`` ĉ (25) (the paper), ``"true"``
            c (5) or ``"lower"`` c̃ (31).
        table_cell: cell (km) of the cost reference table: one reference location per square of
            this size; each location snaps to its nearest reference location by road distance
            (so (25) and (31) are valid bounds, spec §9.10); ``None`` (default) = every location:
            the table has the grid's own resolution and ĉ = c̃ = c. The paper's table (0.1 km) is
            finer than its grid; our road data has nothing finer than the 0.49 km Rome cells, and a
            coarser table makes the snap terms dominate (on Rome, ε = 10: relaxed cost 0.11 with
            c, 0.79 with ĉ at 0.5 km, 2.6 at 0.75 km).
    """

    epsilon: float = 10.0
    gamma: float = 1.0
    Gamma: float = 20.0
    r_obf: float = 4.0
    r_exp: float = 3.5
    lr_cap: int | None = 20
    lr_select: str = "nearest"
    exp_form: str = "truncated"
    outside: str = "zero"
    q_strict: bool = True
    row_prior: str = "uniform"
    costs: str = "upper"
    table_cell: float | None = None

    def __post_init__(self):
        check_epsilon(self.epsilon)
        for name in ("gamma", "Gamma", "r_obf"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and v > 0):
                raise InputError(f"{name} must be a positive number (km), got {v!r}")
        if not (isinstance(self.r_exp, (int, float)) and 0 <= self.r_exp <= self.r_obf):
            raise InputError(f"r_exp must lie in [0, r_obf = {self.r_obf:g}] km, got {self.r_exp!r}: "
                             "the exponential entries are the far part of the obfuscation range")
        if self.lr_cap is not None and (int(self.lr_cap) != self.lr_cap or self.lr_cap < 1):
            raise InputError(f"lr_cap must be a positive integer or None, got {self.lr_cap!r}: an LR "
                             "set holds at least the user's own location")
        for name, allowed in (("lr_select", _SELECT), ("exp_form", _EXP_FORMS), ("outside", _OUTSIDE),
                              ("row_prior", _ROW_PRIOR), ("costs", _COSTS)):
            if getattr(self, name) not in allowed:
                raise InputError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.table_cell is not None and not self.table_cell > 0:
            raise InputError(f"table_cell must be positive (km) or None, got {self.table_cell!r}")

    def replace(self, **kw) -> LRGeoParams:
        return dataclasses.replace(self, **kw)

    def choices(self) -> dict:
        """The parameters as a JSON-ready dict (``inf`` as the string "inf")."""
        return {k: ("inf" if isinstance(v, float) and math.isinf(v) else v)
                for k, v in dataclasses.asdict(self).items()}


# ------------------------------------------------------------------------------------- costs


def travel_error(travel_cost, targets, rows, cols, *, chunk: int = 2_000_000) -> np.ndarray:
    """E_l |tc(v_i, v_l) − tc(v_k, v_l)| for i in ``rows``, k in ``cols`` (eqs. (3)–(5) without p_i):
    a target-weighted L1 distance between rows of tc (scipy's cdist, no rows×cols×targets array)."""
    from scipy.spatial.distance import cdist

    tc = np.asarray(travel_cost, float)
    rows, cols = np.asarray(rows, int), np.asarray(cols, int)
    lsel = np.flatnonzero(targets)
    if rows.size and cols.size and lsel.size:
        return cdist(tc[np.ix_(rows, lsel)], tc[np.ix_(cols, lsel)], "minkowski", p=1,
                     w=np.asarray(targets, float)[lsel])
    out = np.zeros((rows.size, cols.size))
    step = max(1, chunk // max(1, rows.size * cols.size))
    for s in range(0, lsel.size, step):
        ll = lsel[s:s + step]
        diff = np.abs(tc[np.ix_(rows, ll)][:, None, :] - tc[np.ix_(cols, ll)][None, :, :])
        out += diff @ targets[ll]
    return out


def reference_points(coords, cell_km: float) -> np.ndarray:
    """One location per ``cell_km`` square (the one nearest the square's centre), sorted indices.

    Coordinates are (lat, lon) degrees, projected equirectangularly about their mean latitude.
    """
    from ...instance import EARTH_RADIUS_KM

    ll = np.radians(np.asarray(coords, float))
    xy = np.column_stack([ll[:, 1] * math.cos(ll[:, 0].mean()), ll[:, 0]]) * EARTH_RADIUS_KM
    xy -= xy.min(axis=0)
    b = np.floor(xy / cell_km).astype(np.int64)
    off = np.linalg.norm(xy - (b + 0.5) * cell_km, axis=1)
    key = b[:, 0] * (b[:, 1].max() + 1) + b[:, 1]
    order = np.lexsort((off, key))
    first = np.r_[True, key[order][1:] != key[order][:-1]]
    return np.sort(order[first])


@dataclasses.dataclass
class CostTable:
    """The cost reference table of §4.5: reference locations, each location's snap and distance.

    ĉ_ik = p_i(β(î, k̂) + s_i + s_k) (25) and c̃_ik = p_i·max(0, β(î, k̂) − s_i − s_k) (31), with β
    the target-averaged travel error between the snapped locations and s the road distance to
    the snap (the larger direction), so c̃ ≤ c ≤ ĉ holds by the triangle inequality of tc.
    """

    ref: np.ndarray
    snap: np.ndarray
    snap_dist: np.ndarray

    @classmethod
    def build(cls, coords, travel_cost, cell_km: float | None) -> CostTable:
        K = travel_cost.shape[0]
        if cell_km is None:
            return cls(np.arange(K), np.arange(K), np.zeros(K))
        ref = reference_points(coords, cell_km)
        sym = np.maximum(travel_cost[:, ref], travel_cost[ref, :].T)
        pick = sym.argmin(axis=1)
        return cls(ref, ref[pick], sym[np.arange(K), pick])

    def bounds(self, travel_cost, targets, rows, cols):
        """(upper, lower) estimates of E_l δ for ``rows`` × ``cols`` (without p_i)."""
        beta = travel_error(travel_cost, targets, self.snap[rows], self.snap[cols])
        s = self.snap_dist[rows][:, None] + self.snap_dist[cols][None, :]
        return beta + s, np.maximum(beta - s, 0.0)


# --------------------------------------------------------------------------------- structure


@dataclasses.dataclass
class UserLR:
    """User m's locally relevant structure. Local row r is location ``N[r]`` (``N[0]`` = v_m);
    local column t is location ``cols[t]`` (𝒪_m, or all K with ``outside="exp"``)."""

    user: int
    N: np.ndarray
    O: np.ndarray  # noqa: E741 (the paper's 𝒪_m)
    cols: np.ndarray
    in_O: np.ndarray
    q: np.ndarray
    a: np.ndarray
    p: np.ndarray
    cost: dict
    pair_i: np.ndarray
    pair_j: np.ndarray
    factor: np.ndarray

    @property
    def n(self) -> int:
        return self.N.size


@dataclasses.dataclass
class LRStructure:
    """Everything the server needs to build CLR-Geo, for all users."""

    params: LRGeoParams
    metric: np.ndarray
    travel_cost: np.ndarray
    targets: np.ndarray
    users: list[UserLR]
    table: CostTable
    path_dist: np.ndarray

    @property
    def K(self) -> int:
        return self.metric.shape[0]


def geo_ind_graph(metric, gamma: float) -> sp.csr_matrix:
    """The Geo-Ind graph 𝒢 (Def. 3.1): edges d_ij ≤ γ (i ≠ j), weighted by d."""
    d = np.asarray(metric, float)
    mask = d <= gamma
    np.fill_diagonal(mask, False)
    i, j = np.nonzero(mask)
    return sp.csr_matrix((np.maximum(d[i, j], 1e-12), (i, j)), shape=d.shape)


def path_distances(metric, gamma: float, sources) -> np.ndarray:
    """Shortest-path distances D in the Geo-Ind graph from ``sources`` (Thm 3.2, §4.1.1).

    Raises InputError when the graph is disconnected (then some locations share no Geo-Ind
    constraint path with the users and γ must grow).
    """
    d = np.asarray(metric, float)
    if math.isinf(gamma) or gamma >= d.max():
        return d[np.asarray(sources)]  # complete graph: D = d (d is a metric)
    g = geo_ind_graph(d, gamma)
    n_parts, _ = connected_components(g, directed=False)
    if n_parts > 1:
        raise InputError(f"the Geo-Ind graph with gamma = {gamma:g} km has {n_parts} connected "
                         "components; raise gamma (at least the spacing of the locations)")
    return dijkstra(g, directed=False, indices=np.asarray(sources))


def _check_users(users, K: int) -> np.ndarray:
    u = np.asarray(users)
    if u.ndim != 1 or u.size == 0:
        raise InputError("give at least one user (a list of location indices)")
    if not np.issubdtype(u.dtype, np.integer):
        if not np.all(np.mod(u, 1) == 0):
            raise InputError(f"users must be location indices (integers), got {users!r}")
        u = u.astype(int)
    bad = u[(u < 0) | (u >= K)]
    if bad.size:
        raise InputError(f"user location {int(bad[0])} is outside the domain of K = {K} locations "
                         f"(valid indices 0..{K - 1})")
    return u


def check_lrgeo_epsilon(params: LRGeoParams, metric, flag: str = "epsilon") -> float:
    """ε checked against the road grid's scale, as OMG checks it
    (:func:`lpmech.mechanism.check_epsilon_scale` on the Geo-Ind pairs d ≤ γ): beyond
    ε·d_max = 709 the factors e^{ε d} overflow and the exponential entries e^{−ε d/2} underflow,
    so no LR-OMG can be certified; an :class:`InputError` names the usable range."""
    eps = check_epsilon_scale(params.epsilon, metric, gamma=params.gamma, flag=flag)
    reach = max(params.r_exp, params.r_obf - params.r_exp) / 2  # exponent span of (18), per ε
    if reach > 0 and eps * reach > MAX_EPS_D:
        raise InputError(f"{flag} {eps:g} is too large for the exponential entries (18): "
                         f"e^(-epsilon·(min(d, r_obf) - r_exp)/2) leaves double precision beyond "
                         f"epsilon = {MAX_EPS_D / reach:.4g} (r_obf {params.r_obf:g}, r_exp "
                         f"{params.r_exp:g} km); use a smaller epsilon or r_obf")
    return eps


def build_structure(grid, users, params: LRGeoParams = LRGeoParams(), *, targets=None, prior=None,
                    rng: np.random.Generator | None = None) -> LRStructure:
    """LR sets, obfuscation ranges, Q, exponential coefficients and cost coefficients for ``users``.

    Args:
        grid: a :class:`~lpmech.datasets.RoadGrid` (or anything with ``coords`` (lat, lon),
            ``metric`` (Haversine, km) and ``travel_cost`` (km)).
        users: location indices v_m of the users (the same location twice is allowed).
        params: :class:`LRGeoParams`.
        targets: target prior q over the locations (default uniform) — eq. (5).
        prior: prior p over real locations, used with ``row_prior="prior"``.
        rng: a numpy Generator, needed with ``lr_select="random"``.
    """
    from ...instance import make_prior

    d = np.asarray(grid.metric, float)
    tc = np.asarray(grid.travel_cost, float)
    K = d.shape[0]
    if tc.shape != (K, K) or not np.isfinite(tc).all():
        raise InputError("travel_cost must be a finite K×K matrix matching the metric")
    users = _check_users(users, K)
    P = params
    q_t = make_prior(targets, K)
    p_all = make_prior(prior, K)
    if P.lr_select == "random" and rng is None:
        raise InputError("lr_select='random' needs an rng (numpy.random.Generator)")
    check_lrgeo_epsilon(P, d)
    D = path_distances(d, P.gamma, users)
    table = CostTable.build(grid.coords, tc, P.table_cell)
    eps = P.epsilon
    out = []
    for m, v in enumerate(users):
        ball = np.flatnonzero(D[m] <= P.Gamma)
        ball = ball[np.lexsort((ball, D[m][ball]))]  # by path distance, v_m first
        if ball.size == 0 or ball[0] != v:
            ball = np.r_[v, ball[ball != v]]
        if P.lr_cap is not None and ball.size > P.lr_cap:
            if P.lr_select == "nearest":
                ball = ball[:P.lr_cap]
            else:
                ball = np.r_[v, rng.choice(ball[1:], size=P.lr_cap - 1, replace=False)]
        N = ball
        O = np.flatnonzero(d[v] <= P.r_obf)  # noqa: E741
        cols = O if P.outside == "zero" else np.arange(K)
        in_O = np.isin(cols, O)
        dNC = d[np.ix_(N, cols)]
        q = (dNC > P.r_exp) if P.q_strict else (dNC >= P.r_exp)
        q |= ~in_O[None, :]
        if P.exp_form == "truncated":
            a = np.exp(-eps * (np.minimum(dNC, P.r_obf) - P.r_exp) / 2)
        else:
            a = np.where(in_O[None, :], np.exp(-eps * (dNC - P.r_exp) / 2),
                         math.exp(-eps * (P.r_obf - P.r_exp) / 2))
        p = np.full(N.size, 1.0 / N.size) if P.row_prior == "uniform" else p_all[N] / p_all[N].sum()
        if not np.isfinite(p).all():
            raise InputError(f"the prior puts no mass on user {m}'s LR set; use row_prior='uniform'")
        true = travel_error(tc, q_t, N, cols)
        upper, lower = (true, true) if P.table_cell is None else table.bounds(tc, q_t, N, cols)
        cost = {"true": p[:, None] * true, "upper": p[:, None] * upper, "lower": p[:, None] * lower}
        dNN = d[np.ix_(N, N)]
        pi, pj = np.nonzero((dNN <= P.gamma) & ~np.eye(N.size, dtype=bool))
        f = np.exp(-eps * dNN[pi, pj])
        keep = f > 0
        out.append(UserLR(int(v), N, O, cols, in_O, q, a, p, cost, pi[keep], pj[keep], f[keep]))
    return LRStructure(P, d, tc, q_t, out, table, D)


def request_circle(structure: LRStructure, m: int, rng: np.random.Generator):
    """Prop. 4.4: the circle 𝒞(v_a, max{2Γ, Γ + r_obf}) user m requests, v_a uniform on 𝒩_m."""
    u = structure.users[m]
    P = structure.params
    return int(rng.choice(u.N)), max(2 * P.Gamma, P.Gamma + P.r_obf)


# ------------------------------------------------------------------------------------ blocks


def _y_index(structure: LRStructure, exponential: bool) -> np.ndarray:
    if not exponential:
        return np.zeros(0, int)
    used = [u.cols[u.q.any(axis=0)] for u in structure.users]
    return np.unique(np.concatenate(used)) if used else np.zeros(0, int)


def _user_block(u: UserLR, C: np.ndarray, y_index: np.ndarray, exponential: bool):
    """User m's LR-OMG (15)–(17) as a Benders block, plus its exponential cost on y (α) and unit
    rows' y part (valid master rows). Entries with q = 1 are a_ik·y_k; the rest are variables."""
    n, nc = u.q.shape
    xmask = ~u.q if exponential else np.ones_like(u.q)
    xcol = -np.ones((n, nc), int)
    xcol[xmask] = np.arange(int(xmask.sum()))
    ycol = np.searchsorted(y_index, u.cols) if exponential else np.zeros(nc, int)
    nx, ny = int(xmask.sum()), y_index.size
    # Geo-Ind rows (15), well-scaled: f_ij z_ik − z_jk ≤ 0 for pairs (i, j) and k ∈ 𝒪_m
    opos = np.flatnonzero(u.in_O)
    P = u.pair_i.size
    ii = np.repeat(u.pair_i, opos.size)
    jj = np.repeat(u.pair_j, opos.size)
    kk = np.tile(opos, P)
    ff = np.repeat(u.factor, opos.size)
    x1, x2 = xmask[ii, kk], xmask[jj, kk]
    ycoef = np.where(x1, 0.0, ff * u.a[ii, kk]) - np.where(x2, 0.0, u.a[jj, kk])
    keep = x1 | x2 | (ycoef > 1e-15)  # both exponential with ycoef ≤ 0: slack for y ≥ 0
    ii, jj, kk, ff, x1, x2 = ii[keep], jj[keep], kk[keep], ff[keep], x1[keep], x2[keep]
    R = ii.size
    r = np.arange(R)
    A_r = np.r_[r[x1], r[x2]]
    A_c = np.r_[xcol[ii[x1], kk[x1]], xcol[jj[x2], kk[x2]]]
    A_v = np.r_[ff[x1], -np.ones(int(x2.sum()))]
    G_r = np.r_[r[~x1], r[~x2]]
    G_c = np.r_[ycol[kk[~x1]], ycol[kk[~x2]]]
    G_v = np.r_[ff[~x1] * u.a[ii[~x1], kk[~x1]], -u.a[jj[~x2], kk[~x2]]]
    # unit measure (16): Σ_k z_ik = 1
    ei, ek = np.nonzero(xmask)
    gi, gk = np.nonzero(~xmask)
    A_r = np.r_[A_r, R + ei]
    A_c = np.r_[A_c, xcol[ei, ek]]
    A_v = np.r_[A_v, np.ones(ei.size)]
    G_r = np.r_[G_r, R + gi]
    G_c = np.r_[G_c, ycol[gk]]
    G_v = np.r_[G_v, u.a[gi, gk]]
    rows = R + n
    A = sp.csr_matrix((A_v, (A_r, A_c)), shape=(rows, nx))
    G = sp.csr_matrix((G_v, (G_r, G_c)), shape=(rows, ny))
    block = Block(c=C[xmask], A=A, G=G, row_lo=np.r_[np.full(R, -np.inf), np.ones(n)],
                  row_hi=np.r_[np.zeros(R), np.ones(n)], col_lo=np.zeros(nx), col_hi=np.ones(nx),
                  w_lower=0.0, name=f"user {u.user}", options=dict(BLOCK_OPTIONS),
                  lazy=np.r_[np.ones(R, bool), np.zeros(n, bool)])
    alpha = np.zeros(ny)
    np.add.at(alpha, ycol[gk], C[gi, gk] * u.a[gi, gk])
    unit_y = sp.csr_matrix((u.a[gi, gk], (gi, ycol[gk])), shape=(n, ny))
    if exponential and opos.size and P:
        unit_y = unit_y + _implied_mass(u, xmask, ycol, ny)
    return block, alpha, unit_y, xmask


def _implied_mass(u: UserLR, xmask, ycol, ny: int) -> sp.csr_matrix:
    """Lower bounds of the free entries by the ties, for the master's unit rows (valid rows on y).

    Along a path of Geo-Ind pairs i → … → j of the user's LR set (rows (15) chained, Thm 3.2),
    z_jk ≥ e^{−ε D_ij} z_ik, and z_ik = a_ik y_k when (i, k) is tied; so every free entry (j, k),
    k ∈ 𝒪_m, holds at least L_jk y_k with L_jk = max_{tied i} e^{−ε D_ij} a_ik, and row j's unit
    measure (16) gives Σ_tied a_jk y_k + Σ_free L_jk y_k ≤ 1 — a valid row on y alone that keeps
    the master's ȳ where every block is feasible (the plain Σ_tied a_jk y_k ≤ 1 leaves room for ȳ
    that force the free entries above 1 in total)."""
    n = u.n
    w = -np.log(u.factor)  # ε·d of each Geo-Ind pair
    g = sp.csr_matrix((np.maximum(w, 1e-300), (u.pair_i, u.pair_j)), shape=(n, n))
    E = np.exp(-dijkstra(g, directed=True))  # e^{−ε D_ij}, 0 where no path
    opos = np.flatnonzero(u.in_O)
    tied = np.where(~xmask[:, opos], u.a[:, opos], 0.0)  # a_ik on tied entries, columns in 𝒪_m
    L = (E.T[:, :, None] * tied[None, :, :]).max(axis=1)  # L[j, t] = max_i E[i, j]·a_it (tied)
    L = np.where(xmask[:, opos], L, 0.0)
    jj, tt = np.nonzero(L > 0)
    return sp.csr_matrix((L[jj, tt], (jj, ycol[opos[tt]])), shape=(n, ny))


@dataclasses.dataclass
class CLRProblem:
    """CLR-Geo (or the relaxed problem) in Benders form, with the maps back to the matrices."""

    problem: BendersProblem
    structure: LRStructure
    costs: str
    exponential: bool
    y_index: np.ndarray
    xmasks: list

    def matrices(self, y, xs) -> list[np.ndarray]:
        """Each user's |𝒩_m|×K matrix from y and the blocks' x (entries outside ``cols`` are 0)."""
        out = []
        for u, x, xmask in zip(self.structure.users, xs, self.xmasks):
            Zc = np.zeros(u.q.shape)
            Zc[xmask] = x
            if self.exponential:
                gi, gk = np.nonzero(~xmask)
                Zc[gi, gk] = u.a[gi, gk] * y[np.searchsorted(self.y_index, u.cols[gk])]
            Z = np.zeros((u.n, self.structure.K))
            Z[:, u.cols] = Zc
            out.append(Z)
        return out

    def cost_of(self, mats, which: str | None = None) -> float:
        """Σ_m Σ_{i, k} c_ik z_ik (19) under the coefficients ``which`` (default: the optimised)."""
        which = which or self.costs
        return float(sum((u.cost[which] * Z[:, u.cols]).sum()
                         for u, Z in zip(self.structure.users, mats)))


def clr_problem(structure: LRStructure, *, costs: str | None = None, exponential: bool = True,
                master_unit_rows: bool = True, relaxed_cuts: bool = True, executor="serial") -> CLRProblem:
    """CLR-Geo (19)–(21) in Benders form; ``exponential=False``: the relaxed problem (29)–(30).

    The y variables are ỹ_k = y_k e^{−ε r_exp/2} (a rescaling, spec §9.21): the exponential
    coefficients are then in (0, 1]. Valid master rows (``master_unit_rows``): the exponential part
    of each unit-measure row is ≤ 1; y_k ≤ 1 / max a (no entry exceeds 1). Valid initial cuts
    (``relaxed_cuts``): w_m + α_m·y ≥ the value of user m's relaxed LR-OMG under the same costs
    (the relaxation (29)–(30) bounds each user's whole cost), which gives Benders a tight first
    lower bound.
    """
    costs = costs or structure.params.costs
    if costs not in _COSTS:
        raise InputError(f"costs must be one of {_COSTS}, got {costs!r}")
    y_index = _y_index(structure, exponential)
    blocks, alphas, units, masks = [], [], [], []
    for u in structure.users:
        b, al, uy, xm = _user_block(u, u.cost[costs], y_index, exponential)
        blocks.append(b)
        alphas.append(al)
        units.append(uy)
        masks.append(xm)
    alpha = np.sum(alphas, axis=0) if y_index.size else np.zeros(0)
    y_hi = np.full(y_index.size, np.inf)
    if y_index.size:
        amax = sp.vstack(units).max(axis=0).toarray().ravel()
        y_hi = np.where(amax > 0, 1.0 / np.maximum(amax, 1e-300), np.inf)
        y_hi[~np.isfinite(y_hi)] = 1.0
    mA = sp.vstack(units).tocsr() if (master_unit_rows and y_index.size) else None
    cuts = []
    if relaxed_cuts and exponential:
        relaxed = [_user_block(u, u.cost[costs], y_index, False)[0] for u in structure.users]
        values = map_blocks(executor, solve_block_alone, relaxed)
        cuts = [(m, -al, v) for m, (al, v) in enumerate(zip(alphas, values)) if v is not None]
    problem = BendersProblem(alpha=alpha, blocks=blocks, y_hi=y_hi, master_A=mA, initial_cuts=cuts,
                             master_lo=None if mA is None else np.full(mA.shape[0], -np.inf),
                             master_hi=None if mA is None else np.ones(mA.shape[0]))
    return CLRProblem(problem, structure, costs, exponential, y_index, masks)


def solve_relaxed(structure: LRStructure, *, costs: str = "lower", executor="serial") -> float:
    """Value of the relaxed problem (29)–(30) (CLR-Geo without the ties (21)), by default with c̃
    (31): a lower bound on the LR-restricted minimum expected cost (Thm 4.8).

    Parameters
    ----------
    structure : LRStructure
        The users' LR sets and coefficients (:func:`build_structure`).
    costs : {"lower", "upper", "true"}
        The cost coefficients: c̃ (31) (default), ĉ (25) or c (5).
    executor : concurrent.futures.Executor or "serial"
        Where the M independent LR-OMGs run; each contributes its certified (Lagrangian) bound.

    Returns
    -------
    float
        The relaxed value.

    Raises
    ------
    InputError
        A relaxed LR-OMG has no solution (check the user's LR set and range).

    Examples
    --------
    >>> import numpy as np
    >>> from lpmech import datasets
    >>> from lpmech.models import lrgeo
    >>> grid = datasets.synthetic_road_grid(6, 6, rng=np.random.default_rng(1))
    >>> params = lrgeo.LRGeoParams(epsilon=3.0, gamma=1.0, Gamma=3.0, r_obf=1.0, r_exp=0.7,
    ...                            lr_cap=4)
    >>> structure = lrgeo.build_structure(grid, [0, 14, 28], params)
    >>> print(f"{lrgeo.solve_relaxed(structure):.4f}")
    0.5305
    """
    clr = clr_problem(structure, costs=costs, exponential=False)
    values = map_blocks(executor, solve_block_alone, clr.problem.blocks)
    if any(v is None for v in values):
        raise InputError("a relaxed LR-OMG has no solution: check the user's LR set and range")
    return float(sum(values))


# ------------------------------------------------------------------------------------- Pyomo


def build_pyomo(structure: LRStructure, *, costs: str | None = None, exponential: bool = True):
    """CLR-Geo (19)–(21) as a declarative Pyomo model; ``exponential=False`` the relaxed (29)–(30).

    ``model.user[m]`` is user m's LR-OMG (14)–(17): variables ``z[i, t]`` in [0, 1] (local row i,
    local column t), ``geo_ind[p, t]`` (15), ``unit[i]`` (16) and the expression ``cost`` (13). The
    top level holds ``y[k] ≥ 0`` (the shared scale, rescaled as in :func:`clr_problem`), the ties
    ``tie[m, i, t]``: z = a·y (18)/(21), and the objective (19).
    """
    import pyomo.environ as pyo

    costs = costs or structure.params.costs
    y_index = _y_index(structure, exponential)
    mdl = pyo.ConcreteModel(name="CLR-Geo" if exponential else "relaxed LR-Geo")
    mdl.Y = pyo.Set(initialize=y_index.tolist())
    mdl.y = pyo.Var(mdl.Y, within=pyo.NonNegativeReals)
    users = structure.users

    def user_rule(b, m):
        u = users[m]
        C = u.cost[costs]
        b.I = pyo.RangeSet(0, u.n - 1)
        b.T = pyo.RangeSet(0, u.cols.size - 1)
        b.TO = pyo.Set(initialize=np.flatnonzero(u.in_O).tolist())
        b.P = pyo.RangeSet(0, u.pair_i.size - 1) if u.pair_i.size else pyo.Set(initialize=[])
        b.z = pyo.Var(b.I, b.T, bounds=(0.0, 1.0))
        b.geo_ind = pyo.Constraint(b.P, b.TO, rule=lambda b, p, t: float(u.factor[p]) * b.z[
            int(u.pair_i[p]), t] - b.z[int(u.pair_j[p]), t] <= 0)
        b.unit = pyo.Constraint(b.I, rule=lambda b, i: sum(b.z[i, t] for t in b.T) == 1)
        b.cost = pyo.Expression(expr=sum(float(C[i, t]) * b.z[i, t] for i in b.I for t in b.T
                                         if C[i, t]))

    mdl.M = pyo.RangeSet(0, len(users) - 1)
    mdl.user = pyo.Block(mdl.M, rule=user_rule)
    ties = [(m, int(i), int(t)) for m, u in enumerate(users) for i, t in zip(*np.nonzero(u.q))]
    mdl.TIE = pyo.Set(initialize=ties if exponential else [], dimen=3)
    mdl.tie = pyo.Constraint(mdl.TIE, rule=lambda mdl, m, i, t: mdl.user[m].z[i, t] == float(
        users[m].a[i, t]) * mdl.y[int(users[m].cols[t])])
    mdl.total = pyo.Objective(expr=sum(mdl.user[m].cost for m in mdl.M), sense=pyo.minimize)
    return mdl


def pyomo_matrices(model, structure: LRStructure) -> list[np.ndarray]:
    """The users' |𝒩_m|×K matrices from a solved :func:`build_pyomo` model."""
    out = []
    for m, u in enumerate(structure.users):
        Z = np.zeros((u.n, structure.K))
        b = model.user[m]
        Z[:, u.cols] = [[b.z[i, t].value or 0.0 for t in range(u.cols.size)] for i in range(u.n)]
        out.append(Z)
    return out


# ------------------------------------------------------------------------------------- solve


def _certify_one(Z, metric, epsilon, gamma):
    return clean_and_certify(Z, metric, epsilon, gamma)


def certify_users(structure: LRStructure, mats, name: str = "LR-Geo", executor="serial"):
    """Clean and certify each user's matrix on its LR set (ε, γ); then measure the cross-user
    Geo-Ind violations of all rows together: GV ratio (32) and GVE (33) over all pairs of rows
    (of any users) with d ≤ γ, and the same over pairs of distinct places (keys ``*_distinct``).
    Returns (cleaned matrices, per-user certificates, cross dict). The users' certifications are
    independent and run on ``executor`` (an Executor or ``"serial"``).
    """
    P = structure.params
    clean, certs = [], []
    done = map_tasks(executor, _certify_one, [(Z, structure.metric[np.ix_(u.N, u.N)], P.epsilon, P.gamma)
                                              for u, Z in zip(structure.users, mats)])
    for u, (z, cert) in zip(structure.users, done):
        require_certified(cert, f"{name} user at location {u.user}", "the LR-OMG solve is not trustworthy")
        clean.append(z)
        certs.append(cert)
    rows = np.concatenate([u.N for u in structure.users])
    dd = structure.metric[np.ix_(rows, rows)]
    cross, distinct = _violations(np.vstack(clean), dd, P.epsilon, P.gamma)
    cross.update({f"{k}_distinct": v for k, v in distinct.items()})
    return clean, certs, cross


def geo_ind_violations(Z, d, epsilon: float, gamma: float, *, tol: float = 1e-12,
                       distinct: bool = False) -> dict:
    """GV ratio (32) and GVE (33) of the rows of ``Z`` (locations with distances ``d``): over ordered
    pairs (i, j), i ≠ j, d_ij ≤ γ, and every column k, the share and sizes of
    z_ik − e^{ε d_ij} z_jk > ``tol``. Sparse over the pairs (same counting as
    :func:`lpmech.mechanism.certify`). ``distinct``: only pairs of different places (d_ij > 0),
    leaving out the same location appearing in two users' LR sets (the paper's Prop. 4.6 assumes
    disjoint LR sets)."""
    if tol < 0:
        raise InputError(f"tol must be non-negative, got {tol!r}")
    every, only_distinct = _violations(Z, d, epsilon, gamma, tol=tol)
    return only_distinct if distinct else every


def _violations(Z, d, epsilon: float, gamma: float, *, tol: float = 1e-12, chunk: int = 1 << 22):
    """:func:`geo_ind_violations` over all pairs and over distinct places, in one sweep.

    Only the positive entries of the row z_i can violate z_ik − e^{ε d_ij} z_jk ≤ tol (tol ≥ 0),
    so the sweep runs over the nonzeros of Z (each user's rows live on its obfuscation range)."""
    Z = np.asarray(Z, float)
    mask = d <= gamma
    np.fill_diagonal(mask, False)
    i, j = np.nonzero(mask)
    far = d[i, j] > 0
    nzr, nzc = np.nonzero(Z > 0)
    start = np.searchsorted(nzr, np.arange(Z.shape[0] + 1))
    count = np.diff(start)[i]
    bad = np.zeros(2, np.int64)
    total, worst = np.zeros(2), np.zeros(2)
    p0 = 0
    cum = np.cumsum(count)
    while p0 < i.size:
        p1 = max(p0 + 1, int(np.searchsorted(cum, (cum[p0 - 1] if p0 else 0) + chunk)))
        a, b, cnt = i[p0:p1], j[p0:p1], count[p0:p1]
        rep_pair = np.repeat(np.arange(a.size), cnt)
        offs = np.arange(rep_pair.size) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        cols = nzc[start[a][rep_pair] + offs]
        with np.errstate(over="ignore", invalid="ignore"):
            far_part = np.exp(epsilon * d[a, b])[rep_pair] * Z[b[rep_pair], cols]
            v = Z[a[rep_pair], cols] - np.nan_to_num(far_part, nan=0.0)
        hit = v > tol
        fr = far[p0:p1][rep_pair]
        for s_, sel in enumerate((np.ones_like(hit), fr)):
            h = hit & sel
            bad[s_] += int(h.sum())
            total[s_] += float(v[h].sum())
            worst[s_] = max(worst[s_], float(v[sel].max(initial=0.0)))
        p0 = p1
    out = []
    for s_, n_pairs in enumerate((i.size, int(far.sum()))):
        n = n_pairs * Z.shape[1]
        out.append({"gv_ratio": bad[s_] / n if n else 0.0,
                    "gve_mean": total[s_] / bad[s_] if bad[s_] else 0.0, "gve_max": worst[s_], "pairs": n})
    return out[0], out[1]


def own_row_cost(structure: LRStructure, mats) -> np.ndarray:
    """Per user: the expected travel-cost error Σ_k z_mk E_l δ(v_m, v_k, v_l) of the row it uses (km)."""
    out = []
    for u, Z in zip(structure.users, mats):
        row = np.asarray(Z[0], float)
        if not row[np.setdiff1d(np.arange(row.size), u.cols)].any() and u.p[0] > 0:
            # the row lives on the user's columns: E_l δ(v_m, v_k, v_l) is c_mk / p_m there (5)
            out.append(float(u.cost["true"][0] @ row[u.cols]) / float(u.p[0]))
        else:
            L = travel_error(structure.travel_cost, structure.targets, [u.user], np.arange(structure.K))
            out.append(float(L[0] @ row))
    return np.array(out)


@stop.scoped
def solve(grid, users, params: LRGeoParams = LRGeoParams(), *, method: str = "benders",
          executor=None, abs_tol: float = 0.01, rel_tol: float = 1e-6, max_iter: int = 100,
          time_limit: float | None = None, relaxed_bound: bool = True, targets=None, prior=None,
          rng: np.random.Generator | None = None, recourse: str = "elastic", retain_after="auto",
          lp_method: str = "simplex", verbose: bool = False) -> Result:
    """LR-Geo for ``users`` on ``grid``: CLR-Geo by Benders (or ``method="monolithic"``), certified.

    Qiu, Liu, Pappachan, Squicciarini & Xie, "Time-Efficient Locally Relevant Geo-Location Privacy
    Protection", PETS 2025, §4: CLR-Geo (19)–(21), one LR-OMG (14)–(17) per user with the
    exponential entries tied to a shared y (18).

    Parameters
    ----------
    grid : RoadGrid
        A :class:`~lpmech.datasets.RoadGrid` (or anything with ``coords`` (lat, lon), ``metric``
        (Haversine, km) and ``travel_cost`` (km)).
    users : array_like of int
        Location indices v_m of the users (the same location twice is allowed).
    params : LRGeoParams
        ε, γ, Γ, r_obf, r_exp and every choice the paper leaves open (spec §9).
    method : {"benders", "monolithic"}
        Benders (default) or CLR-Geo as one LP.
    executor : concurrent.futures.Executor or "serial", optional
        Where the users' blocks run; ``None`` is a new local process pool.
    abs_tol, rel_tol : float
        Benders stops with status ``optimal`` only at a certified gap within these.
    max_iter : int
        Benders iteration cap.
    time_limit : float, optional
        Seconds for the solve.
    relaxed_bound : bool
        Also solve the relaxed problem (29)–(30) with c̃ (``stats["relaxed_bound"]``).
    targets : array_like, optional
        Target prior q over the locations (default uniform) — eq. (5).
    prior : array_like, optional
        Prior p over real locations, used with ``row_prior="prior"``.
    rng : numpy.random.Generator, optional
        Needed with ``lr_select="random"``.
    recourse : {"elastic", "farkas"}
        ``"elastic"`` (complete recourse, default) or ``"farkas"`` (the paper's feasibility cuts),
        see :mod:`lpmech.solvers.benders`.
    retain_after : int, None or "auto"
        Benders iterations after which every user's block joins the master (partial Benders with
        full retention: the next master is the whole CLR-Geo LP plus the cuts, and certifies);
        ``None`` never; ``"auto"`` (default) :data:`RETAIN_AFTER` block passes when the CLR-Geo LP
        has at most :data:`RETAIN_NNZ` nonzeros (there the whole LP, by row generation over the
        Geo-Ind rows, solves faster than the cuts, which need 80–200 iterations where the ties
        bind, issue 13), else never.
    lp_method : {"simplex", "ipm", "choose", "pdlp"}
        The HiGHS method of the monolithic LP (Benders ignores it).
    verbose : bool
        A log line per iteration.

    Returns
    -------
    Result
        The mechanism stacks the users' matrices (rows 𝒩_1, then 𝒩_2, …; user m's own row is row
        ``stats["row_offsets"][m]``), the certificate is the worst per-user certificate, and
        ``stats`` hold: ``choices``, ``cost`` (19) under the optimised coefficients, ``true_cost``
        (under c), ``own_row_cost`` (mean over users, km), ``lower_bound``/``upper_bound``/
        ``iterations``/``trace`` (Benders), ``relaxed_bound`` ((29)–(30) with c̃),
        ``approximation_ratio`` (cost / relaxed bound), ``gv_ratio`` (32), ``gve_mean``/``gve_max``
        (33), sizes and times.

    Raises
    ------
    InputError
        Bad parameters, users outside the domain, an unknown method, ``retain_after`` or
        ``lp_method``.
    IterationLimitError
        Benders hit ``max_iter`` (``err.result`` holds the best certified point, if any).
    TimeLimitError
        The time limit ran out (``err.result`` as above).

    Notes
    -----
    Measured on Rome, 200 users, ε = 3, r_exp = 1.5 (3.3·10⁶ nonzeros): the dual simplex ends in a
    HiGHS error after 274–375 s, the IPM has no point after 1500 s, while Benders certifies in
    606 s.

    References
    ----------
    C. Qiu, R. Liu, P. Pappachan, A. Squicciarini, X. Xie, "Time-Efficient Locally Relevant
    Geo-Location Privacy Protection", PETS 2025 (arXiv 2407.13725), eqs. (11)–(33).

    Examples
    --------
    Three users on a synthetic 6×6 road grid (30 locations, each LR set capped at 4):

    >>> import numpy as np
    >>> from lpmech import datasets
    >>> from lpmech.models import lrgeo
    >>> grid = datasets.synthetic_road_grid(6, 6, rng=np.random.default_rng(1))
    >>> params = lrgeo.LRGeoParams(epsilon=3.0, gamma=1.0, Gamma=3.0, r_obf=1.0, r_exp=0.7,
    ...                            lr_cap=4)
    >>> res = lrgeo.solve(grid, [0, 14, 28], params, executor="serial")
    >>> print(res.status, res.mechanism.matrix.shape, res.stats["row_offsets"])
    optimal (12, 30) [0, 4, 8]
    >>> print(f"{res.stats['cost']:.4f}", f"{res.stats['relaxed_bound']:.4f}")
    0.5362 0.5305
    """
    if lp_method not in METHODS:
        raise InputError(f"unknown HiGHS method {lp_method!r} for the monolithic LP: use one of {METHODS}")
    t0 = time.perf_counter()
    P = params
    structure = build_structure(grid, users, P, targets=targets, prior=prior, rng=rng)
    executor, owned = make_executor(executor, len(structure.users))
    try:
        return _solve(structure, method, executor, abs_tol, rel_tol, max_iter, time_limit,
                      relaxed_bound, t0, recourse=recourse, verbose=verbose, retain_after=retain_after,
                      lp_method=lp_method)
    finally:
        if owned:
            executor.shutdown()


def _solve(structure, method, executor, abs_tol, rel_tol, max_iter, time_limit, relaxed_bound, t0, *,
           recourse="elastic", verbose=False, retain_after="auto", lp_method="simplex"):
    P = structure.params
    # no relaxed initial cuts for Benders: measured, they save one iteration at the paper's
    # parameters but cost a whole pass of M block solves (the first master's ȳ = 0 already gives
    # the cuts that close the gap there), and do not reduce the iterations where the ties bind
    clr = clr_problem(structure, executor=executor, relaxed_cuts=False)
    t_build = time.perf_counter() - t0
    log.info("LR-Geo: %d users, K=%d, |N| %s, |O| %s, %d y; choices %s", len(structure.users),
             structure.K, [u.n for u in structure.users], [u.O.size for u in structure.users],
             clr.y_index.size, P.choices())
    if method == "benders":
        nnz = sum(b.A.nnz + b.G.nnz for b in clr.problem.blocks)
        if retain_after == "auto":
            retain_after = RETAIN_AFTER if nnz <= RETAIN_NNZ else None
        elif retain_after is not None and not (isinstance(retain_after, (int, np.integer))
                                               and retain_after >= 1):
            raise InputError(f"retain_after must be a positive integer, None or 'auto', got {retain_after!r}")
        res = solve_benders(clr.problem, executor=executor, abs_tol=abs_tol, rel_tol=rel_tol,
                            max_iter=max_iter, time_limit=time_limit, recourse=recourse, verbose=verbose,
                            retain_after=retain_after,
                            name=f"CLR-Geo Benders ({len(structure.users)} users)")
        res.stats.update(retain_after=retain_after, lp_nonzeros=nnz)
        if res.x is None:
            raise_for_status(res, "CLR-Geo (Benders)")
    elif method == "monolithic":
        res = solve_lp(*clr.problem.as_lp(), method=lp_method, time_limit=time_limit)
        raise_for_status(res, "CLR-Geo (monolithic LP)")
        res.stats.update(lower_bound=res.bound, upper_bound=res.objective, iterations=1)
    else:
        raise InputError(f"unknown method {method!r}: use 'benders' or 'monolithic'")
    y, xs = clr.problem.split(res.x)
    mats, certs, cross = certify_users(structure, clr.matrices(y, xs), executor=executor)
    worst = max(certs, key=lambda c: c.realized_epsilon)
    cert = PrivacyCertificate(**{**worst.to_dict(), "n_constraints": sum(c.n_constraints for c in certs)})
    stacked = np.vstack(mats)
    res.mechanism = Mechanism(stacked, name="LR-Geo", certificate=cert)
    res.certificate = cert
    cost = clr.cost_of(mats)
    relaxed = solve_relaxed(structure, executor=executor) if relaxed_bound else None
    own = own_row_cost(structure, mats)
    st = res.stats
    st.update(
        model="LR-Geo", method=method, choices=P.choices(), users=[u.user for u in structure.users],
        K=structure.K, n_users=len(structure.users), lr_sizes=[u.n for u in structure.users],
        lr_cells=[np.asarray(u.N, int).tolist() for u in structure.users],
        obf_sizes=[int(u.O.size) for u in structure.users], n_y=int(clr.y_index.size),
        row_offsets=np.cumsum([0] + [u.n for u in structure.users[:-1]]).tolist(),
        cost=cost, true_cost=clr.cost_of(mats, "true"), own_row_cost=float(own.mean()),
        own_row_costs=own.tolist(), relaxed_bound=relaxed,
        approximation_ratio=None if not relaxed else cost / relaxed,
        gv_ratio=cross["gv_ratio"], gve_mean=cross["gve_mean"], gve_max=cross["gve_max"],
        cross_pairs=cross["pairs"], gv_ratio_distinct=cross["gv_ratio_distinct"],
        gve_mean_distinct=cross["gve_mean_distinct"], gve_max_distinct=cross["gve_max_distinct"],
        epsilon=P.epsilon, build_s=t_build, time_s=time.perf_counter() - t0)
    log.info("LR-Geo done: cost %.6g (LB %.6g, UB %.6g, %s iterations), relaxed bound %s, GV %.4g, "
             "%.2fs", cost, st.get("lower_bound"), st.get("upper_bound"), st.get("iterations"),
             relaxed, cross["gv_ratio"], st["time_s"])
    raise_for_status(res, f"CLR-Geo ({method})")  # a stop without a certified optimum (result attached)
    return res


def user_rows(res: Result) -> np.ndarray:
    """The M×K matrix of the rows the users actually sample from (row v_m of each user's matrix)."""
    return res.mechanism.matrix[res.stats["row_offsets"]]


# ---------------------------------------------------------------------------------- baselines


def laplace_rows(grid, rows, epsilon: float, rng: np.random.Generator, *,
                 n_samples: int = 20_000) -> np.ndarray:
    """Planar Laplace then snap to the nearest cell (Qiu et al., LR-Geo §8.2 "Laplace"), by Monte Carlo.

    For each true cell in ``rows``: ``n_samples`` noise vectors with radius ~ Gamma(2, 1/ε) km and a
    uniform angle are added on the sphere's tangent plane (exact for the density ε²/2π e^{−εr});
    each noisy point snaps to the nearest cell by great-circle distance (exact nearest neighbour
    via chord distance on the unit sphere). Returns len(rows)×K empirical probabilities (standard
    error ≤ 0.5/√n_samples per entry). Snapping post-processes Geo-Ind noise, so the exact
    mechanism is ε-Geo-Ind; the *estimate* is not certified (it is a Monte Carlo estimate).
    """
    from scipy.spatial import cKDTree

    from ...instance import EARTH_RADIUS_KM

    eps = check_epsilon(epsilon)
    if int(n_samples) < 1:
        raise InputError(f"n_samples must be positive, got {n_samples}")

    def xyz(lat, lon):
        la, lo = np.radians(lat), np.radians(lon)
        return np.column_stack([np.cos(la) * np.cos(lo), np.cos(la) * np.sin(lo), np.sin(la)])

    coords = np.asarray(grid.coords, float)
    tree = cKDTree(xyz(coords[:, 0], coords[:, 1]))
    out = np.zeros((len(rows), coords.shape[0]))
    for r, v in enumerate(rows):
        radius = rng.gamma(2.0, 1.0 / eps, size=int(n_samples))
        theta = rng.uniform(0, 2 * np.pi, size=int(n_samples))
        lat0 = coords[v, 0]
        lat = lat0 + np.degrees(radius * np.sin(theta) / EARTH_RADIUS_KM)
        scale = EARTH_RADIUS_KM * math.cos(math.radians(lat0))
        lon = coords[v, 1] + np.degrees(radius * np.cos(theta) / scale)
        _, idx = tree.query(xyz(lat, lon))
        out[r] = np.bincount(idx, minlength=coords.shape[0]) / n_samples
    return out


def constopt(grid, params: LRGeoParams = LRGeoParams(), *, targets=None,
             time_limit: float | None = None) -> Result:
    """ConstOPT (Imola et al., UAI 2022; Qiu et al., PETS 2025, §8.2): one LP over the full
    location set where entries with d_ik > r_exp take the exponential form y_k e^{−ε d_ik/2} and
    the rest are LP variables, under (ε, γ)-Geo-Ind and the true costs (5) with a uniform prior.

    Parameters
    ----------
    grid : RoadGrid
        As in :func:`solve`.
    params : LRGeoParams
        ε, γ and r_exp are used; Γ, r_obf, the LR cap and the costs are set to cover every
        location with the true costs.
    targets : array_like, optional
        Target prior q over the locations (default uniform) — eq. (5).
    time_limit : float, optional
        Seconds for the LP.

    Returns
    -------
    Result
        ``Result.mechanism`` is the K×K matrix (rows in grid order), certified on (ε, γ).

    Raises
    ------
    InputError
        Bad parameters.
    CertificationError
        The LP solution violates Geo-Ind beyond round-off.
    TimeLimitError
        The LP stopped before its optimum.

    Notes
    -----
    Built as CLR-Geo with a single "user" whose LR set and obfuscation range are every location.

    Examples
    --------
    >>> import numpy as np
    >>> from lpmech import datasets
    >>> from lpmech.models import lrgeo
    >>> grid = datasets.synthetic_road_grid(6, 6, rng=np.random.default_rng(1))
    >>> res = lrgeo.constopt(grid, lrgeo.LRGeoParams(epsilon=3.0, gamma=1.0, r_exp=0.7))
    >>> print(res.status, res.mechanism.matrix.shape, f"{res.certificate.realized_epsilon:.4f}")
    optimal (30, 30) 3.0000
    >>> print(f"{res.objective:.4f}")
    0.4319
    """
    t0 = time.perf_counter()
    big = float(np.max(grid.metric)) + 1.0
    P = params.replace(Gamma=math.inf if math.isinf(params.gamma) else big * grid.metric.shape[0],
                       r_obf=big, lr_cap=None, lr_select="nearest", outside="zero", costs="true",
                       exp_form="truncated", r_exp=min(params.r_exp, big))
    s = build_structure(grid, [0], P, targets=targets)
    clr = clr_problem(s, relaxed_cuts=False)
    res = solve_lp(*clr.problem.as_lp(), time_limit=time_limit)
    raise_for_status(res, "ConstOPT")
    y, xs = clr.problem.split(res.x)
    Z = clr.matrices(y, xs)[0]
    order = np.argsort(s.users[0].N)
    Zg = Z[order]
    z, cert = clean_and_certify(Zg, grid.metric, params.epsilon, params.gamma)
    require_certified(cert, "ConstOPT", "the LP solution violates Geo-Ind beyond round-off", result=res)
    res.mechanism, res.certificate = Mechanism(z, name="ConstOPT", certificate=cert), cert
    res.stats.update(model="ConstOPT", time_s=time.perf_counter() - t0, choices=P.choices())
    return res


__all__ = ["CLRProblem", "CostTable", "LRGeoParams", "LRStructure", "UserLR", "build_pyomo",
           "build_structure", "certify_users", "clr_problem", "constopt", "geo_ind_graph",
           "geo_ind_violations", "laplace_rows", "own_row_cost", "path_distances", "pyomo_matrices",
           "reference_points", "request_circle", "solve", "solve_relaxed", "travel_error", "user_rows"]
