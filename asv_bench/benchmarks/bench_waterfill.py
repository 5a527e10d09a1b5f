"""water_level against the sort-based way of finding the level, same data, same run.

Time per element of ``time_water_level`` should stay flat from 1e4 to 1e7 (expected
linear selection) and beat ``time_sort_based`` (np.sort + cumsum, O(n log n)).
"""

import numpy as np

from kbackends.ops import water_level

from .common import BACKENDS, backend_or_skip, synchronize


class WaterLevel:
    params = (BACKENDS, [10_000, 100_000, 1_000_000, 10_000_000])
    param_names = ["backend", "n"]
    timeout = 300

    def setup(self, backend, n):
        self.bk = bk = backend_or_skip(backend)
        self.c = bk.asarray(np.random.default_rng(0).standard_normal(n))
        water_level(self.c, 10.0)  # compile outside the timer

    def time_water_level(self, backend, n):
        water_level(self.c, 10.0, check_finite=False)
        synchronize(self.bk)

    def time_sort_based(self, backend, n):
        xp = self.bk.xp
        s = xp.sort(self.c)
        xp.cumulative_sum(s)
        synchronize(self.bk)

    def track_ns_per_element(self, backend, n):
        """Nanoseconds per element of the registered implementation (no op-level
        validation, ~30 us per call that would dominate at 1e4), best of 5: flat
        in n for a linear-time level."""
        import time

        from kbackends import get_kernel

        impl = get_kernel("water_level", self.bk)
        xp = self.bk.xp
        volume = xp.asarray([10.0], dtype=xp.float64)
        offsets = xp.asarray([0, n], dtype=xp.int64)
        times = []
        for _ in range(5):
            start = time.perf_counter()
            impl(self.c, volume, offsets, xp=xp)
            synchronize(self.bk)
            times.append(time.perf_counter() - start)
        return 1e9 * min(times) / n

    track_ns_per_element.unit = "ns"


class WaterLevelSegmented:
    """26 one-vs-rest classes (letter's size): one segmented call versus one call per class."""

    params = (BACKENDS, [12_000, 120_000])
    param_names = ["backend", "n_per_class"]

    def setup(self, backend, n_per_class):
        self.bk = bk = backend_or_skip(backend)
        self.k = 26
        c = np.random.default_rng(0).standard_normal(self.k * n_per_class)
        self.c = bk.asarray(c)
        self.parts = [bk.asarray(c[j * n_per_class : (j + 1) * n_per_class]) for j in range(self.k)]
        self.offsets = bk.asarray(np.arange(self.k + 1, dtype=np.int64) * n_per_class)
        self.volumes = bk.asarray(np.full(self.k, 10.0))
        water_level(self.c, self.volumes, segments=self.offsets)

    def time_segmented(self, backend, n_per_class):
        water_level(self.c, self.volumes, segments=self.offsets, check_finite=False)
        synchronize(self.bk)

    def time_one_call_per_class(self, backend, n_per_class):
        for part in self.parts:
            water_level(part, 10.0, check_finite=False)
        synchronize(self.bk)


class WaterLevelBiased:
    """The two-basin level (SBP with bias) against its sort-based reference."""

    params = (BACKENDS, [10_000, 100_000, 1_000_000, 10_000_000])
    param_names = ["backend", "n"]
    timeout = 300

    def setup(self, backend, n):
        from kbackends.ops import water_level_biased

        self.bk = bk = backend_or_skip(backend)
        rng = np.random.default_rng(0)
        self.c = bk.asarray(rng.standard_normal(n))
        self.y = bk.asarray(np.where(rng.random(n) < 0.3, 1, -1))
        self.volume = 0.01 * n
        water_level_biased(self.c, self.y, self.volume)

    def time_water_level_biased(self, backend, n):
        from kbackends.ops import water_level_biased

        water_level_biased(self.c, self.y, self.volume, check_finite=False)
        synchronize(self.bk)

    def time_sort_based(self, backend, n):
        from kbackends.testing import oracle  # the sort-based xp reference

        oracle("water_level_biased")(self.c, self.y, self.volume, xp=self.bk.xp)
        synchronize(self.bk)
