//! Where datagrams come from: a capture of an exporter's stream (`-r FILE`: every UDP
//! datagram to the collector port, Ethernet or raw IP) or a UDP socket (`--listen`).

use super::Collector;
use crate::capture::input::{for_each_frame_of, CutShort, InputError};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The largest UDP payload.
const DATAGRAM: usize = 65_535;

/// Reads the captures `paths` (merged by time) into `c`: every UDP datagram to `port`
/// is an sFlow datagram, anything else is counted as not sFlow. Stops after `count`
/// datagrams when given.
pub fn read_files(
    paths: &[PathBuf],
    port: u16,
    count: Option<u64>,
    quiet: bool,
    c: &mut Collector,
) -> Result<Vec<CutShort>, InputError> {
    let mut n = 0u64;
    for_each_frame_of(paths, quiet, |f| {
        match dissectors::sflow::udp_of(f.link, f.data) {
            Some(u) if u.dst_port == port && !u.cut => {
                c.ingest(u.payload);
                n += 1;
            }
            _ => c.not_sflow(),
        }
        if count.is_some_and(|k| n >= k) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
}

/// When a listening collector stops.
#[derive(Clone, Debug, Default)]
pub struct Until {
    /// Stop listening after this long.
    pub duration: Option<Duration>,
    /// Stop after this many datagrams.
    pub count: Option<u64>,
    /// Set from outside (a signal).
    pub stop: Arc<AtomicBool>,
}

/// Binds the collector's UDP socket (before anything runs, so a taken port is a start-up
/// error).
pub fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
    let s = UdpSocket::bind(addr)?;
    s.set_read_timeout(Some(Duration::from_millis(200)))?;
    Ok(s)
}

/// Receives datagrams on `sock` into the shared collector until `until` says so; returns
/// the datagrams received.
pub fn listen(sock: &UdpSocket, c: &Arc<Mutex<Collector>>, until: &Until) -> io::Result<u64> {
    let mut buf = vec![0u8; DATAGRAM];
    let start = Instant::now();
    let mut n = 0u64;
    loop {
        if until.stop.load(Ordering::Relaxed)
            || until.duration.is_some_and(|d| start.elapsed() >= d)
            || until.count.is_some_and(|k| n >= k)
        {
            return Ok(n);
        }
        match sock.recv_from(&mut buf) {
            Ok((len, _from)) => {
                n += 1;
                c.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .ingest(&buf[..len]);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
}
