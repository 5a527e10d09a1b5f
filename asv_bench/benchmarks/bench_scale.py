"""DSGClassifier() with its defaults on a million rows, next to RBFSampler + SGD and the
dask fit, on the same synthetic data (algorithms.bench.scale: each method in a process
of its own, so the peak memory is its own).

The size is $KBACKENDS_ASV_SCALE_ROWS (default 1,000,000); the full curve (1, 4 and 10
million rows) is ``python -m algorithms bench --only scale``.
"""

import os

from algorithms.bench import scale

ROWS = int(float(os.environ.get("KBACKENDS_ASV_SCALE_ROWS", "1e6")))
METHODS = ["dsg", "rbf-sgd", "dsg-dask"]


class Scale:
    """Accuracy, fit and predict seconds and peak memory per method at ``ROWS`` rows."""

    params = (METHODS,)
    param_names = ["method"]
    timeout = 3600

    def setup_cache(self):
        return {r["method"]: r for r in scale.run([ROWS], METHODS, progress=lambda *a: None)}

    def setup(self, results, method):
        if "fit_s" not in results[method]:
            raise NotImplementedError(results[method].get("skipped", "not run"))  # asv: skipped

    def track_accuracy(self, results, method):
        return results[method]["accuracy"]

    track_accuracy.unit = "fraction"

    def track_fit_seconds(self, results, method):
        return results[method]["fit_s"]

    track_fit_seconds.unit = "seconds"

    def track_fit_ratio_to_rbf_sgd(self, results, method):
        return results[method]["fit_s"] / results["rbf-sgd"]["fit_s"]

    track_fit_ratio_to_rbf_sgd.unit = "fit time / RBFSampler + SGD's"

    def track_predict_seconds_100k_rows(self, results, method):
        return results[method]["predict_s"]

    track_predict_seconds_100k_rows.unit = "seconds"

    def track_peak_rss_mb(self, results, method):
        return results[method].get("peak_rss_mb", float("nan"))

    track_peak_rss_mb.unit = "MB"
