"""ShiftBench: a benchmark harness for weak-to-strong reward models under preference shift."""
__version__ = "0.1.0"
