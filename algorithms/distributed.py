"""Data-parallel and out-of-core training on Dask, and chunk-wise prediction.

``dsg.fit``, ``tsgs3vm.fit`` and ``tsgsu.fit`` hand a dask array to :func:`fit`,
which trains on the workers of the current ``distributed.Client``:

* each worker holds its own row chunks (read once from the array's graph, kept in
  the worker's memory; CuPy chunks stay on the worker's GPU) and samples its
  mini-batches from them;
* the random-feature blocks are a pure function of ``(seed, block)``, so every
  worker regenerates the same basis locally: only coefficients travel;
* the scheme is *local steps with exact periodic averaging*: every worker runs
  ``sync_every`` iterations of the ordinary engine (``_engine.run`` resumed from
  the last synchronised state), then sends the rows of the coefficients it
  changed; the driver averages the changes and sends the average back. Because
  the basis is shared, averaging the coefficients averages the functions
  exactly (the global scale factor and the step schedule depend on the
  iteration only, so they agree on every worker). One round trip per
  ``sync_every`` iterations, ``sync_every * block_size * n_outputs`` numbers
  each way (see docs/architecture.md, "Distributed training", for the
  measurements behind the choice);
* every replica (driver and workers) applies the same averaged change to the
  same synchronised state, so they stay bit-identical, and a lost worker is
  replaced by re-reading its chunks on the survivors and resuming from the last
  synchronised coefficients;
* data larger than the cluster's memory is *streamed*: each round a worker
  reads one chunk from disk (zarr, ``.npy`` memmaps, anything dask.array
  reads), steps on it and drops it, so a worker holds one chunk at a time.

Each algorithm's own ``fit`` still validates the arguments and builds the
engine's sources and settings (on a few rows that carry the classes); the
engine call is intercepted (``_engine.run_with``) and run here. The model
returned is the ordinary :class:`~algorithms.RFFModel`.

:func:`map_rows` evaluates any row-wise method (``decision_function``,
``predict``, ``predict_proba`` of every model) lazily over a dask array's row
chunks.

Options that no ``fit`` signature has are read from dask's configuration::

    with dask.config.set({"kbackends.sync_every": 10, "kbackends.mode": "stream"}):
        model = dsg.fit(X, y)

``kbackends.sync_every`` (default 8), ``kbackends.mode`` ("auto": stream when the
data exceed half the workers' memory limit; "memory"; "stream"),
``kbackends.verbose`` (progress bar), ``kbackends.lost_worker_timeout`` (s,
default 30), ``kbackends.max_recoveries`` (default 3).
"""

from __future__ import annotations

import dataclasses
import math
import sys
import threading
import time
import uuid

import numpy as np

from kbackends import resolve
from kbackends import to_numpy

from . import _engine
from ._validation import seed_from

__all__ = ["is_dask_array", "fit", "map_rows", "partial_fit", "WorkerLostError"]


class WorkerLostError(RuntimeError):
    """A distributed fit lost workers and could not recover (the message names them)."""


def is_dask_array(X) -> bool:
    """True for a ``dask.array.Array`` (without importing dask when it is not loaded)."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(X, da.Array)


def _config(name, default):
    import dask

    return dask.config.get(f"kbackends.{name}", default)


# --------------------------------------------------------------------------- prediction


def map_rows(method, X, *args):
    """``method(*args, block)`` over the row chunks of dask array ``X``, lazily.

    Parameters
    ----------
    method : callable
        A row-wise function: ``method(*args, block)`` maps an array of shape
        (rows, n_features) to (rows,) or (rows, k) (a module's
        ``decision_function(model, X)``, an estimator's ``predict_proba``, ...).
    X : dask array of shape (n_samples, n_features)
        Row-chunked; column chunks are merged first.
    *args
        Passed before the block (the model for the module functions).

    Returns
    -------
    dask array of shape (n_samples,) or (n_samples, k)
        Chunked like ``X``'s rows, NumPy or CuPy blocks like ``X``'s.
    """
    if X.ndim != 2:
        msg = f"`X` must be 2-D, got ndim={X.ndim}"
        raise ValueError(msg)
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    # The output's shape and dtype from one row of zeros of X's own namespace.
    meta = X._meta
    probe = method(*args, _zeros_like_meta(meta, (1, X.shape[1]), X.dtype))
    if probe.ndim == 1:
        return X.map_blocks(lambda b: method(*args, b), drop_axis=1, dtype=probe.dtype,
                            meta=_zeros_like_meta(meta, (0,), probe.dtype), token="kbackends-predict")
    k = probe.shape[1]
    return X.map_blocks(lambda b: method(*args, b), chunks=(X.chunks[0], (k,)), dtype=probe.dtype,
                        meta=_zeros_like_meta(meta, (0, 0), probe.dtype), token="kbackends-predict")


def _zeros_like_meta(meta, shape, dtype):
    mod = type(meta).__module__.split(".")[0]
    if mod == "cupy":
        import cupy

        return cupy.zeros(shape, dtype=dtype)
    return np.zeros(shape, dtype=dtype)


# --------------------------------------------------------------------------- worker side

# On each worker process: fit token -> _LocalFit. A fit's tasks are pinned to their
# worker, so this is where its data and engine state live between rounds (tasks, not
# actors: tasks show on the dashboard and their failures reach the driver as errors).
_LOCAL: dict = {}
_LOCAL_LOCK = threading.Lock()


@dataclasses.dataclass
class _LocalFit:
    spec: object  # _Spec
    sources: list | None  # the worker's rows as engine sources (memory mode), None when streaming
    bk: object
    settings: object
    state: object  # EngineState
    start: dict  # the synchronised arrays the round's changes are taken against
    last_info: dict | None = None


@dataclasses.dataclass
class _Spec:
    """What a worker needs to build its sources: picklable, small."""

    templates: list  # per source: (loss, weight, batch_size, curvature)
    settings: object  # EngineSettings (callback removed)
    dtype: str
    builder: object  # callable(parts, context, bk, dtype) -> list of (X, y) per source
    context: dict  # what the builder needs (classes, loss, unlabeled_label, ...)
    capacity_blocks: int


def _concat(chunks):
    """One array from a worker's chunks of one dask array (their own namespace)."""
    if len(chunks) == 1:
        return chunks[0]
    xp = resolve("auto", chunks[0]).xp
    return xp.concat(list(chunks), axis=0)


def _build_sources(spec, parts):
    """Engine sources from a worker's rows: ``parts[row set][array]`` is a list of chunks."""
    if any(len(chunks) == 0 for rows in parts for chunks in rows):
        return None, None  # fewer chunks of some row set than workers
    merged = [[_concat(chunks) for chunks in rows] for rows in parts]
    bk = resolve("auto", merged[0][0])
    xp = bk.xp
    pairs = spec.builder(merged, spec.context, bk, spec.dtype)
    sources = []
    for (X, y), (loss, weight, batch_size, curvature) in zip(pairs, spec.templates):
        if X is None or X.shape[0] == 0:
            return bk, None  # no rows of this source here
        sources.append(_engine.Source(X=xp.astype(X, getattr(xp, spec.dtype)), y=y, loss=loss, weight=weight,
                                      batch_size=batch_size, curvature=curvature))
    return bk, sources


def _fresh_state(spec, bk, worker_seed, synced):
    """An EngineState at the synchronised point ``synced`` (host arrays) or at zero."""
    xp = bk.xp
    dtype = getattr(xp, spec.dtype)
    s = spec.settings
    k = s.n_outputs
    cap = spec.capacity_blocks * s.block_size
    stored = bk.asarray(synced["stored"]) if synced else xp.zeros((cap, k), dtype=dtype)
    averager = None
    if s.average:
        averager = _engine._Averager(xp, (cap, k), dtype)
        if synced:
            averager.correction = bk.asarray(synced["correction"])
            averager.scale_sum, averager.count = synced["scale_sum"], synced["count"]
    intercept = bk.asarray(synced["intercept"]) if synced else xp.zeros((k,), dtype=dtype)
    intercept_sum = bk.asarray(synced["intercept_sum"]) if synced else xp.zeros((k,), dtype=dtype)
    beta = synced["beta"].copy() if synced else np.zeros(spec.capacity_blocks)
    return _engine.EngineState(
        stored=stored, n_blocks=synced["n_blocks"] if synced else 0, scale=synced["scale"] if synced else 1.0,
        intercept=intercept, beta=beta, averager=averager, intercept_sum=intercept_sum,
        rng=np.random.default_rng(worker_seed), t=synced["t"] if synced else 0,
    )


def _snapshot(state, xp):
    """The arrays a round's changes are measured against (copies)."""
    snap = {"stored": xp.asarray(state.stored, copy=True), "intercept": xp.asarray(state.intercept, copy=True),
            "intercept_sum": xp.asarray(state.intercept_sum, copy=True), "beta": state.beta.copy()}
    if state.averager is not None:
        snap["correction"] = xp.asarray(state.averager.correction, copy=True)
    return snap


def _init_local(token, spec, worker_seed, synced, *parts):
    """Task: read this worker's rows (memory mode) and set up its engine state."""
    if parts:
        bk, sources = _build_sources(spec, parts)
        if sources is None:
            return {"ok": False, "rows": 0}
        n_rows = int(sum(src.X.shape[0] for src in sources))
    else:  # streaming: sources come with every round
        bk, sources, n_rows = resolve(spec.context.get("backend", "cpu")), None, 0
    settings = dataclasses.replace(spec.settings, cache_predictions=False)
    state = _fresh_state(spec, bk, worker_seed, synced)
    local = _LocalFit(spec=spec, sources=sources, bk=bk, settings=settings, state=state,
                      start=_snapshot(state, bk.xp))

    def record(info):
        local.last_info = info
        return False

    local.settings = dataclasses.replace(settings, callback=record)
    with _LOCAL_LOCK:
        _LOCAL[token] = local
    return {"ok": True, "rows": n_rows}


def _local_round(token, update, stop, *parts):
    """Task: apply the averaged change of the last round, run to iteration ``stop``,
    return this worker's changes (the rows of the blocks it touched)."""
    local = _LOCAL.get(token)
    if local is None:
        msg = f"the state of fit {token} is not on this worker (it was restarted)"
        raise WorkerLostError(msg)
    bk, xp = local.bk, local.bk.xp
    if update is not None:
        _apply(local, update)
    if stop is None:  # no chunk for this worker in this (streamed) round
        return None
    state = local.state
    sources = local.sources
    if parts:  # streaming: this round's chunk
        _, sources = _build_sources(local.spec, parts)
        if sources is None:
            return None  # a chunk without rows of some source: nothing to learn from it here
    scale0 = state.scale
    started = time.perf_counter()
    result = _engine.run(sources, bk, local.settings, getattr(xp, local.spec.dtype), resume=state, stop=stop)
    state = local.state = result.state
    if state.scale > scale0:
        msg = ("the coefficients' scale factor was folded inside a round (it fell below 1e-30); "
               "lower `kbackends.sync_every` or the step times lam")
        raise RuntimeError(msg)
    changes = _changes(local, xp)
    changes["seconds"] = time.perf_counter() - started
    return changes


def _changes(local, xp):
    state, start, F = local.state, local.start, local.settings.block_size
    nb = state.n_blocks
    d_stored = state.stored[: nb * F] - start["stored"][: nb * F]
    k = d_stored.shape[1]
    touched = to_numpy(xp.any(xp.reshape(d_stored != 0, (nb, F * k)), axis=1)) if nb else np.zeros(0, bool)
    blocks = np.flatnonzero(touched)
    rows = (blocks[:, None] * F + np.arange(F)[None, :]).ravel()
    out = {
        "blocks": blocks,
        "stored": to_numpy(d_stored)[rows] if nb else np.zeros((0, k)),
        "n_blocks": nb,
        "scale": state.scale,
        "t": state.t,
        "intercept": to_numpy(state.intercept - start["intercept"]),
        "intercept_sum": to_numpy(state.intercept_sum - start["intercept_sum"]),
        "beta": state.beta[:nb] - start["beta"][:nb],
        "info": local.last_info,
    }
    if state.averager is not None:
        d_corr = state.averager.correction[: nb * F] - start["correction"][: nb * F]
        out["correction"] = to_numpy(d_corr)[rows] if nb else np.zeros((0, k))
        out["scale_sum"], out["count"] = state.averager.scale_sum, state.averager.count
    return out


def _apply(local, update):
    """Set the state to the synchronised point: start + the averaged change."""
    bk, xp, state, start, F = local.bk, local.bk.xp, local.state, local.start, local.settings.block_size
    rows = bk.asarray((update["blocks"][:, None] * F + np.arange(F)[None, :]).ravel())
    for name in ("stored", "correction"):
        if name not in start:
            continue
        base = start[name]
        if update["blocks"].size:
            base[rows, :] = xp.take(base, rows, axis=0) + xp.astype(bk.asarray(update[name]), base.dtype)
        if name == "stored":
            state.stored = xp.asarray(base, copy=True)
        else:
            state.averager.correction = xp.asarray(base, copy=True)
            state.averager.scale_sum, state.averager.count = update["scale_sum"], update["count"]
    for name in ("intercept", "intercept_sum"):
        start[name] = start[name] + xp.astype(bk.asarray(update[name]), start[name].dtype)
        setattr(state, name, xp.asarray(start[name], copy=True))
    nb = update["n_blocks"]
    start["beta"][:nb] += update["beta"]
    state.beta = start["beta"].copy()
    state.n_blocks, state.scale, state.t = nb, update["scale"], update["t"]


def _drop_local(token):
    with _LOCAL_LOCK:
        _LOCAL.pop(token, None)


# --------------------------------------------------------------------------- driver side


class _Synced:
    """The driver's copy of the synchronised state (host arrays), updated by averaging."""

    def __init__(self, spec):
        s = spec.settings
        cap = spec.capacity_blocks * s.block_size
        dtype = np.dtype(spec.dtype)
        self.F = s.block_size
        self.average = s.average
        self.arrays = {
            "stored": np.zeros((cap, s.n_outputs), dtype), "intercept": np.zeros(s.n_outputs, dtype),
            "intercept_sum": np.zeros(s.n_outputs, dtype), "beta": np.zeros(spec.capacity_blocks),
        }
        if s.average:
            self.arrays["correction"] = np.zeros((cap, s.n_outputs), dtype)
        self.n_blocks, self.scale, self.t, self.scale_sum, self.count = 0, 1.0, 0, 0.0, 0

    def as_dict(self):
        return {**self.arrays, "n_blocks": self.n_blocks, "scale": self.scale, "t": self.t,
                "scale_sum": self.scale_sum, "count": self.count}

    def average_changes(self, changes):
        """Average the workers' changes (a worker that did not touch a block adds 0 to
        it), apply the average here and return it for the workers."""
        W = len(changes)
        F = self.F
        k = self.arrays["stored"].shape[1]
        nb = max(c["n_blocks"] for c in changes)
        scales = {c["scale"] for c in changes}
        if len(scales) != 1:
            msg = f"workers disagree on the coefficients' scale factor ({sorted(scales)}); this is a bug"
            raise RuntimeError(msg)
        blocks = np.unique(np.concatenate([c["blocks"] for c in changes]))
        update = {"blocks": blocks, "n_blocks": nb, "scale": scales.pop(), "t": changes[0]["t"]}
        position = {int(b): i for i, b in enumerate(blocks)}
        names = ("stored", "correction") if self.average else ("stored",)
        for name in names:
            total = np.zeros((blocks.size * F, k), dtype=np.float64)
            for c in changes:
                if c["blocks"].size:
                    at = np.array([position[int(b)] for b in c["blocks"]])
                    idx = (at[:, None] * F + np.arange(F)[None, :]).ravel()
                    total[idx] += c[name]
            mean = (total / W).astype(self.arrays[name].dtype)
            update[name] = mean
            rows = (blocks[:, None] * F + np.arange(F)[None, :]).ravel()
            self.arrays[name][rows] += mean
        for name in ("intercept", "intercept_sum"):
            mean = (sum(c[name].astype(np.float64) for c in changes) / W).astype(self.arrays[name].dtype)
            update[name] = mean
            self.arrays[name] += mean
        beta = np.zeros(nb)
        for c in changes:
            beta[: c["beta"].size] += c["beta"]
        update["beta"] = beta / W
        self.arrays["beta"][:nb] += update["beta"]
        if self.average:
            update["scale_sum"], update["count"] = changes[0]["scale_sum"], changes[0]["count"]
            self.scale_sum, self.count = update["scale_sum"], update["count"]
        self.n_blocks, self.scale, self.t = nb, update["scale"], changes[0]["t"]
        return update

    def result(self):
        """The EngineResult of the synchronised state (what ``_engine._run`` returns)."""
        nb, F = self.n_blocks, self.F
        stored = self.arrays["stored"][: nb * F]
        if self.average:
            count = max(self.count, 1)
            coef = (stored * self.scale_sum - self.arrays["correction"][: nb * F]) / count
            intercept = self.arrays["intercept_sum"] / count
        else:
            coef, intercept = stored * self.scale, self.arrays["intercept"]
        dtype = self.arrays["stored"].dtype
        return coef.astype(dtype), intercept.astype(dtype), nb


def _client():
    try:
        from distributed import default_client
    except ImportError as exc:  # pragma: no cover - dask[array] without distributed
        msg = 'a dask array needs dask.distributed to train on: pip install "kbackends[dask]"'
        raise ImportError(msg) from exc
    try:
        return default_client()
    except ValueError as exc:
        msg = ("a dask array was given but no dask.distributed Client is running; start one "
               "(`distributed.Client(distributed.LocalCluster())`) before fitting")
        raise RuntimeError(msg) from exc


def _workers(client):
    return sorted(client.scheduler_info(n_workers=-1)["workers"])


class _Progress:
    def __init__(self, total, label, verbose):
        self.bar = None
        self.verbose = verbose
        self.label = label
        self.done = 0
        if not verbose:
            return
        try:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=label, unit="it")
        except ImportError:
            self.bar = None
        self.total = total

    def update(self, t, info):
        if not self.verbose:
            return
        if self.bar is not None:
            self.bar.update(t - self.done)
            if info and "batch_loss" in info:
                self.bar.set_postfix(loss=f"{info['batch_loss']:.4g}", blocks=info.get("n_blocks"))
        else:
            loss = f" batch loss {info['batch_loss']:.4g}" if info else ""
            print(f"{self.label}: iteration {t}/{self.total}{loss}", file=sys.stderr, flush=True)
        self.done = t

    def close(self):
        if self.bar is not None:
            self.bar.close()


class _ClusterRun:
    """Runs one engine problem on the cluster (the ``runner`` of ``_engine.run_with``)."""

    def __init__(self, rowsets, builder, context, label, settings_fix=None):
        self.rowsets = rowsets  # list of lists of dask arrays with the same row chunks
        self.builder = builder
        self.context = context
        self.label = label
        self.settings_fix = settings_fix
        self.stats = {"rounds": 0, "bytes_up": 0, "bytes_down": 0, "recoveries": 0, "lost": [],
                      "seconds_start": 0.0, "seconds_rounds": 0.0, "seconds_worker": 0.0}

    # The engine call of the algorithm's fit lands here.
    def __call__(self, sources, bk, settings, dtype):
        client = _client()
        if self.settings_fix is not None:
            settings = self.settings_fix(settings)
        callback = settings.callback
        sync_every = _config("sync_every", 8)
        if isinstance(sync_every, bool) or not isinstance(sync_every, int) or sync_every < 1:
            msg = f"`kbackends.sync_every` must be an integer >= 1, got {sync_every!r}"
            raise ValueError(msg)
        self.stream = self._stream(client)
        workers = self._wait_for_workers(client, float(_config("lost_worker_timeout", 30)), [])
        plan = self._plan(len(workers), settings.n_iter, sync_every)
        # Streaming runs at least one iteration on every chunk.
        settings = dataclasses.replace(settings, n_iter=plan[-1][0], callback=None)
        max_blocks = settings.n_iter if settings.max_blocks is None else min(settings.n_iter, settings.max_blocks)
        spec = _Spec(
            templates=[(s.loss, s.weight, s.batch_size, s.curvature) for s in sources],
            settings=settings, dtype=_dtype_name(bk, dtype), builder=self.builder,
            context={**self.context, "backend": bk.name}, capacity_blocks=max_blocks,
        )
        synced = _Synced(spec)
        self._train(client, spec, synced, callback, workers, plan)
        coef, intercept, nb = synced.result()
        return _engine.EngineResult(coef=bk.asarray(coef), intercept=bk.asarray(intercept), n_blocks=nb,
                                    n_iter_done=synced.t)

    def _plan(self, n_workers, n_iter, sync_every):
        """Rounds: (iteration the round ends at, chunk per worker or None)."""
        if not self.stream:
            stops = list(range(sync_every, n_iter, sync_every)) + [n_iter]
            return [(stop, None) for stop in stops]
        n_chunks = max(rows[0].numblocks[0] for rows in self.rowsets)
        rounds = math.ceil(n_chunks / n_workers)
        per_round = max(1, math.ceil(n_iter / rounds))
        return [((r + 1) * per_round, list(range(r * n_workers, min(n_chunks, (r + 1) * n_workers))))
                for r in range(rounds)]

    def _stream(self, client):
        mode = _config("mode", "auto")
        if mode not in ("auto", "memory", "stream"):
            msg = f"`kbackends.mode` must be 'auto', 'memory' or 'stream', got {mode!r}"
            raise ValueError(msg)
        if mode != "auto":
            return mode == "stream"
        info = client.scheduler_info(n_workers=-1)["workers"].values()
        memory = sum(w.get("memory_limit", 0) or 0 for w in info)
        nbytes = sum(a.nbytes for rows in self.rowsets for a in rows)
        return memory > 0 and nbytes > memory / 2

    def _train(self, client, spec, synced, callback, workers, plan):
        settings = spec.settings
        verbose = _config("verbose", False)
        timeout = float(_config("lost_worker_timeout", 30))
        max_recoveries = int(_config("max_recoveries", 3))
        stream = self.stream
        token = f"{self.label}-{uuid.uuid4().hex[:12]}"
        progress = _Progress(settings.n_iter, f"{self.label} on {len(workers)} workers", verbose)
        update = None
        r = 0
        epoch = 0
        try:
            started = time.perf_counter()
            self._start(client, spec, token, workers, synced, stream, epoch)
            self.stats["seconds_start"] = time.perf_counter() - started
            while r < len(plan):
                stop, chunks = plan[r]
                try:
                    started = time.perf_counter()
                    changes = self._round(client, token, workers, update, stop, chunks, r)
                    self.stats["seconds_rounds"] += time.perf_counter() - started
                    self.stats["seconds_worker"] += max((c["seconds"] for c in changes), default=0.0)
                except WorkerLostError as lost:
                    self.stats["recoveries"] += 1
                    self.stats["lost"].append(str(lost))
                    if self.stats["recoveries"] > max_recoveries:
                        msg = f"{lost}; gave up after {max_recoveries} recoveries"
                        raise WorkerLostError(msg) from None
                    self._drop(client, token, workers)
                    epoch += 1
                    token = f"{self.label}-{uuid.uuid4().hex[:12]}"
                    workers = self._wait_for_workers(client, timeout, lost.args)
                    update = None
                    self._start(client, spec, token, workers, synced, stream, epoch)
                    if stream:  # the lost round's chunks are read again, over the new workers
                        plan = plan[:r] + self._replan(plan[r:], len(workers), synced.t)
                    continue
                self.stats["rounds"] += 1
                r += 1
                if not changes:  # a streamed round whose chunks all lacked some source's rows
                    update = None
                    continue
                update = synced.average_changes(changes)
                infos = [c["info"] for c in changes if c.get("info")]
                info = None
                if infos:
                    info = {**infos[0], "iteration": synced.t, "n_blocks": synced.n_blocks,
                            "batch_loss": float(np.mean([i["batch_loss"] for i in infos]))}
                progress.update(synced.t, info)
                if callback is not None and info is not None and callback(info):
                    break
        finally:
            progress.close()
            self._drop(client, token, workers)

    @staticmethod
    def _replan(rest, n_workers, t_done):
        """The streamed rounds left after a loss, regrouped over ``n_workers``: the same
        chunks, the iterations left spread over them (the total stays ``n_iter``)."""
        chunks = [c for _, cs in rest for c in cs]
        n_iter = rest[-1][0]
        groups = [chunks[i : i + n_workers] for i in range(0, len(chunks), n_workers)]
        G = len(groups)
        return [(t_done + round((i + 1) * (n_iter - t_done) / G), group) for i, group in enumerate(groups)]

    def _wait_for_workers(self, client, timeout, lost):
        deadline = time.monotonic() + timeout
        while True:
            workers = _workers(client)
            if workers:
                return workers
            if time.monotonic() > deadline:
                what = f" after losing {lost}" if lost else ""
                msg = f"no dask worker is available{what} within {timeout:g} s"
                raise WorkerLostError(msg)
            time.sleep(0.2)

    def _start(self, client, spec, token, workers, synced, stream, epoch):
        """Give every worker its chunks (read from the arrays' graphs on that worker) and
        the synchronised state; a worker left with no rows of some source is an error."""
        import dask

        W = len(workers)
        state = synced.as_dict() if synced.t else None
        futures = []
        seed = spec.settings.sampling_seed
        for w, addr in enumerate(workers):
            parts = []
            if not stream:  # chunk i of every row set goes to worker i % W
                parts = [[[a.blocks[i] for i in range(w, a.numblocks[0], W)] for a in rows]
                         for rows in self.rowsets]
            task = dask.delayed(_init_local, pure=False)(
                token, spec, [seed, epoch, w], state, *parts,
                dask_key_name=f"kbackends-{self.label}-init-{token}-{w}",
            )
            futures.append(client.compute(task, workers=[addr], allow_other_workers=False))
        results = self._gather(client, futures, workers)
        empty = [workers[i] for i, res in enumerate(results) if not res["ok"]]
        if empty:
            msg = (f"worker(s) {empty} hold no rows of one of the data sources: give the dask arrays at "
                   f"least as many row chunks as workers ({W}), each with rows of every source")
            raise ValueError(msg)

    def _round(self, client, token, workers, update, stop, chunks, r):
        import dask

        futures = []
        for w, addr in enumerate(workers):
            args = (token, update, stop)
            if chunks is not None:  # streaming: this round's chunk, or none in a short last round
                args = (token, update, None) if w >= len(chunks) else \
                    (*args, *[[[a.blocks[chunks[w] % a.numblocks[0]]] for a in rows] for rows in self.rowsets])
            name = f"kbackends-{self.label}-round-{token}-{r}-{w}"
            task = dask.delayed(_local_round, pure=False)(*args, dask_key_name=name)
            futures.append(client.compute(task, workers=[addr], allow_other_workers=False))
        changes = self._gather(client, futures, workers)
        self.stats["bytes_down"] += len(workers) * _nbytes(update)
        self.stats["bytes_up"] += sum(_nbytes(c) for c in changes)
        return [c for c in changes if c is not None]

    def _gather(self, client, futures, workers):
        """Results of pinned tasks; a worker that leaves the cluster (or restarts) while
        they run raises WorkerLostError naming it, instead of waiting forever."""
        from distributed import wait

        missing = 0
        try:
            while True:
                for f in futures:
                    if f.status == "error":
                        exc = f.exception()
                        raise WorkerLostError(str(exc), *workers) if isinstance(exc, WorkerLostError) else exc
                    if f.status == "cancelled":
                        msg = f"a task of the fit was cancelled (its worker among {workers} was lost)"
                        raise WorkerLostError(msg, *workers)
                pending = [f for f in futures if not f.done()]
                if not pending:
                    return client.gather(futures)
                try:
                    wait(pending, timeout=0.5)
                except TimeoutError:
                    pass
                alive = set(_workers(client))
                gone = [addr for addr in workers if addr not in alive]
                missing = missing + 1 if gone else 0
                if missing >= 3:  # absent from three listings in a row (1.5 s): lost, not a stale list
                    msg = f"dask worker(s) {gone} left the cluster during the fit"
                    raise WorkerLostError(msg, *gone)
        except BaseException:
            client.cancel(futures)
            raise

    def _drop(self, client, token, workers):
        from distributed import fire_and_forget

        alive = set(_workers(client))
        for w, addr in enumerate(workers):
            if addr in alive:
                fire_and_forget(client.submit(_drop_local, token, workers=[addr], pure=False,
                                              key=f"kbackends-{self.label}-drop-{token}-{w}"))


def _dtype_name(bk, dtype):
    return "float32" if dtype == bk.xp.float32 else "float64"


def _nbytes(obj):
    if obj is None:
        return 0
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    return 8


# --------------------------------------------------------------------------- entry points


def _as_dask_rows(a, chunks, name):
    import dask.array as da

    if a is None:
        return None
    if not is_dask_array(a):
        a = np.asarray(a) if not hasattr(a, "__array_namespace__") else a
        return da.from_array(a, chunks=(chunks,) + tuple(-1 for _ in range(a.ndim - 1)))
    if a.shape[0] != sum(chunks):
        msg = f"`{name}` has {a.shape[0]} rows but `X` has {sum(chunks)}"
        raise ValueError(msg)
    a = a.rechunk((chunks,) + tuple(-1 for _ in range(a.ndim - 1)))
    return a


def _row_chunked(X, name):
    if X.ndim != 2:
        msg = f"`{name}` must be 2-D, got ndim={X.ndim}"
        raise ValueError(msg)
    if any(math.isnan(c) for c in X.shape):
        msg = f"`{name}` has unknown chunk sizes; call `{name}.compute_chunk_sizes()` first"
        raise ValueError(msg)
    return X.rechunk({1: -1}) if X.numblocks[1] != 1 else X


def _median_sample(arrays, seed, n_sample=1000):
    """Rows of the pooled dask arrays for the median heuristic (a float gamma after)."""
    import dask.array as da

    pooled = arrays[0] if len(arrays) == 1 else da.concatenate(arrays, axis=0)
    n = pooled.shape[0]
    rows = np.sort(np.random.default_rng(seed).choice(n, size=min(n, n_sample), replace=False))
    return pooled[rows].compute()


def fit(module_fit, algorithm, **arguments):
    """Fit ``algorithm`` ("dsg", "tsgs3vm" or "tsgsu") on dask arrays on the current
    ``distributed.Client``; ``arguments`` are those of ``module_fit`` (the module's
    own ``fit``, which validates them and builds the engine problem).

    Returns
    -------
    RFFModel
        The ordinary model (its arrays on the backend of the chunks).

    Raises
    ------
    RuntimeError
        No Client is running.
    WorkerLostError
        Workers were lost and the fit could not recover (names them).
    """
    from ._validation import check_gamma

    arguments = dict(arguments)
    seed = seed_from(arguments.get("random_state"))
    arguments["random_state"] = seed
    if algorithm == "dsg":
        plan = _plan_dsg(arguments, seed)
    elif algorithm == "tsgs3vm":
        plan = _plan_tsgs3vm(arguments, seed)
    elif algorithm == "tsgsu":
        plan = _plan_tsgsu(arguments, seed)
    else:
        msg = f"`algorithm` must be 'dsg', 'tsgs3vm' or 'tsgsu', got {algorithm!r}"
        raise ValueError(msg)
    tiny, rowsets, builder, context, fix_settings, fix_params, pooled = plan
    if isinstance(arguments.get("gamma", "median"), str) and arguments.get("gamma", "median") == "median":
        sample = _median_sample(pooled, seed)
        arguments["gamma"] = check_gamma("median", sample, resolve("auto", sample), seed)
    runner = _ClusterRun(rowsets, builder, context, algorithm, fix_settings)
    with _engine.run_with(runner):
        model = module_fit(**{**arguments, **tiny})
    params = {**model.params, **fix_params, "distributed": dict(runner.stats)}
    return dataclasses.replace(model, params=params)


def _first_rows(X, n):
    return X[: min(n, X.shape[0])].compute()


def _plan_dsg(arguments, seed):
    import dask.array as da

    X = _row_chunked(arguments["X"], "X")
    y = _as_dask_rows(arguments["y"], X.chunks[0], "y")
    loss = arguments.get("loss", "hinge")
    if loss == "squared":
        classes = None
        tiny_y = y[:2].compute()
    else:
        classes = np.asarray(da.unique(y).compute())
        tiny_y = classes
    tiny_X = _first_rows(X, len(tiny_y))
    if tiny_X.shape[0] < len(tiny_y):
        tiny_y = tiny_y[: tiny_X.shape[0]]
    context = {"classes": classes, "loss": loss}
    return ({"X": tiny_X, "y": tiny_y}, [[X, y]], _dsg_rows, context, None, {}, [X])


def _dsg_rows(parts, context, bk, dtype):
    """DSG's one source: rows and their loss targets, classes fixed by the whole y."""
    from .dsg import _targets

    X, y = parts[0]
    xp = bk.xp
    classes = context["classes"]
    n = X.shape[0]
    if classes is None:
        y_matrix = _targets(y, xp.astype(X, getattr(xp, dtype)), bk, "squared")[0]
        return [(X, y_matrix)]
    # Append every class once so this chunk's encoding is the global one, then drop them.
    y_all = np.concatenate([to_numpy(y), np.asarray(classes)])
    dummy = xp.zeros((y_all.shape[0], 0), dtype=getattr(xp, dtype))
    y_matrix = _targets(y_all, dummy, bk, context["loss"])[0]
    return [(X, y_matrix[:n])]


def _plan_tsgs3vm(arguments, seed):
    X = _row_chunked(arguments["X"], "X")
    y = _as_dask_rows(arguments["y"], X.chunks[0], "y")
    X_u = arguments.get("X_unlabeled")
    label = arguments.get("unlabeled_label", -1)
    batch_size = arguments.get("batch_size", 256)
    if X_u is not None:
        X_u = _row_chunked(X_u, "X_unlabeled")
        y_l = y
        n_u = X_u.shape[0]
    else:
        y_l = y[y != label]
    labels = y_l.compute()
    classes = np.unique(labels)
    n_l = labels.shape[0]
    if X_u is None:
        n_u = X.shape[0] - n_l
    C = arguments.get("C", 1.0)
    if arguments.get("C_star") is None:
        arguments["C_star"] = C * n_l / n_u if n_u else 0.0
    if arguments.get("n_iter") is None:
        arguments["n_iter"] = max(1, math.ceil(max(n_u, n_l) / batch_size))
    if arguments.get("feature_budget") == "sqrt":
        arguments["feature_budget"] = max(1, math.ceil(math.sqrt(max(n_u, 1))))
    if classes.size == 2:
        targets = np.where(labels == classes[1], 1.0, -1.0).reshape(-1, 1)
    else:
        targets = np.where(labels[:, None] == classes[None, :], 1.0, -1.0)
    balance_target = targets.mean(axis=0)
    if X_u is None:
        tiny_y = np.concatenate([classes, [label] if n_u else []]).astype(labels.dtype)
        tiny = {"X": _first_rows(X, tiny_y.size), "y": tiny_y}
        rowsets = [[X, y]]
        pooled = [X]
    else:
        tiny = {"X": _first_rows(X, classes.size), "y": classes, "X_unlabeled": _first_rows(X_u, 1)}
        rowsets = [[X, y], [X_u]]
        pooled = [X, X_u]

    def fix_settings(settings):
        if settings.balance is None:
            return settings
        xp_target = settings.balance[1]
        balance = _like(xp_target, balance_target)
        return dataclasses.replace(settings, balance=(settings.balance[0], balance))

    context = {"classes": classes, "label": label, "separate": X_u is not None}
    return tiny, rowsets, _tsgs3vm_rows, context, fix_settings, {"n_labeled": int(n_l), "n_unlabeled": int(n_u)}, \
        pooled


def _like(like, values):
    """``values`` (host) as an array of ``like``'s backend and dtype."""
    bk = resolve("auto", like)
    return bk.xp.astype(bk.asarray(np.asarray(values)), like.dtype)


def _tsgs3vm_rows(parts, context, bk, dtype):
    """TSGS3VM's labeled (rows, +-1 targets) and unlabeled (rows, None) sources."""
    xp = bk.xp
    classes = context["classes"]
    if context["separate"]:
        (X, y), (X_u,) = parts
        y_l = to_numpy(y)
        X_l = X
    else:
        X, y = parts[0]
        y_host = to_numpy(y)
        unlabeled = y_host == context["label"]
        X_l = xp.take(X, bk.asarray(np.flatnonzero(~unlabeled)), axis=0)
        X_u = xp.take(X, bk.asarray(np.flatnonzero(unlabeled)), axis=0)
        y_l = y_host[~unlabeled]
    if classes.size == 2:
        targets = np.where(y_l == classes[1], 1.0, -1.0).reshape(-1, 1)
    else:
        targets = np.where(y_l[:, None] == classes[None, :], 1.0, -1.0)
    y_pm = xp.astype(bk.asarray(targets), getattr(xp, dtype))
    return [(X_l, y_pm), (X_u, None)]


def _plan_tsgsu(arguments, seed):
    from .tsgsu import estimate_prior

    X_s = arguments["X_similar"]
    if X_s.ndim == 3:
        X_s = X_s.reshape((-1, X_s.shape[2]))
    X_s = _row_chunked(X_s, "X_similar")
    X_u = _row_chunked(arguments["X_unlabeled"], "X_unlabeled")
    if arguments.get("prior") is None:
        # The estimate needs the data in memory: on samples of up to 10,000 rows of each.
        s = _first_rows(X_s, 10_000) if X_s.shape[0] <= 10_000 else _median_sample([X_s], seed, 10_000)
        u = _first_rows(X_u, 10_000) if X_u.shape[0] <= 10_000 else _median_sample([X_u], seed + 1, 10_000)
        arguments["prior"] = estimate_prior(s, u, random_state=seed)
    tiny = {"X_similar": _first_rows(X_s, 2), "X_unlabeled": _first_rows(X_u, 2)}
    fix = {"n_similar_points": int(X_s.shape[0]), "n_unlabeled": int(X_u.shape[0])}
    return tiny, [[X_s], [X_u]], _tsgsu_rows, {}, None, fix, [X_s, X_u]


def _tsgsu_rows(parts, context, bk, dtype):
    """TSGSU's similar-points and unlabeled sources (no targets)."""
    (X_s,), (X_u,) = parts
    return [(X_s, None), (X_u, None)]


# --------------------------------------------------------------------------- partial_fit


def partial_fit(estimator, X, y, classes=None):
    """One pass of the engine over the batch ``(X, y)``, continuing the estimator's fit.

    The first call fixes the classes (``classes``, or those of ``y``; a later batch
    may hold any subset of them), the kernel width (``gamma="median"``: from the
    first batch) and the seed; every call runs ``ceil(len(X) / batch_size)``
    iterations sampling from the batch, resuming the engine state (step schedule,
    blocks, scale factor) where the last call left it. ``n_iter`` is not used.
    ``model_`` is the ordinary RFFModel after every call.
    """
    from . import dsg
    from ._validation import check_X

    if is_dask_array(X):
        X = X.compute()
        y = y.compute() if is_dask_array(y) else y
    bk = resolve(estimator.backend, X, y)
    X = check_X(X, bk, estimator.dtype)
    y_host = to_numpy(y) if hasattr(y, "__array_namespace__") else np.asarray(y)
    if y_host.shape[0] != X.shape[0]:
        msg = f"`y` has {y_host.shape[0]} rows but `X` has {X.shape[0]}"
        raise ValueError(msg)
    params = estimator.get_params()
    loss = params["loss"]
    partial = getattr(estimator, "_partial_", None)
    # A fit() since the last partial_fit replaced the model: start over, as scikit-learn does.
    first = partial is None or partial.get("model") is not getattr(estimator, "model_", None)
    if first:
        if loss != "squared":
            classes = np.unique(y_host) if classes is None else np.unique(np.asarray(classes))
            if classes.size < 2:
                msg = f"`classes` must hold at least 2 classes on the first call, got {classes.tolist()}"
                raise ValueError(msg)
        seed = seed_from(params["random_state"])
        captured = {}

        def capture(sources, bk_, settings, dtype):
            captured.update(sources=sources, settings=settings, dtype=dtype)
            zeros = bk_.xp.zeros((0, settings.n_outputs), dtype=dtype)
            return _engine.EngineResult(coef=zeros, intercept=bk_.xp.zeros((settings.n_outputs,), dtype=dtype),
                                        n_blocks=0, n_iter_done=0)

        tiny_y = classes if loss != "squared" else y_host[:1]
        tiny_X = X[: tiny_y.shape[0]] if X.shape[0] >= tiny_y.shape[0] else _repeat_rows(X, tiny_y.shape[0], bk)
        gamma = params["gamma"]
        with _engine.run_with(capture):
            template = dsg.fit(tiny_X, tiny_y, **{**params, "random_state": seed, "cache_predictions": False,
                                                   "gamma": _batch_gamma(gamma, X, bk, seed)})
        settings = dataclasses.replace(captured["settings"], callback=None)
        src = captured["sources"][0]
        spec = _Spec(templates=[(src.loss, src.weight, src.batch_size, src.curvature)], settings=settings,
                     dtype=_dtype_name(bk, captured["dtype"]), builder=_dsg_rows,
                     context={"classes": classes if loss != "squared" else None, "loss": loss}, capacity_blocks=0)
        state = _engine.EngineState(
            stored=bk.xp.zeros((0, settings.n_outputs), dtype=captured["dtype"]), n_blocks=0, scale=1.0,
            intercept=bk.xp.zeros((settings.n_outputs,), dtype=captured["dtype"]), beta=np.zeros(0),
            averager=_engine._Averager(bk.xp, (0, settings.n_outputs), captured["dtype"]) if settings.average else None,
            intercept_sum=bk.xp.zeros((settings.n_outputs,), dtype=captured["dtype"]),
            rng=np.random.default_rng(settings.sampling_seed), t=0,
        )
        estimator._partial_ = {"spec": spec, "state": state, "template": template}
    partial = estimator._partial_
    spec, state = partial["spec"], partial["state"]
    X = bk.xp.astype(X, getattr(bk.xp, spec.dtype))  # the first call's compute dtype (_engine.as_compute_dtype)
    if X.shape[1] != partial["template"].n_features_in:
        msg = (f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
               f"{partial['template'].n_features_in} features as input (`X` of the first partial_fit)")
        raise ValueError(msg)
    if spec.context["classes"] is not None:
        unknown = np.setdiff1d(np.unique(y_host), spec.context["classes"])
        if unknown.size:
            msg = f"`y` holds classes {unknown.tolist()} that the first call did not declare"
            raise ValueError(msg)
    ((Xb, y_matrix),) = spec.builder([[X, y_host]], spec.context, bk, spec.dtype)
    src_loss, weight, batch_size, curvature = spec.templates[0]
    source = _engine.Source(X=Xb, y=y_matrix, loss=src_loss, weight=weight, batch_size=batch_size,
                            curvature=curvature)
    stop = state.t + max(1, math.ceil(X.shape[0] / batch_size))
    settings = dataclasses.replace(spec.settings, n_iter=stop)
    result = _engine.run([source], bk, settings, Xb.dtype, resume=state)
    partial["state"] = result.state
    template = partial["template"]
    estimator.model_ = dataclasses.replace(
        template, coef=result.coef, intercept=result.intercept, n_blocks=result.n_blocks,
        params={**template.params, "n_iter_done": result.n_iter_done}, backend=bk.name,
    )
    partial["model"] = estimator.model_
    estimator.n_features_in_ = template.n_features_in
    if spec.context["classes"] is not None:
        estimator.classes_ = np.asarray(spec.context["classes"])
    return estimator


def _repeat_rows(X, n, bk):
    rows = bk.asarray(np.arange(n) % X.shape[0])
    return bk.xp.take(X, rows, axis=0)


def _batch_gamma(gamma, X, bk, seed):
    from ._validation import check_gamma

    return check_gamma(gamma, X, bk, seed)
