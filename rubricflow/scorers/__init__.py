"""Built-in scorer plugins."""
