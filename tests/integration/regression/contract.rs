//! Regression tests: contract.
