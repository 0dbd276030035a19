"""The IPM-centred-duals prototype (benchmarks/prototypes/omg_centred_duals.py) against the full LP."""

import numpy as np
import pytest

from lpmech import instance as li
from lpmech.design import decomposition as dec
from lpmech.models import omg
from tests.conftest import load_prototype


@pytest.fixture(scope="module")
def proto():
    return load_prototype("omg_centred_duals")


@pytest.mark.parametrize("g, eps, smooth", [(5, 1.0, False), (5, 2.0, True), (4, 0.5, True)])
def test_prototype_optimum_equals_full_lp(proto, g, eps, smooth):
    rng = np.random.default_rng(0)
    inst = li.grid(g, g).with_prior(rng.dirichlet(np.ones(g * g)))
    full = omg.solve(inst, eps, method="full")
    out = proto.solve(inst, eps, smooth=smooth, workers=1)
    assert out["status"] == "optimal"
    assert abs(out["objective"] - full.objective) <= 1e-6 * abs(full.objective)
    assert out["bound"] <= out["objective"] * (1 + 1e-12)
    assert out["bound"] <= full.objective * (1 + 1e-9)
    assert out["realized_eps"] <= eps * (1 + 1e-6)
    st = out["state"]
    assert st.master.ipm_runs > 0  # the rounds did price at IPM duals
    assert st.exact_checks >= 1  # every optimal stop is decided on an exact (basic) master solve
    # the package's classes are back in place after the call
    assert dec.Master is not proto.IpmMaster and dec._State is not proto.CentredState
