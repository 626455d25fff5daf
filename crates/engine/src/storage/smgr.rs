//! The storage manager: relation forks in 1 GB segment files.
