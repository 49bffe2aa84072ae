"""Screens pushed over the main one: help, find, finalize."""
