"""A third-party trialtui plug-in, found only through the entry points of its dist-info beside it."""
