#![doc = include_str!("README.md")]

pub mod wait_event;
