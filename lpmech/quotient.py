"""Quotient of an instance by points closer than double precision can tell apart.

Real location data has duplicates and near duplicates (snapped GPS points, cells of a coarse table).
For d_ij = 0, (ε, γ)-Geo-Ind forces rows i and j of a mechanism to be *equal*; for a tiny d_ij they
must be equal up to the factor e^{ε d_ij}, which an LP solved to a 1e-9 feasibility tolerance cannot
resolve. :func:`quotient` merges every group of locations connected through distances
d_ij ≤ ``rtol``·max(d) into one location of a *quotient instance*:

* metric: d_q(A, B) = min_{a∈A, b∈B} d_ab (the minimum linkage). A mechanism whose rows satisfy
  z_A ≤ e^{ε d_q(A, B)} z_B then satisfies z_a ≤ e^{ε d_ab} z_b for every member pair, so the
  expanded mechanism is (ε, γ)-Geo-Ind on the *original* points; a pair is a neighbour when one of
  its member pairs is (d_q ≤ γ);
* prior: p_A = Σ_{a∈A} p_a;
* outputs: the column of group B is split among its members by fixed weights w_b (the prior within
  the group, or evenly where the group has no prior mass). A column split by constant weights stays
  in the Geo-Ind cone (ratios inside a column are unchanged), so splitting keeps the certificate;
* loss: L_q[A, B] = Σ_{a∈A} (p_a / p_A) Σ_{b∈B} w_b L_ab (the prior-weighted mean over the rows,
  even weights where p_A = 0), so the expanded mechanism's expected loss *equals* the quotient's.

:meth:`Quotient.expand` maps a K_q×K_q mechanism back: Z[a, b] = Z_q[A(a), B(b)]·w_b. Rows of a
group are identical (exact for coincident inputs: Geo-Ind demands it) and every ratio within a
column is a ratio of Z_q.

Optimality. For exact duplicates (d = 0) with identical loss rows and columns the quotient LP *is*
the original LP with the equal rows and interchangeable outputs identified: the optimum and the
dual bound carry over exactly. For merged points at 0 < d ≤ rtol·max(d) the quotient is a
restriction of the original problem by distances at the level of the metric's own round-off (the
group diameter is reported), and the loss rows/columns merged may differ by the reported spread;
its bound is the quotient LP's bound. The certificate of the expanded mechanism on the original
points decides: :func:`lpmech.models.omg.solve` always certifies it there.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from . import instance as li
from .instance import Instance
from .mechanism import group_min_linkage

#: locations closer than this times the largest distance are merged (double precision computes a
#: distance from coordinates of that size to ~1e-16 relative; 1e-12 leaves a wide margin, and a
#: pair this close cannot be resolved by an LP's 1e-9 tolerance at any ε·max(d) ≤ 1e3)
QUOTIENT_RTOL = 1e-12


@dataclasses.dataclass(frozen=True)
class Quotient:
    """An instance with its near-coincident locations merged (see the module doc).

    Attributes:
        original: the instance given.
        instance: the quotient instance (K_q locations).
        labels: group of every original location (0..K_q−1).
        weights: the split weight w_b of every original location within its group (sums to 1 per
            group).
        diameter: the largest distance inside a group (0 for exact duplicates only).
        loss_spread: the largest difference between loss entries merged into one quotient entry.
    """

    original: Instance
    instance: Instance
    labels: np.ndarray
    weights: np.ndarray
    diameter: float
    loss_spread: float

    @property
    def merged(self) -> int:
        """How many locations were merged away (K − K_q)."""
        return self.original.K - self.instance.K

    def expand(self, matrix) -> np.ndarray:
        """Z[a, b] = Z_q[A(a), B(b)]·w_b: the K×K mechanism of a K_q×K_q quotient mechanism."""
        zq = np.asarray(matrix, float)
        return zq[np.ix_(self.labels, self.labels)] * self.weights[None, :]

    def stats(self) -> dict:
        return {"quotient_merged": self.merged, "quotient_groups": self.instance.K,
                "quotient_diameter": self.diameter, "quotient_loss_spread": self.loss_spread}


def groups(instance: Instance, rtol: float = QUOTIENT_RTOL) -> np.ndarray:
    """Group labels: components of the neighbour pairs with d_ij ≤ rtol·max(d)."""
    d = instance.metric
    scale = float(d.max(initial=0.0))
    close = instance.neighbours() & (d <= rtol * scale)
    if not close.any():
        return np.arange(instance.K)
    return connected_components(csr_matrix(close), directed=False)[1]


def _weights(mass: np.ndarray, labels: np.ndarray, G: int) -> np.ndarray:
    """Within-group weights ∝ ``mass``, evenly where a group has no mass."""
    total = np.bincount(labels, weights=mass, minlength=G)
    size = np.bincount(labels, minlength=G).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(total[labels] > 0, mass / total[labels], 1.0 / size[labels])
    return w


def quotient(instance: Instance, rtol: float = QUOTIENT_RTOL) -> Quotient | None:
    """The :class:`Quotient` of ``instance``, or ``None`` when no two locations are that close."""
    labels = groups(instance, rtol)
    K, G = instance.K, int(labels.max()) + 1
    if G == K:
        return None
    d, p, L = instance.metric, instance.prior, instance.loss
    w_out = _weights(p, labels, G)  # output split, by the prior
    w_in = w_out  # input rows are weighted by the same within-group prior share
    S = csr_matrix((np.ones(K), (labels, np.arange(K))), shape=(G, K))  # group membership
    Lq = (S @ (w_in[:, None] * L)) @ (S.T.toarray() * w_out[:, None])  # Σ_a w_a Σ_b w_b L_ab
    pq = np.bincount(labels, weights=p, minlength=G)
    dq = group_min_linkage(d, labels)
    same = labels[:, None] == labels[None, :]
    diameter = float(np.where(same, d, 0.0).max(initial=0.0))
    spread = float(np.abs(L - Lq[np.ix_(labels, labels)]).max(initial=0.0))
    q = li.from_matrix(dq, allow_nonmetric=True, prior=pq / pq.sum(), loss=Lq, gamma=instance.gamma,
                       unit=instance.unit)
    q = dataclasses.replace(q, kind="quotient", is_metric=instance.is_metric)
    return Quotient(original=instance, instance=q, labels=labels, weights=w_out, diameter=diameter,
                    loss_spread=spread)


__all__ = ["QUOTIENT_RTOL", "Quotient", "groups", "quotient"]
