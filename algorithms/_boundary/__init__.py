"""The boundary every algorithm shares: its hyper-parameter tables (``params``), the
checks of arrays, labels, seeds and kernel widths (``validation``), sparse input
(``sparse``), sample weights and the "auto" plan of a fit (``fit_plan``) and the
refusal of non-finite results (``finite``) and warnings addressed to the user's line
(``warn``). Arguments are checked here once, at a
public entry; the engines below trust them."""
