"""Leaderboards, README tables, plots and published figures, read from the runs under results/."""
