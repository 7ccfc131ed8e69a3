//! The validator in front of every apply.
