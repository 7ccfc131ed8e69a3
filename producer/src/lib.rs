//! Sender side of the Newton push protocol (work in progress).
