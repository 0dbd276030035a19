"""LIP at large ε (up to the usable maximum): the vertex method's rays keep their exact ratios.

Found by a CLI sweep: rounding the enumerated rays to 11 decimals moved their small entries, so the
vertex method returned channels with realised ε 8.00001 > 8(1 + 1e-6) for priors with entries near
1e-3, and above ε ≈ 16 the wrong channel with status ``optimal`` and a gap of 1.0.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from lpmech.errors import InputError
from lpmech.models import lip
from tests.test_lip import posterior_ratio_eps  # Bayes' rule by loops


@settings(max_examples=12, deadline=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow])
@given(d=st.integers(2, 6), seed=st.integers(0, 10_000), eps=st.floats(4.0, lip.MAX_EPS),
       conc=st.sampled_from([0.3, 1.0, 5.0]))
@example(d=4, seed=3, eps=8.0, conc=0.3)  # each raised CertificationError before the fix
@example(d=5, seed=2, eps=10.0, conc=0.3)
@example(d=6, seed=1, eps=12.0, conc=0.3)
def test_vertex_method_private_and_equal_to_exact_colgen(d, seed, eps, conc):
    rng = np.random.default_rng(seed)
    P = np.maximum(rng.dirichlet(np.full(d, conc)), 1e-3)
    P /= P.sum()
    v = lip.solve(P, eps, task="sum", method="vertex")
    assert v.status == "optimal"
    assert posterior_ratio_eps(v.mechanism.matrix, P) <= eps * (1 + 1e-6)
    e = lip.solve(P, eps, task="sum", method="exact")  # a second way: exact column generation
    assert e.status == "optimal"
    assert e.objective == pytest.approx(v.objective, rel=1e-5, abs=1e-9)
    assert v.bound <= e.objective * (1 + 1e-8) + 1e-12  # each bound holds for the other's optimum
    assert e.bound <= v.objective * (1 + 1e-8) + 1e-12


def test_above_the_usable_range_is_an_input_error():
    with pytest.raises(InputError, match="usable range for LIP"):
        lip.solve(np.array([0.93, 0.07]), lip.MAX_EPS * 1.5)
