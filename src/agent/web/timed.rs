//! A connection with deadlines: a read or a write that waits longer than its limit fails
//! with `TimedOut`, which ends the connection. (hyper's header read timeout closes a
//! client that sends its request too slowly; this closes one that reads its response
//! too slowly, or sends a body forever.)

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

pub struct Timed<S> {
    io: S,
    read_limit: Duration,
    write_limit: Duration,
    read: Pin<Box<Sleep>>,
    reading: bool,
    write: Pin<Box<Sleep>>,
    writing: bool,
}

impl<S> Timed<S> {
    pub fn new(io: S, read_limit: Duration, write_limit: Duration) -> Self {
        let far = Instant::now() + read_limit;
        Timed {
            io,
            read_limit,
            write_limit,
            read: Box::pin(tokio::time::sleep_until(far)),
            reading: false,
            write: Box::pin(tokio::time::sleep_until(far)),
            writing: false,
        }
    }
}

/// One poll of an operation under a deadline: arms the timer when the operation first
/// waits, disarms it when it completes, fails when it fires.
fn guarded<T>(
    res: Poll<io::Result<T>>,
    timer: &mut Pin<Box<Sleep>>,
    armed: &mut bool,
    limit: Duration,
    cx: &mut Context<'_>,
) -> Poll<io::Result<T>> {
    match res {
        Poll::Ready(r) => {
            *armed = false;
            Poll::Ready(r)
        }
        Poll::Pending => {
            if !*armed {
                *armed = true;
                timer.as_mut().reset(Instant::now() + limit);
            }
            if timer.as_mut().poll(cx).is_ready() {
                *armed = false;
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the peer stalled",
                )));
            }
            Poll::Pending
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Timed<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.io).poll_read(cx, buf);
        guarded(r, &mut me.read, &mut me.reading, me.read_limit, cx)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Timed<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.io).poll_write(cx, buf);
        guarded(r, &mut me.write, &mut me.writing, me.write_limit, cx)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.io).poll_flush(cx);
        guarded(r, &mut me.write, &mut me.writing, me.write_limit, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.io).poll_shutdown(cx);
        guarded(r, &mut me.write, &mut me.writing, me.write_limit, cx)
    }
}
