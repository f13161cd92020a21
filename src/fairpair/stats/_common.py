"""Shared machinery for :mod:`fairpair.stats`: input checks and interval records.

Nothing here is public API; the public names are re-exported from
``fairpair/stats/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ConfidenceInterval", "wilson_interval", "t_interval"]


@dataclass(frozen=True)
class ConfidenceInterval:
    """A two-sided confidence interval.

    Unpacks like a pair (``low, high = ci``), as scipy's intervals do.

    Attributes
    ----------
    low, high : float
        The limits, in the units of the estimate. ``nan`` when the interval is
        undefined (e.g. no complete pairs).
    confidence_level : float
        Nominal coverage in (0, 1), e.g. ``0.95``.
    method : str
        How the limits were computed (e.g. ``"newcombe"``, ``"percentile"``).
    """

    low: float
    high: float
    confidence_level: float
    method: str

    def __iter__(self) -> Iterator[float]:
        yield self.low
        yield self.high

    def contains(self, value: float) -> bool:
        """Whether ``low <= value <= high`` (``False`` if either limit is NaN)."""
        return bool(self.low <= value <= self.high)

    @property
    def width(self) -> float:
        """``high - low``."""
        return float(self.high - self.low)


# --------------------------------------------------------------------- intervals (defined once)


def wilson_interval(count: float, n: int, confidence_level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion ``count / n``; limits in [0, 1], ``(nan, nan)`` when ``n < 1``.

    Source: Wilson, E. B. (1927), "Probable inference, the law of succession, and statistical
    inference", JASA 22, 209-212. Matches ``statsmodels.stats.proportion.proportion_confint(...,
    method="wilson")``.
    """
    if n < 1:
        return (float("nan"), float("nan"))
    from scipy import special

    z = float(special.ndtri(1.0 - (1.0 - confidence_level) / 2.0))
    p = count / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denom
    half = z * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denom
    return float(centre - half), float(centre + half)


def t_interval(estimate: float, standard_error: float, df: float, confidence_level: float = 0.95,
               alternative: str = "two-sided") -> tuple[float, float]:
    """Student t interval ``estimate +/- t_df(quantile) * standard_error``.

    ``alternative`` ``"less"`` gives ``(-inf, estimate + t_df(level) * se)``, ``"greater"``
    ``(estimate - t_df(level) * se, inf)``, as ``scipy.stats.ttest_rel(...).confidence_interval()``.
    ``(nan, nan)`` when ``df`` is below 1 or any input is not finite.
    """
    if not (np.isfinite(estimate) and np.isfinite(standard_error) and np.isfinite(df)) or df < 1:
        return (float("nan"), float("nan"))
    from scipy import stats

    if alternative == "two-sided":
        h = float(stats.t.ppf(0.5 + confidence_level / 2.0, df)) * standard_error
        return (float(estimate - h), float(estimate + h))
    h = float(stats.t.ppf(confidence_level, df)) * standard_error
    if alternative == "less":
        return (-np.inf, float(estimate + h))
    return (float(estimate - h), np.inf)


# --------------------------------------------------------------------- checks


def check_choice(name: str, value: Any, allowed: Sequence[Any]) -> Any:
    """Return ``value`` if it is one of ``allowed``; else raise a ValueError listing them."""
    if value not in allowed:
        listed = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"{name} must be one of {listed}; got {value!r}")
    return value


def check_level(confidence_level: float, name: str = "confidence_level") -> float:
    """Check a probability strictly between 0 and 1."""
    try:
        level = float(confidence_level)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in (0, 1); got {confidence_level!r}") from None
    if not 0.0 < level < 1.0:
        raise ValueError(f"{name} must be in (0, 1); got {confidence_level!r}")
    return level


def check_positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """Check an integer >= ``minimum`` (bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, float) and v != v:
        return True
    return type(v).__name__ in {"NAType", "NaTType"}


def as_float_1d(x: Any, name: str) -> np.ndarray:
    """Convert array-like to a 1-D float array; ``None``/``NaN``/``pd.NA`` become NaN.

    Accepts numpy arrays, lists, pandas Series and nullable pandas arrays
    without importing pandas.
    """
    to_numpy = getattr(x, "to_numpy", None)
    if to_numpy is not None:
        try:
            arr = np.asarray(to_numpy(dtype=float, na_value=np.nan), dtype=float)
        except TypeError:
            arr = np.asarray(to_numpy(), dtype=object)
    else:
        arr = np.asarray(x)
    if arr.dtype == object:
        try:
            arr = arr.astype(float)
        except (TypeError, ValueError):
            flat = [np.nan if _is_missing(v) else v for v in arr.ravel()]
            try:
                arr = np.asarray(flat, dtype=float).reshape(arr.shape)
            except (TypeError, ValueError):
                raise ValueError(f"{name} must hold numbers, booleans or missing values") from None
    elif arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold numbers, booleans or missing values; got dtype {arr.dtype}")
    arr = np.asarray(arr, dtype=float)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {arr.shape}")
    return arr


def paired_arrays(x: Any, y: Any, *, binary: bool = False,
                  return_mask: bool = False) -> tuple[np.ndarray, np.ndarray, Any]:
    """Align two paired 1-D samples and drop pairs where either value is NaN.

    Returns
    -------
    x, y : ndarray
        The complete pairs.
    n_missing : int or ndarray of bool
        Number of pairs dropped, or with ``return_mask`` the boolean mask of
        kept pairs over the input.

    Raises
    ------
    ValueError
        If the lengths differ, or ``binary`` and a value is not 0/1.
    """
    xa = as_float_1d(x, "x")
    ya = as_float_1d(y, "y")
    if xa.shape != ya.shape:
        raise ValueError(f"x and y must have the same length (one entry per pair); got {xa.size} and {ya.size}")
    keep = ~(np.isnan(xa) | np.isnan(ya))
    xa, ya = xa[keep], ya[keep]
    if binary:
        for name, arr in (("x", xa), ("y", ya)):
            bad = (arr != 0) & (arr != 1)
            if bad.any():
                raise ValueError(f"{name} must be binary (0/1, True/False, or missing); found value {arr[bad][0]!r}")
    return xa, ya, (keep if return_mask else int((~keep).sum()))


def as_labels(labels: Any, name: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Factorise a 1-D label array of length ``n``.

    Returns ``(uniques, codes)`` with ``codes`` in ``0..len(uniques)-1``.
    """
    to_numpy = getattr(labels, "to_numpy", None)
    arr = np.asarray(to_numpy() if to_numpy is not None else labels)
    if arr.ndim != 1 or arr.size != n:
        raise ValueError(f"{name} must be one-dimensional with one label per observation ({n}); got shape {arr.shape}")
    if arr.dtype == object:
        if any(_is_missing(v) for v in arr):
            raise ValueError(f"{name} must not contain missing labels")
    elif arr.dtype.kind == "f" and np.isnan(arr).any():
        raise ValueError(f"{name} must not contain missing labels")
    try:
        uniques, codes = np.unique(arr, return_inverse=True)
    except TypeError:  # mixed, unorderable labels: keep first-seen order
        seen: dict[Any, int] = {}
        codes = np.array([seen.setdefault(v, len(seen)) for v in arr], dtype=np.intp)
        uniques = np.array(list(seen), dtype=object)
    return uniques, codes.reshape(-1).astype(np.intp)

