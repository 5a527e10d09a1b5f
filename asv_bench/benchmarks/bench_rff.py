"""Random-Fourier-feature kernels against the plain array expression they replace.

``time_rff_predict`` and ``time_plain_expression`` run on the same data in the
same asv run, so their ratio is the speed-up: the plain expression is
``xp.cos(X @ W.T + b) @ a`` in the backend's own namespace (NumPy with its BLAS
on cpu, CuPy on cuda).
"""

import numpy as np

from kbackends import launch_settings, ops
from kbackends.random import omega_block

from .common import BACKENDS, backend_or_skip, synchronize


class RFFPredict:
    """rff_predict at the size of the acceptance check: n=100000, d=28, m=4096."""

    params = (BACKENDS, ["float32", "float64"])
    param_names = ["backend", "dtype"]
    timeout = 300
    n, d, m = 100_000, 28, 4096

    def setup(self, backend, dtype):
        self.bk = bk = backend_or_skip(backend)
        rng = np.random.default_rng(0)
        self.X = bk.asarray(rng.random((self.n, self.d)).astype(dtype))
        self.W, self.b = omega_block(0, 0, self.m, self.d, gamma=1.0, dtype=dtype, backend=bk)
        self.a = bk.asarray((rng.standard_normal(self.m) / self.m).astype(dtype))
        ops.rff_predict(self.X[:64], self.W, self.b, self.a)  # compile outside the timer

    def time_rff_predict(self, backend, dtype):
        ops.rff_predict(self.X, self.W, self.b, self.a)
        synchronize(self.bk)

    def time_plain_expression(self, backend, dtype):
        xp = self.bk.xp
        xp.cos(self.X @ self.W.T + self.b) @ self.a
        synchronize(self.bk)


class RFFWeightedSum:
    """The gradient-step product g @ features at a mini-batch size of DSG."""

    params = (BACKENDS, ["float32", "float64"])
    param_names = ["backend", "dtype"]
    n, d, m = 8192, 28, 4096

    def setup(self, backend, dtype):
        self.bk = bk = backend_or_skip(backend)
        rng = np.random.default_rng(0)
        self.X = bk.asarray(rng.random((self.n, self.d)).astype(dtype))
        self.W, self.b = omega_block(0, 0, self.m, self.d, gamma=1.0, dtype=dtype, backend=bk)
        self.g = bk.asarray(rng.standard_normal(self.n).astype(dtype))
        ops.rff_weighted_sum(self.X[:64], self.W, self.b, self.g[:64])  # compile outside the timer

    def time_rff_weighted_sum(self, backend, dtype):
        ops.rff_weighted_sum(self.X, self.W, self.b, self.g)
        synchronize(self.bk)

    def time_plain_expression(self, backend, dtype):
        xp = self.bk.xp
        self.g @ xp.cos(self.X @ self.W.T + self.b)
        synchronize(self.bk)


class RFFProductPath:
    """rff_predict and rff_weighted_sum on cuda through the fused kernels (each product
    where its cosine is taken) and through cuBLAS's (rows, m) product in memory
    (``kbackends.launch_settings(fused=...)``), on the same arrays: the fused kernels'
    speed-up, tracked over time. cuda only (the cpu engine has one path)."""

    params = (["cuda"], ["fused", "cublas"])
    param_names = ["backend", "path"]
    n, d, m = 100_000, 28, 4096

    def setup(self, backend, path):
        self.bk = bk = backend_or_skip(backend)
        rng = np.random.default_rng(0)
        self.X = bk.asarray(rng.random((self.n, self.d), dtype=np.float32))
        self.W, self.b = omega_block(0, 0, self.m, self.d, gamma=1.0, dtype="float32", backend=bk)
        self.a = bk.asarray((rng.standard_normal(self.m) / self.m).astype(np.float32))
        self.g = bk.asarray(rng.standard_normal(self.n).astype(np.float32))
        self.fused = path == "fused"
        with launch_settings(fused=self.fused):  # compile outside the timer
            ops.rff_predict(self.X[:64], self.W, self.b, self.a)
            ops.rff_weighted_sum(self.X[:64], self.W, self.b, self.g[:64])

    def time_rff_predict(self, backend, path):
        with launch_settings(fused=self.fused):
            ops.rff_predict(self.X, self.W, self.b, self.a)
        synchronize(self.bk)

    def time_rff_weighted_sum(self, backend, path):
        with launch_settings(fused=self.fused):
            ops.rff_weighted_sum(self.X, self.W, self.b, self.g)
        synchronize(self.bk)


class OmegaBlock:
    """Generating one block (cache off): the cost of regenerating instead of storing."""

    params = (BACKENDS, [256, 4096])
    param_names = ["backend", "n_features"]

    def setup(self, backend, n_features):
        from kbackends.random import set_cache_budget

        self.bk = backend_or_skip(backend)
        set_cache_budget(0)
        self.time_omega_block(backend, n_features)

    def teardown(self, backend, n_features):
        from kbackends.random import set_cache_budget

        set_cache_budget(256 * 2**20)

    def time_omega_block(self, backend, n_features):
        omega_block(1, 2, n_features, 28, dtype="float32", backend=self.bk)
        synchronize(self.bk)

