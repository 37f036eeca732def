"""An example ShiftBench method package (see docs/adding-a-method.md)."""
