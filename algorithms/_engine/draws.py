"""The engine's mini-batch row indices, drawn on the host and copied to the device in
blocks of iterations (one host -> device copy per source per block, not per iteration)."""

from __future__ import annotations

from collections import deque

import numpy as np

AHEAD = 64  # iterations drawn at once: 64 x 4,096 int64 indices = 2 MB a source


class BatchIndices:
    """Each iteration's row indices of every source, as device arrays.

    The indices come from ``Source.draw(rng)`` in the loop's order (iteration by
    iteration, source by source), so a fit draws the same rows as one drawing an
    iteration at a time; what changes is that ``ahead`` iterations are drawn at once
    and each source's block crosses to the device in one copy (a copy is a call of
    10-20 us of host time on a GPU, docs/benchmarks.md "GPU"). Ahead only where
    nothing else in the loop reads ``rng`` (``ahead=1`` otherwise: UDSG and a reached
    feature budget draw their blocks from it, and a callback may end the run with the
    generator's state to resume from), and never past the run's last iteration, so
    the generator's state at the end is the same too.

    Parameters
    ----------
    sources : list of Source
    rng : numpy.random.Generator
    bk : Backend
    last : int
        The run's last iteration.
    ahead : int >= 1
    """

    def __init__(self, sources, rng, bk, last, ahead=AHEAD):
        self.sources, self.rng, self.bk, self.last, self.ahead = sources, rng, bk, last, max(1, int(ahead))
        self._queue = deque()

    def take(self, t):
        """The indices of iteration ``t``: one device array (batch_size,) per source."""
        if self.ahead == 1:
            return [self.bk.asarray(src.draw(self.rng)) for src in self.sources]
        if not self._queue:
            k = max(1, min(self.ahead, self.last - t + 1))
            drawn = [[src.draw(self.rng) for src in self.sources] for _ in range(k)]
            blocks = [self.bk.asarray(np.stack([d[i] for d in drawn])) for i in range(len(self.sources))]
            self._queue.extend([block[j, :] for block in blocks] for j in range(k))  # rows of a block: views
        return self._queue.popleft()
