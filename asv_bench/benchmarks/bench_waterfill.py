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
