"""The noisy quadratic model (G. Zhang, L. Li, Z. Nado, J. Martens, S. Sachdeva, G. E. Dahl,
C. J. Shallue, R. Grosse, "Which Algorithmic Choices Matter at Which Batch Sizes? Insights From a
Noisy Quadratic Model", NeurIPS 2019, arXiv 1907.04164) and its closed forms: the training
program train.py draws from it, and the tests compute the truths of the three critical-batch
estimates from it (docs/methods.md §12). Standard library only.

  loss L(x) = 1/2 sum_i h_i x_i^2, the curvatures 1/j (j = 1..d) each on `copies` coordinates
  (copies > 1 makes the loss of one run concentrate near its expectation, so one run's steps to
  a target are near the expected loss's); a batch-B gradient is H x + n,
  n ~ N(0, c H / B) (per-example noise of covariance c H); x_0 ~ N(0, s0^2 I).
  update (heavy ball, as torch.optim.SGD; beta = 0 is plain SGD), with a fixed diagonal
  preconditioner P = H^-p (p = 0: none; p > 0: an idealised Adam, Zhang et al. §3.2):
      v <- beta v + g,   x <- x - lr P v
  Per coordinate (x, v) is linear in the noise, so its second moments evolve in closed form:
      M <- A M A^T + (c h / B) b b^T,  A = [[1 - a h, -a beta], [h, beta]],  b = (-a, 1),
  a = lr h^-p; E[L] = 1/2 sum_i h_i M_xx,i.

    m = Moments.start(nqm, x0=None)             # E over x_0, or from a given (x, v)
    m.step(lr, batch); m.expected_loss()
"""
import math


class Nqm:
    def __init__(self, dims=32, copies=1, noise=1.0, init_scale=1.0, beta=0.0, precondition=0.0):
        self.distinct = [1.0 / j for j in range(1, dims + 1)]
        self.copies = copies
        self.h = [h for h in self.distinct for _ in range(copies)]  # every coordinate's
        self.noise, self.init_scale = noise, init_scale
        self.beta, self.precondition = beta, precondition
        self.p = [h ** -precondition for h in self.h]  # the preconditioner's diagonal

    def loss(self, x):
        return 0.5 * sum(h * xi * xi for h, xi in zip(self.h, x))

    def true_sq(self, x):
        """|G|^2 = |H x|^2 at x (McCandlish et al. 2018, App. A)."""
        return sum((h * xi) ** 2 for h, xi in zip(self.h, x))

    def true_trace(self):
        """tr(Sigma) = c sum h_i, the per-example gradient covariance's trace (any x)."""
        return self.noise * sum(self.h)


class Moments:
    """E[x^2], E[x v], E[v^2] per coordinate under the update above (per distinct curvature,
    weighted by its copies, when every copy starts alike)."""

    def __init__(self, nqm, h, w, xx, xv, vv):
        self.nqm, self.h, self.w, self.xx, self.xv, self.vv = nqm, h, w, xx, xv, vv
        self.p = [c ** -nqm.precondition for c in h]

    @classmethod
    def start(cls, nqm, x=None, v=None):
        if x is None:  # in expectation over x_0 ~ N(0, s0^2 I), v = 0
            d = len(nqm.distinct)
            return cls(nqm, nqm.distinct, [nqm.copies] * d, [nqm.init_scale ** 2] * d,
                       [0.0] * d, [0.0] * d)
        v = v or [0.0] * len(x)
        return cls(nqm, nqm.h, [1] * len(x), [a * a for a in x],
                   [a * b for a, b in zip(x, v)], [b * b for b in v])

    def step(self, lr, batch):
        n, beta = self.nqm, self.nqm.beta
        for i, (h, p) in enumerate(zip(self.h, self.p)):
            a, s2 = lr * p, n.noise * h / batch
            # v' = h x + beta v + n;  x' = x - a v' = (1 - a h) x - a beta v - a n
            a11, a12, a21, a22 = 1 - a * h, -a * beta, h, beta
            xx, xv, vv = self.xx[i], self.xv[i], self.vv[i]
            self.xx[i] = a11 * a11 * xx + 2 * a11 * a12 * xv + a12 * a12 * vv + a * a * s2
            self.xv[i] = (a11 * a21 * xx + (a11 * a22 + a12 * a21) * xv + a12 * a22 * vv
                          - a * s2)
            self.vv[i] = a21 * a21 * xx + 2 * a21 * a22 * xv + a22 * a22 * vv + s2

    def expected_loss(self):
        return 0.5 * sum(h * w * m for h, w, m in zip(self.h, self.w, self.xx))


def expected_steps(nqm, lr, batch, target, max_steps):
    """The first step whose expected loss is <= target, from x_0 at a constant LR; None when
    none is within max_steps (or the loss grows past 10x its start: diverged)."""
    m = Moments.start(nqm)
    start = m.expected_loss()
    for s in range(1, max_steps + 1):
        m.step(lr, batch)
        loss = m.expected_loss()
        if loss <= target:
            return s
        if not math.isfinite(loss) or loss > 10 * start:
            return None
    return None


def fit_b_crit(points):
    """McCandlish et al.'s S = S_min + E_min / B by least squares weighted 1/S^2, as
    analysis/estimators/critical_batch_fit.cc fits it: returns (S_min, E_min, B_crit)."""
    sw = sx = sy = sxx = sxy = 0.0
    for b, s in points:
        w, x = 1.0 / (s * s), 1.0 / b
        sw, sx, sy, sxx, sxy = sw + w, sx + w * x, sy + w * s, sxx + w * x * x, sxy + w * x * s
    e_min = (sw * sxy - sx * sy) / (sw * sxx - sx * sx)
    s_min = (sy - e_min * sx) / sw
    return s_min, e_min, e_min / s_min


def branch_losses(nqm, x0, v0, lr0, b0, ks, rule, evals):
    """The expected smoothed loss of a branch at each k from the trunk's state (x0, v0) at LR lr0
    and batch b0: batch k b0, LR lr0 k (linear), lr0 sqrt(k) (sqrt) or lr0 (none); the mean of
    the expected losses after the steps evals[j] (the branch's last evaluations, as the
    analysis smooths them: a branch's evaluations fall every so many samples, not steps)."""
    out = []
    for k, steps in zip(ks, evals):
        lr = lr0 * {"linear": k, "sqrt": math.sqrt(k), "none": 1.0}[rule]
        m = Moments.start(nqm, x0, v0)
        kept = []
        for s in range(1, max(steps) + 1):
            m.step(lr, k * b0)
            if s in steps:
                kept.append(m.expected_loss())
        out.append(sum(kept) / len(kept))
    return out


def crossing(ks, b0, losses, tolerance):
    """The critical batch of a branch point: where the expected gap over the smallest k first
    exceeds the tolerance, linear in log k between grid points (as the estimator reads its
    crossing); math.inf when no k's gap does."""
    gaps = [v - losses[0] for v in losses]
    for i in range(1, len(ks)):
        if gaps[i] > tolerance:
            t = (tolerance - gaps[i - 1]) / (gaps[i] - gaps[i - 1])
            lk = math.log(ks[i - 1]) + t * (math.log(ks[i]) - math.log(ks[i - 1]))
            return b0 * math.exp(lk)
    return math.inf
