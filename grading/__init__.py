"""Scoring a finished simulation and explaining its failures."""
