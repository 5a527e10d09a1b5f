"""kbackends.testing.count_array_ops: what it counts (array calls inside sync-free regions,
a kernel call as one) and what it leaves alone."""

import numpy as np
import pytest

import kbackends
from kbackends.testing import count_array_ops, make_backend

xp = pytest.importorskip("array_api_strict")


def test_counts_the_calls_inside_a_region_only():
    a = xp.asarray([1.0, 2.0, 3.0])
    with count_array_ops() as count:
        xp.sum(a)  # outside a region
        with kbackends.sync_free():
            for _ in range(4):
                b = xp.sum(a * 2.0) + a[0]
                with kbackends.sync_free(False):  # a hole (a callback)
                    xp.sum(b)
    assert dict(count.calls) == {"__mul__": 4, "sum": 4, "__getitem__": 4, "__add__": 4}
    assert count.total == 16


def test_a_kernel_call_counts_once_and_its_reference_not_at_all():
    bk = make_backend("array_api_strict")
    level = kbackends.get_kernel("water_level_biased", bk)  # an array-API reference: ~20 calls inside
    c, y = xp.asarray([0.5, -1.0, 2.0, 0.1]), xp.asarray([1.0, -1.0, 1.0, -1.0])
    with count_array_ops() as count:
        with kbackends.sync_free():
            for _ in range(3):
                level(c, y, 0.5, xp=xp)
                level(c, y, 0.25, xp=xp)  # the next call is a new kernel call
    assert dict(count.calls) == {"kernel water_level_biased": 6}


def _outside_total(a, *, xp):
    """A kernel defined outside kbackends/kernels (as an algorithm's own family is)."""
    return xp.sum(a * 2.0) + xp.sum(a)


def test_a_kernel_registered_outside_kbackends_counts_once_too():
    kbackends.register_kernel("test_op_count_outside_total", "xp", _outside_total)
    kernel = kbackends.get_kernel("test_op_count_outside_total", make_backend("array_api_strict"))
    a = xp.asarray([1.0, 2.0])
    with count_array_ops() as count:
        with kbackends.sync_free():
            kernel(a, xp=xp)
            kernel(a, xp=xp)
            xp.sum(a)  # the loop's own call
    assert dict(count.calls) == {"kernel _outside_total": 2, "sum": 1}


def test_the_namespace_is_restored():
    before = (xp.sum, type(xp.asarray(0.0)).__dict__["__mul__"])
    with count_array_ops():
        assert xp.sum is not before[0]
    assert (xp.sum, type(xp.asarray(0.0)).__dict__["__mul__"]) == before
    np.testing.assert_array_equal(np.asarray(xp.sum(xp.asarray([1.0, 2.0]))), 3.0)
