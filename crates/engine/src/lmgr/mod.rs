#![doc = include_str!("README.md")]

pub mod lwlock;
pub mod spin;
