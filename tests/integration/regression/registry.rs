//! Regression tests: registry.
