"""The driver side: the synchronised coefficients, the rounds on the cluster, recovery."""

from __future__ import annotations

import dataclasses
import math
import time
import uuid

import numpy as np


from .. import _engine
from .._engine.progress import progress_bar
from ._common import WorkerLostError, _config
from ._worker import _Spec, _drop_local, _init_local, _local_round


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


def n_workers():
    """The workers of the current ``distributed.Client``."""
    return len(_workers(_client()))


class _ClusterRun:
    """Runs one engine problem on the cluster (the ``runner`` of :meth:`algorithms._engine.Problem.solve`)."""

    def __init__(self, rowsets, builder, context, label, settings_fix=None, replicate=()):
        self.rowsets = rowsets  # list of lists of dask arrays with the same row chunks
        self.replicate = set(replicate)  # row sets every worker gets whole
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
        # The bar is the driver's, per round (the workers' engines run silent).
        verbose = settings.verbose or int(bool(_config("verbose", False)))
        sync_every = _config("sync_every", 8)
        if isinstance(sync_every, bool) or not isinstance(sync_every, int) or sync_every < 1:
            msg = f"`kbackends.sync_every` must be an integer >= 1, got {sync_every!r}"
            raise ValueError(msg)
        self.stream = self._stream(client)
        workers = self._wait_for_workers(client, float(_config("lost_worker_timeout", 30)), [])
        plan = self._plan(len(workers), settings.n_iter, sync_every)
        # Streaming runs at least one iteration on every chunk.
        settings = dataclasses.replace(settings, n_iter=plan[-1][0], callback=None, verbose=0)
        max_blocks = settings.n_iter if settings.max_blocks is None else min(settings.n_iter, settings.max_blocks)
        spec = _Spec(
            templates=[(s.loss, s.weight, s.batch_size, s.curvature) for s in sources],
            settings=settings, dtype=_dtype_name(bk, dtype), builder=self.builder,
            context={**self.context, "backend": bk.name}, capacity_blocks=max_blocks,
        )
        synced = _Synced(spec)
        self._train(client, spec, synced, callback, workers, plan, verbose)
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

    def _train(self, client, spec, synced, callback, workers, plan, verbose):
        settings = spec.settings
        timeout = float(_config("lost_worker_timeout", 30))
        max_recoveries = int(_config("max_recoveries", 3))
        stream = self.stream
        token = f"{self.label}-{uuid.uuid4().hex[:12]}"
        progress = progress_bar(verbose, settings.n_iter, f"{self.label} on {len(workers)} workers")
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
                if progress is not None:  # per round, the round's mean batch loss (on the host)
                    progress.update(synced.t, rounds=r, loss=None if info is None else info["batch_loss"])
                if callback is not None and info is not None and callback(info):
                    break
        finally:
            if progress is not None:
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
            if not stream:  # chunk i of every row set goes to worker i % W; a replicated set whole
                parts = [[[a.blocks[i] for i in (range(a.numblocks[0]) if k in self.replicate
                                                  else range(w, a.numblocks[0], W))] for a in rows]
                         for k, rows in enumerate(self.rowsets)]
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
                    (*args, *[[[a.blocks[i] for i in range(a.numblocks[0])] if k in self.replicate
                               else [a.blocks[chunks[w] % a.numblocks[0]]] for a in rows]
                              for k, rows in enumerate(self.rowsets)])
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
