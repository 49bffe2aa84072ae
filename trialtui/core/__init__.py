"""Pure-Python heart of trialtui: no textual, torch or triton at import time."""
