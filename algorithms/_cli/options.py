"""Pieces of ``python -m algorithms``: the hyper-parameter options of ``train`` (how
each is written on the command line: its parser and metavar; what it means, its
default and its allowed values come from the algorithm's parameter table,
:mod:`algorithms._boundary.params`, declared once there; :func:`option_help` joins the two).
The progress bar of ``train`` is the fits' own (``verbose=1``, :mod:`algorithms._engine.progress`).
"""

from __future__ import annotations

import argparse

import numpy as np

from algorithms._catalog import ALGORITHMS


class UsageError(Exception):
    """A bad combination of options (exit code 2)."""


def positive_int(text):
    value = _parse(int, text, "an integer >= 1")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def _positive_float(text):
    value = _parse(float, text, "a number > 0")
    if not (value > 0 and np.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _nonneg_float(text):
    value = _parse(float, text, "a number >= 0")
    if not (value >= 0 and np.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def _open_unit(text):
    value = _parse(float, text, "a number in (0, 1)")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}")
    return value


def _unit(text):
    value = _parse(float, text, "a number in [0, 1]")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got {text!r}")
    return value


def seed_option(text):
    value = _parse(int, text, "an integer in [0, 2**63)")
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, 2**63), got {text!r}")
    return value


def _gamma(text):
    return text if text in ("median", "scale") else _positive_float(text)


def _auto_or(parse):
    """``parse``, or the word 'auto' (the value chosen from the data; the algorithm's
    table says whether it takes it)."""
    def parse_or_auto(text):
        return "auto" if text == "auto" else parse(text)

    return parse_or_auto


def _precondition(text):
    return None if text.lower() in ("none", "off", "0") else _positive_float(text)


def _budget(text):
    """Features (an integer), 'auto', 'none' (no limit) or 'sqrt' (TSGS3VM)."""
    word = text.lower()
    if word in ("auto", "sqrt"):
        return word
    return None if word == "none" else positive_int(text)


def _auto_bool(text):
    """'auto', or a yes / no word: True / False (the tables' options("auto", True, False))."""
    word = text.lower()
    if word == "auto":
        return "auto"
    if word in ("true", "yes", "on", "1"):
        return True
    if word in ("false", "no", "off", "0"):
        return False
    raise argparse.ArgumentTypeError(f"must be 'auto', 'true' or 'false', got {text!r}")


def _tol(text):
    """A number >= 0, 'auto' or 'none' (never stop: the table's None); which of them an
    algorithm takes is its table's business (checked before the data are read)."""
    word = text.lower()
    if word in ("auto", "none"):
        return None if word == "none" else "auto"
    return _nonneg_float(text)


def _class_weight(text):
    if text not in ("balanced", "none"):
        raise argparse.ArgumentTypeError(f"must be 'balanced' or 'none', got {text!r}")
    return None if text == "none" else text


def _parse(kind, text, what):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None


# fit keyword -> (parser or "bool" or "choice", metavar, how the text is written): the
# flag is --name-with-dashes; what the option means, its default and its allowed values
# come from the algorithm's parameter table (algorithms/_boundary/params.py), declared once there.
OPTIONS = {
    "loss": ("choice", "LOSS", ""),
    "kernel": ("choice", "KERNEL", ""),
    "features": ("choice", "FEATURES", ""),
    "gamma": (_gamma, "GAMMA", "a number > 0, 'median' or 'scale'"),
    "lam": (_nonneg_float, "LAM", ""),
    "n_iter": (_auto_or(positive_int), "N", "an integer or 'auto' (chosen from the data); tsgs3vm auto: one "
                                             "pass over the larger of the labelled and unlabelled rows"),
    "batch_size": (positive_int, "N", ""),
    "block_size": (positive_int, "N", ""),
    "step": (_auto_or(_positive_float), "STEP", "a number > 0, or 'auto' where the default is"),
    "precondition": (_precondition, "RIDGE", "a relative ridge > 0, or 'none' (also 0) for the papers' plain "
                                             "gradient steps"),
    "average": ("bool", None, ""),
    "early_stopping": (_auto_bool, "WHEN", "'auto', 'true' or 'false'"),
    "validation_fraction": (_open_unit, "FRACTION", ""),
    "n_iter_no_change": (_auto_or(positive_int), "N", "an integer, or 'auto'"),
    "tol": (_tol, "TOL", "a number >= 0; s3gd: the relative decrease of the training objective per epoch "
                         "below which it stops, also 'auto' or 'none' (never stop early)"),
    "probability": ("bool", None, "the model file keeps the sigmoid: predict --proba writes probabilities"),
    "C": (_positive_float, "C", ""),
    "C_star": (_nonneg_float, "C_STAR", "auto: C * labelled / unlabelled"),
    "unlabeled_loss": ("choice", "LOSS", ""),
    "balance": ("bool", None, ""),
    "feature_budget": (_budget, "N", "an integer, 'none' (no limit) or, for tsgs3vm, 'sqrt' of the unlabelled "
                                     "rows"),
    "prior": (_open_unit, "PRIOR", "of --positive-class, in (0, 1), not 1/2; auto: estimated, the larger "
                                   "class is positive"),
    "correction": ("choice", "KIND", ""),
    "nu": (_auto_or(_positive_float), "NU", "a number > 0, or 'auto' (from the SVC(C=1) relation)"),
    "bias": ("bool", None, ""),
    "penalty": ("choice", "PENALTY", ""),
    "l1_ratio": (_unit, "RATIO", ""),
    "n_anchors": (positive_int, "N", ""),
    "k_nearest": (positive_int, "K", ""),
    "inner_iter": (positive_int, "N", "auto: 20 for s3gd and sgd, 50 for svrg"),
    "max_epochs": (_positive_float, "EPOCHS", ""),
    "max_time": (_positive_float, "SECONDS", "auto: no limit"),
    "class_weight": (_class_weight, "WEIGHT", "'balanced' or 'none'"),
    "method": ("choice", "METHOD", ""),
}


def _show(value):
    return "auto" if value is None else str(value)


def option_help(name, note):
    """The help of one option: what it means (the first taker's table), how it is
    written, which algorithms take it, their choices and defaults."""
    rows = [row for row in ALGORITHMS.values() if name in row.options]
    # The table's doc, less what None means in Python (the note says how to write it here).
    help_text = rows[0].help(name).split("; None:")[0] + (f" ({note})" if note else "")
    groups = {}
    for row in rows:
        default = row.defaults().get(name)
        choices = row.choices.get(name, ()) if OPTIONS[name][0] == "choice" else ()
        key = (tuple(choices), _show(default))
        groups.setdefault(key, []).append(row.name)
    parts = []
    for (choices, default), names in groups.items():
        part = "/".join(names) + ":"
        if choices:
            part += " " + ", ".join(choices) + ";"
        parts.append(f"{part} default {default}")
    return f"{help_text} [{'; '.join(parts)}]".replace("%", "%%")
