"""The Textual front end: the app, its widgets and screens. Only this package imports textual."""
