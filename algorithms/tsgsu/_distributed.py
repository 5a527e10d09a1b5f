"""TSGSU on dask arrays (:mod:`algorithms.distributed`): the prior from samples of the
whole data, and a worker's rows as the similar and unlabelled sources."""

from __future__ import annotations

from ..distributed import REPLICATE_BYTES, Prepared, first_rows, median_sample, row_chunked
from ._prior import estimate_prior


def prepare(arguments, seed):
    """The prior (estimated on up to 10,000 rows of each set when not given) and the counts;
    small similar pairs go whole to every worker."""
    X_s = arguments["X_similar"]
    if X_s.ndim == 3:
        X_s = X_s.reshape((-1, X_s.shape[2]))
    X_s = row_chunked(X_s, "X_similar")
    X_u = row_chunked(arguments["X_unlabeled"], "X_unlabeled")
    if arguments.get("prior") is None:
        # The estimate needs the data in memory: on samples of up to 10,000 rows of each.
        s = first_rows(X_s, 10_000) if X_s.shape[0] <= 10_000 else median_sample([X_s], seed, 10_000)
        u = first_rows(X_u, 10_000) if X_u.shape[0] <= 10_000 else median_sample([X_u], seed + 1, 10_000)
        arguments["prior"] = estimate_prior(s, u, random_state=seed)
    return Prepared(tiny={"X_similar": first_rows(X_s, 2), "X_unlabeled": first_rows(X_u, 2)},
                    rowsets=[[X_s], [X_u]], context={}, pooled=[X_s, X_u],
                    fix_params={"n_similar_points": int(X_s.shape[0]), "n_unlabeled": int(X_u.shape[0])},
                    replicate=(0,) if X_s.nbytes <= REPLICATE_BYTES else ())


def rows(parts, context, bk, dtype):
    """TSGSU's similar-points and unlabeled sources (no targets)."""
    (X_s,), (X_u,) = parts
    return [(X_s, None), (X_u, None)]
