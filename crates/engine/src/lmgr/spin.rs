//! Spinlocks: test-and-set with randomized exponential back-off (seed 004).
