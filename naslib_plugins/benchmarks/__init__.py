"""Ground-truth readers, scoring runs and rank correlation."""
