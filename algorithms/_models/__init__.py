"""The models every fit returns and what they share: the model classes (``model``),
prediction (``prediction``), saving and loading (``persistence``), chunk-wise
prediction of dask arrays (``dask_arrays``), Platt calibration (``calibration``) and
the scikit-learn estimator bases (``estimator``)."""
