"""Ground truth, the scoring engine, the score journal, rank correlation and the runs built on them."""
