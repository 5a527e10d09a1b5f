"""Model files: atomic writes, the format version, and reading that never runs
pickled code and says what is wrong with a file that is not a model.

``save`` (on every model, through :class:`_ModelIO`) writes a NumPy ``.npz``: the
arrays on the host plus a JSON ``__header__``; :func:`load` reads it back onto any
backend.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pickle
import secrets
import zipfile
import zlib
from pathlib import Path

import numpy as np

from kbackends import resolve, to_numpy
from kbackends.ops import SPARSE_BACKENDS, to_backend


# Model file format (a NumPy .npz: the arrays plus a JSON "__header__"):
#   1  classes stored as an array in the archive (object classes pickled, by np.savez's
#      default: read back by an unpickler that only builds NumPy arrays and scalars);
#   2  object classes (what a pandas string column gives) stored as JSON in the header
#      ("classes": {"dtype": "object", "values": [...]}), never pickled; other classes
#      (int, float, bool, str) still as an array. Files of format 1 load unchanged;
#   3  a scipy.sparse array field (an SBP model fitted on sparse rows: CSR support
#      vectors) stored as its CSR parts "<name>.data", "<name>.indices", "<name>.indptr"
#      and the header's "sparse": {"<name>": [rows, cols]}: O(nnz) on disk and while
#      saving or loading. Dense fields as before; files of formats 1 and 2 load unchanged;
#   4  the fields "feature_names" (a list of str or null: the feature columns of the
#      command line's CSV training file), "index_base" (0, 1 or null: its LIBSVM
#      file's first feature index) and "class_labels" (a list of str or null: each
#      class as that file wrote it); files of formats 1 to 3 load with all three None;
#   5  the field "centre" (a list of n_features_in floats, or null): the column means an
#      SBP fit on data at an offset subtracted from X, subtracted again at predict
#      (algorithms._boundary.precision); files of formats 1 to 4 load with None.
#   6  RFFModel's field "features" ("monte_carlo", "orthogonal" or "qmc": how its blocks
#      are regenerated); files of formats 1 to 5 load with "monte_carlo".
FORMAT_VERSION = 6
_CSR_PARTS = ("data", "indices", "indptr")
_MODEL_TYPES: dict = {}
_NPZ_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip's first local header, or an empty zip
_NPY_MAGIC = b"\x93NUMPY"


def _register(cls):
    _MODEL_TYPES[cls.__name__] = cls
    return cls


class _ModelIO:
    """save / to shared by the model dataclasses: fields named in ``ARRAYS`` are
    backend arrays, the rest JSON-serialisable values."""

    ARRAYS: tuple = ()

    def to(self, backend="cpu"):
        """The same model with its arrays on ``backend`` (a name or a Backend); a
        sparse field stays sparse on the backends with sparse kernels (scipy.sparse
        on cpu and the simulator, cupyx.scipy.sparse on cuda) and is densified
        elsewhere."""
        bk = resolve(backend)

        def move(value):
            if hasattr(value, "tocsr"):
                if bk.name in SPARSE_BACKENDS:  # a model keeps a sparse field sparse where kernels take it
                    return to_backend(value, bk)
                return bk.asarray(to_numpy(value.toarray()))
            return bk.asarray(value)

        moved = {name: move(getattr(self, name)) for name in self.ARRAYS}
        return dataclasses.replace(self, backend=bk.name, **moved)

    def save(self, path):
        """Write the model to ``path`` (``.npz``); read it back with :func:`algorithms.load`.

        The file is written to a temporary file in the same directory, flushed to
        disk and then renamed over ``path`` in one step, so an interrupted save
        (disk full, quota, a crash) leaves a previous file at ``path`` intact.

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        ValueError
            If ``classes`` holds values that cannot be stored without pickle.
        OSError
            If the file cannot be written (nothing is left behind).
        """
        header = {
            "format_version": FORMAT_VERSION,
            "type": type(self).__name__,
            "fields": {
                f.name: _jsonable(getattr(self, f.name))
                for f in dataclasses.fields(self)
                if f.name not in self.ARRAYS and f.name != "classes"
            },
        }
        arrays = {}
        for name in self.ARRAYS:
            value = getattr(self, name)
            if hasattr(value, "tocsr"):  # scipy.sparse: its CSR parts (format 3)
                csr = value.tocsr()
                header.setdefault("sparse", {})[name] = [int(csr.shape[0]), int(csr.shape[1])]
                arrays.update({f"{name}.{part}": to_numpy(getattr(csr, part)) for part in _CSR_PARTS})
            else:
                arrays[name] = to_numpy(value)
        if getattr(self, "classes", None) is not None:
            classes = np.asarray(self.classes)
            if classes.dtype == object:
                header["classes"] = _object_classes_to_json(classes)
            else:
                arrays["classes"] = classes
        blob = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)  # fails before any write
        return atomic_write(path, lambda fh: np.savez(fh, __header__=blob, **arrays))


def atomic_write(path, write):
    """Call ``write(binary_file)`` on a temporary file beside ``path``, flush it to
    disk and rename it over ``path`` atomically (``os.replace``).

    On any error the temporary file is removed and ``path`` is untouched. The
    temporary file is created with the usual permissions (0o666 less the umask).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    if path.is_dir():
        msg = f"cannot write {str(path)!r}: it is a directory"
        raise IsADirectoryError(msg)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileNotFoundError as exc:
        msg = f"cannot write {str(path)!r}: directory {str(path.parent)!r} does not exist"
        raise FileNotFoundError(msg) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    try:  # make the rename itself durable; not every file system lets a directory be opened
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return path
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
    return path


def _jsonable(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


_JSON_SCALARS = (str, bool, int, float)


def _object_classes_to_json(classes):
    """Object-dtype class labels as JSON: each a str, bool, int or float (NumPy scalars
    become their Python values), so loading never needs pickle."""
    values = [v.item() if isinstance(v, np.generic) else v for v in classes.ravel().tolist()]
    bad = [v for v in values if not isinstance(v, _JSON_SCALARS)]
    if classes.ndim != 1 or bad:
        what = f"shape {classes.shape}" if classes.ndim != 1 else f"a {type(bad[0]).__name__} value {bad[0]!r}"
        msg = f"`classes` must be 1-D labels of str, int, float or bool to be saved without pickle, got {what}"
        raise ValueError(msg)
    return {"dtype": "object", "values": values}


def _object_classes_from_json(spec):
    if not isinstance(spec, dict) or spec.get("dtype") != "object" or not isinstance(spec.get("values"), list):
        raise _BadFile("its header's `classes` entry is malformed")
    values = spec["values"]
    if not all(isinstance(v, _JSON_SCALARS) for v in values):
        raise _BadFile("its header's `classes` holds values other than str, int, float or bool")
    out = np.empty(len(values), dtype=object)
    out[:] = values  # element by element: never a 2-D array of characters
    return out


class _BadFile(ValueError):
    """What is wrong with a file given to :func:`load` (worded to follow its name)."""


def load(path, backend="cpu"):
    """Read a model written by ``model.save`` onto ``backend``.

    Files of every format version up to :data:`FORMAT_VERSION` load; a file is
    read without pickle (no code in it can run).

    Parameters
    ----------
    path : str or path-like
    backend : str or Backend, default "cpu"

    Returns
    -------
    RFFModel, LinearModel or KernelExpansionModel

    Raises
    ------
    ValueError
        If the file is not a model of this library (a text or ``.npy`` file, an
        empty, truncated or corrupt file, an archive without the model header,
        a model type or algorithm this library does not know) or was written in
        a newer format version; the message names the file and what is wrong.
    FileNotFoundError
        If there is no file at ``path``.
    """
    name = repr(str(path))
    try:
        cls, fields, arrays = _read_model(Path(path))
        model = _consistent(cls, fields, arrays)
    except _BadFile as exc:
        msg = f"{name} is not a model file of this library: {exc}"
        raise ValueError(msg) from None
    except _NewerFormat as exc:
        msg = f"{name} {exc}"
        raise ValueError(msg) from None
    return model.to(backend)


def _check_shapes(kind, fields, arrays, n_features):
    """The arrays' shapes against the fields that size them (the kernels trust them)."""
    coef, intercept = arrays["coef"], arrays["intercept"]
    if coef.ndim != 2 or intercept.ndim != 1:
        raise _BadFile(f"its `coef` has {coef.ndim} dimensions and `intercept` {intercept.ndim} (2 and 1 expected)")
    if kind == "RFFModel":
        n_blocks, block_size = fields.get("n_blocks"), fields.get("block_size")
        for key, value, low in (("n_blocks", n_blocks, 0), ("block_size", block_size, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise _BadFile(f"its `{key}` is {value!r}, not an integer >= {low}")
        rows, outputs = n_blocks * block_size, coef.shape[1]
        what = f"{n_blocks} blocks of {block_size} features"
    elif kind == "LinearModel":
        rows, outputs, what = coef.shape[0], coef.shape[0], "its outputs"
        if coef.shape[1] != n_features:
            raise _BadFile(f"its `coef` has {coef.shape[1]} columns for {n_features} features")
    else:
        sv = arrays["support_vectors"]
        rows, outputs, what = sv.shape[0], coef.shape[1], f"{sv.shape[0]} support vectors"
        if sv.shape[1] != n_features:
            raise _BadFile(f"its support vectors have {sv.shape[1]} features, not {n_features}")
    if coef.shape[0] != rows or intercept.shape[0] != outputs:
        raise _BadFile(f"its `coef` {tuple(coef.shape)} and `intercept` {tuple(intercept.shape)} do not fit {what}")


def _consistent(cls, fields, arrays):
    """The model, once its fields are seen to agree with each other: built, then asked
    for the decision values of one row of zeros on the cpu (the shapes, the classes
    against the outputs, the blocks against the coefficients, a finite result). A file
    whose fields contradict each other loaded and then failed at predict time (a
    division by zero, an index error)."""
    n = fields.get("n_features_in")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise _BadFile(f"its `n_features_in` is {n!r}, not a positive integer")
    _check_shapes(cls.__name__, fields, arrays, n)
    for key, value in arrays.items():  # a NaN coefficient would load, then predict NaN on every row
        values = getattr(value, "data", value) if hasattr(value, "tocsr") else value
        if values.dtype.kind in "fc" and not np.all(np.isfinite(values)):
            raise _BadFile(f"its `{key}` holds NaN or infinite values")
    try:
        model = cls(**fields, **arrays)
        values = np.asarray(to_numpy(model.decision_function(np.zeros((1, n)), backend="cpu")))
        if model.classes is not None and getattr(model, "task", "") != "regression":
            outputs = 1 if values.ndim == 1 else values.shape[1]
            expected = 1 if len(model.classes) == 2 else len(model.classes)
            if outputs != expected:
                raise _BadFile(f"its {len(model.classes)} classes need {expected} output(s), its coefficients "
                               f"have {outputs}")
    except _BadFile:
        raise
    except (TypeError, ValueError, IndexError, KeyError, AttributeError, ZeroDivisionError, RecursionError,
            OverflowError) as exc:
        raise _BadFile(f"its fields contradict each other ({type(exc).__name__}: {exc})") from None
    return model


class _NewerFormat(ValueError):
    pass


def _member(data, path, key):
    """One array of an archive; format 1 wrote object classes pickled (``np.savez``'s
    default), which only an unpickler restricted to NumPy's array types reads back."""
    try:
        return data[key]
    except ValueError as exc:
        if key != "classes" or "allow_pickle" not in str(exc):
            raise
        return _legacy_object_classes(path)


# The globals a pickled 1-D object array of str / numbers / bools refers to, and no others:
# nothing in such a file can call anything but these constructors.
_ARRAY_PICKLE_GLOBALS = {
    (module, name)
    for module in ("numpy.core.multiarray", "numpy._core.multiarray")
    for name in ("_reconstruct", "scalar")
} | {("numpy", "ndarray"), ("numpy", "dtype")}


class _ArrayOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _ARRAY_PICKLE_GLOBALS:
            raise _BadFile(f"its `classes` array is a pickle that refers to {module}.{name}, which is not loaded")
        return super().find_class(module, name)


def _legacy_object_classes(path):
    """The pickled object ``classes`` of a format-1 file, as format 2 would hold them."""
    from numpy.lib import format as npy

    with zipfile.ZipFile(path) as archive, archive.open("classes.npy") as fh:
        version = npy.read_magic(fh)
        read_header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
        _, _, dtype = read_header(fh)
        if dtype != object:
            raise _BadFile(f"its `classes` array has dtype {dtype} but is pickled")
        try:
            classes = _ArrayOnlyUnpickler(fh).load()
        except (pickle.UnpicklingError, EOFError, AttributeError, TypeError, ValueError) as exc:
            if isinstance(exc, _BadFile):
                raise
            raise _BadFile(f"its pickled `classes` array cannot be read ({exc})") from exc
    if not isinstance(classes, np.ndarray):
        raise _BadFile("its pickled `classes` is not an array")
    return _object_classes_from_json(_object_classes_to_json_or_bad(classes))


def _object_classes_to_json_or_bad(classes):
    try:
        return _object_classes_to_json(classes)
    except ValueError as exc:
        raise _BadFile(f"its `classes` cannot be read ({exc})") from None


def _join_sparse(header, arrays):
    """Format 3: rebuild each field the header names as sparse from its CSR parts."""
    sparse = header.get("sparse", {})
    if not isinstance(sparse, dict):
        raise _BadFile("its header's `sparse` entry is not a mapping")
    for name, shape in sparse.items():
        keys = [f"{name}.{part}" for part in _CSR_PARTS]
        if any(key not in arrays for key in keys):
            raise _BadFile(f"its sparse array {name!r} lacks {[k for k in keys if k not in arrays]}")
        data, indices, indptr = (arrays.pop(key) for key in keys)
        if data.dtype.kind not in "biuf" or indices.dtype.kind not in "iu" or indptr.dtype.kind not in "iu":
            raise _BadFile(f"its sparse array {name!r} has parts of dtypes {data.dtype}, {indices.dtype}, "
                           f"{indptr.dtype}")
        try:
            import scipy.sparse as sp

            arrays[name] = sp.csr_matrix((data, indices, indptr), shape=tuple(int(v) for v in shape))
            arrays[name].check_format(full_check=True)
        except (TypeError, ValueError) as exc:
            raise _BadFile(f"its sparse array {name!r} is not a valid CSR matrix ({exc})") from None


def _read_model(path):
    """(model class, its JSON fields, its arrays) from a model file, or _BadFile."""
    if path.is_dir():
        raise _BadFile("it is a directory")
    with open(path, "rb") as fh:  # FileNotFoundError / PermissionError pass through
        head = fh.read(8)
    if not head:
        raise _BadFile("the file is empty")
    if head.startswith(_NPY_MAGIC):
        raise _BadFile("it is a NumPy .npy array (a model is a .npz archive written by `model.save`)")
    if head[:4] not in _NPZ_MAGIC:
        raise _BadFile(f"it is not a .npz archive (it starts with {head!r})")
    try:
        with np.load(path, allow_pickle=False) as data:
            if "__header__" not in data.files:
                raise _BadFile("a .npz archive without the model header (not written by `model.save`)")
            raw_header = bytes(data["__header__"])
            arrays = {key: _member(data, path, key) for key in data.files if key != "__header__"}
    except _BadFile:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError) as exc:
        raise _BadFile(f"the archive is truncated or corrupt ({type(exc).__name__}: {exc})") from exc
    try:
        header = json.loads(raw_header.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _BadFile(f"its header is not valid JSON ({exc})") from exc
    except RecursionError:
        raise _BadFile("its header is nested too deeply to be a model's") from None
    if not isinstance(header, dict) or not isinstance(header.get("fields"), dict):
        raise _BadFile("its header lacks the model's fields")
    version = header.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _BadFile(f"its header has no valid format version (got {version!r})")
    if version > FORMAT_VERSION:
        msg = (
            f"was written in model format {version} by a newer version of this library; this version "
            f"reads formats 1 to {FORMAT_VERSION}: upgrade the package to load it"
        )
        raise _NewerFormat(msg)
    cls = _MODEL_TYPES.get(header.get("type"))
    if cls is None:
        raise _BadFile(f"unknown model type {header.get('type')!r} (known: {', '.join(sorted(_MODEL_TYPES))})")
    fields = dict(header["fields"])
    algorithm = fields.get("algorithm")
    known = cls.ALGORITHMS
    if algorithm not in known:
        raise _BadFile(f"a {cls.__name__} of unknown algorithm {algorithm!r} (known: {', '.join(known)})")
    _join_sparse(header, arrays)
    has_classes = "classes" in {f.name for f in dataclasses.fields(cls)}
    classes = arrays.pop("classes", None)
    if "classes" in header:
        classes = _object_classes_from_json(header["classes"])
    if has_classes:
        fields["classes"] = classes
    missing = [key for key in cls.ARRAYS if key not in arrays]
    extra = [key for key in arrays if key not in cls.ARRAYS]
    if missing or extra:
        raise _BadFile(f"its arrays do not match a {cls.__name__} (missing {missing}, unexpected {extra})")
    for key, value in arrays.items():
        if not hasattr(value, "tocsr") and value.dtype.kind not in "biuf":
            raise _BadFile(f"array {key!r} has dtype {value.dtype}, not a number type")
    names = {f.name for f in dataclasses.fields(cls)}
    required = {
        f.name for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    _check_input_fields(fields)
    unknown = sorted(set(fields) - names)
    lacking = sorted(required - set(fields) - set(arrays))
    if unknown or lacking:
        raise _BadFile(f"its fields do not match a {cls.__name__} (missing {lacking}, unexpected {unknown})")
    return cls, fields, arrays


def _check_input_fields(fields):
    """Format 4's ``feature_names`` and ``class_labels`` (lists of str, read back as
    tuples) and ``index_base`` (0 or 1), and format 5's ``centre`` (a list of
    ``n_features_in`` finite floats, read back as a tuple), each possibly null."""
    for key in ("feature_names", "class_labels"):
        names = fields.get(key)
        if names is not None:
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise _BadFile(f"its `{key}` is not a list of str")
            fields[key] = tuple(names)
    base = fields.get("index_base")
    if base is not None and (isinstance(base, bool) or base not in (0, 1)):
        raise _BadFile(f"its `index_base` is {base!r}, not 0 or 1")
    centre = fields.get("centre")
    if centre is not None:
        ok = isinstance(centre, list) and len(centre) == fields.get("n_features_in") and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in centre)
        if not ok:
            raise _BadFile(f"its `centre` is not a list of {fields.get('n_features_in')} finite numbers")
        fields["centre"] = tuple(float(v) for v in centre)
