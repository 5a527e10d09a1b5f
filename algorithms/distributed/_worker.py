"""The worker side: each worker's rows, engine state and local rounds."""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np

from kbackends import resolve, to_numpy

from .. import _engine
from ._common import WorkerLostError


# On each worker process: (fit token, worker address) -> _LocalFit. A fit's tasks are
# pinned to their worker, so this is where its data and engine state live between rounds
# (tasks, not actors: tasks show on the dashboard and their failures reach the driver as
# errors). The address too: the workers of LocalCluster(processes=False) are threads of
# one process, and keyed by the token alone they shared one state (a wrong model).
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
        averager = _engine.Averager(xp, (cap, k), dtype)
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
        _LOCAL[_key(token)] = local
    return {"ok": True, "rows": n_rows}


def _local_round(token, update, stop, *parts):
    """Task: apply the averaged change of the last round, run to iteration ``stop``,
    return this worker's changes (the rows of the blocks it touched)."""
    local = _LOCAL.get(_key(token))
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
        _LOCAL.pop(_key(token), None)


def _key(token):
    """This worker's key of fit ``token`` in :data:`_LOCAL`."""
    from distributed import get_worker

    try:
        return token, get_worker().address
    except ValueError:  # not inside a worker's task
        return token, None
