"""Progress bars of long fits: ``verbose=1`` of every fit and estimator, the command
line's bar (``train`` without ``--quiet``) and the distributed driver's per-round bar
are this one mechanism.

The bar is tqdm's (a core dependency) on standard error. It is fed host values
only: the iteration count, the number of blocks, and a batch loss that the loop
has already brought to the host. On a device backend a loop must not wait for the
device (:func:`kbackends.sync_free`), so the engine starts the batch
loss on its way to the host every :data:`LOSS_EVERY` iterations
(:func:`kbackends.to_host_async`) and shows it :data:`LOSS_EVERY` iterations later:
the loss on the bar lags by up to that many iterations, and reading it waits for
nothing but that one copy (queued long before). ``verbose=0`` (the default) builds
no bar and computes no loss.
"""

from __future__ import annotations

import sys
import time

from kbackends import to_host_async

__all__ = ["LOSS_EVERY", "EngineBar", "ProgressBar", "engine_bar", "progress_bar"]

#: Iterations between two batch losses started to the host for the bar (and the lag
#: of the loss it shows).
LOSS_EVERY = 10


class ProgressBar:
    """A progress bar (tqdm's) over ``total`` steps on standard error.

    Parameters
    ----------
    total : int or float or None
        Steps of the whole fit (iterations, outer iterations, rounds); None: a count.
    desc : str
        What is running ("dsg", "sbp", "dsg on 2 workers").
    unit : str, default "it"
    initial : int, default 0
        Steps done before (a resumed run).
    stream : file, optional
        Default ``sys.stderr`` at the time of the call.
    """

    def __init__(self, total, desc, *, unit="it", initial=0, stream=None, smoothing=0.3):
        self.total = total
        self.desc = desc
        self.unit = unit
        self.stream = sys.stderr if stream is None else stream
        self.done = initial
        self.fields = {}
        interactive = bool(getattr(self.stream, "isatty", lambda: False)())
        from tqdm import tqdm  # loaded with the first bar (verbose >= 1): ~40 ms of every import otherwise
        # A log file (not a terminal) gets a line every few seconds, not ten a second.
        self.bar = tqdm(total=total, desc=desc, unit=unit, initial=initial, file=self.stream,
                        mininterval=0.1 if interactive else 5.0, dynamic_ncols=True, smoothing=smoothing)

    def update(self, done, **fields):
        """Set the steps done to ``done`` (absolute); ``fields`` (host numbers) go after the bar."""
        if fields:
            self.fields.update({k: v for k, v in fields.items() if v is not None})
        step = done - self.done
        self.done = done
        if fields:
            self.bar.set_postfix(self._shown(), refresh=False)
        self.bar.update(step)

    def restart_clock(self):
        """Estimate the rate (and the time left) from the steps after this one only:
        called once the first step, which compiles the kernels, is done."""
        now = time.time()  # tqdm's clock (its _time is time.time); its rate is (n - initial) / (now - start_t)
        self.bar.initial, self.bar.start_t = self.bar.n, now
        self.bar.last_print_t = max(self.bar.last_print_t, now)  # tqdm's close shows bars printed since start_t

    def close(self):
        """Show the last state and end the bar's line."""
        if self.fields:
            self.bar.set_postfix(self._shown(), refresh=False)
        self.bar.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _shown(self):
        return {k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in self.fields.items()}


def progress_bar(verbose, total, desc, **kwargs):
    """A :class:`ProgressBar` when ``verbose`` >= 1, else None (nothing is built or printed)."""
    return ProgressBar(total, desc, **kwargs) if verbose else None


class EngineBar(ProgressBar):
    """The engine's bar: iterations, blocks, rows read and passes over the training
    rows, early stopping's held-out loss (already on the host) and the batch loss of
    ``LOSS_EVERY`` iterations ago (started to the host then with
    :func:`kbackends.to_host_async`, read now: its copy is long done, so the loop never
    waits for the device). The time left is estimated from the iterations after the
    first (which compiles the kernels), at their mean rate."""

    def __init__(self, total, desc, *, rows_per_iteration=0, n_rows=0, **kwargs):
        super().__init__(total, desc, smoothing=0, **kwargs)
        self.on_the_way = None
        self.rows_per_iteration, self.n_rows = rows_per_iteration, n_rows
        self.first = self.done

    def step(self, t, n_blocks, batch_loss, held_out_loss=None):
        """Iteration ``t`` done; ``batch_loss()`` gives its loss as a 0-d device array
        (called every ``LOSS_EVERY`` iterations and at the last one only);
        ``held_out_loss``: the last held-out loss read (a host float), if any."""
        rows = t * self.rows_per_iteration
        fields = {"blocks": n_blocks, "rows": rows, "held_out": held_out_loss}
        if self.n_rows:
            fields["passes"] = round(rows / self.n_rows, 2)
        if t % LOSS_EVERY == 0 or t == self.total:
            if self.on_the_way is not None:
                fields["loss"] = float(self.on_the_way.get())
            self.on_the_way = to_host_async(batch_loss())
        self.update(t, **fields)
        if t == self.first + 1:
            self.restart_clock()

    def close(self):
        """Read the last loss started (after the loop, where waiting is allowed) and close."""
        if self.on_the_way is not None:
            self.fields["loss"] = float(self.on_the_way.get())
            self.on_the_way = None
        super().close()


def engine_bar(verbose, total, desc, **kwargs):
    """An :class:`EngineBar` when ``verbose`` >= 1, else None."""
    return EngineBar(total, desc, **kwargs) if verbose else None
