"""The scripted demo, a front end: it drives the engine as a user would, so it lives above the engine, never in it."""
