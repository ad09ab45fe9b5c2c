"""customop's Python helper: descriptors packed byte-for-byte as Rust does (descriptors.py)."""
