"""Scalability model fits: Amdahl's law and Gunther's Universal Scalability Law.

    USL:     X(N) = lambda * N / (1 + alpha*(N-1) + beta*N*(N-1))
    Amdahl:  the same with beta = 0

X is throughput at concurrency N (clients, or processes for a parallel query),
lambda the throughput of one client without contention, alpha the contention
(serial fraction), beta the coherency cost (crosstalk between N clients).  With
beta > 0 and alpha < 1 throughput peaks at N* = sqrt((1 - alpha) / beta).

The fit is ordinary nonlinear least squares on (lambda, alpha, beta) with
alpha, beta >= 0, written here (stdlib only, no numpy): a coarse grid over
(alpha, beta) with lambda solved in closed form (the model is linear in lambda),
then projected Levenberg-Marquardt from the best grid point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, asdict
from typing import Optional, Sequence


class FitError(ValueError):
    """The data cannot support the requested fit (the message says why)."""


@dataclass
class Fit:
    model: str            # "usl" or "amdahl"
    lam: float            # throughput of one client (lambda)
    alpha: float          # contention / serial fraction
    beta: float           # coherency (0 for Amdahl)
    sse: float            # sum of squared residuals
    r2: float             # coefficient of determination (1 - sse/sst); nan if sst == 0
    n_points: int
    peak_n: Optional[float]  # N* (None when the model has no peak)
    peak_x: Optional[float]  # X(N*)
    note: str = ""

    def predict(self, n: float) -> float:
        return model_x(n, self.lam, self.alpha, self.beta)

    def to_dict(self) -> dict:
        d = asdict(self)
        for k, v in list(d.items()):
            if isinstance(v, float) and not math.isfinite(v):
                d[k] = None
        return d

    def describe(self) -> str:
        if self.model == "amdahl":
            return f"Amdahl: lambda={self.lam:.4g} alpha={self.alpha:.4g} (serial fraction {100*self.alpha:.2f}%)"
        peak = f"N*={self.peak_n:.1f}" if self.peak_n is not None else f"N*=none ({self.note})"
        return f"USL: lambda={self.lam:.4g} alpha={self.alpha:.4g} beta={self.beta:.3g} {peak}"


def model_x(n: float, lam: float, alpha: float, beta: float) -> float:
    return lam * n / (1.0 + alpha * (n - 1.0) + beta * n * (n - 1.0))


def peak_concurrency(alpha: float, beta: float) -> Optional[float]:
    """N* = sqrt((1 - alpha) / beta); None when there is no finite peak above 1.

    beta == 0: throughput grows monotonically (Amdahl), no peak.
    alpha >= 1: throughput never grows above X(1); there is no peak beyond N = 1.
    """
    if beta < 0 or alpha < 0:
        raise ValueError("alpha and beta must be >= 0")
    if beta == 0.0 or alpha >= 1.0:
        return None
    return math.sqrt((1.0 - alpha) / beta)


def _clean(ns: Sequence[float], xs: Sequence[float]) -> tuple[list[float], list[float]]:
    if len(ns) != len(xs):
        raise FitError(f"{len(ns)} concurrency values but {len(xs)} throughput values")
    pts = []
    for n, x in zip(ns, xs):
        if n is None or x is None:
            continue
        n, x = float(n), float(x)
        if not (math.isfinite(n) and math.isfinite(x)):
            continue
        if n < 1:
            raise FitError(f"concurrency must be >= 1, got {n}")
        pts.append((n, x))
    pts.sort()
    return [p[0] for p in pts], [p[1] for p in pts]


def _best_lambda(ns, xs, alpha, beta) -> float:
    # X = lam * f(N): least-squares lam = sum(x f) / sum(f^2), kept >= 0
    f = [n / (1.0 + alpha * (n - 1.0) + beta * n * (n - 1.0)) for n in ns]
    den = sum(v * v for v in f)
    return max(0.0, sum(x * v for x, v in zip(xs, f)) / den) if den > 0 else 0.0


def _sse(ns, xs, lam, alpha, beta) -> float:
    return sum((model_x(n, lam, alpha, beta) - x) ** 2 for n, x in zip(ns, xs))


def _solve(a: list[list[float]], b: list[float]) -> Optional[list[float]]:
    """Gaussian elimination with partial pivoting; None if singular."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-300:
            return None
        m[c], m[p] = m[p], m[c]
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            for k in range(c, n + 1):
                m[r][k] -= f * m[c][k]
    out = [0.0] * n
    for r in range(n - 1, -1, -1):
        out[r] = (m[r][n] - sum(m[r][k] * out[k] for k in range(r + 1, n))) / m[r][r]
    return out


def _lm(ns, xs, p, free, max_iter=500):
    """Projected Levenberg-Marquardt on p = [lam, alpha, beta]; free = indices fitted."""
    def jac_row(n, lam, a, b):
        d = 1.0 + a * (n - 1.0) + b * n * (n - 1.0)
        return [n / d, -lam * n * (n - 1.0) / (d * d), -lam * n * n * (n - 1.0) / (d * d)]

    mu = 1e-3
    cur = _sse(ns, xs, *p)
    for _ in range(max_iter):
        lam, a, b = p
        rows = [jac_row(n, lam, a, b) for n in ns]
        res = [x - model_x(n, lam, a, b) for n, x in zip(ns, xs)]
        k = len(free)
        jtj = [[sum(r[free[i]] * r[free[j]] for r in rows) for j in range(k)] for i in range(k)]
        jtr = [sum(r[free[i]] * e for r, e in zip(rows, res)) for i in range(k)]
        improved = False
        for _ in range(30):
            m = [row[:] for row in jtj]
            for i in range(k):
                m[i][i] += mu * (jtj[i][i] if jtj[i][i] > 0 else 1.0)
            step = _solve(m, jtr)
            if step is None:
                mu *= 10
                continue
            q = p[:]
            for i, idx in enumerate(free):
                q[idx] += step[i]
            q[0] = max(q[0], 0.0)
            q[1] = max(q[1], 0.0)
            q[2] = max(q[2], 0.0)
            new = _sse(ns, xs, *q)
            if new < cur:
                rel = (cur - new) / cur if cur > 0 else 0.0
                p, cur = q, new
                mu = max(mu / 10, 1e-12)
                improved = True
                break
            mu *= 10
        if not improved or rel < 1e-15:
            break
    return p, cur


def _grid(lo_exp, hi_exp, per_decade=6):
    vals = [0.0]
    e = lo_exp
    while e <= hi_exp + 1e-9:
        vals.append(10.0 ** e)
        e += 1.0 / per_decade
    return vals


def fit(ns: Sequence[float], xs: Sequence[float], model: str = "usl") -> Fit:
    """Fit `model` ("usl" or "amdahl") to throughput xs at concurrency ns.

    Raises FitError with a readable reason when the data cannot support a fit:
    too few points, no positive throughput, all points at one concurrency.
    """
    if model not in ("usl", "amdahl"):
        raise ValueError(f"unknown model {model!r}")
    ns, xs = _clean(ns, xs)
    need = 3 if model == "usl" else 2
    if len(ns) < need:
        raise FitError(f"{model}: need at least {need} measured points, got {len(ns)}")
    if any(x < 0 for x in xs):
        raise FitError(f"{model}: negative throughput in the data")
    if all(x == 0 for x in xs):
        raise FitError(f"{model}: all throughputs are zero; nothing to fit")
    if len(set(ns)) < need:
        raise FitError(f"{model}: need at least {need} distinct concurrency values, got {len(set(ns))}")

    alphas = _grid(-4, 0.3)
    betas = _grid(-7, 0) if model == "usl" else [0.0]
    best = None
    for a in alphas:
        for b in betas:
            lam = _best_lambda(ns, xs, a, b)
            s = _sse(ns, xs, lam, a, b)
            if best is None or s < best[0]:
                best = (s, [lam, a, b])
    free = [0, 1, 2] if model == "usl" else [0, 1]
    p, s = _lm(ns, xs, best[1], free)
    if s > best[0]:
        p, s = best[1], best[0]
    # a final closed-form lambda for the found shape never hurts
    lam2 = _best_lambda(ns, xs, p[1], p[2])
    s2 = _sse(ns, xs, lam2, p[1], p[2])
    if s2 < s:
        p, s = [lam2, p[1], p[2]], s2

    mean = sum(xs) / len(xs)
    sst = sum((x - mean) ** 2 for x in xs)
    r2 = 1.0 - s / sst if sst > 0 else float("nan")
    lam, a, b = p
    if model == "amdahl":
        b = 0.0
    peak = peak_concurrency(a, b)
    note = ""
    if peak is None:
        note = "beta = 0: no peak, throughput keeps rising" if b == 0.0 else "alpha >= 1: no gain beyond N = 1"
    return Fit(model=model, lam=lam, alpha=a, beta=b, sse=s, r2=r2, n_points=len(ns),
               peak_n=peak, peak_x=model_x(peak, lam, a, b) if peak is not None else None, note=note)


def fit_both(ns, xs) -> dict:
    """{"usl": Fit or None, "amdahl": Fit or None, "errors": {model: message}}."""
    out = {"usl": None, "amdahl": None, "errors": {}}
    for m in ("usl", "amdahl"):
        try:
            out[m] = fit(ns, xs, m)
        except FitError as e:
            out["errors"][m] = str(e)
    return out
