"""The package's version, in a module of its own so that any layer can read it without importing
the package face (``jupyter_agent/__init__.py`` imports every layer). It is the one place the
version is written: the build reads it from here (pyproject's ``[tool.hatch.version]``)."""

__version__ = "0.1.0"
