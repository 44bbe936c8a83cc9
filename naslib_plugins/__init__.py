"""Training-free NAS predictors, optimizers and search spaces for the NASLib ecosystem."""
__version__ = "0.1.0"
