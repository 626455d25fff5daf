#![doc = include_str!("README.md")]

pub mod buf_state;
