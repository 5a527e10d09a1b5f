"""The engine's mini-batch row indices, and the block each iteration updates, drawn on
the host ahead of the loop and copied to the device in blocks of iterations (one
host -> device copy per source per block, not per iteration)."""

from __future__ import annotations

from collections import deque

import numpy as np

AHEAD = 64  # iterations drawn at once: 64 x 4,096 int64 indices = 2 MB a source


class BlockPlan:
    """The block each iteration of DSG and UDSG updates, drawn from the loop's generator
    right after the iteration's rows, as the loop's own rule would: a new block, except
    UDSG's old-block iterations (``udsg_new`` new, then ``udsg_old`` old drawn uniformly)
    and every iteration once ``max_blocks`` blocks exist (an old block drawn uniformly).
    Which blocks exist depends only on the iterations before, so the targets can be
    drawn ahead with the rows (CDSG's rule reads the device: not planned).

    Parameters
    ----------
    n_blocks : int
        Blocks before the first planned iteration.
    max_blocks : int
    udsg : (int, int) or None
        UDSG's ``(udsg_new, udsg_old)``; None for DSG.
    """

    def __init__(self, n_blocks, max_blocks, udsg=None):
        self.n_blocks, self.max_blocks, self.udsg = n_blocks, max_blocks, udsg

    def draw(self, t, rng):
        """Iteration ``t``'s target block (``n_blocks``: a new one), drawn from ``rng``."""
        n = self.n_blocks
        target = n
        if n and self.udsg is not None and (t - 1) % sum(self.udsg) >= self.udsg[0]:
            target = int(rng.integers(0, n))
        if n >= self.max_blocks:
            target = int(rng.integers(0, n))
        if target == n:
            self.n_blocks = n + 1
        return target


class BatchIndices:
    """Each iteration's row indices of every source, as device arrays, and with a
    :class:`BlockPlan` its target block.

    The indices come from ``Source.draw(rng)`` in the loop's order (iteration by
    iteration, source by source, then the plan's target), so a fit draws the same rows
    and blocks as one drawing an iteration at a time; what changes is that ``ahead``
    iterations are drawn at once and each source's block crosses to the device in one
    copy (a copy is a call of 10-20 us of host time on a GPU, docs/benchmarks.md "GPU").
    Ahead only where nothing else in the loop reads ``rng`` (``ahead=1`` otherwise: CDSG
    past its budget draws its blocks from it, and a callback may end the run with the
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
    plan : BlockPlan, optional
    """

    def __init__(self, sources, rng, bk, last, ahead=AHEAD, plan=None):
        self.sources, self.rng, self.bk, self.last, self.ahead = sources, rng, bk, last, max(1, int(ahead))
        self.plan = plan
        self._queue = deque()  # (t, indices, target) of the iterations drawn and not yet taken, in order
        self.target = None  # the target of the iteration last taken (None without a plan)

    def _draw(self, t):
        rows = [src.draw(self.rng) for src in self.sources]
        return rows, None if self.plan is None else self.plan.draw(t, self.rng)

    def fill(self, t, k):
        """Draw iterations up to ``t + k - 1`` (not past the run's last) that are not drawn
        yet; iteration ``t`` is the next the loop takes. Returns the queue's length."""
        first = t + len(self._queue)  # the queue holds iterations t, t + 1, ... drawn already
        stop = min(self.last, t + k - 1)
        if first > stop:
            return len(self._queue)
        drawn = [self._draw(u) for u in range(first, stop + 1)]
        blocks = [self.bk.asarray(np.stack([d[0][i] for d in drawn])) for i in range(len(self.sources))]
        self._queue.extend((first + j, [block[j, :] for block in blocks], d[1]) for j, d in enumerate(drawn))
        return len(self._queue)

    def upcoming(self):
        """``(t, indices, target)`` of the iterations drawn and not yet taken, in order."""
        return list(self._queue)

    def take(self, t):
        """The indices of iteration ``t``: one device array (batch_size,) per source;
        its target block is then :attr:`target`."""
        if not self._queue:
            self.fill(t, self.ahead)
        u, indices, self.target = self._queue.popleft()
        assert u == t, (u, t)
        return indices
