//! Regression tests: run.
