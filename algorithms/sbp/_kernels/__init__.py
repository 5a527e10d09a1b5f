"""The binary SBP iteration's steps around its response update: registrations only, made with kbackends' public
:func:`kbackends.register_kernel` when :mod:`algorithms.sbp` is imported.

- ``sbp_draw_step``: a uniform draw from under the water and the step's scalar
  bookkeeping (``||w||^2``, the coefficient, the projection, the renormalisation flag);
- ``sbp_average``: the averaged responses' accumulator and the renormalisation;
- ``sbp_run``: many iterations of the binary default per compiled call, the level
  warm-started, the steps above and the response update fused (numba; on cuda one
  launch of one block, ``_cuda_run``, which the loop takes where
  ``algorithms.sbp._loop.CUDA_RUN`` says);
- ``sbp_window_run`` (cuda): ``sbp_run``'s iterations a window at a time, three launches an
  iteration and no host read inside a window (``_cuda_window``, which the
  loop takes where ``algorithms.sbp._loop.WINDOW_RUN`` says);
- ``sbp_levels``, ``sbp_biased_levels``, ``sbp_levels_follow`` (numba only): the general
  loop's water levels warm-started from the previous iteration's, one state a class;
- ``sbp_replay`` (on the host): the averaged coefficients from the loop's log of draws
  and scales (numba: the reference's loop compiled);
- ``sbp_biased_level``: the step-by-step loop's two-basin level kernel for a fit, from the
  cold one: the cold kernel itself (xp), or on cuda with one output, where
  :data:`WARM_LEVEL`, the level warm-started on the device (``_cuda_level``).

``xp`` is the reference (the cpu engine runs it on NumPy: a few vectorised passes);
``cuda`` runs each as one launch where the reference makes about 40 array calls, each
a launch on a GPU whose host time bounds the iteration (docs/benchmarks.md, "GPU").
"""

from kbackends import register_kernel

# The cuda step-by-step loop's level warm-started on the device (_cuda_level): off. On an H100
# its passes on one block took twice the cold kernel's time (gpu-check's fits row
# sbp-a9a-warm: 3.65 s against 1.82 s for 4,000 a9a iterations, 69 cold levels); the passes
# over a grid are not yet timed.
WARM_LEVEL = False
# The window run's (_cuda_window: algorithms.sbp._loop.WINDOW_RUN) whole windows replayed as a CUDA graph
# (kbackends.CapturedGraph: a call's first window run as it is, the second captured): off until a device
# times it (gpu-check's row sbp-a9a-window-graph).
WINDOW_GRAPH = False

for _op in ("sbp_draw_step", "sbp_average"):
    for _impl, _module in (("xp", "_xp"), ("cuda", "_cuda")):
        register_kernel(_op, _impl, f"{__name__}.{_module}:{_op}")
register_kernel("sbp_run", "numba", f"{__name__}._numba:sbp_run")
for _impl, _module in (("xp", "_xp"), ("numba", "_numba")):
    register_kernel("sbp_replay", _impl, f"{__name__}.{_module}:sbp_replay")
register_kernel("sbp_run", "cuda", f"{__name__}._cuda_run:sbp_run")
for _op in ("sbp_levels", "sbp_biased_levels", "sbp_levels_follow"):
    register_kernel(_op, "numba", f"{__name__}._numba_levels:{_op}")
register_kernel("sbp_biased_level", "xp", f"{__name__}._xp:sbp_biased_level")
register_kernel("sbp_biased_level", "cuda", f"{__name__}._cuda_level:sbp_biased_level")
register_kernel("sbp_window_run", "cuda", f"{__name__}._cuda_window:sbp_window_run")
