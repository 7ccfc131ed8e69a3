//! Harness for end-to-end tests: private buses, registry, Xvfb, Orca (work in progress).
