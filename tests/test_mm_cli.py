"""``lpmech mm``: the §4 range/quantile mechanism on the command line (seed 003), the usable-ε
checks and ``--allow-nonmetric`` (issue 11), ``--distances`` scaled by ε as in ``omg``.

The numbers the command prints are checked against computations written here from the paper's
definitions only: an exact enumeration of every flip pattern, an independent Monte Carlo simulator
(own encoder, the transform built from its entry formula and inverted by numpy), the quantile
definition, and closed forms solved by hand."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from lpmech.cli import build_parser, main
from lpmech.models.matrix import range_mechanism as rm


def run(capsys, *argv):
    code = main(["mm", *argv, "--json"])
    cap = capsys.readouterr()
    return code, json.loads(cap.out), cap.err


def run_text(capsys, *argv):
    code = main(["mm", *argv])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def write_rows(path, rows, header=None):
    lines = ([header] if header else []) + [",".join(map(str, r)) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


# --------------------------------------------------------------- an independent §4 implementation


def cells(sizes):
    """0-based cells in ind order (dimension 1 fastest)."""
    return [c[::-1] for c in itertools.product(*[range(s) for s in reversed(sizes)])]


def inverse_transform(sizes):
    """inv(B) with B[x, x'] = (−1)^{#{d: x'[d] > x[d]}} (spec §3.2), inverted numerically."""
    cs = cells(sizes)
    B = np.array([[(-1.0) ** sum(b > a for a, b in zip(x, y)) for y in cs] for x in cs])
    return np.linalg.inv(B)


def range_selector(R, sizes):
    return np.array([all(lo <= v <= hi for v, (lo, hi) in zip(x, R)) for x in cells(sizes)], float)


def user_bits(x, sizes):
    return [np.array([-1.0 if k < v else 1.0 for k in range(m)]) for v, m in zip(x, sizes)]


def kron_dims(vectors):
    """⊗ over dimensions with dimension 1 fastest."""
    out = np.ones(1)
    for v in vectors:
        out = np.kron(v, out)
    return out


def exact_user_variance(x, R, sizes, eps):
    """Var of one user's term κ^D Σ_{c∈R} (B⁻¹ o_i)_c, by enumerating every flip pattern."""
    p = 1 / (math.exp(eps) + 1)
    kap = (math.exp(eps) + 1) / (math.exp(eps) - 1)
    g = range_selector(R, sizes) @ inverse_transform(sizes) * kap ** len(sizes)
    b = np.concatenate(user_bits(x, sizes))
    m1 = m2 = 0.0
    for flips in itertools.product((0, 1), repeat=b.size):
        f = np.array(flips)
        prob = p ** f.sum() * (1 - p) ** (b.size - f.sum())
        r = np.where(f == 1, -b, b)
        parts, k = [], 0
        for m in sizes:
            parts.append(r[k:k + m])
            k += m
        y = g @ kron_dims(parts)
        m1 += prob * y
        m2 += prob * y * y
    return m2 - m1 ** 2, m1


def simulate(X, R, sizes, eps, reps, rng, w=None):
    """reps independent runs of the §4 estimator of range R (own encoder and estimator)."""
    n, D = X.shape
    w = np.ones(n) if w is None else w
    p = 1 / (math.exp(eps) + 1)
    kap = (math.exp(eps) + 1) / (math.exp(eps) - 1)
    g = range_selector(R, sizes) @ inverse_transform(sizes) * kap ** D
    out = np.ones((reps, n, 1))
    for d, m in enumerate(sizes):  # o per run and user, dimension 1 fastest
        b = np.where(np.arange(m)[None, :] < X[:, d, None], -1.0, 1.0)
        r = np.where(rng.random((reps, n, m)) < p, -b[None], b[None])
        out = (r[:, :, :, None] * out[:, :, None, :]).reshape(reps, n, -1)
    return np.einsum("n,rnc->rc", w, out) @ g


# ------------------------------------------------------------------------ exact variance


def test_exact_variance_equals_enumeration_of_every_flip_pattern(capsys, tmp_path):
    sizes, eps = (3, 2), 0.8
    X = [(0, 1), (2, 0), (1, 1), (1, 1), (2, 1)]
    w = [1.0, 2.5, -1.0, 0.5, 3.0]
    ranges = [((1, 2), (0, 1)), ((0, 0), (1, 1)), ((1, 1), (0, 0)), ((0, 2), (0, 1)), ((2, 2), (0, 1))]
    data = write_rows(tmp_path / "x.csv", X, header="x1,x2")
    rfile = write_rows(tmp_path / "r.csv", [[v for lr in R for v in lr] for R in ranges])
    wfile = write_rows(tmp_path / "w.csv", [[v] for v in w], header="weight")
    code, out, _ = run(capsys, "--mechanism", "range", "--sizes", "3x2", "--data", data,
                       "--ranges", rfile, "--weights", wfile, "--epsilon", str(eps))
    assert code == 0 and out["status"] == "closed_form" and out["n"] == 5
    for R, q in zip(ranges, out["queries"]):
        var = sum(wi ** 2 * exact_user_variance(x, R, sizes, eps)[0] for x, wi in zip(X, w))
        mean = sum(wi * exact_user_variance(x, R, sizes, eps)[1] for x, wi in zip(X, w))
        truth = sum(wi for x, wi in zip(X, w) if all(lo <= v <= hi for v, (lo, hi) in zip(x, R)))
        assert q["variance_exact"] == pytest.approx(var, rel=1e-9)
        assert q["true"] == pytest.approx(truth) and mean == pytest.approx(truth)  # Theorem 1
        assert q["valid_bound"] >= q["variance_exact"] * (1 - 1e-12)


def test_padded_exact_variance_equals_enumeration_on_the_padded_domain(capsys, tmp_path):
    # §4.2: an extra value per dimension nobody holds; every query then has D_R = D
    X = [(0, 1), (1, 0), (1, 1)]
    data = write_rows(tmp_path / "x.csv", X)
    rfile = write_rows(tmp_path / "r.csv", [[0, 1, 0, 1], [1, 1, 0, 1]])
    code, out, _ = run(capsys, "--mechanism", "range", "--sizes", "2x2", "--data", data,
                       "--ranges", rfile, "--pad", "--epsilon", "1.3")
    assert code == 0 and [q["D_R"] for q in out["queries"]] == [2, 2]
    for q in out["queries"]:
        R = [tuple(lr) for lr in q["range"]]
        var = sum(exact_user_variance(x, R, (3, 3), 1.3)[0] for x in X)
        assert q["variance_exact"] == pytest.approx(var, rel=1e-9)


def test_exact_variance_matches_independent_monte_carlo(capsys, tmp_path):
    # concentrated data: 30 of 40 users in one cell, where the paper's expression is exceeded
    rng = np.random.default_rng(7)
    X = np.vstack([np.tile([1, 2], (30, 1)), np.column_stack([rng.integers(0, 3, 10),
                                                                rng.integers(0, 4, 10)])])
    w = rng.uniform(0.5, 2.0, len(X))
    data = write_rows(tmp_path / "x.csv", X.tolist())
    wfile = write_rows(tmp_path / "w.csv", [[v] for v in w])
    ranges = [((1, 1), (2, 2)), ((0, 1), (1, 3)), ((0, 2), (2, 2))]
    rfile = write_rows(tmp_path / "r.csv", [[v for lr in R for v in lr] for R in ranges])
    code, out, _ = run(capsys, "--mechanism", "range", "--sizes", "3x4", "--data", data,
                       "--ranges", rfile, "--weights", wfile, "--repeat", "400", "--seed", "3")
    assert code == 0
    reps = 20000
    for R, q in zip(ranges, out["queries"]):
        est = simulate(X, R, (3, 4), 1.0, reps, np.random.default_rng(11), w)
        sq = (est - q["true"]) ** 2
        se = sq.std(ddof=1) / math.sqrt(reps)  # CLT: the MC mean of sq is within ~4.5 se
        assert abs(sq.mean() - q["variance_exact"]) <= 4.5 * se
        assert abs(est.mean() - q["true"]) <= 4.5 * math.sqrt(q["variance_exact"] / reps)
        # the command's own --repeat runs agree too (400 runs: ~3.5 se of its own)
        assert abs(q["empirical_mse"] - q["variance_exact"]) <= 4.5 * se * math.sqrt(reps / 400)
    # unweighted, the single cell holding 30 of 40 users exceeds the paper's expression
    code, out, _ = run(capsys, "--mechanism", "range", "--sizes", "3x4", "--data", data,
                       "--ranges", rfile)
    single = out["queries"][0]
    assert code == 0 and single["D_R"] == 2 and single["exact_over_paper"] > 1
    assert out["queries_above_paper_expression"] >= 1


def test_paper_expression_equals_exact_where_it_should(capsys, tmp_path):
    # whole domain (D_R = 0): exact n(κ^{2D} − 1) = paper κ^{2D}(1 − q^{2D})n for any data
    n, eps = 300, 0.7
    kap = (math.exp(eps) + 1) / (math.exp(eps) - 1)
    rfile = write_rows(tmp_path / "r.csv", [[0, 5, 0, 3, 0, 2]])
    code, out, _ = run(capsys, "--mechanism", "range", "--sizes", "6x4x3", "--n", str(n),
                       "--ranges", rfile, "--epsilon", str(eps))
    q = out["queries"][0]
    assert code == 0 and q["D_R"] == 0 and q["true"] == n
    assert q["variance_exact"] == pytest.approx(n * (kap ** 6 - 1), rel=1e-12)
    assert q["paper_expression"] == pytest.approx(q["variance_exact"], rel=1e-12)
    # D = 1: the average single-value variance over all cells equals Theorem 2's n(κ² − 1)/2
    code, out, _ = run(capsys, "--mechanism", "range", "--m", "17", "--n", str(n),
                       "--epsilon", str(eps), "--random-ranges", "3")
    assert code == 0
    assert out["average_cell_variance"] == pytest.approx(n * (kap ** 2 - 1) / 2, rel=1e-12)
    assert out["paper_single_value"] == pytest.approx(out["average_cell_variance"], rel=1e-12)


def test_random_ranges_and_zipf_sample_are_seeded_and_in_the_domain(capsys):
    argv = ("--mechanism", "range", "--sizes", "5x7", "--n", "200", "--random-ranges", "40")
    code, a, _ = run(capsys, *argv, "--seed", "5")
    code2, b, _ = run(capsys, *argv, "--seed", "5")
    code3, c, _ = run(capsys, *argv, "--seed", "6")
    assert code == code2 == code3 == 0 and a == b and a["queries"] != c["queries"]
    R = np.array([q["range"] for q in a["queries"]])
    assert R.shape == (40, 2, 2) and (R[..., 0] <= R[..., 1]).all()
    assert (R[..., 1] < np.array([5, 7])).all() and (R >= 0).all()
    assert sum(q["true"] for q in a["queries"] if q["D_R"] == 0) in (0, 200 * sum(
        q["D_R"] == 0 for q in a["queries"]))


# -------------------------------------------------------------------------------- quantiles


def test_quantiles_against_the_definition(capsys, tmp_path):
    rng = np.random.default_rng(2)
    x = np.minimum(rng.geometric(0.08, 3000) - 1, 31)
    data = write_rows(tmp_path / "x.csv", [[v] for v in x])
    ps = [0.25, 0.5, 0.9]
    code, out, _ = run(capsys, "--mechanism", "range", "--m", "32", "--data", data, "--epsilon",
                       "2", "--quantiles", ",".join(map(str, ps)), "--repeat", "30")
    assert code == 0 and out["queries"] == [] and len(out["quantiles"]) == 3
    n, kap = len(x), (math.exp(2) + 1) / (math.exp(2) - 1)
    for p, q in zip(ps, out["quantiles"]):
        counts = np.array([(x <= v).sum() for v in range(32)])
        assert q["true"] == int(np.argmax(counts >= p * n))  # smallest v with σ(v) ≥ p
        e = q["estimate"]
        lo, hi = (x < e).mean(), (x <= e).mean()
        assert q["error"] == pytest.approx(max(0.0, lo - p, p - hi))
        assert q["bound_union"] == pytest.approx(kap * math.sqrt(2 / n * math.log(2 * 31 / 0.05)))
        assert q["bound_paper"] == pytest.approx(2 * kap * math.sqrt(2 / n * math.log(
            2 * math.log2(32) / 0.05)))
        assert q["error"] <= q["bound_union"] and q["fraction_within_bound_union"] >= 0.9


# ------------------------------------------------------------------------ bad input, exit codes


@pytest.mark.parametrize("argv, message", [
    (["--epsilon", "1e155"], "--epsilon 1e+155 is outside the usable range [1e-100, 1e+100]"),
    (["--epsilon", "1e-300"], "--epsilon 1e-300 is outside the usable range [1e-100, 1e+100]"),
    (["--mechanism", "range", "--epsilon", "1e155"], "--epsilon 1e+155 is outside the usable range"),
    (["--mechanism", "range", "--epsilon", "1e-300"], "--epsilon 1e-300 is outside the usable range"),
    (["--mechanism", "range", "--epsilon", "0"], "epsilon must be a positive finite number"),
    (["--mechanism", "range", "--workload", "ranges"], "--workload applies only to --mechanism laplace"),
    (["--quantiles", "0.5"], "--quantiles applies only to --mechanism range"),
    (["--allow-nonmetric"], "--allow-nonmetric applies only to --metric matrix with --distances"),
    (["--mechanism", "range", "--sizes", "3x0"], "bad --sizes '3x0'"),
    (["--mechanism", "range", "--sizes", "4x4", "--quantiles", "0.5"],
     "--quantiles needs a one-dimensional domain (D = 1), got D = 2"),
    (["--mechanism", "range", "--quantiles", "0.5,1.5"], "every level must lie in (0, 1]"),
    (["--mechanism", "range", "--sizes", "4x4", "--m", "3"], "give either --sizes or --m/--D"),
    (["--m", "6000"], "--m 6000 gives 6000 values, above the 5000 the Laplace mechanism's pair "
                      "constraints allow; for D-dimensional range counting use --mechanism range"),
    (["--metric", "l1", "--m", "20", "--D", "3"], "--m 20 --D 3 gives 8000 values"),
    (["--mechanism", "range", "--m", "1000", "--n", "100000", "--random-ranges", "1"],
     "the reports of n = 100000 users hold n*sum(m_d) = 100,000,000 bits, above 50,000,000"),
])
def test_bad_input_exit_2_with_one_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out["status"] == "input_error" and out["error_type"] == "InputError"
    assert message in out["error"]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lpmech: error: ") and message in lines[0]
    assert "Traceback" not in err


def test_usable_range_boundaries_work(capsys):
    # the edges of the usable ranges solve, with the closed form of program (2) under E_S
    for eps in (1e-100, 1e100):
        code, out, _ = run(capsys, "--m", "10", "--epsilon", repr(eps))
        cf = 8 * 10 / eps ** 2  # E_S with |S| = 10 > m/2: s = 2/ε everywhere
        assert code == 0 and out["status"] == "optimal"
        assert out["objective"] == pytest.approx(cf, rel=1e-6) and out["gap"] <= 1e-6
    lo, hi = rm.usable_epsilon_range(1, 1000)
    for eps in (lo * 1.01, hi):
        code, out, _ = run(capsys, "--mechanism", "range", "--epsilon", repr(eps), "--random-ranges", "2")
        assert code == 0 and all(math.isfinite(q["variance_exact"]) for q in out["queries"])


def test_range_file_errors_name_the_flag_and_row(capsys, tmp_path):
    data = write_rows(tmp_path / "x.csv", [[0, 1], [4, 0]])
    code, out, _ = run(capsys, "--mechanism", "range", "--sizes", "4x2", "--data", data)
    assert code == 2 and out["error"] == ("--data row 2: value 4 of dimension 1 is outside 0..3 "
                                          "(values are 0-based)")
    good = write_rows(tmp_path / "y.csv", [[0, 1], [3, 0]])
    rfile = write_rows(tmp_path / "r.csv", [[0, 3, 0, 1], [2, 1, 0, 0]])
    code, out, _ = run(capsys, "--mechanism", "range", "--sizes", "4x2", "--data", good,
                       "--ranges", rfile)
    assert code == 2 and out["error"].startswith("--ranges row 2, dimension 1: (2, 1) is not a range")
    wfile = write_rows(tmp_path / "w.csv", [[1.0]])
    code, out, _ = run(capsys, "--mechanism", "range", "--sizes", "4x2", "--data", good,
                       "--weights", wfile)
    assert code == 2 and out["error"].startswith("--weights must hold 2 finite numbers")
    bad = write_rows(tmp_path / "b.csv", [[0, 1], ["a", 0]])
    code, out, _ = run(capsys, "--mechanism", "range", "--sizes", "4x2", "--data", bad)
    assert code == 2 and "line 2" in out["error"] and "not all integers" in out["error"]


def test_failed_encoder_certificate_exits_5(capsys, monkeypatch):
    # a sampler whose realised epsilon exceeded the target must never print a result
    monkeypatch.setattr(rm, "encoder_epsilon", lambda eps: 1.5 * eps)
    code, out, _ = run(capsys, "--mechanism", "range", "--epsilon", "1")
    assert code == 5 and out["status"] == "certification_failed"
    assert out["error"] == "the encoder's realised epsilon 1.5 exceeds --epsilon 1"
    assert "queries" not in out


def test_encoder_epsilon_is_the_implemented_flip_probability():
    # rng.random() < p with 53-bit uniforms flips with probability ceil(p 2^53)/2^53 >= p
    for eps in (0.1, 1.0, 5.0, 30.0, 40.0):
        p = 1 / (math.exp(eps) + 1)
        pq = math.ceil(p * 2 ** 53) / 2 ** 53
        real = math.log((1 - pq) / pq)
        assert rm.encoder_epsilon(eps) == pytest.approx(real, rel=1e-12) and real <= eps * (1 + 1e-12)


def test_laplace_time_limit_exits_4(capsys):
    code, out, _ = run(capsys, "--m", "60", "--no-lazy", "--time-limit", "1e-4")
    assert code == 4 and out["status"] == "time_limit" and "time limit" in out["error"]


# ------------------------------------------------- --distances: ε scales it, --allow-nonmetric


def test_distances_are_scaled_by_epsilon_as_in_omg(capsys, tmp_path):
    S = np.zeros(8, bool)
    S[:3] = True
    d = np.where(S[:, None] | S[None, :], 1.0, 2.0)
    np.fill_diagonal(d, 0.0)
    np.save(tmp_path / "d.npy", d)
    code, out, _ = run(capsys, "--metric", "matrix", "--distances", str(tmp_path / "d.npy"),
                       "--epsilon", "2", "--n", "3")
    cf = 2 * 3 * (3 ** (1 / 3) + 5 ** (1 / 3)) ** 3 / 2 ** 2  # E_S closed form at ε = 2
    assert code == 0 and out["objective"] == pytest.approx(cf, rel=1e-6)
    assert out["realized_epsilon"] <= 2 * (1 + 1e-6)


def test_allow_nonmetric(capsys, tmp_path):
    E = np.array([[0.0, 1.0, 5.0], [1.0, 0.0, 1.0], [5.0, 1.0, 0.0]])  # 5 > 1 + 1
    np.save(tmp_path / "E.npy", E)
    code, out, _ = run(capsys, "--metric", "matrix", "--distances", str(tmp_path / "E.npy"))
    assert code == 2 and out["status"] == "input_error"
    assert "triangle inequality" in out["error"] and "--allow-nonmetric" in out["error"]
    code, out, _ = run(capsys, "--metric", "matrix", "--distances", str(tmp_path / "E.npy"),
                       "--allow-nonmetric")
    # by hand: u0 = u2 = a, u1 = b, a + b = 1 binding, 4/a³ = 2/b³ -> b = a 2^(-1/3)
    a = 1 / (1 + 2 ** (-1 / 3))
    b = 1 - a
    assert code == 0 and out["objective"] == pytest.approx(2 * (2 / a ** 2 + 1 / b ** 2), rel=1e-6)


# ------------------------------------------------------------------------------------ --help


def test_help_describes_every_option_and_has_the_exit_codes():
    parser = build_parser()
    mm = parser._subparsers._group_actions[0].choices["mm"]
    for action in mm._actions:
        assert action.help and action.help.strip(), action.option_strings
    text = mm.format_help()
    flat = " ".join(text.split())
    assert "exit codes" in flat and "5 privacy certificate failed" in flat
    assert "the metric is E = epsilon*d, the same convention as 'omg --distances'" in " ".join(
        text.split())
    assert "NOT an upper bound" in text


def test_text_report_of_the_range_mechanism(capsys):
    code, out, _ = run_text(capsys, "--mechanism", "range", "--m", "8", "--quantiles", "0.5",
                            "--random-ranges", "2", "--n", "500")
    assert code == 0 and "range mechanism (Xiang et al. §4) on [8], n = 500 users" in out
    assert "quantile p=0.5" in out and "exact var" in out
