"""Hyper-parameters declared once per algorithm, checked once at the public boundary.

Each algorithm module holds a :class:`ParamTable`: one :class:`Param` per
hyper-parameter (name, default, constraint, one-line doc). The same table

- validates the arguments of the module's ``fit`` at entry (:meth:`ParamTable.entry`;
  inner layers then take the validated values and do not check again),
- validates the scikit-learn estimator's parameters in its ``fit``, which then calls the
  function's unchecked body (:meth:`ParamTable.entry`'s ``unchecked``): checked once either way,
- is what each estimator's explicit ``__init__`` must agree with (names, order,
  defaults: :meth:`ParamTable.init_mismatches`, asserted by the tests),
- and is what a command line can read to build its options (``PARAMS.params``).

In the spirit of scikit-learn's ``_parameter_constraints`` (a private module of
scikit-learn, so not imported here). A constraint answers two questions: is the
value of a type it takes (else TypeError) and is it in range (else ValueError); the
message names the argument in backticks, says what was expected and what arrived::
    `gamma` must be one of ('median', 'scale') or a positive float, got True

``bool`` is not a number here (``True`` is not a width), and NumPy scalars
(``np.int64``, ``np.float32``) are numbers.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from kbackends.random import FEATURES, KERNELS

__all__ = [
    "BACKEND",
    "DTYPE",
    "GAMMA",
    "PRECONDITION",
    "RANDOM_STATE",
    "REQUIRED",
    "Constraint",
    "Param",
    "ParamTable",
    "boolean",
    "callable_or_none",
    "either",
    "instance",
    "integer",
    "none",
    "options",
    "real",
]

# The step schedules the engine implements (algorithms._engine.steps.step_size).
SCHEDULES = ("auto", "theta_over_t", "constant", "inverse_scaling")


class _Required:
    def __repr__(self):
        return "REQUIRED"


REQUIRED = _Required()  # a default meaning "no default: the caller must pass it"


@dataclass(frozen=True)
class Constraint:
    """One kind of accepted value.

    Attributes
    ----------
    text : str
        What it accepts, for messages ("a positive finite number").
    type_ok : callable(value) -> bool
        The value is of a type this constraint takes (otherwise: TypeError).
    value_ok : callable(value) -> bool
        The value is in range (otherwise: ValueError).
    convert : callable(value) -> value
        The validated value as the algorithm uses it (``float``, ``int``, ...).
    """

    text: str
    type_ok: Callable[[Any], bool]
    value_ok: Callable[[Any], bool] = lambda v: True
    convert: Callable[[Any], Any] = lambda v: v
    values: tuple = ()  # the constants an `options` constraint admits (a command line's choices)

    def check(self, name, value):
        """The converted value, or TypeError / ValueError naming ``name``."""
        return either(self).check(name, value)


def _is_real(v):
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def _is_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_))


def _bound_text(low, high, low_open, high_open):
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low == 0 and low_open:
        return "positive"
    if low == 0:
        return "non-negative"
    if low is not None:
        return f"{'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"{'<' if high_open else '<='} {high:g}"
    return ""


def real(low=None, high=None, *, low_open=False, high_open=False, text=None):
    """A finite real number (not a bool) within the bounds; converted to ``float``."""

    def in_range(v):
        v = float(v)
        if not math.isfinite(v):
            return False
        if low is not None and (v <= low if low_open else v < low):
            return False
        return not (high is not None and (v >= high if high_open else v > high))

    bounds = _bound_text(low, high, low_open, high_open)
    if text is None and bounds in ("positive", "non-negative"):
        text = f"a {bounds} finite number"
    elif text is None:
        text = bounds if bounds.startswith("in ") else f"a finite number {bounds}".rstrip()
    return Constraint(text, _is_real, in_range, float)


def integer(low=None, high=None, *, text=None):
    """An integer (Python or NumPy, not a bool) within the bounds; converted to ``int``."""

    def in_range(v):
        return (low is None or v >= low) and (high is None or v <= high)

    if text is None and low is not None and high is not None:
        text = f"an integer in [{low}, {high}]"
    elif text is None:
        text = f"an integer >= {low}" if low is not None else "an integer"
    return Constraint(text, _is_int, in_range, int)


def options(*values):
    """One of ``values`` (strings, or other hashable constants such as True / False)."""
    kinds = {bool if isinstance(o, bool) else type(o) for o in values}

    def type_ok(v):
        kind = bool if isinstance(v, (bool, np.bool_)) else type(v)
        return kind in kinds or (isinstance(v, str) and str in kinds)

    def value_ok(v):
        return any(v is o or (type(v) is type(o) and v == o) or (isinstance(v, np.bool_) and bool(v) is o)
                   for o in values)

    text = "one of " + repr(tuple(values)) if len(values) > 1 else repr(values[0])
    return Constraint(text, type_ok, value_ok, lambda v: bool(v) if isinstance(v, np.bool_) else v, tuple(values))


def boolean():
    """True or False (NumPy bools too); converted to ``bool``."""
    return Constraint("True or False", lambda v: isinstance(v, (bool, np.bool_)), convert=bool)


def none():
    """None."""
    return Constraint("None", lambda v: v is None)


def callable_or_none():
    """A callable, or None."""
    return Constraint("callable or None", lambda v: v is None or callable(v))


def instance(*types, text):
    """An instance of one of ``types``."""
    return Constraint(text, lambda v: isinstance(v, types))


@dataclass(frozen=True)
class _Either:
    constraints: tuple

    @property
    def text(self):
        return " or ".join(c.text for c in self.constraints)

    @property
    def values(self):
        return tuple(v for c in self.constraints for v in c.values)

    def check(self, name, value):
        typed = False
        for c in self.constraints:
            if c.type_ok(value):
                typed = True
                if c.value_ok(value):
                    return c.convert(value)
        shown = f"{value!r}" if typed or isinstance(value, (str, numbers.Number, type(None))) else \
            f"{type(value).__name__} {value!r}"[:200]
        msg = f"`{name}` must be {self.text}, got {shown}"
        raise (ValueError if typed else TypeError)(msg)


def either(*constraints):
    """The first constraint that takes the value converts it; if none does, the
    error lists them all (TypeError when no constraint takes the value's type)."""
    flat = []
    for c in constraints:
        flat.extend(c.constraints if isinstance(c, _Either) else (c,))
    return _Either(tuple(flat))


# Shared constraints (every algorithm's random_state, gamma, ... mean the same).
RANDOM_STATE = either(
    none(), integer(0, 2**64 - 1, text="an integer in [0, 2**64)"),
    instance(np.random.Generator, np.random.RandomState, text="a numpy Generator / RandomState"),
)
GAMMA = either(options("median", "scale"), real(0, low_open=True, text="a positive float"))
PRECONDITION = either(real(0, low_open=True), none())
BACKEND = Constraint("a backend name or Backend", lambda v: True)  # resolve() says what is wrong
DTYPE = either(Constraint("float32 or float64", lambda v: "float32" in str(v) or "float64" in str(v)), none())


@dataclass(frozen=True)
class Param:
    """One hyper-parameter.

    Attributes
    ----------
    name : str
    default : object
        Default of the function's argument; :data:`REQUIRED` when it has none.
    constraint : Constraint
        What it accepts (see :func:`either`).
    doc : str
        One line: what it means (a command line's help text).
    estimator : bool
        Also a parameter of the scikit-learn estimator (False for ``callback``, ...).
    estimator_default : object
        The estimator's default when it differs from the function's (a required argument).
    """

    name: str
    default: Any
    constraint: Any
    doc: str = ""
    estimator: bool = True
    estimator_default: Any = field(default=REQUIRED)

    @property
    def init_default(self):
        return self.default if self.estimator_default is REQUIRED else self.estimator_default

    @property
    def choices(self):
        """The string constants the constraint admits (("rbf", "laplacian") for ``kernel``)."""
        return tuple(v for v in self.constraint.values if isinstance(v, str))


class ParamTable:
    """The hyper-parameters of one algorithm, in signature order.

    Examples
    --------
    >>> from algorithms._boundary.params import Param, ParamTable, integer
    >>> table = ParamTable(Param("n_iter", 100, integer(1), "iterations"))
    >>> table.validate({"n_iter": 5})
    {'n_iter': 5}
    >>> table.validate({"n_iter": 0})
    Traceback (most recent call last):
    ...
    ValueError: `n_iter` must be an integer >= 1, got 0
    """

    def __init__(self, *params: Param):
        self.params = tuple(params)
        self._by_name = {p.name: p for p in self.params}
        if len(self._by_name) != len(self.params):
            msg = "duplicate parameter names"
            raise ValueError(msg)

    def __getitem__(self, name) -> Param:
        return self._by_name[name]

    def __contains__(self, name):
        return name in self._by_name

    @property
    def names(self):
        return tuple(p.name for p in self.params)

    def defaults(self):
        """``{name: default}`` of the parameters that have one."""
        return {p.name: p.default for p in self.params if p.default is not REQUIRED}

    def replace(self, **changes):
        """A copy with some parameters' fields changed: ``replace(loss={"default": "squared"})``."""
        return ParamTable(*(replace(p, **changes[p.name]) if p.name in changes else p for p in self.params))

    def validate(self, values):
        """``values`` (a mapping, e.g. the function's ``locals()``) checked against the
        table: ``{name: converted value}`` for every parameter of the table (a missing
        one takes its default)."""
        out = {}
        for p in self.params:
            value = values.get(p.name, p.default)
            if value is REQUIRED:
                msg = f"`{p.name}` is required"
                raise TypeError(msg)
            out[p.name] = p.constraint.check(p.name, value)
        return out

    def entry(self, body):
        """Decorator for a module's public ``fit``: the one validation boundary.

        ``body`` declares the table's parameters as keyword-only arguments *without*
        defaults (in the table's order; checked at import). The decorated function
        has the table's defaults in its signature, binds each call's arguments,
        validates them once (:meth:`validate`) and calls ``body`` with the converted
        values, so the body and the layers under it take validated values.

        A caller that has validated the values itself (an estimator's ``fit``, against
        its own table: the function's, or a narrowed copy) calls ``fit.unchecked(*args,
        **values)`` instead: ``body`` with the table's (converted) defaults for the
        parameters not given, and no second check.
        """
        sig = inspect.signature(body)
        names = [n for n, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY]
        if names != list(self.names):
            msg = f"{body.__qualname__}'s keyword-only arguments {names} are not the table's {list(self.names)}"
            raise TypeError(msg)
        empty = inspect.Parameter.empty
        public = sig.replace(parameters=[
            p.replace(default=empty if self[p.name].default is REQUIRED else self[p.name].default)
            if p.kind is p.KEYWORD_ONLY else p
            for p in sig.parameters.values()
        ])

        @functools.wraps(body)
        def checked(*args, **kwargs):
            bound = public.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            arguments.update(self.validate(arguments))
            return body(**arguments)

        checked.__signature__ = public
        defaults = {p.name: p.constraint.check(p.name, p.default) for p in self.params if p.default is not REQUIRED}

        def unchecked(*args, **values):
            return body(*args, **{**defaults, **values})

        unchecked.__doc__ = f"``{body.__qualname__}`` on parameters already validated (see ParamTable.entry)."
        checked.unchecked = unchecked
        return checked

    def estimator_params(self):
        """The parameters a scikit-learn estimator has (``estimator=True``), in table order."""
        return tuple(p for p in self.params if p.estimator)

    def init_mismatches(self, init):
        """Differences between an estimator's ``__init__`` and the table's estimator view
        (:meth:`estimator_params`: names, order, ``init_default``): an empty list when they
        agree. Every argument but ``self`` must be keyword-only (scikit-learn's rule). For a test."""
        sig = inspect.signature(init)
        args = [p for n, p in sig.parameters.items() if n != "self"]
        out = [f"{p.name} is not keyword-only" for p in args if p.kind is not p.KEYWORD_ONLY]
        want = self.estimator_params()
        for got, p in zip(args, want):
            if got.name != p.name:
                out.append(f"{got.name} != {p.name}")
            elif got.default is inspect.Parameter.empty:
                out.append(f"{got.name}: no default, the table's is {p.init_default!r}")
            elif not (got.default is p.init_default or (type(got.default) is type(p.init_default)
                                                        and got.default == p.init_default)):
                out.append(f"{got.name}: default {got.default!r} != {p.init_default!r}")
        if len(args) != len(want):
            out.append(f"{len(args)} arguments, {len(want)} estimator parameters in the table")
        return out

    def signature_mismatches(self, func, *, skip=()):
        """Differences between ``func``'s keyword-only arguments and the table (names,
        order, defaults): an empty list when they agree. For a test."""
        sig = inspect.signature(func)
        kw = [(n, p.default) for n, p in sig.parameters.items()
              if p.kind is p.KEYWORD_ONLY and n not in skip]
        want = [(p.name, p.default) for p in self.params if p.name not in skip]
        out = []
        for (n1, d1), (n2, d2) in zip(kw, want):
            if n1 != n2:
                out.append(f"{n1} != {n2}")
            elif not (d1 is d2 or (d2 is REQUIRED and d1 is inspect.Parameter.empty) or d1 == d2):
                out.append(f"{n1}: default {d1!r} != {d2!r}")
        if len(kw) != len(want):
            out.append(f"{len(kw)} keyword arguments, {len(want)} in the table")
        return out


def _common():

    params = (
        Param("kernel", "rbf", options(*KERNELS), "shift-invariant kernel"),
        Param("gamma", "median", GAMMA,
              "kernel width; 'median': 1 / median squared distance, 'scale': 1 / (n_features Var X)"),
        Param("features", "monte_carlo", options(*FEATURES),
              "rbf random features: independent draws, orthogonal rows or quasi-Monte-Carlo points"),
        Param("block_size", 256, integer(1), "random features per block"),
        Param("step", 1.0, real(0, low_open=True), "theta of the step schedule"),
        Param("schedule", "auto", options(*SCHEDULES), "step schedule"),
        Param("precondition", 0.1, PRECONDITION, "relative ridge of the block preconditioner; None: plain steps"),
        Param("average", False, boolean(), "return the Polyak average of the iterates"),
        Param("feature_budget", "auto", either(options("auto"), integer(1), none()),
              "at most this many random features (whole blocks), then each iteration updates an old block; "
              "auto: about a million multiply-adds a row; None: no limit"),
        Param("fit_intercept", True, boolean(), "learn an unpenalised constant"),
        Param("class_weight", None, either(none(), options("balanced"), instance(dict, text="a dict {label: weight}")),
              "per-class weights of the loss; 'balanced': n / (n_classes n_c)"),
        Param("random_state", None, RANDOM_STATE,
              "seed of the random features and samples (same seed, same model on every backend)"),
        Param("backend", "auto", BACKEND, "'auto' (the inputs' namespace), 'cpu', 'cuda' or a Backend"),
        Param("dtype", None, DTYPE, "compute dtype; default float32 whatever the input (S3GD: the input's), "
              "float64 where float32 would overflow; 'float64': full precision"),
        Param("callback", None, callable_or_none(),
              "called after every iteration with a dict; returning True stops", estimator=False),
        Param("verbose", 0, integer(0),
              "0: silent; 1: a progress bar on stderr (iterations, and a batch loss already on the host)"),
    )
    return {p.name: p for p in params}


def common(name, **changes):
    """The shared definition of a parameter many algorithms have (``kernel``, ``gamma``,
    the engine's ``block_size`` / ``step`` / ``schedule`` / ``precondition`` /
    ``average`` / ``fit_intercept``, ``random_state``, ...), fields changed by
    ``changes`` (e.g. another default)."""
    return replace(_common()[name], **changes)


def common_tail():
    """``random_state``, ``backend``, ``dtype``, ``callback``, ``verbose``: every table ends with them."""
    return tuple(common(name) for name in ("random_state", "backend", "dtype", "callback", "verbose"))
