//! The agent's HTTP surface: hyper's HTTP/1.1 server on a one-thread tokio runtime (the
//! analysis loop keeps its own thread), optionally behind rustls and basic auth as a
//! `--web-config-file` in the exporter toolkit's format says ([`conf`]). Bounded against
//! hostile clients:
//!
//! - a request head (request line and headers) holds at most [`HEAD_BYTES`] and
//!   [`MAX_HEADERS`] headers: a larger one gets 431 and the connection is closed;
//! - a head must arrive within [`HEAD_TIMEOUT`] of the connection opening (or of the
//!   previous response, for an idle keep-alive connection), else the connection is closed;
//! - a read or write that stalls for [`READ_TIMEOUT`] / [`WRITE_TIMEOUT`] ends the
//!   connection; a TLS handshake gets [`HANDSHAKE_TIMEOUT`];
//! - at most `max_connections` connections at once: one more is answered 503 (closed at
//!   once under TLS) without being queued, and costs no task.
//!
//! What each request gets is in `routes.rs`.

mod auth;
pub mod conf;
pub mod pages;
mod routes;
mod timed;
mod tls;

use super::Error;
use crate::agent::http::ReportRequest;
use crate::agent::state::Published;
pub use conf::WebConfig;
use hyper::header::{HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use timed::Timed;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::Semaphore;

/// The most bytes of one request head (hyper's smallest buffer limit).
pub const HEAD_BYTES: usize = 8192;
/// The most headers of one request.
pub const MAX_HEADERS: usize = 64;
/// Time for a request head to arrive (and for a keep-alive connection to idle).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Time a read may stall (a body; longer than `/report` takes to answer).
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Time a write may stall (a client that does not read its response).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for a TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// The default of `--max-connections`.
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;

/// The web settings of the agent's configuration.
#[derive(Clone, Debug)]
pub struct Options {
    /// `--web-config-file`, read and checked.
    pub config: Option<Arc<WebConfig>>,
    /// Connections served at once; more are refused.
    pub max_connections: usize,
    /// `/report` is served (`--report on`).
    pub report: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            config: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            report: true,
        }
    }
}

/// Connections the kernel completes before the server accepts them (std's is 128): a
/// burst of clients is then accepted and answered, or refused with 503, rather than left
/// retrying its SYN for a second.
const BACKLOG: u32 = 1024;

/// The server's runtime and its bound socket, not serving yet.
pub struct Bound {
    rt: tokio::runtime::Runtime,
    listener: TcpListener,
}

/// Binds the listening socket (before anything runs, so a taken port is a start-up error).
pub fn bind(addr: SocketAddr) -> std::io::Result<Bound> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        // bcrypt checks; a request waiting for one holds a connection slot
        .max_blocking_threads(2)
        .thread_name("rocetap-web")
        .build()?;
    let listener = {
        let _in = rt.enter();
        let sock = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        sock.set_reuseaddr(true)?;
        sock.bind(addr)?;
        sock.listen(BACKLOG)?
    };
    Ok(Bound { rt, listener })
}

/// Serves on the bound socket from a thread of its own until `stop` is set.
pub fn spawn(
    bound: Bound,
    opts: &Options,
    shared: Arc<Mutex<Published>>,
    reports: SyncSender<ReportRequest>,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, Error> {
    let Bound { rt, listener } = bound;
    let (users, headers, tls) = match &opts.config {
        Some(c) => (
            c.users.clone(),
            c.headers
                .iter()
                .filter_map(|(k, v)| {
                    Some((
                        HeaderName::from_bytes(k.as_bytes()).ok()?,
                        HeaderValue::from_str(v).ok()?,
                    ))
                })
                .collect(),
            c.tls.clone(),
        ),
        None => (auth::Users::default(), Vec::new(), None),
    };
    let ctx = Arc::new(routes::Ctx {
        shared,
        reports,
        users,
        headers,
        report: opts.report,
    });
    let max = opts.max_connections.max(1);
    std::thread::Builder::new()
        .name("rocetap-web".into())
        .spawn(move || {
            rt.block_on(accept(listener, ctx, tls, max, stop));
            rt.shutdown_timeout(Duration::from_secs(1));
        })
        .map_err(Error::Http)
}

/// The answer to a connection past the limit (plain HTTP only).
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 28\r\nContent-Type: text/plain\r\n\r\ntoo many connections, later\n";

async fn accept(
    listener: TcpListener,
    ctx: Arc<routes::Ctx>,
    tls: Option<Arc<rustls::ServerConfig>>,
    max: usize,
    stop: Arc<AtomicBool>,
) {
    let slots = Arc::new(Semaphore::new(max));
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let mut h1 = http1::Builder::new();
    h1.timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(HEAD_BYTES)
        .max_headers(MAX_HEADERS)
        // A client may shut its write side once the request is sent (HTTP/1.0 style); the
        // answer must still reach it, not race the EOF.
        .half_close(true);
    while !stop.load(Ordering::SeqCst) {
        let tcp = match tokio::time::timeout(Duration::from_millis(200), listener.accept()).await {
            Err(_) => continue,
            Ok(Ok((tcp, _))) => tcp,
            Ok(Err(_)) => {
                // out of file descriptors and the like: let connections end
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            if tls.is_none() {
                let _ = tcp.try_write(BUSY);
            }
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let (ctx, tls, h1) = (ctx.clone(), tls.clone(), h1.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let io = Timed::new(tcp, READ_TIMEOUT, WRITE_TIMEOUT);
            let svc = service_fn(move |req| routes::handle(ctx.clone(), req));
            match tls {
                None => {
                    let _ = h1.serve_connection(TokioIo::new(io), svc).await;
                }
                Some(acc) => {
                    let Ok(Ok(s)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acc.accept(io)).await
                    else {
                        return;
                    };
                    let _ = h1.serve_connection(TokioIo::new(s), svc).await;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_busy_answer_is_well_formed() {
        let text = std::str::from_utf8(super::BUSY).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 "));
        assert!(
            head.contains(&format!("Content-Length: {}\r\n", body.len())),
            "{head}"
        );
    }
}
