"""A run's records: their schema (one definition of every column), the store that takes
them from the target and writes records.parquet, the run directory and its state."""
