"""The static analyzer: stdlib `ast` front end, operator resolution, value tracing, context.

libcst is used for rewriting (`--fix`) only; see docs/design.md for the measurements behind
that choice.
"""
