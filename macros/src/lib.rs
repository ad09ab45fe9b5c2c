//! Procedural macros of customop. Use them through the `customop` crate, which re-exports them.
