//! Long lists of a report (the flows of a node with thousands of QPs) rendered on two
//! threads. A machine-readable report of 16,384 flows is about 50 MB of JSON or 16,384
//! CSV rows, made after the analysis is done, when the other core has nothing to do; so
//! the list is cut into blocks of [`BLOCK`] items, a helper thread renders every other
//! block while this one renders the rest, and the blocks are written in their order. The
//! bytes are the same as one thread's; memory is a few blocks' text, never the list's.

use std::sync::mpsc;
use std::thread;

/// Items per block: about 0.75 MB of JSON for flows, small enough that the two threads
/// start and end together and the blocks in flight stay a few MB.
pub(super) const BLOCK: usize = 256;

/// Renders `items` in blocks of `block` with `render(first, items, buf)` (`first` is the
/// index of the block's first item; `buf` comes empty) and hands each block's bytes to
/// `emit`, in order. With more than one block and more than one core, odd blocks render
/// on a helper thread while this one renders and emits the even ones. The first error
/// (of `render` or `emit`, in block order) ends it and is returned; the helper stops at
/// its next block.
pub(super) fn in_blocks<T: Sync, E: Send>(
    items: &[T],
    block: usize,
    render: impl Fn(usize, &[T], &mut Vec<u8>) -> Result<(), E> + Sync,
    mut emit: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    let block = block.max(1);
    let mut buf = Vec::new();
    let two = items.len() > block && thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    if !two {
        for (k, b) in items.chunks(block).enumerate() {
            buf.clear();
            render(k * block, b, &mut buf)?;
            emit(&buf)?;
        }
        return Ok(());
    }
    let render = &render;
    thread::scope(|s| {
        // The helper's blocks come back in order, one rendered ahead at most; emitted
        // buffers go back to it for reuse.
        let (done, rendered) = mpsc::sync_channel::<Result<Vec<u8>, E>>(1);
        let (give_back, spare) = mpsc::channel::<Vec<u8>>();
        s.spawn(move || {
            for (k, b) in items.chunks(block).enumerate().skip(1).step_by(2) {
                let mut buf = spare.try_recv().unwrap_or_default();
                buf.clear();
                let r = render(k * block, b, &mut buf).map(|()| buf);
                let failed = r.is_err();
                if done.send(r).is_err() || failed {
                    return; // this side stopped, or nothing after an error is used
                }
            }
        });
        for (k, b) in items.chunks(block).enumerate() {
            if k % 2 == 0 {
                buf.clear();
                render(k * block, b, &mut buf)?;
                emit(&buf)?;
            } else {
                // The helper sends every odd block or an error before it stops; it only
                // hangs up early by panicking, which the scope passes on once this ends.
                let Ok(theirs) = rendered.recv() else {
                    return Ok(());
                };
                let theirs = theirs?;
                emit(&theirs)?;
                let _ = give_back.send(theirs);
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each item as its index and value, a line each.
    fn lines(first: usize, items: &[u32], buf: &mut Vec<u8>) -> Result<(), String> {
        for (i, v) in items.iter().enumerate() {
            if *v == 999 {
                return Err(format!("item {}", first + i));
            }
            buf.extend_from_slice(format!("{} {v}\n", first + i).as_bytes());
        }
        Ok(())
    }

    fn run(items: &[u32], block: usize) -> Result<String, String> {
        let mut out = Vec::new();
        in_blocks(items, block, lines, |b| {
            out.extend_from_slice(b);
            Ok(())
        })?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn blocks_come_out_in_order_whatever_the_block_size() {
        let items: Vec<u32> = (0..1000).map(|i| i * 7).collect();
        let one: String = items
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{i} {v}\n"))
            .collect();
        for block in [0, 1, 2, 3, 7, 256, 999, 1000, 1001] {
            assert_eq!(run(&items, block).unwrap(), one, "block {block}");
        }
        assert_eq!(run(&[], 4).unwrap(), "");
    }

    #[test]
    fn the_first_error_in_block_order_is_returned() {
        let mut items: Vec<u32> = (0..100).collect();
        items[57] = 999; // block 5 of 10: the helper's
        items[83] = 999; // a later block: never reached
        assert_eq!(run(&items, 10), Err("item 57".into()));
        items[57] = 0;
        items[23] = 999; // block 2: this thread's, while the helper has block 3 ready
        assert_eq!(run(&items, 10), Err("item 23".into()));
    }

    #[test]
    fn an_emit_error_stops_the_run() {
        let items: Vec<u32> = (0..100).collect();
        let mut calls = 0;
        let r = in_blocks(&items, 10, lines, |_| {
            calls += 1;
            if calls == 4 {
                Err("disk full".to_string())
            } else {
                Ok(())
            }
        });
        assert_eq!(r, Err("disk full".into()));
        assert_eq!(calls, 4);
    }
}
