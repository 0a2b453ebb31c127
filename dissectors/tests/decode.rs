//! The decoder's integration tests, one binary (`cargo test -p dissectors --test decode`;
//! a module with `decode NAME::`): whole frames through every layer (`frames`), the CM
//! messages (`cm`), every prefix of every shared capture (`prefixes`) and random headers
//! round-tripped (`random`), mirrored / overlaid RoCE (`tunnel`).

mod common;

#[path = "decode/cm.rs"]
mod cm;
#[path = "decode/frames.rs"]
mod frames;
#[path = "decode/prefixes.rs"]
mod prefixes;
#[path = "decode/random.rs"]
mod random;
#[path = "decode/tunnel.rs"]
mod tunnel;
