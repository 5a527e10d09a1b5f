"""Reference inner loops (the test oracle of ``_numba``), one array op at a time.

The weights w have d + 1 entries, the last for an implicit constant feature 1
(the intercept), so X is used as given: no (n, d + 1) copy. ``anchors`` are
(m, d) (their constant feature implied), ``G`` is (2, m, d + 1).

One call runs ``n_outer`` outer loops of ``k_in`` proximal steps each
(Algorithm 1 of Wang et al. for S3GD; prox-SVRG, Xiao & Zhang 2014, with the
last inner iterate as the new snapshot like Algorithm 1; plain prox-SGD):

    g = (1/p) sum_{i in I} (psi'(x_i.w; y_i) - b_i) x_i + H
    w = prox_{eta R}(w - eta g),   prox = soft-threshold(eta l1) / (1 + 2 eta l2)

with psi the loss (:mod:`kbackends.losses`), b_i and H fixed per outer loop:
  s3gd: b_i = sum_k gamma_ik D[c_i, idx_ik], D[c, j] = psi'(z_j.w~; y_c) (Eqs. 19, 21),
        H = sum_c G_c^T D[c] (Eq. 22, class-split), G_c = (1/n) sum_{i in c} s_i M_i^T x_i;
  svrg: b_i = psi'(x_i.w~; y_i), H = (1/n) sum_i s_i psi'(x_i.w~; y_i) x_i (exact);
  sgd:  b_i = 0, H = 0.
Class c = 0 is y = -1, c = 1 is y = +1; ``sample_weight`` s_i (mean 1 over the
rows; from the class weights); batches are drawn by the caller with
probabilities proportional to them, so the plain batch average is unbiased; or, with
``row_scale`` r (n,), in proportion to s_i / r_i (e.g. S3GD's automatic step draws long
rows more often), each row's term then multiplied by r_i, the importance weight that
keeps the batch average unbiased.
"""

from kbackends.losses import PSI_CODES, dpsi

METHODS = {"sgd": 0, "s3gd": 1, "svrg": 2}


def prox_sgd_run(X, cls, w, batches, sample_weight, anchors, G, nbr_idx, nbr_w, *, xp, method, loss, beta,
                 eta, l1, l2, k_in, n_outer, record_step, row_scale=None):
    code, lcode = METHODS[method], PSI_CODES[loss]
    n, d = X.shape
    d = d + 1  # the implicit constant feature: w[-1] is the intercept
    p = batches.shape[1]
    signs = xp.astype(cls, X.dtype) * 2.0 - 1.0
    sign_c = xp.asarray([-1.0, 1.0], dtype=X.dtype)
    shrink = 1.0 / (1.0 + 2.0 * eta * l2)
    record_g = xp.zeros((d,), dtype=X.dtype)
    record_w = xp.zeros((d,), dtype=X.dtype)
    H = xp.zeros((d,), dtype=X.dtype)
    for outer in range(n_outer):
        w_snap = w
        if code == 1:
            s = anchors @ w_snap[:-1] + w_snap[-1]
            D = dpsi(s[None, :], sign_c[:, None], lcode, beta, xp)  # (2, m)
            H = D[0, :] @ G[0, :, :] + D[1, :] @ G[1, :, :]
        elif code == 2:
            u_ref = X @ w_snap[:-1] + w_snap[-1]
            a = sample_weight * dpsi(u_ref, signs, lcode, beta, xp) / n
            H = xp.concat((a @ X, xp.sum(a)[None]))
        for inner in range(k_in):
            t = outer * k_in + inner
            rows = batches[t, :]
            Xb = xp.take(X, rows, axis=0)
            yb = xp.take(signs, rows)
            coef = dpsi(Xb @ w[:-1] + w[-1], yb, lcode, beta, xp)
            if code == 1:
                cb = xp.take(cls, rows)
                Db = xp.take(xp.reshape(D, (-1,)), xp.reshape(cb[:, None] * D.shape[1] + xp.take(nbr_idx, rows, axis=0), (-1,)))
                coef = coef - xp.sum(xp.take(nbr_w, rows, axis=0) * xp.reshape(Db, (p, -1)), axis=1)
            elif code == 2:
                coef = coef - dpsi(xp.take(u_ref, rows), yb, lcode, beta, xp)
            if row_scale is not None:
                coef = coef * xp.take(xp.astype(row_scale, X.dtype), rows)
            g = xp.concat(((coef / p) @ Xb, xp.sum(coef / p)[None])) + H
            if t == record_step:
                record_g, record_w = g, w
            v = w - eta * g
            if l1 > 0:
                v = xp.sign(v) * xp.maximum(xp.abs(v) - eta * l1, 0.0)
            w = v * shrink
    return w, record_g, record_w



