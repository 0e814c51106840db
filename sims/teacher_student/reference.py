"""Teacher-student: independent references and measurements the claims and figures compare with the run; pure
NumPy/SciPy, no code shared with run.py: the float64 reference solver, the continuum finite-k formula, the
information-theoretic threshold rule, the exact test error of a Hermite network and the MAP/Adam student."""

from __future__ import annotations

import numpy as np

# ---------------------------------------------------------------------------------------------------------
# Independent float64 reference (NumPy): dense starts, plain fixed-point iteration, largest Phi kept
# ---------------------------------------------------------------------------------------------------------


def reference_starts(alpha: float, a2: np.ndarray, delta: float, n_d0: int = 24) -> np.ndarray:
    """Starting conjugate SNRs s0 (S, k): every pattern "features 1..j at m = 1 - 1e-3, the rest at m = 0.3 or
    m = 0" (j = 0..k), and informed starts s = alpha a2 g'(1)/D0 for D0 on a log grid of [Delta, Delta + sum a2]."""
    k = a2.shape[0]
    pats = []
    for rest in (0.0, 0.3):
        for j in range(k + 1):
            m = np.where(np.arange(k) < j, 1 - 1e-3, rest)
            pats.append(m / (1 - m))
    for d0 in np.geomspace(delta, delta + a2.sum(), n_d0):
        pats.append(3.0 * alpha * a2 / d0)
    return np.array(pats)


def reference_solve(alpha: float, a2, delta: float, *, tol: float = 1e-13, max_iter: int = 60000):
    """Independent global maximiser for g = m^3 in float64: plain iteration s <- alpha a2 g'(m)/D(m) (no branch
    selection) from every ``reference_starts`` point to convergence, Phi = sum (m + log(1-m))/2 - (alpha/2) log D
    on every converged point, the largest kept. Returns dict(eps, m, phi, n_converged, n_distinct)."""
    a2 = np.asarray(a2, np.float64)
    s = reference_starts(alpha, a2, delta)
    done = np.zeros(s.shape[0], bool)
    for _ in range(max_iter):
        m = s / (1 + s)
        d = delta + np.sum(a2 * (1 + m + m * m) / (1 + s), axis=1, keepdims=True)
        new = alpha * a2 * 3 * m * m / d
        res = np.max(np.abs(new - s) / (1 + s), axis=1)
        s = new
        done = res <= tol
        if done.all():
            break
    m = s / (1 + s)
    e = np.sum(a2 * (1 + m + m * m) / (1 + s), axis=1)
    phi = np.sum(0.5 * (m - np.log1p(s)), axis=1) - 0.5 * alpha * np.log(delta + e)
    phi = np.where(done, phi, -np.inf)
    best = int(np.argmax(phi))
    distinct = len({round(float(x), 9) for x in e[done]})
    return {
        "eps": float(e[best]),
        "m": m[best],
        "phi": float(phi[best]),
        "n_converged": int(done.sum()),
        "n_distinct": distinct,
    }


# ---------------------------------------------------------------------------------------------------------
# Asymptotic (continuum, finite-k) formula for eps_BO: the prediction for the fitted slopes
# ---------------------------------------------------------------------------------------------------------


def independent_c_it() -> float:
    """c_IT for g = m^3 from its definition, independently of ``closed_forms`` (which eliminates c analytically
    and bisects in m): the c at which the per-feature potential's best non-trivial value
    max_{m in (0, 1)} (m + log(1 - m) + c m^3)/2 crosses 0 (f(0) = 0), found with scipy (bounded scalar
    maximisation inside a Brent root search in c over [4/3, 2]). Float64; no code shared with the solver."""
    from scipy import optimize

    def best(c: float) -> float:
        f = lambda m: -(m + np.log1p(-m) + c * m**3) / 2
        r = optimize.minimize_scalar(f, bounds=(0.5, 1 - 1e-12), method="bounded", options={"xatol": 1e-14})
        return float(-r.fun)

    return float(optimize.brentq(best, 4.0 / 3.0, 2.0, xtol=1e-14, rtol=1e-14))


C_IT_REF = independent_c_it()


def refinement_ratio_bound(c_min: float) -> float:
    """Largest |c (1 - m+(c)^3) - 1| over c >= ``c_min`` for g = m^3, m+(c) = (1 + sqrt(1 - 4/(3c)))/2: each learned
    feature's error a2 (1 - m+^3) is (D/alpha)(1 + that), so eps alpha / (k Delta_eff) - 1 is within it once every
    c_i = alpha a2_i / D >= c_min (the refinement law eps_BO = k Delta_eff / alpha to leading order). Evaluated on
    a float64 grid of c in [c_min, 1e6 c_min]; the deviation decays like 1/c^2."""
    c = c_min * np.geomspace(1.0, 1e6, 20001)
    mp = 0.5 * (1 + np.sqrt(1 - 4 / (3 * c)))
    return float(np.max(np.abs(c * (1 - mp**3) - 1)))


def asymptotic_eps(alpha, beta: float, k: int, delta: float, c_it: float = C_IT_REF) -> np.ndarray:
    """eps ~ (D/alpha) k_c [K1 + c_IT/(2beta-1) (1 - (k_c/k)^(2beta-1))], k_c = (alpha/(c_IT D Z))^(1/(2beta))
    (capped at k), D = Delta + eps solved by iteration. Learned features (c_i = c_IT (k_c/i)^(2 beta)) carry
    (D/alpha) c_i (1 - m+(c_i)^3) each, K1 = int_0^1 of that in i/k_c; the unlearned tail sum_{k_c<i<=k} a2_i =
    (D/alpha) c_IT k_c^(2beta) sum i^(-2beta) in the continuum. NumPy, no solver; c_IT from ``independent_c_it``
    (not the constant the solver reads)."""
    alpha = np.asarray(alpha, np.float64)
    z = float(np.sum(np.arange(1, k + 1, dtype=np.float64) ** (-2.0 * beta)))
    u = (np.arange(20000) + 0.5) / 20000
    c = c_it * u ** (-2.0 * beta)
    r = np.sqrt(1 - 4 / (3 * c))
    mp = 0.5 * (1 + r)
    k1 = float(np.mean(c * (1 - mp**3)))
    d = np.full_like(alpha, delta)
    for _ in range(200):
        kc = np.minimum((alpha / (c_it * d * z)) ** (0.5 / beta), k)
        eps = d / alpha * kc * (k1 + c_it / (2 * beta - 1) * (1 - (kc / k) ** (2 * beta - 1)))
        d = delta + eps
    return eps


# ---------------------------------------------------------------------------------------------------------
# The information-theoretic threshold rule: feature i learned iff alpha a2_i / Delta_eff >= c_IT (C_IT_REF)
# ---------------------------------------------------------------------------------------------------------


def amplitudes_np(k: int, beta: float) -> np.ndarray:
    """a2_i = i^(-2 beta) / sum_j j^(-2 beta), i = 1..k (eq. A), float64 NumPy (not the theory's ``amplitudes``)."""
    w = np.arange(1, k + 1, dtype=np.float64) ** (-2.0 * beta)
    return w / w.sum()


def learned_by_threshold(alpha, a2, delta_eff) -> np.ndarray:
    """(A, k) bool: feature i is learned at alpha iff c_i = alpha a2_i / Delta_eff >= c_IT, with c_IT = C_IT_REF from
    scipy on the potential's definition (not the solver's constant). ``alpha``, ``delta_eff`` (A,), ``a2`` (k,)."""
    alpha = np.asarray(alpha, np.float64)[:, None]
    return alpha * np.asarray(a2, np.float64)[None, :] / np.asarray(delta_eff, np.float64)[:, None] >= C_IT_REF


# ---------------------------------------------------------------------------------------------------------
# Exact test error of a Hermite network: E_x (f - g)^2 in closed form (the students' Monte Carlo test error's target)
# ---------------------------------------------------------------------------------------------------------


def hermite_sq_distance(w_f, v_f, w_g, v_g) -> float:
    """E_x (f(x) - g(x))^2, x ~ N(0, I_d), for f = sum_j v_j He_3(w_j . x / sqrt d)/sqrt 6 (``PriorNet``; rows w (h, d),
    readouts v (h,)), exactly: with u_i = w_i . x / sqrt d jointly Gaussian, C_ij = w_i . w_j / d, Wick's theorem
    gives E[He_3(u_i) He_3(u_j)] / 6 = C_ij^3 + (3/2) C_ij (C_ii - 1)(C_jj - 1), summed with coefficients
    (v_f, -v_g). Float64 NumPy, no model code."""
    w = np.concatenate([np.asarray(w_f, np.float64), np.asarray(w_g, np.float64)])
    a = np.concatenate([np.asarray(v_f, np.float64), -np.asarray(v_g, np.float64)])
    c = w @ w.T / w.shape[1]
    s = np.diag(c) - 1.0
    return float(a @ (c**3 + 1.5 * c * np.outer(s, s)) @ a)


# ---------------------------------------------------------------------------------------------------------
# Independent MAP/Adam student: the documented estimator re-implemented in float64 NumPy (no optax, no autodiff)
# ---------------------------------------------------------------------------------------------------------


def map_objective_grad(w, v, x, y, delta: float):
    """Gradient of the negative log posterior of the reconstruction's student, per training sample:
    F(w, v) = [sum_i (f(x_i) - y_i)^2 / (2 Delta) + |w|^2 / 2] / n (Gaussian likelihood of noise variance Delta,
    prior w ~ N(0, I), v free), f(x) = sum_j v_j He_3(w_j . x / sqrt d)/sqrt 6, written out by hand:
    dF/dv = He_3(U)^T r / (sqrt 6 Delta n), dF/dw = [(r He_3'(U) v)^T x / (sqrt(6 d) Delta) + w] / n, U = x w^T/sqrt d,
    r = f - y, He_3' = 3 z^2 - 3. Shapes w (*b, h, d), v (*b, h), x (*b, n, d), y (*b, n) (a leading batch of
    independent students). Returns (dF/dw (*b, h, d), dF/dv (*b, h)), float64."""
    n, d = x.shape[-2:]
    u = x @ np.swapaxes(w, -1, -2) / np.sqrt(d)
    u2 = u * u  # (u * u * u: NumPy's u**3 calls pow, 20x slower here)
    h3 = (u2 - 3) * u / np.sqrt(6)
    r = (h3 @ v[..., None])[..., 0] - y
    gv = (np.swapaxes(h3, -1, -2) @ r[..., None])[..., 0] / (delta * n)
    back = r[..., None] * (3 * u2 - 3) * v[..., None, :]
    gw = (np.swapaxes(back, -1, -2) @ x / np.sqrt(6 * d) / delta + w) / n
    return gw, gv


def map_adam_reference(w0, v0, x, y, delta: float, steps: int, lr: float, *, final_frac: float = 0.1):
    """The MAP student as documented (``models.teacher_student.train_map``): ``steps`` full-batch Adam steps
    (beta1 = 0.9, beta2 = 0.999, eps = 1e-8, bias-corrected; Kingma & Ba 2015, Algorithm 1) on
    ``map_objective_grad``, learning rate lr_t = lr (final_frac + (1 - final_frac) (1 + cos(pi t/steps))/2) at step
    t = 0..steps-1 (cosine decay to lr x final_frac), from (w0 (*b, h, d), v0 (*b, h)) on the training sets
    (x (*b, n, d), y (*b, n)). Float64 NumPy, no code shared with the model. Returns (w, v) at the end."""
    p = [np.array(w0, np.float64), np.array(v0, np.float64)]
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    m1 = [np.zeros_like(q) for q in p]
    m2 = [np.zeros_like(q) for q in p]
    b1, b2, eps = 0.9, 0.999, 1e-8
    for t in range(steps):
        g = map_objective_grad(p[0], p[1], x, y, delta)
        lr_t = lr * (final_frac + (1 - final_frac) * 0.5 * (1 + np.cos(np.pi * t / steps)))
        for q, gq, a, b in zip(p, g, m1, m2, strict=True):
            a *= b1
            a += (1 - b1) * gq
            b *= b2
            b += (1 - b2) * gq * gq
            q -= lr_t * (a / (1 - b1 ** (t + 1))) / (np.sqrt(b / (1 - b2 ** (t + 1))) + eps)
    return p[0], p[1]
