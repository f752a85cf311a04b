"""The project's own tests (a package, so test directories never shadow installed packages)."""
