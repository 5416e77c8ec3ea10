"""Values that the estimators and the shipped configs share, written once; no imports, so the
command line reads them without scikit-learn."""

__all__ = ["DEFAULT_KERNEL_WIDTHS"]

#: 10 widths log-spaced from 0.05 to 100 (in squared units of y), the paper experiment's grid: the
#: CV estimators' default and the method files' ``${mccard_default_widths:}``
DEFAULT_KERNEL_WIDTHS = (0.05, 0.12, 0.27, 0.63, 1.5, 3.4, 7.9, 18.0, 43.0, 100.0)
