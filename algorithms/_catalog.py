"""The table of algorithms the command line reads.

One row per ``--algo`` value: the module whose functional ``fit`` / ``predict``
it runs, the keyword arguments the name fixes (``variant="udsg"``), the model
class its fit returns, the values of ``model.algorithm`` its models carry (each
among the model class's ``ALGORITHMS``, which the model loader checks), what data
the fit takes and the hyper-parameters the command line offers. The table holds
names and data (the modules are imported when a row's functions are asked for).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from ._models.calibration import with_probability
from ._models.model import LinearModel

#: What each kind of training data is, for the command line.
DATA_KINDS = {
    "supervised": "every row labelled",
    "semi-supervised": "labelled rows plus unlabelled ones (label empty, '?' or --unlabeled-label)",
    "su": "the label column is the SU indicator: --similar-label (default 1) for points of "
    "similar pairs, --unlabeled-label (default 0), empty or '?' for unlabelled points",
}


@dataclass(frozen=True)
class Algorithm:
    """One row of the table.

    Attributes
    ----------
    name : str
        The ``--algo`` value.
    module : str
        Module with the functional ``fit`` and ``predict`` (``algorithms.dsg``).
    model_type : str
        Name of the model class ``fit`` returns (``RFFModel``, ...).
    data : str
        A key of :data:`DATA_KINDS`.
    summary : str
        One line for ``--help``.
    fixed : dict
        Keyword arguments of ``fit`` that the name fixes.
    options : tuple of str
        ``fit`` keywords the command line offers (flag ``--name-with-dashes``); their
        defaults, allowed values and help come from the module's parameter table
        (``PARAMS``, :mod:`algorithms._boundary.params`): declared once, there.
    model_names : tuple of str
        Values of ``model.algorithm`` this row's fit writes (default: ``(name,)``).
    """

    name: str
    module: str
    model_type: str
    data: str
    summary: str
    fixed: dict = field(default_factory=dict)
    options: tuple = ()
    model_names: tuple = ()

    @property
    def names(self):
        """The ``model.algorithm`` values a model of this row may carry."""
        return self.model_names or (self.name,)

    def load_module(self):
        """The algorithm's module (imported on first use)."""
        return importlib.import_module(self.module)

    @property
    def fit(self):
        """The functional ``fit``."""
        return self.load_module().fit

    @property
    def predict(self):
        """The functional ``predict(model, X)``."""
        return self.load_module().predict

    @property
    def params(self):
        """The module's parameter table (:class:`algorithms._boundary.params.ParamTable`), with the
        estimators' ``probability`` where the row offers it (the command line then
        calibrates as the estimators do: :func:`algorithms._models.calibration.fit_calibrated`)."""
        table = self.load_module().PARAMS
        if "probability" in self.options:
            table = with_probability(table)
        return table

    def defaults(self):
        """``{option: default}`` of this row's options: the table's default, or its
        estimator's where the function has none (SBP's ``nu``)."""
        return {name: self.params[name].init_default for name in self.options}

    @property
    def choices(self):
        """``{option: allowed strings}`` of the string-valued options, from the table."""
        return {name: self.params[name].choices for name in self.options if self.params[name].choices}

    def help(self, name):
        """The table's one-line doc of an option."""
        return self.params[name].doc


_RFF = ("kernel", "gamma", "features", "n_iter", "batch_size", "block_size", "step", "precondition")
_DSG = ("loss", "lam", *_RFF, "average", "feature_budget", "early_stopping", "validation_fraction", "n_iter_no_change",
        "tol",
        "probability")

ALGORITHMS = {
    row.name: row
    for row in (
        Algorithm("dsg", "algorithms.dsg", "RFFModel", "supervised",
                  "doubly stochastic gradients, a new block of random features per iteration "
                  "(--loss squared: regression)",
                  fixed={"variant": "dsg"}, options=_DSG),
        Algorithm("udsg", "algorithms.dsg", "RFFModel", "supervised",
                  "DSG alternating new blocks with updates of old ones",
                  fixed={"variant": "udsg"}, options=_DSG),
        Algorithm("cdsg", "algorithms.dsg", "RFFModel", "supervised",
                  "DSG updating one old block at a time (coordinate steps)",
                  fixed={"variant": "cdsg"}, options=_DSG),
        Algorithm("tsgs3vm", "algorithms.tsgs3vm", "RFFModel", "semi-supervised",
                  "semi-supervised SVM by triply stochastic gradients",
                  options=("C", "C_star", "unlabeled_loss", *_RFF, "balance", "feature_budget")),
        Algorithm("tsgsu", "algorithms.tsgsu", "RFFModel", "su",
                  "classification from similar pairs and unlabelled points (SU)",
                  options=("prior", "loss", "correction", "lam", *_RFF, "average", "feature_budget")),
        Algorithm("sbp", "algorithms.sbp", "KernelExpansionModel", "supervised",
                  "kernel SVM by the stochastic batch perceptron",
                  options=("nu", "kernel", "gamma", "bias", "n_iter", "batch_size", "probability")),
        Algorithm("s3gd", "algorithms.s3gd", "LinearModel", "supervised",
                  "linear classifier by S3GD (--method sgd / svrg: the baselines on the same loop)",
                  options=("loss", "penalty", "lam", "l1_ratio", "n_anchors", "k_nearest", "step", "inner_iter",
                           "batch_size", "max_epochs", "max_time", "tol", "class_weight", "method"),
                  model_names=LinearModel.ALGORITHMS),
    )
}


def for_model(algorithm):
    """The row whose fit writes models with ``model.algorithm == algorithm``, or None."""
    for row in ALGORITHMS.values():
        if algorithm in row.names:
            return row
    return None
