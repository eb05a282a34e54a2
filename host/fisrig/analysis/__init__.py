"""What a run's records mean: each phase's figures, the SNIA PTS's steady state, the
power-loss verdicts, and the array helpers they share."""
