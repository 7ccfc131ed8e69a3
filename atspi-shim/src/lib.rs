//! Replica → AT-SPI answers and events (work in progress).
