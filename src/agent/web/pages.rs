//! The agent's HTTP server for a caller other than the agent: plain HTTP/1.1 with the
//! agent's limits (request head size and count, head/read/write timeouts, at most
//! `max_connections` at once, 503 past it), on the socket [`super::bind`] made, serving
//! whatever a [`Pages`] answers for `GET`/`HEAD` of a path (`rocetap sflow --metrics`).
//! The agent itself keeps `super::spawn` (auth, TLS, its routes); this is the same
//! accept loop without them.

use super::timed::Timed;
use super::{Bound, HEAD_BYTES, HEAD_TIMEOUT, MAX_HEADERS, READ_TIMEOUT, WRITE_TIMEOUT};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::Semaphore;

/// What a server answers: for a path, its content type and body, or `None` (404).
pub type Pages = dyn Fn(&str) -> Option<(&'static str, Vec<u8>)> + Send + Sync;

type Resp = Response<Full<Bytes>>;

fn answer(pages: &Pages, req: &Request<Incoming>) -> Resp {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = Response::new(Full::new(Bytes::from_static(b"only GET and HEAD\n")));
        *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let (status, ct, body) = match pages(req.uri().path()) {
        Some((ct, body)) => (StatusCode::OK, ct, body),
        None => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            b"not found\n".to_vec(),
        ),
    };
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(ct));
    r
}

/// Serves `pages` on the bound socket from a thread of its own until `stop` is set.
pub fn serve(
    bound: Bound,
    max_connections: usize,
    pages: Arc<Pages>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    let Bound { rt, listener } = bound;
    std::thread::Builder::new()
        .name("rocetap-web".into())
        .spawn(move || {
            rt.block_on(async move {
                let slots = Arc::new(Semaphore::new(max_connections.max(1)));
                let mut h1 = http1::Builder::new();
                h1.timer(TokioTimer::new())
                    .header_read_timeout(HEAD_TIMEOUT)
                    .max_buf_size(HEAD_BYTES)
                    .max_headers(MAX_HEADERS)
                    .half_close(true);
                while !stop.load(Ordering::SeqCst) {
                    let tcp =
                        match tokio::time::timeout(Duration::from_millis(200), listener.accept())
                            .await
                        {
                            Ok(Ok((tcp, _))) => tcp,
                            Err(_) => continue,
                            Ok(Err(_)) => {
                                tokio::time::sleep(Duration::from_millis(50)).await;
                                continue;
                            }
                        };
                    let Ok(slot) = slots.clone().try_acquire_owned() else {
                        let _ = tcp.try_write(super::BUSY);
                        continue;
                    };
                    let _ = tcp.set_nodelay(true);
                    let (pages, h1) = (pages.clone(), h1.clone());
                    tokio::spawn(async move {
                        let _slot = slot;
                        let io = Timed::new(tcp, READ_TIMEOUT, WRITE_TIMEOUT);
                        let svc = service_fn(move |req| {
                            let r = answer(&*pages, &req);
                            async move { Ok::<_, Infallible>(r) }
                        });
                        let _ = h1.serve_connection(TokioIo::new(io), svc).await;
                    });
                }
            });
            rt.shutdown_timeout(Duration::from_secs(1));
        })
}
