//! Several captures as one stream in timestamp order (`rocetap analyze a.pcap b.pcap`):
//! each source is read on its own thread into batches of owned frames, handed over
//! bounded channels, and the consumer always takes the earliest head frame. Memory is
//! bounded by the channel depth; a source that fails stops the merge with its error,
//! after every earlier frame was delivered. One source never goes through here.

use super::file::{for_each_frame, ReadError, ReadStats};
use super::Frame;
use dissectors::LinkType;
use std::io::Read;
use std::ops::ControlFlow;
use std::sync::mpsc::{sync_channel, Receiver};

/// Frames per batch handed from a reader thread.
const BATCH: usize = 1024;
/// Batches in flight per source.
const DEPTH: usize = 4;

struct Owned {
    ts_ns: u64,
    link: LinkType,
    orig_len: u32,
    iface: u32,
    data: Vec<u8>,
}

enum Msg {
    Frames(Vec<Owned>),
    Done(Result<ReadStats, ReadError>),
}

struct Head {
    rx: Receiver<Msg>,
    batch: Vec<Owned>,
    pos: usize,
    stats: Option<ReadStats>,
}

/// Reads every source and calls `f(source index, frame)` in timestamp order (ties go to
/// the lower source index). Returns each source's statistics, or the index and error of
/// the first source that failed.
pub fn for_each_merged<F>(
    sources: Vec<Box<dyn Read + Send>>,
    mut f: F,
) -> Result<Vec<ReadStats>, (usize, ReadError)>
where
    F: FnMut(usize, &Frame<'_>) -> ControlFlow<()>,
{
    std::thread::scope(|scope| {
        let mut heads: Vec<Head> = sources
            .into_iter()
            .map(|input| {
                let (tx, rx) = sync_channel::<Msg>(DEPTH);
                scope.spawn(move || {
                    let mut batch = Vec::with_capacity(BATCH);
                    let res = for_each_frame(input, |fr| {
                        batch.push(Owned {
                            ts_ns: fr.ts_ns,
                            link: fr.link,
                            orig_len: fr.orig_len,
                            iface: fr.iface,
                            data: fr.data.to_vec(),
                        });
                        if batch.len() == BATCH {
                            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                            if tx.send(Msg::Frames(full)).is_err() {
                                return ControlFlow::Break(()); // the consumer stopped
                            }
                        }
                        ControlFlow::Continue(())
                    });
                    if !batch.is_empty() {
                        let _ = tx.send(Msg::Frames(batch));
                    }
                    let _ = tx.send(Msg::Done(res));
                });
                Head {
                    rx,
                    batch: Vec::new(),
                    pos: 0,
                    stats: None,
                }
            })
            .collect();
        loop {
            // Refill every head that ran dry and is not finished.
            for (i, h) in heads.iter_mut().enumerate() {
                while h.pos == h.batch.len() && h.stats.is_none() {
                    match h.rx.recv() {
                        Ok(Msg::Frames(b)) => {
                            h.batch = b;
                            h.pos = 0;
                        }
                        Ok(Msg::Done(Ok(s))) => h.stats = Some(s),
                        Ok(Msg::Done(Err(e))) => return Err((i, e)),
                        Err(_) => h.stats = Some(ReadStats::default()),
                    }
                }
            }
            let next = heads
                .iter()
                .enumerate()
                .filter(|(_, h)| h.pos < h.batch.len())
                .min_by_key(|(i, h)| (h.batch[h.pos].ts_ns, *i))
                .map(|(i, _)| i);
            let Some(i) = next else {
                return Ok(heads.iter().map(|h| h.stats.unwrap_or_default()).collect());
            };
            let h = &mut heads[i];
            let o = &h.batch[h.pos];
            h.pos += 1;
            let frame = Frame {
                ts_ns: o.ts_ns,
                link: o.link,
                data: &o.data,
                orig_len: o.orig_len,
                iface: o.iface,
            };
            if f(i, &frame).is_break() {
                return Ok(heads.iter().map(|h| h.stats.unwrap_or_default()).collect());
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::writer::{Format, Interface, Writer};

    fn pcap(times: &[u64]) -> Vec<u8> {
        let ifaces = [Interface {
            link: LinkType::Ethernet,
            snaplen: 65535,
            name: None,
        }];
        let mut w = Writer::new(Vec::new(), Format::Pcap, &ifaces).unwrap();
        for &t in times {
            w.write(t, 0, &[t as u8; 20], 20, None).unwrap();
        }
        w.into_inner().unwrap()
    }

    #[test]
    fn merges_in_timestamp_order_across_batches() {
        let a: Vec<u64> = (0..3000).map(|i| i * 2_000).collect();
        let b: Vec<u64> = (0..2000).map(|i| i * 3_000 + 1_000).collect();
        let sources: Vec<Box<dyn Read + Send>> = vec![
            Box::new(std::io::Cursor::new(pcap(&a))),
            Box::new(std::io::Cursor::new(pcap(&b))),
        ];
        let mut seen = Vec::new();
        let stats = for_each_merged(sources, |i, f| {
            seen.push((f.ts_ns, i));
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(seen.len(), 5000);
        assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0));
        assert_eq!((stats[0].frames, stats[1].frames), (3000, 2000));
    }

    #[test]
    fn a_failing_source_stops_the_merge_with_its_index() {
        let good = pcap(&[1_000, 2_000]);
        let sources: Vec<Box<dyn Read + Send>> = vec![
            Box::new(std::io::Cursor::new(good)),
            Box::new(std::io::Cursor::new(
                b"not a capture at all, really".to_vec(),
            )),
        ];
        let r = for_each_merged(sources, |_, _| ControlFlow::Continue(()));
        assert!(matches!(r, Err((1, ReadError::NotACapture))));
    }
}
