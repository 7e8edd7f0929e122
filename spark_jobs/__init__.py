"""PySpark entry points (backfill, validate) over pure DataFrame functions."""
