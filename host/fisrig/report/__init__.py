"""A run's report: its figures in words and charts (build: the headline, the plots, report.html),
fio's JSON, the comparison of two runs, and what the power-loss and PTS steps showed."""
