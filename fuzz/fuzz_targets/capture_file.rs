//! Fuzz target: the capture-file reader (classic pcap in both byte orders and
//! resolutions, pcapng) on arbitrary bytes. It must never panic; every frame it hands out
//! holds at most the bytes the input had, and a reader that fails says so with an error
//! after the frames before the damage.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocetap::capture::file::for_each_frame;
use std::ops::ControlFlow;

fuzz_target!(|data: &[u8]| {
    let mut frames = 0u64;
    let mut bytes = 0u64;
    let res = for_each_frame(std::io::Cursor::new(data), |f| {
        assert!(f.data.len() <= data.len(), "a frame larger than the input");
        frames += 1;
        bytes += f.data.len() as u64;
        ControlFlow::Continue(())
    });
    if let Ok(stats) = res {
        assert_eq!(
            stats.frames, frames,
            "stats disagree with the frames delivered"
        );
        assert_eq!(
            stats.bytes, bytes,
            "stats disagree with the bytes delivered"
        );
    }
});
