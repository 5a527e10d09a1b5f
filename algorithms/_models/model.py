"""Model containers: frozen dataclasses of arrays plus hyper-parameters.

A model lives on one backend; ``model.to(backend)`` moves its arrays. ``save``
writes a NumPy ``.npz`` (arrays on the host plus a JSON header), and
:func:`load` reads it back onto any backend, so a model trained on a GPU
predicts on a CPU with the same random features (they are regenerated from the
seed, never stored). The file format and its safe reading: :mod:`algorithms._models.persistence`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


from .persistence import FORMAT_VERSION, _jsonable, _ModelIO, _register, atomic_write, load  # noqa: F401
from .prediction import Predictor, kernel_expansion
from .._engine.blocks import evaluate_blocks


@dataclass(frozen=True, kw_only=True)
class _ModelFields:
    """The fields every model has (keyword-only, so each model adds its own after them):
    the algorithm's name, the arrays ``coef`` / ``intercept``, the input width, the
    classes (None for regression), the fit's hyper-parameters, where the arrays live and
    their dtype; where the input came from a data file (the command line), the names
    of its feature columns, the index base of its LIBSVM features and the classes as
    it wrote them; the column means the fit subtracted from X (``centre``, SBP on data at
    an offset: :func:`algorithms._boundary.precision.compute_array`), which predict
    subtracts too."""

    algorithm: str
    coef: object
    intercept: object
    n_features_in: int
    classes: object = None
    params: dict = field(default_factory=dict)
    backend: str = "cpu"
    dtype: str = "float64"
    # the command line's training file (format 4): a CSV header's feature names, in
    # column order, matched by name at predict; a LIBSVM file's first feature index;
    # each class as the file first wrote it ("+1", "1.0"), in ``classes``' order
    feature_names: tuple | None = None
    index_base: int | None = None
    class_labels: tuple | None = None
    # the fit's centre (format 5): a tuple of n_features_in floats, or None (not centred)
    centre: tuple | None = None


@_register
@dataclass(frozen=True, kw_only=True)
class RFFModel(Predictor, _ModelIO, _ModelFields):
    """A kernel machine on regenerated random Fourier features (DSG, TSGS3VM, TSGSU).

    ``f(x) = intercept + sum_b coef[b*F:(b+1)*F] . cos(omega_b x + phase_b)``,
    with ``(omega_b, phase_b) = omega_block(seed, b, F, n_features_in, kernel, gamma, features)``.

    Attributes
    ----------
    algorithm : str
        "dsg", "udsg", "cdsg", "tsgs3vm" or "tsgsu".
    coef : array of shape (n_blocks * block_size, n_outputs)
    intercept : array of shape (n_outputs,)
    seed, block_size, n_blocks, kernel, gamma, features, n_features_in
        What regenerates the features (``features``: "monte_carlo" in files of
        model formats before 6).
    task : str
        "binary" (sign of column 0), "ovr" / "softmax" (argmax over columns)
        or "regression".
    classes : numpy array or None
        Class labels for classification, in column order.
    params : dict
        The hyper-parameters the model was fitted with.
    backend : str
        Where ``coef`` and ``intercept`` live.
    """

    accepts_sparse = True  # evaluate_blocks -> rff_predict reads CSR rows directly (cpu, cuda)

    # the values of ``algorithm`` a model of this class may carry (the fits that return one)
    ALGORITHMS = ("dsg", "udsg", "cdsg", "tsgs3vm", "tsgsu")
    ARRAYS = ("coef", "intercept")

    seed: int
    block_size: int
    n_blocks: int
    kernel: str
    gamma: float
    task: str
    features: str = "monte_carlo"

    @classmethod
    def from_engine(cls, result, settings, bk, X, *, algorithm, task, classes, params):
        """The model an engine run (``_engine.run``) on training rows ``X`` leaves."""
        return cls(
            algorithm=algorithm,
            coef=result.coef,
            intercept=result.intercept,
            seed=settings.seed,
            block_size=settings.block_size,
            n_blocks=result.n_blocks,
            kernel=settings.kernel,
            gamma=settings.gamma,
            features=settings.features,
            n_features_in=X.shape[1],
            task=task,
            classes=classes,
            params={**params, "n_iter_done": result.n_iter_done,
                    **({} if result.best_iteration is None else {"best_iteration": result.best_iteration})},
            backend=bk.name,
            dtype="float32" if X.dtype == bk.xp.float32 else "float64",
        )

    def raw_decision(self, X, bk):
        """``f(X)`` of shape (n, n_outputs) on backend ``bk``; X validated by the caller."""
        xp = bk.xp
        model = self if self.backend == bk.name else self.to(bk)
        f = evaluate_blocks(
            bk, X, xp.astype(model.coef, X.dtype), seed=self.seed, block_size=self.block_size,
            n_blocks=self.n_blocks, n_dims=self.n_features_in, kernel=self.kernel, gamma=self.gamma,
            features=self.features,
        )
        intercept = model.intercept
        if intercept.dtype == xp.float64 and X.dtype != xp.float64:  # a regression's mean: added in float64
            return xp.astype(f, xp.float64) + intercept
        return f + xp.astype(intercept, X.dtype)


@_register
@dataclass(frozen=True, kw_only=True)
class LinearModel(Predictor, _ModelIO, _ModelFields):
    """A linear classifier ``f(x) = coef . x + intercept`` (S3GD, prox-SVRG, prox-SGD).

    Attributes
    ----------
    algorithm : str
        "s3gd", "svrg" or "sgd".
    coef : array of shape (n_outputs, n_features_in)
        One row for two classes, one per class (one-vs-rest) otherwise.
    intercept : array of shape (n_outputs,)
        The weight of the constant feature appended to X during fitting (it is
        regularised like the other weights, as in the paper).
    n_features_in : int
    classes : numpy array
    params : dict
        Hyper-parameters (loss, penalty, lam, l1_ratio, class_weight, ...).
    backend, dtype : str
    """

    # the values of ``algorithm`` a model of this class may carry (the fits that return one)
    ALGORITHMS = ("s3gd", "sgd", "svrg")
    ARRAYS = ("coef", "intercept")
    accepts_sparse = True  # raw_decision: CSR @ dense coef.T, O(nnz) (cupyx on cuda)

    @property
    def task(self):
        """"binary" (one row of ``coef``: the sign of its decision) or "ovr" (argmax over rows)."""
        return "binary" if self.coef.shape[0] == 1 else "ovr"

    def raw_decision(self, X, bk):
        """``X @ coef.T + intercept`` of shape (n, n_outputs) on backend ``bk``; X validated by the caller."""
        xp = bk.xp
        model = self if self.backend == bk.name else self.to(bk)
        return X @ xp.astype(model.coef, X.dtype).T + xp.astype(model.intercept, X.dtype)


@_register
@dataclass(frozen=True, kw_only=True)
class KernelExpansionModel(Predictor, _ModelIO, _ModelFields):
    """A kernel machine stored as its expansion over support vectors (SBP).

    ``f(x) = intercept + sum_j coef[j] * K(support_vectors[j], x)`` with
    ``K(x, x') = exp(-gamma ||x - x'||^2)`` ("rbf") or ``x . x'`` ("linear").

    Attributes
    ----------
    algorithm : str
        "sbp".
    support_vectors : array of shape (n_support, n_features_in)
        Training rows with a non-zero coefficient in some output.
    coef : array of shape (n_support, n_outputs)
        Expansion coefficients (labels folded in).
    intercept : array of shape (n_outputs,)
    kernel : str
    gamma : float
    n_features_in : int
    task : str
        "binary" (sign of column 0) or "ovr" (argmax over columns).
    classes : numpy array or None
    params : dict
    backend, dtype : str
    """

    # the values of ``algorithm`` a model of this class may carry (the fits that return one)
    ALGORITHMS = ("sbp",)
    ARRAYS = ("support_vectors", "coef", "intercept")
    # CSR X (scipy; cupyx on cuda) and, from a sparse fit, CSR support vectors
    accepts_sparse = True

    support_vectors: object
    kernel: str
    gamma: float
    task: str
    features: str = "monte_carlo"

    def raw_decision(self, X, bk, chunk_elements=1 << 22):
        """``f(X)`` of shape (n, n_outputs) on backend ``bk``, in row chunks so no more
        than ``chunk_elements`` kernel values are held at once."""
        xp = bk.xp
        model = self if self.backend == bk.name else self.to(bk)
        S = model.support_vectors
        S = S.astype(X.dtype) if hasattr(S, "tocsr") else xp.astype(S, X.dtype)
        coef = xp.astype(model.coef, X.dtype)
        out = xp.zeros((X.shape[0], coef.shape[1]), dtype=X.dtype) + xp.astype(model.intercept, X.dtype)
        if S.shape[0] == 0 or X.shape[0] == 0:
            return out
        f = kernel_expansion(X, S, coef, kernel=self.kernel, gamma=self.gamma, xp=xp, chunk_elements=chunk_elements)
        return f + out
